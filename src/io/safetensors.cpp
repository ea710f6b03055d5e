// safetensors reader and writer. Format: https://github.com/huggingface/safetensors
// (README "Format"): u64 LE header size N, N bytes of UTF-8 JSON, then a byte
// buffer that the tensors index entirely, without holes or overlaps.
#include "tailor/io/safetensors.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>
#include <string_view>

#include "tailor/core/error.h"
#include "tailor/io/atomic_file.h"

namespace tailor {
namespace {

constexpr uint64_t kMaxHeaderBytes = 100'000'000;  // the reference reader's limit
constexpr int kMaxDepth = 4;                       // {name: {"shape": [...]}} reaches depth 3

struct DTypeName {
  const char* name;
  DType dtype;
};
constexpr DTypeName kDTypes[] = {
    {"F64", DType::f64}, {"F32", DType::f32}, {"F16", DType::f16},     {"BF16", DType::bf16},
    {"I64", DType::i64}, {"I32", DType::i32}, {"I16", DType::i16},     {"I8", DType::i8},
    {"U16", DType::u16}, {"U8", DType::u8},   {"BOOL", DType::boolean}};

const char* safetensors_name(DType t) {
  for (const auto& d : kDTypes)
    if (d.dtype == t) return d.name;
  return nullptr;
}

struct Entry {
  std::string name;
  DType dtype;
  Shape shape;
  uint64_t begin, end;
};

Entry parse_entry(const std::string& path, const std::string& name, const nlohmann::json& v,
                  uint64_t data_size) {
  auto bad = [&](const std::string& what) { return Error(path, "tensor '" + name + "': " + what); };
  if (!v.is_object()) throw bad("header entry is not an object");
  if (!v.contains("dtype") || !v["dtype"].is_string()) throw bad("missing or non-string dtype");
  if (!v.contains("shape") || !v["shape"].is_array()) throw bad("missing or non-array shape");
  if (!v.contains("data_offsets") || !v["data_offsets"].is_array() || v["data_offsets"].size() != 2)
    throw bad("data_offsets must be [begin, end]");
  Entry e;
  e.name = name;
  const std::string dt = v["dtype"].get<std::string>();
  const auto* found = std::find_if(std::begin(kDTypes), std::end(kDTypes),
                                   [&](const DTypeName& d) { return dt == d.name; });
  if (found == std::end(kDTypes)) throw bad("unknown dtype '" + dt + "'");
  e.dtype = found->dtype;
  for (const auto& d : v["shape"]) {
    if (!d.is_number_unsigned()) throw bad("shape entries must be non-negative integers");
    const uint64_t x = d.get<uint64_t>();
    if (x > static_cast<uint64_t>(INT64_MAX)) throw bad("dimension too large");
    e.shape.push_back(static_cast<int64_t>(x));
  }
  if (e.shape.size() > 16) throw bad("rank " + std::to_string(e.shape.size()) + " exceeds 16");
  for (const auto& o : v["data_offsets"])
    if (!o.is_number_unsigned()) throw bad("data_offsets must be non-negative integers");
  e.begin = v["data_offsets"][0].get<uint64_t>();
  e.end = v["data_offsets"][1].get<uint64_t>();
  if (e.begin > e.end) throw bad("data_offsets begin > end");
  if (e.end > data_size)
    throw bad("data_offsets end " + std::to_string(e.end) + " is past the data (" +
              std::to_string(data_size) + " bytes)");
  // Element count, checked for overflow against the span (which is bounded by the file).
  const uint64_t span = e.end - e.begin;
  const uint64_t es = dtype_size(e.dtype);
  uint64_t n = 1;
  bool overflow = false;
  for (int64_t d : e.shape) {
    if (d != 0 && n > UINT64_MAX / static_cast<uint64_t>(d)) overflow = true;
    n *= static_cast<uint64_t>(d);
  }
  if (overflow || n > UINT64_MAX / es || n * es != span)
    throw bad("shape " + shape_to_string(e.shape) + " " + dt + " does not match its byte span of " +
              std::to_string(span) + " bytes");
  return e;
}

/// One linear pass over the header text: throws Error when brackets nest
/// deeper than kMaxDepth, and returns the keys of the top-level object in
/// order, decoded. Malformed text is left for the JSON parser to report.
std::vector<std::string> scan_header(const std::string& path, std::string_view text) {
  std::vector<std::string> keys;
  int depth = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '{' || c == '[') {
      if (++depth > kMaxDepth)
        throw Error(path, "header JSON nests deeper than " + std::to_string(kMaxDepth) + " levels");
    } else if (c == '}' || c == ']') {
      --depth;
    } else if (c == '"') {
      const size_t start = i;
      for (++i; i < text.size() && text[i] != '"'; ++i)
        if (text[i] == '\\') ++i;
      if (i >= text.size()) break;
      if (depth != 1) continue;
      size_t j = i + 1;
      while (j < text.size() && std::isspace(static_cast<unsigned char>(text[j]))) ++j;
      if (j >= text.size() || text[j] != ':') continue;
      try {
        keys.push_back(nlohmann::json::parse(text.substr(start, i + 1 - start)).get<std::string>());
      } catch (const nlohmann::json::exception& e) {
        throw Error(path, std::string("header is not valid JSON: ") + e.what());
      }
    }
  }
  return keys;
}

}  // namespace

