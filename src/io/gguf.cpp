// GGUF reader, after the format description in
// https://github.com/ggml-org/ggml/blob/master/docs/gguf.md:
//
//   u32 magic "GGUF", u32 version, u64 tensor_count, u64 metadata_kv_count,
//   metadata_kv_count × { string key, u32 value_type, value },
//   tensor_count × { string name, u32 n_dims, u64 ne[n_dims], u32 ggml_type,
//                    u64 offset (relative to the data section) },
//   padding to general.alignment (default 32), tensor data.
//
// Strings are u64 length + bytes (no terminator). Version 1 used 32-bit counts
// and lengths and is refused; versions 2 and 3 share this layout (3 added
// big-endian files, which are refused by their byte-swapped version).
#include "tailor/io/gguf.h"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "io/byte_cursor.h"
#include "io/gguf_value_types.h"
#include "tailor/core/error.h"
#include "tailor/schemes/ggml_blocks.h"

namespace tailor {
namespace {

using io_detail::ByteCursor;
using io_detail::checked_add;
using io_detail::checked_mul;

constexpr uint32_t kMaxDims = 4;   // GGML_MAX_DIMS
constexpr int kMaxArrayDepth = 8;  // nested arrays deeper than this are refused
constexpr uint64_t kDefaultAlignment = 32;
// Smallest encodings, for bounding counts by the bytes remaining.
constexpr uint64_t kMinTensorInfo = 8 + 4 + 4 + 8;  // empty name, n_dims 0, type, offset
constexpr uint64_t kMinKv = 8 + 4 + 1;              // empty key, type, 1-byte value

using namespace gguf_value;  // NOLINT: the type codes read as in the spec

const char* value_type_name(uint32_t t) {
  static constexpr const char* names[] = {"uint8",  "int8",    "uint16", "int16",  "uint32",
                                          "int32",  "float32", "bool",   "string", "array",
                                          "uint64", "int64",   "float64"};
  return t <= kF64 ? names[t] : "unknown";
}

// Bytes of a fixed-size value type; 0 for string and array.
uint64_t fixed_size(uint32_t t) {
  switch (t) {
    case kU8:
    case kI8:
    case kBool:
      return 1;
    case kU16:
    case kI16:
      return 2;
    case kU32:
    case kI32:
    case kF32:
      return 4;
    case kU64:
    case kI64:
    case kF64:
      return 8;
    default:
      return 0;
  }
}

// Smallest encoding of one value of type t (a string: its length; an array:
// element type and count).
uint64_t min_size(uint32_t t) {
  if (t == kString) return 8;
  if (t == kArray) return 4 + 8;
  return fixed_size(t);
}

// ggml_type names by value (ggml.h); empty for values never assigned.
std::string ggml_type_name(uint32_t t) {
  static constexpr const char* names[] = {
      "F32",   "F16",        "Q4_0",       "Q4_1",       "Q4_2",     "Q4_3",     "Q5_0",
      "Q5_1",  "Q8_0",       "Q8_1",       "Q2_K",       "Q3_K",     "Q4_K",     "Q5_K",
      "Q6_K",  "Q8_K",       "IQ2_XXS",    "IQ2_XS",     "IQ3_XXS",  "IQ1_S",    "IQ4_NL",
      "IQ3_S", "IQ2_S",      "IQ4_XS",     "I8",         "I16",      "I32",      "I64",
      "F64",   "IQ1_M",      "BF16",       "Q4_0_4_4",   "Q4_0_4_8", "Q4_0_8_8", "TQ1_0",
      "TQ2_0", "IQ4_NL_4_4", "IQ4_NL_4_8", "IQ4_NL_8_8", "MXFP4"};
  if (t < std::size(names)) return names[t];
  return std::to_string(t);
}

/// The scheme of a ggml block type ("q8_0", "q4_0"); empty for the others.
std::string block_label(GgmlType t) {
  return t == GgmlType::q8_0 ? "q8_0" : t == GgmlType::q4_0 ? "q4_0" : "";
}

bool is_quantized_type(uint32_t t) {
  // Everything from Q4_0 up except the plain integer and float types.
  return t >= 2 && t < 40 && !(t >= 24 && t <= 28) && t != 30;
}

std::string scalar_to_string(ByteCursor& c, uint32_t type) {
  switch (type) {
    case kU8:
      return std::to_string(c.read<uint8_t>("uint8 value"));
    case kI8:
      return std::to_string(c.read<int8_t>("int8 value"));
    case kU16:
      return std::to_string(c.read<uint16_t>("uint16 value"));
    case kI16:
      return std::to_string(c.read<int16_t>("int16 value"));
    case kU32:
      return std::to_string(c.read<uint32_t>("uint32 value"));
    case kI32:
      return std::to_string(c.read<int32_t>("int32 value"));
    case kU64:
      return std::to_string(c.read<uint64_t>("uint64 value"));
    case kI64:
      return std::to_string(c.read<int64_t>("int64 value"));
    case kF32:
      return fmt::format("{}", c.read<float>("float32 value"));
    case kF64:
      return fmt::format("{}", c.read<double>("float64 value"));
    case kBool: {
      const auto b = c.read<uint8_t>("bool value");
      if (b > 1)
        throw Error(c.path(), "bool value " + std::to_string(b) + " at offset " +
                                  std::to_string(c.pos() - 1) + " is neither 0 nor 1");
      return b ? "true" : "false";
    }
    default:
      throw Error(c.path(), "internal: scalar_to_string of type " + std::to_string(type));
  }
}

std::string_view read_string(ByteCursor& c, std::string_view what) {
  const auto len = c.read<uint64_t>(std::string(what) + " length");
  if (len > c.remaining())
    throw Error(c.path(), std::string(what) + " length " + std::to_string(len) + " at offset " +
                              std::to_string(c.pos() - 8) + " exceeds the " +
                              std::to_string(c.remaining()) + " bytes remaining");
  return c.bytes(static_cast<size_t>(len), what);
}

void check_value_type(const ByteCursor& c, uint32_t type, std::string_view key) {
  if (type > kF64)
    throw Error(c.path(), "metadata key " + io_detail::quoted(key) + " has unknown value type " +
                              std::to_string(type) + " (0..12 are defined)");
}

// Skips one array body (element type and count already validated by the caller
// against `depth`), reading nested strings and arrays element by element.
void skip_array(ByteCursor& c, std::string_view key, int depth) {
  const auto elem = c.read<uint32_t>("array element type");
  check_value_type(c, elem, key);
  const auto n = c.read<uint64_t>("array length");
  const uint64_t min = min_size(elem);
  if (n > c.remaining() / min)
    throw Error(c.path(), "metadata key " + io_detail::quoted(key) + ": array of " +
                              std::to_string(n) + " " + value_type_name(elem) +
                              " values cannot fit in the " + std::to_string(c.remaining()) +
                              " bytes remaining");
  if (elem == kArray && depth >= kMaxArrayDepth)
    throw Error(c.path(), "metadata key " + io_detail::quoted(key) +
                              ": arrays nested deeper than " + std::to_string(kMaxArrayDepth) +
                              " levels");
  if (const uint64_t fs = fixed_size(elem)) {
    c.skip(static_cast<size_t>(n * fs), "array data");  // n * fs ≤ remaining, checked above
    return;
  }
  for (uint64_t i = 0; i < n; ++i) {
    if (elem == kString)
      read_string(c, "string array element");
    else
      skip_array(c, key, depth + 1);
  }
}

struct TensorInfo {
  std::string name;
  Shape shape;               // row-major (ne reversed)
  uint32_t type = 0;         // ggml_type
  DType dtype = DType::f32;  // u8 for the block types
  uint64_t offset = 0;       // relative to the data section
  uint64_t nbytes = 0;
  uint64_t begin = 0;  // absolute, filled in once the data section is known
};

/// Reads one tensor info; Q4_0 and Q8_0 blocks are u8 bytes.
TensorInfo read_tensor_info(ByteCursor& c) {
  TensorInfo t;
  t.name = std::string(read_string(c, "tensor name"));
  const std::string& path = c.path();
  const auto n_dims = c.read<uint32_t>("tensor dimension count");
  if (n_dims > kMaxDims)
    throw Error(path, "tensor " + io_detail::quoted(t.name) + " has " + std::to_string(n_dims) +
                          " dimensions (at most " + std::to_string(kMaxDims) + ")");
  uint64_t ne[kMaxDims] = {};
  uint64_t numel = 1;
  for (uint32_t i = 0; i < n_dims; ++i) {
    ne[i] = c.read<uint64_t>("tensor dimension");
    if (ne[i] > static_cast<uint64_t>(INT64_MAX))
      throw Error(path, "tensor " + io_detail::quoted(t.name) + " dimension " + std::to_string(i) +
                            " is " + std::to_string(ne[i]) + " (too large)");
    numel = checked_mul(numel, ne[i], path, "tensor " + io_detail::quoted(t.name));
  }
  const auto type = c.read<uint32_t>("tensor type");
  t.offset = c.read<uint64_t>("tensor offset");
  t.type = type;
  if (type == 2 || type == 8) {
    if (n_dims == 0 || ne[0] % 32 != 0)
      throw Error(path, "tensor " + io_detail::quoted(t.name) + " of type " + ggml_type_name(type) +
                            " has rows of " + std::to_string(n_dims ? ne[0] : 0) +
                            " elements, not whole blocks of 32");
    t.dtype = DType::u8;
    t.nbytes =
        checked_mul(numel / 32, type == 2 ? 18 : 34, path, "tensor " + io_detail::quoted(t.name));
    for (uint32_t i = n_dims; i-- > 0;) t.shape.push_back(static_cast<int64_t>(ne[i]));
    return t;
  }
  switch (type) {
    case 0:
      t.dtype = DType::f32;
      break;
    case 1:
      t.dtype = DType::f16;
      break;
    case 30:
      t.dtype = DType::bf16;
      break;
    default: {
      const std::string why = is_quantized_type(type)
                                  ? "of the quantized types only Q8_0 and Q4_0 are read"
                              : type < 40 ? "only F32, F16, BF16, Q8_0 and Q4_0 tensors are read"
                                          : "unknown type";
      throw Error(path, "tensor " + io_detail::quoted(t.name) + " has unsupported GGUF type " +
                            ggml_type_name(type) + " (" + why + ")");
    }
  }
  t.nbytes = checked_mul(numel, dtype_size(t.dtype), path, "tensor " + io_detail::quoted(t.name));
  for (uint32_t i = n_dims; i-- > 0;) t.shape.push_back(static_cast<int64_t>(ne[i]));
  return t;
}

/// A parsed file: metadata in `model` (no initializers yet), the checked
/// tensor infos and the mapping they point into, and the values of the
/// string, float32 and int32 arrays whose keys the caller asked for.
struct ParsedGguf {
  graph::Model model;
  std::vector<TensorInfo> infos;
  std::shared_ptr<Storage> storage;
  std::unordered_map<std::string, GgufValue> arrays;
};

ParsedGguf parse_gguf(const std::string& path,
                      const std::unordered_set<std::string>& array_keys = {});

/// The elements of the array value at `c` (element type, count, elements),
/// already bounds-checked by skip_array: string, float32 and int32 arrays;
/// Error naming the key for another element type.
GgufValue read_array(ByteCursor c, std::string_view key) {
  const auto elem = c.read<uint32_t>("array element type");
  const auto n = static_cast<size_t>(c.read<uint64_t>("array length"));
  auto fixed = [&]<class T>(std::vector<T> v) {
    v.resize(n);
    if (n) std::memcpy(v.data(), c.bytes(n * sizeof(T), "array data").data(), n * sizeof(T));
    return GgufValue(std::move(v));
  };
  if (elem == kF32) return fixed(std::vector<float>{});
  if (elem == kI32) return fixed(std::vector<int32_t>{});
  if (elem != kString)
    throw Error(c.path(), "metadata key " + io_detail::quoted(key) + " is an array of " +
                              value_type_name(elem) + " (string, float32 or int32 expected)");
  std::vector<std::string> v;
  v.reserve(n);
  for (size_t i = 0; i < n; ++i) v.emplace_back(read_string(c, "string array element"));
  return v;
}

}  // namespace

// Every Error leaving the reader names the file (see attribute_errors).
graph::Model read_gguf(const std::string& path) {
  return attribute_errors(path, [&] {
    ParsedGguf p = parse_gguf(path);
    for (TensorInfo& t : p.infos) {
      if (t.dtype == DType::u8) {  // Q8_0 / Q4_0 blocks, decoded to f32
        const auto* data = reinterpret_cast<const uint8_t*>(p.storage->data()) + t.begin;
        p.model.graph.add_initializer(
            t.name, decode_ggml_tensor(static_cast<GgmlType>(t.type), t.shape, data, t.nbytes));
        continue;
      }
      // A view of the mapping; copied when the data is not aligned for the dtype
      // (possible only with general.alignment 1 or 2).
      p.model.graph.add_initializer(
          t.name,
          Tensor::view(p.storage, static_cast<size_t>(t.begin), t.dtype, t.shape).contiguous());
    }
    return std::move(p.model);
  });
}

std::vector<GgufTensor> read_gguf_tensors(const std::string& path) {
  return attribute_errors(path, [&] {
    ParsedGguf p = parse_gguf(path);
    std::vector<GgufTensor> out;
    for (const TensorInfo& t : p.infos)
      out.push_back({t.name, static_cast<GgmlType>(t.type), t.shape,
                     Tensor::view(p.storage, static_cast<size_t>(t.begin), DType::u8,
                                  {static_cast<int64_t>(t.nbytes)})});
    return out;
  });
}

std::optional<Llama2cTokenizer> read_gguf_tokenizer(const std::string& path) {
  return attribute_errors(path, [&]() -> std::optional<Llama2cTokenizer> {
    const std::string kTokens = "tokenizer.ggml.tokens", kScores = "tokenizer.ggml.scores",
                      kTypes = "tokenizer.ggml.token_type";
    ParsedGguf p = parse_gguf(path, {kTokens, kScores, kTypes});
    const auto tokens_at = p.arrays.find(kTokens);
    if (tokens_at == p.arrays.end()) return std::nullopt;
    const auto model_at = p.model.metadata.find("tokenizer.ggml.model");
    if (model_at != p.model.metadata.end() && model_at->second != "llama")
      throw Error(path, "tokenizer.ggml.model is " + io_detail::quoted(model_at->second) +
                            ", not a llama (SentencePiece) vocabulary");
    const auto* tokens = std::get_if<std::vector<std::string>>(&tokens_at->second);
    check(tokens != nullptr, path, kTokens + " is not an array of strings");
    const auto scores_at = p.arrays.find(kScores);
    const auto* scores =
        scores_at == p.arrays.end() ? nullptr : std::get_if<std::vector<float>>(&scores_at->second);
    check(scores != nullptr && scores->size() == tokens->size(), path,
          kTokens + " holds " + std::to_string(tokens->size()) + " tokens but " + kScores +
              " is missing, not float32, or of another length");
    const auto types_at = p.arrays.find(kTypes);
    const auto* types =
        types_at == p.arrays.end() ? nullptr : std::get_if<std::vector<int32_t>>(&types_at->second);
    check(types == nullptr || types->size() == tokens->size(), path,
          kTypes + " is of another length than " + kTokens);
    Llama2cTokenizer t;
    t.scores = *scores;
    t.vocab.reserve(tokens->size());
    const std::string_view kSpace = "\xE2\x96\x81";  // SentencePiece's U+2581 for ' '
    for (size_t id = 0; id < tokens->size(); ++id) {
      const std::string& text = (*tokens)[id];
      std::string v;
      if (types && (*types)[id] == 3 && (text == "<s>" || text == "</s>")) {
        v = "\n" + text + "\n";  // llama2.c's spelling of BOS / EOS
      } else {
        for (size_t i = 0; i < text.size();) {
          if (text.compare(i, kSpace.size(), kSpace) == 0) {
            v += ' ';
            i += kSpace.size();
          } else {
            v += text[i++];
          }
        }
      }
      t.max_token_length = std::max(t.max_token_length, static_cast<int32_t>(v.size()));
      t.vocab.push_back(std::move(v));
    }
    return t;
  });
}

std::string ggml_type_name(GgmlType type) {
  return ggml_type_name(static_cast<uint32_t>(type));
}

std::unique_ptr<schemes::Encoded> ggml_tensor_encoded(const GgufTensor& t) {
  const std::string label = block_label(t.type);
  check(!label.empty(), t.name, "GGUF type " + ggml_type_name(t.type) + " is not Q8_0 or Q4_0");
  check(t.shape.size() == 2, t.name,
        "a " + ggml_type_name(t.type) + " tensor of shape " + shape_to_string(t.shape) +
            " is not a matrix");
  return attribute_errors(t.name, [&] {
    return schemes::from_ggml_blocks(label, t.shape[0], t.shape[1],
                                     reinterpret_cast<const uint8_t*>(t.data.raw()),
                                     t.data.nbytes());
  });
}

Tensor decode_ggml_tensor(GgmlType type, const Shape& shape, const uint8_t* data, uint64_t nbytes) {
  const int64_t numel = shape_numel(shape);
  if (numel == 0) return Tensor::zeros(DType::f32, shape);
  const std::string label = block_label(type);
  check(!label.empty(), ggml_type_name(type), "is not Q8_0 or Q4_0");
  const int64_t in = shape.back();
  return schemes::from_ggml_blocks(label, numel / in, in, data, nbytes)->decode().reshape(shape);
}

namespace {

ParsedGguf parse_gguf(const std::string& path, const std::unordered_set<std::string>& array_keys) {
  const std::shared_ptr<Storage> storage = Storage::map_file(path);
  const size_t size = storage->size();
  ByteCursor c(storage->data(), size, path);
  if (size < 4 || std::memcmp(storage->data(), "GGUF", 4) != 0)
    throw Error(path, "not a GGUF file: the first 4 bytes are not the magic 'GGUF'");
  c.skip(4, "magic");
  const auto version = c.read<uint32_t>("version");
  if (version == 0x02000000u || version == 0x03000000u)
    throw Error(path, "big-endian GGUF files are not supported");
  if (version != 2 && version != 3)
    throw Error(path, "unsupported GGUF version " + std::to_string(version) +
                          " (versions 2 and 3 are read)");
  const auto tensor_count = c.read<uint64_t>("tensor count");
  const auto kv_count = c.read<uint64_t>("metadata key/value count");
  if (tensor_count > c.remaining() / kMinTensorInfo)
    throw Error(path, "tensor count " + std::to_string(tensor_count) +
                          " cannot fit in the file (each tensor takes at least " +
                          std::to_string(kMinTensorInfo) + " bytes, " +
                          std::to_string(c.remaining()) + " remain)");
  if (kv_count > c.remaining() / kMinKv)
    throw Error(path, "metadata key/value count " + std::to_string(kv_count) +
                          " cannot fit in the file (each takes at least " + std::to_string(kMinKv) +
                          " bytes, " + std::to_string(c.remaining()) + " remain)");

  ParsedGguf parsed;
  parsed.storage = storage;
  graph::Model& model = parsed.model;
  model.source = path;
  model.format = "gguf";
  model.weight_convention = graph::WeightConvention::out_in;
  uint64_t alignment = kDefaultAlignment;
  std::unordered_set<std::string> keys;
  for (uint64_t i = 0; i < kv_count; ++i) {
    const std::string key(read_string(c, "metadata key"));
    if (!keys.insert(key).second)
      throw Error(path, "duplicate metadata key " + io_detail::quoted(key));
    const auto type = c.read<uint32_t>("metadata value type");
    check_value_type(c, type, key);
    std::string value;
    if (type == kString) {
      value = std::string(read_string(c, "string value"));
    } else if (type == kArray) {
      const size_t start = c.pos();
      skip_array(c, key, 1);
      if (array_keys.count(key))
        parsed.arrays.emplace(
            key, read_array(ByteCursor(storage->data() + start, c.pos() - start, path), key));
      // Re-read the count for the summary (validated by skip_array).
      uint64_t n;
      std::memcpy(&n, storage->data() + start + 4, 8);
      value = "[array of " + std::to_string(n) + "]";
    } else {
      value = scalar_to_string(c, type);
    }
    if (key == "general.alignment") {
      if (type != kU32)
        throw Error(path, std::string("general.alignment must be a uint32, found ") +
                              value_type_name(type));
      alignment = std::stoull(value);
      if (alignment == 0 || (alignment & (alignment - 1)) != 0)
        throw Error(path, "general.alignment " + value + " is not a power of two");
    }
    model.metadata[key] = std::move(value);
  }

  std::vector<TensorInfo> infos;
  // Counts are bounded by the bytes remaining, but each info takes more memory
  // than its 24-byte minimum on disk: grow as infos are read, not up front.
  infos.reserve(static_cast<size_t>(std::min<uint64_t>(tensor_count, 1024)));
  std::unordered_set<std::string> names;
  for (uint64_t i = 0; i < tensor_count; ++i) {
    infos.push_back(read_tensor_info(c));
    if (!names.insert(infos.back().name).second)
      throw Error(path, "duplicate tensor name " + io_detail::quoted(infos.back().name));
  }

  // The data section starts at the first multiple of the alignment after the
  // tensor infos (pos ≤ size, so this cannot overflow).
  const uint64_t data_start = (c.pos() + alignment - 1) / alignment * alignment;
  for (TensorInfo& t : infos) {
    if (t.offset % alignment != 0)
      throw Error(path, "tensor " + io_detail::quoted(t.name) + " offset " +
                            std::to_string(t.offset) + " is not a multiple of the alignment " +
                            std::to_string(alignment));
    t.begin =
        checked_add(data_start, t.offset, path, "tensor " + io_detail::quoted(t.name) + " offset");
    const uint64_t end =
        checked_add(t.begin, t.nbytes, path, "tensor " + io_detail::quoted(t.name));
    if (end > size)
      throw Error(path, "tensor " + io_detail::quoted(t.name) + " data [" +
                            std::to_string(t.begin) + ", " + std::to_string(end) +
                            ") lies past the end of the file (" + std::to_string(size) + " bytes)");
  }
  std::vector<const TensorInfo*> by_begin;
  for (const TensorInfo& t : infos)
    if (t.nbytes > 0) by_begin.push_back(&t);
  std::sort(by_begin.begin(), by_begin.end(),
            [](const TensorInfo* a, const TensorInfo* b) { return a->begin < b->begin; });
  for (size_t i = 1; i < by_begin.size(); ++i) {
    const TensorInfo& a = *by_begin[i - 1];
    const TensorInfo& b = *by_begin[i];
    if (b.begin < a.begin + a.nbytes)
      throw Error(path, "tensors " + io_detail::quoted(a.name) + " and " +
                            io_detail::quoted(b.name) + " overlap (data offsets " +
                            std::to_string(a.offset) + " and " + std::to_string(b.offset) + ")");
  }

  parsed.infos = std::move(infos);
  return parsed;
}

}  // namespace
}  // namespace tailor