// Every Error leaving the reader names the file (see attribute_errors).
static graph::Model read_safetensors_unattributed(const std::string& path);

graph::Model read_safetensors(const std::string& path) {
  return attribute_errors(path, [&] { return read_safetensors_unattributed(path); });
}

static graph::Model read_safetensors_unattributed(const std::string& path) {
  auto storage = Storage::map_file(path);
  const uint64_t file_size = storage->size();
  if (file_size < 8)
    throw Error(path,
                "too short for a safetensors header (" + std::to_string(file_size) + " bytes)");
  uint64_t n = 0;
  std::memcpy(&n, storage->data(), 8);  // little-endian host
  if (n > kMaxHeaderBytes)
    throw Error(path, "header length " + std::to_string(n) + " exceeds the 100 MB limit");
  if (n > file_size - 8)
    throw Error(path, "header length " + std::to_string(n) + " runs past the end of the file (" +
                          std::to_string(file_size) + " bytes)");
  const char* hdr = reinterpret_cast<const char*>(storage->data()) + 8;

  // Before building the DOM: refuse nesting deeper than a header needs, and
  // take the top-level keys in order (JSON objects forget order and keep only
  // the last of duplicate keys, which are legal JSON but not a valid header).
  const std::vector<std::string> keys = scan_header(path, std::string_view(hdr, n));
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(hdr, hdr + n);
  } catch (const nlohmann::json::exception& e) {
    std::string what = e.what();
    throw Error(path, "header is not valid JSON: " + what);
  }
  if (!header.is_object()) throw Error(path, "header is not a JSON object");
  std::set<std::string> seen;
  std::vector<std::string> order;
  for (const std::string& k : keys) {
    if (!seen.insert(k).second) throw Error(path, "duplicate tensor name '" + k + "' in header");
    if (k != "__metadata__") order.push_back(k);
  }

  graph::Model m;
  m.source = path;
  m.format = "safetensors";
  m.weight_convention = graph::WeightConvention::pytorch;
  const uint64_t data_start = 8 + n;
  const uint64_t data_size = file_size - data_start;
  if (header.contains("__metadata__")) {
    const auto& md = header["__metadata__"];
    if (!md.is_object()) throw Error(path, "__metadata__ is not an object");
    for (const auto& [mk, mv] : md.items()) {
      if (!mv.is_string()) throw Error(path, "__metadata__ value of '" + mk + "' is not a string");
      m.metadata[mk] = mv.get<std::string>();
    }
  }
  std::vector<Entry> entries;
  entries.reserve(order.size());
  for (const std::string& key : order)
    entries.push_back(parse_entry(path, key, header[key], data_size));

  // The buffer must be covered exactly: sorted spans meet end to begin.
  std::vector<const Entry*> by_offset;
  for (const auto& e : entries) by_offset.push_back(&e);
  std::sort(by_offset.begin(), by_offset.end(), [](const Entry* a, const Entry* b) {
    return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
  });
  uint64_t expect = 0;
  for (const Entry* e : by_offset) {
    if (e->begin < expect)
      throw Error(path, "tensor '" + e->name + "' overlaps the previous tensor (begins at " +
                            std::to_string(e->begin) + ", previous ends at " +
                            std::to_string(expect) + ")");
    if (e->begin > expect)
      throw Error(path, "gap of " + std::to_string(e->begin - expect) + " bytes before tensor '" +
                            e->name + "'");
    expect = e->end;
  }
  if (expect != data_size)
    throw Error(path, "tensors cover " + std::to_string(expect) + " of " +
                          std::to_string(data_size) + " data bytes");

  // Weights in the header's order (the order the writer listed them).
  for (const Entry& entry : entries) {
    const Entry* e = &entry;
    Tensor t = Tensor::view(storage, data_start + e->begin, e->dtype, e->shape);
    if (!t.is_aligned()) t = t.clone();
    m.graph.add_initializer(e->name, std::move(t));
  }
  return m;
}

void write_safetensors(const std::string& path, const std::vector<NamedTensor>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  std::set<std::string> names;
  for (const auto& t : tensors) {
    if (t.name.empty()) throw Error(path, "cannot write a tensor with an empty name");
    if (t.name == "__metadata__") throw Error(path, "'__metadata__' is reserved");
    if (!names.insert(t.name).second) throw Error(path, "duplicate tensor name '" + t.name + "'");
    if (!t.tensor.defined()) throw Error(path, "tensor '" + t.name + "' is undefined");
    if (!safetensors_name(t.tensor.dtype()))
      throw Error(path, "tensor '" + t.name + "': dtype " +
                            std::string(dtype_name(t.tensor.dtype())) + " has no safetensors name");
  }
  // Data order: larger elements first (stable), so every tensor starts at a
  // multiple of its element size with no padding between tensors (the buffer
  // must have no holes), as the reference writer arranges it.
  std::vector<size_t> order(tensors.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return dtype_size(tensors[a].tensor.dtype()) > dtype_size(tensors[b].tensor.dtype());
  });
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) {
    nlohmann::ordered_json md = nlohmann::ordered_json::object();
    for (const auto& [k, v] : metadata) md[k] = v;
    header["__metadata__"] = md;
  }
  std::vector<uint64_t> begin(tensors.size());
  uint64_t offset = 0;
  for (size_t i : order) {
    begin[i] = offset;
    offset += tensors[i].tensor.nbytes();
  }
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i].tensor;
    header[tensors[i].name] = {{"dtype", safetensors_name(t.dtype())},
                               {"shape", t.shape()},
                               {"data_offsets", {begin[i], begin[i] + t.nbytes()}}};
  }
  std::string json = header.dump();
  json.append((8 - json.size() % 8) % 8, ' ');  // data starts 8-byte aligned
  write_file_atomic(path, [&](std::ostream& os) {
    const uint64_t n = json.size();
    os.write(reinterpret_cast<const char*>(&n), 8);
    os.write(json.data(), static_cast<std::streamsize>(json.size()));
    for (size_t i : order) {
      const Tensor c = tensors[i].tensor.contiguous();
      os.write(reinterpret_cast<const char*>(c.raw()), static_cast<std::streamsize>(c.nbytes()));
    }
  });
}

}  // namespace tailor
