// ONNX model reader: weights from initializers and Constant nodes (subgraphs
// included), tensor data from raw_data, typed fields or external files, and the
// [out, in] orientation of each weight from the ops that consume it.
#include "tailor/io/onnx_reader.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <bit>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <limits>
#include <optional>
#include <span>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "onnx_wire.h"
#include "tailor/core/error.h"
#include "tailor/core/text.h"

namespace tailor {
namespace {

static_assert(std::endian::native == std::endian::little,
              "raw_data and external data are little-endian; tailor reads them in place");

namespace fs = std::filesystem;

/// Printable, bounded form of a name taken from the file, quoted, for messages.
std::string quote_name(const std::string& s) {
  std::string out = escape_control(s, 120);
  out.insert(out.begin(), '\'');
  out.push_back('\'');
  return out;
}

/// Name of an ONNX TensorProto.DataType value (onnx.proto, including the
/// types newer than the libonnx this is built against).
const char* onnx_type_name(int t) {
  static const char* const names[] = {
      "UNDEFINED",      "FLOAT",      "UINT8",          "INT8",       "UINT16",   "INT16",
      "INT32",          "INT64",      "STRING",         "BOOL",       "FLOAT16",  "DOUBLE",
      "UINT32",         "UINT64",     "COMPLEX64",      "COMPLEX128", "BFLOAT16", "FLOAT8E4M3FN",
      "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ", "UINT4",      "INT4",     "FLOAT4E2M1"};
  if (t >= 0 && t < static_cast<int>(std::size(names))) return names[t];
  return "unknown";
}

/// Consumer roles of a value, as a bit set.
enum Role : uint8_t {
  kMatMulB = 1,     // MatMul input 1, Gemm input 1 with transB = 0: stored [in, out]
  kGemmBT = 2,      // Gemm input 1 with transB = 1: stored [out, in]
  kConvW = 4,       // Conv input 1
  kConvTransW = 8,  // ConvTranspose input 1
  kGatherData = 16  // Gather input 0: an embedding table [rows, cols], viewed [out, in] as stored
};
using Uses = std::unordered_map<std::string, uint8_t>;

bool is_default_domain(const std::string& d) {
  return d.empty() || d == "ai.onnx";
}

/// Layout of a weight from the roles of its direct consumers. Conflicting
/// roles resolve in the order conv, conv_transpose, in_out, out_in. A tensor
/// no matrix operation consumes (a bias or scale broadcast into Add or Mul,
/// even of rank 4) has no [out, in] view.
WeightLayout layout_for(const Tensor& t, uint8_t roles) {
  if (!is_floating(t.dtype()) || t.rank() < 2) return WeightLayout::none;
  if ((roles & kConvW) && t.rank() >= 3) return WeightLayout::conv;
  if ((roles & kConvTransW) && t.rank() >= 3) return WeightLayout::conv_transpose;
  if ((roles & kMatMulB) && t.rank() == 2) return WeightLayout::in_out;
  if (roles & (kGemmBT | kGatherData | kMatMulB)) return WeightLayout::out_in;
  return WeightLayout::none;
}

/// Reads one ONNX file; one instance per read_onnx call.
class Reader {
 public:
  Reader(std::string path, bool mapped) : path_(std::move(path)), mapped_(mapped) {
    fs::path dir = fs::path(path_).parent_path();
    base_dir_ = dir.empty() ? fs::path(".") : dir;
  }

  ModelFile read() {
    const std::shared_ptr<Storage> file = Storage::map_file(path_);
    auto proto = std::make_shared<onnx::ModelProto>();
    if (mapped_) {
      // The structure without the large payloads (each now external data
      // pointing into this file), parsed; the payloads stay in the mapping.
      self_ = file;
      self_location_ = fs::path(path_).filename().string();
      std::string structure;
      try {
        structure =
            detail::strip_onnx_payloads(std::span<const std::byte>(file->data(), file->size()),
                                        self_location_, kMappedMinBytes);
      } catch (const Error& e) {
        fail(std::string(e.what()));
      }
      if (structure.size() >= (size_t{1} << 31))
        fail("the model's structure without its weight payloads is " +
             std::to_string(structure.size()) + " bytes; protobuf reads at most 2 GiB");
      if (!proto->ParseFromString(structure))
        fail("not a valid ONNX model (protobuf parse failed)");
    } else {
      if (file->size() >= (size_t{1} << 31))
        fail("file is " + std::to_string(file->size()) +
             " bytes; a protobuf ONNX model must be under 2 GiB (larger models keep their "
             "weights in external data files)");
      if (!proto->ParseFromArray(file->data(), static_cast<int>(file->size())))
        fail("not a valid ONNX model (protobuf parse failed)");
    }
    if (!proto->has_graph()) fail("not a valid ONNX model (no graph)");

    ModelFile m;
    m.path = path_;
    m.format = "onnx";
    m.metadata["ir_version"] = std::to_string(proto->ir_version());
    if (!proto->producer_name().empty()) m.metadata["producer_name"] = proto->producer_name();
    if (!proto->producer_version().empty())
      m.metadata["producer_version"] = proto->producer_version();
    for (const auto& op : proto->opset_import())
      if (is_default_domain(op.domain())) m.metadata["opset"] = std::to_string(op.version());

    read_graph(proto->graph(), "");
    m.weights = std::move(weights_);
    m.onnx = std::move(proto);
    return m;
  }

 private:
  [[noreturn]] void fail(const std::string& message) const { throw Error(path_, message); }

  /// Adds the weights of `g` (initializers, then Constant nodes, then the
  /// weights of subgraphs in node order) and returns the values `g` and its
  /// subgraphs consume from outside `g`, with their roles.
  Uses read_graph(const onnx::GraphProto& g, const std::string& prefix) {
    if (g.sparse_initializer_size() > 0)
      fail("sparse initializer " + quote_name(g.sparse_initializer(0).values().name()) +
           " is unsupported");

    // This graph's own weights, with the names its nodes know them by.
    std::vector<std::pair<size_t, std::string>> local;  // (index in weights_, name in graph)
    std::unordered_set<std::string> local_names;
    auto add = [&](const std::string& name, Tensor t) {
      if (name.empty()) fail("a weight in graph " + quote_name(g.name()) + " has an empty name");
      if (!local_names.insert(name).second)
        fail("weight name " + quote_name(name) + " is defined twice in graph " +
             quote_name(g.name()));
      std::string unique = name;
      if (names_.count(unique)) {
        // Only a subgraph's weight can meet an existing name here: a graph's
        // own weights are added before those of its subgraphs.
        // Then "#2", "#3", ... (counted per name, so many repeats stay linear).
        const std::string base = prefix + name;
        unique = base;
        int& k = next_suffix_[base];
        while (names_.count(unique)) unique = base + "#" + std::to_string(k = std::max(k, 1) + 1);
      }
      names_.insert(unique);
      local.emplace_back(weights_.size(), name);
      weights_.push_back(Weight{unique, std::move(t), WeightLayout::none});
    };

    for (const onnx::TensorProto& init : g.initializer())
      add(init.name(), read_tensor(init, init.name()));
    for (const onnx::NodeProto& node : g.node()) {
      if (node.op_type() != "Constant" || !is_default_domain(node.domain())) continue;
      if (node.output_size() < 1 || node.output(0).empty())
        fail("Constant node " + quote_name(node.name()) + " has no output name");
      std::optional<Tensor> t = read_constant(node);
      if (t) add(node.output(0), std::move(*t));
    }

    // Consumers: this graph's nodes directly, and subgraph nodes that reach
    // this graph's values by outer-scope reference.
    Uses uses;
    for (int i = 0; i < g.node_size(); ++i) {
      const onnx::NodeProto& node = g.node(i);
      note_roles(node, uses);
      const std::string node_label =
          node.name().empty() ? node.op_type() + "@" + std::to_string(i) : node.name();
      for (const onnx::AttributeProto& a : node.attribute()) {
        if (a.has_g()) merge_outer(a.g(), prefix + node_label + "/" + a.name() + "/", uses);
        for (int k = 0; k < a.graphs_size(); ++k)
          merge_outer(a.graphs(k),
                      prefix + node_label + "/" + a.name() + "." + std::to_string(k) + "/", uses);
      }
    }
    for (const auto& [index, name] : local) {
      const auto it = uses.find(name);
      Weight& w = weights_[index];
      w.layout = layout_for(w.tensor, it == uses.end() ? 0 : it->second);
    }
    return uses;
  }

  /// Reads subgraph `sub` and adds to `uses` what it consumes from outer scopes.
  void merge_outer(const onnx::GraphProto& sub, const std::string& prefix, Uses& uses) {
    const Uses inner = read_graph(sub, prefix);
    std::unordered_set<std::string> defined;
    for (const auto& v : sub.input()) defined.insert(v.name());
    for (const auto& t : sub.initializer()) defined.insert(t.name());
    for (const auto& n : sub.node())
      for (const auto& o : n.output()) defined.insert(o);
    for (const auto& [name, roles] : inner)
      if (!defined.count(name)) uses[name] |= roles;
  }

  static void note_roles(const onnx::NodeProto& node, Uses& uses) {
    if (!is_default_domain(node.domain()) || node.input_size() < 2) return;
    const std::string& op = node.op_type();
    if (op == "Gather") uses[node.input(0)] |= kGatherData;
    uint8_t role = 0;
    if (op == "MatMul") {
      role = kMatMulB;
    } else if (op == "Gemm") {
      int64_t trans_b = 0;
      for (const auto& a : node.attribute())
        if (a.name() == "transB") trans_b = a.i();
      role = trans_b ? kGemmBT : kMatMulB;
    } else if (op == "Conv") {
      role = kConvW;
    } else if (op == "ConvTranspose") {
      role = kConvTransW;
    }
    if (role) uses[node.input(1)] |= role;
  }

  /// The value of a Constant node, or nullopt for a string constant (not a
  /// weight; skipped).
  std::optional<Tensor> read_constant(const onnx::NodeProto& node) {
    const std::string& out = node.output(0);
    const onnx::AttributeProto* value = nullptr;
    for (const onnx::AttributeProto& a : node.attribute()) {
      static const char* const kinds[] = {"value",         "value_float", "value_floats",
                                          "value_int",     "value_ints",  "value_string",
                                          "value_strings", "sparse_value"};
      if (std::find_if(std::begin(kinds), std::end(kinds),
                       [&](const char* k) { return a.name() == k; }) == std::end(kinds))
        continue;
      if (value)
        fail("Constant " + quote_name(out) + " has two value attributes (" + value->name() + ", " +
             a.name() + ")");
      value = &a;
    }
    if (!value) fail("Constant " + quote_name(out) + " has no value attribute");
    const std::string& kind = value->name();
    if (kind == "value") {
      if (!value->has_t())
        fail("Constant " + quote_name(out) + ": attribute 'value' holds no tensor");
      if (value->t().data_type() == onnx::TensorProto::STRING) return std::nullopt;
      return read_tensor(value->t(), out);
    }
    if (kind == "value_string" || kind == "value_strings") return std::nullopt;
    if (kind == "sparse_value")
      fail("Constant " + quote_name(out) + ": sparse_value is unsupported");
    if (kind == "value_float") {
      const float f = value->f();
      return Tensor::from_f32({}, std::span<const float>(&f, 1));
    }
    if (kind == "value_floats") {
      const auto& v = value->floats();
      return Tensor::from_f32({static_cast<int64_t>(v.size())},
                              std::span<const float>(v.data(), v.size()));
    }
    const bool scalar = kind == "value_int";
    const int64_t one = value->i();
    const int64_t* src = scalar ? &one : value->ints().data();
    const int64_t n = scalar ? 1 : value->ints_size();
    Tensor t = Tensor::zeros(DType::i64, scalar ? Shape{} : Shape{n});
    if (n) std::memcpy(t.mutable_raw(), src, static_cast<size_t>(n) * 8);
    return t;
  }

  /// Decodes a TensorProto named `name` (messages use it), validating shape,
  /// type and data length before anything is allocated.
  Tensor read_tensor(const onnx::TensorProto& tp, const std::string& name) {
    const std::string who = "tensor " + quote_name(name);
    const int type = tp.data_type();
    const std::optional<DType> dt = dtype_of_onnx(type);
    if (!dt)
      fail(who + " has unsupported ONNX data type " + std::to_string(type) + " (" +
           onnx_type_name(type) + ")");
    if (tp.has_segment()) fail(who + " is a segment of a larger tensor (unsupported)");

    Shape shape(tp.dims().begin(), tp.dims().end());
    const size_t es = dtype_size(*dt);
    // The byte size, and the product of the nonzero dims (which strides reach
    // even when a zero dim empties the tensor), must fit in int64.
    int64_t numel = 1, extent = 1;
    for (int64_t d : shape) {
      if (d < 0)
        fail(who + " has negative dimension " + std::to_string(d) + " in shape " +
             shape_to_string(shape));
      if (d != 0 && extent > std::numeric_limits<int64_t>::max() / static_cast<int64_t>(es) / d)
        fail(who + ": shape " + shape_to_string(shape) + " is too large (size overflows)");
      numel *= d;
      extent *= std::max<int64_t>(d, 1);
    }
    const size_t bytes = static_cast<size_t>(numel) * es;
    const std::string what = "shape " + shape_to_string(shape) + " " + std::string(dtype_name(*dt));

    const size_t typed = static_cast<size_t>(tp.float_data_size()) + tp.int32_data_size() +
                         tp.int64_data_size() + tp.double_data_size() + tp.uint64_data_size() +
                         tp.string_data_size();
    if (tp.data_location() == onnx::TensorProto::EXTERNAL) {
      if (tp.has_raw_data() || typed) fail(who + " has external data and inline data at once");
      return read_external(tp, who, *dt, std::move(shape), bytes);
    }
    if (tp.has_raw_data()) {
      if (typed) fail(who + " has both raw_data and typed data fields");
      const std::string& raw = tp.raw_data();
      if (raw.size() != bytes)
        fail(who + ": raw_data holds " + std::to_string(raw.size()) + " bytes, " + what +
             " needs " + std::to_string(bytes));
      Tensor t = Tensor::zeros(*dt, std::move(shape));
      if (bytes) std::memcpy(t.mutable_raw(), raw.data(), bytes);
      return t;
    }
    return read_typed(tp, who, *dt, std::move(shape), typed, what);
  }

  /// Tensor data from the typed repeated fields (float_data, int32_data, ...).
  Tensor read_typed(const onnx::TensorProto& tp, const std::string& who, DType dt, Shape shape,
                    size_t typed, const std::string& what) {
    const char* field = "int32_data";
    size_t have = static_cast<size_t>(tp.int32_data_size());
    if (dt == DType::f32) {
      field = "float_data";
      have = static_cast<size_t>(tp.float_data_size());
    } else if (dt == DType::f64) {
      field = "double_data";
      have = static_cast<size_t>(tp.double_data_size());
    } else if (dt == DType::i64) {
      field = "int64_data";
      have = static_cast<size_t>(tp.int64_data_size());
    }
    const int64_t numel = shape_numel(shape);
    if (have != typed)
      fail(who + " (" + std::string(dtype_name(dt)) + ") carries data in a field other than " +
           field);
    if (have != static_cast<size_t>(numel))
      fail(who + ": " + field + " holds " + std::to_string(have) + " values, " + what + " needs " +
           std::to_string(numel));
    Tensor t = Tensor::zeros(dt, std::move(shape));
    if (numel == 0) return t;
    std::byte* dst = t.mutable_raw();
    switch (dt) {
      case DType::f32:
        std::memcpy(dst, tp.float_data().data(), have * 4);
        return t;
      case DType::f64:
        std::memcpy(dst, tp.double_data().data(), have * 8);
        return t;
      case DType::i64:
        std::memcpy(dst, tp.int64_data().data(), have * 8);
        return t;
      case DType::i32:
        std::memcpy(dst, tp.int32_data().data(), have * 4);
        return t;
      default:
        break;
    }
    // 8- and 16-bit types, one value per int32 element. f16/bf16/u16 are bit
    // patterns in the low 16 bits (zero- or sign-extended).
    int32_t lo = 0, hi = 0;
    switch (dt) {
      case DType::i8:
        lo = -128, hi = 127;
        break;
      case DType::u8:
        lo = 0, hi = 255;
        break;
      case DType::boolean:
        lo = 0, hi = 1;
        break;
      case DType::i16:
        lo = -32768, hi = 32767;
        break;
      default:
        lo = -32768, hi = 65535;
        break;
    }
    const size_t es = dtype_size(dt);
    for (size_t i = 0; i < have; ++i) {
      const int32_t v = tp.int32_data(static_cast<int>(i));
      if (v < lo || v > hi)
        fail(who + ": int32_data[" + std::to_string(i) + "] = " + std::to_string(v) +
             " is out of range for " + std::string(dtype_name(dt)));
      if (es == 1) {
        dst[i] = static_cast<std::byte>(static_cast<uint8_t>(v));
      } else {
        const uint16_t u = static_cast<uint16_t>(v);
        std::memcpy(dst + 2 * i, &u, 2);
      }
    }
    return t;
  }

  /// A view of an external data file (mapped once per file).
  Tensor read_external(const onnx::TensorProto& tp, const std::string& who, DType dt, Shape shape,
                       size_t bytes) {
    std::string location;
    std::optional<uint64_t> offset, length;
    bool has_location = false;
    for (const onnx::StringStringEntryProto& e : tp.external_data()) {
      if (e.key() == "location") {
        location = e.value();
        has_location = true;
      } else if (e.key() == "offset" || e.key() == "length") {
        const std::string& s = e.value();
        uint64_t v = 0;
        const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
        if (s.empty() || ec != std::errc() || end != s.data() + s.size())
          fail(who + ": external data " + e.key() + " " + quote_name(s) +
               " is not a non-negative integer");
        (e.key() == "offset" ? offset : length) = v;
      }
    }
    if (!has_location || location.empty()) fail(who + ": external data has no location");
    if (mapped_ && location == self_location_)  // a payload of the model file itself
      return view_range(self_, location, offset, length, who, dt, std::move(shape), bytes);
    if (location.find('\0') != std::string::npos)
      fail(who + ": external data path " + quote_name(location) + " contains a NUL byte");
    const fs::path loc(location);
    const std::string escapes =
        who + ": external data path " + quote_name(location) + " escapes the model folder";
    if (loc.is_absolute() || loc.has_root_path()) fail(escapes + " (absolute path)");
    const fs::path rel = loc.lexically_normal();
    if (!rel.empty() && *rel.begin() == "..") fail(escapes);

    const fs::path full = base_dir_ / rel;
    std::error_code ec;
    if (!fs::exists(full, ec))
      fail(who + ": external data file " + quote_name(location) + " not found (looked for " +
           quote_name(full.string()) + ")");
    // Symbolic links must not lead out of the folder either.
    const fs::path real_base = fs::canonical(base_dir_, ec);
    const fs::path real = ec ? fs::path() : fs::canonical(full, ec);
    if (ec) fail(who + ": cannot resolve external data path " + quote_name(location));
    const auto [bi, ri] =
        std::mismatch(real_base.begin(), real_base.end(), real.begin(), real.end());
    if (bi != real_base.end()) fail(escapes + " (through a symbolic link)");

    std::shared_ptr<Storage>& storage = external_[real.string()];
    if (!storage) {
      try {
        storage = Storage::map_file(real.string());
      } catch (const Error& e) {
        fail(who + ": external data file " + quote_name(location) + ": " + e.message());
      }
    }
    return view_range(storage, location, offset, length, who, dt, std::move(shape), bytes);
  }

  /// A view of bytes [offset, offset + length) of `storage` (the file named
  /// `location`), checked against the file's size and the tensor's byte size.
  /// The mapped mode keeps a misaligned view (Tensor::to reads it bytewise);
  /// otherwise a misaligned range is copied.
  Tensor view_range(const std::shared_ptr<Storage>& storage, const std::string& location,
                    std::optional<uint64_t> offset, std::optional<uint64_t> length,
                    const std::string& who, DType dt, Shape shape, size_t bytes) {
    const uint64_t size = storage->size();
    const uint64_t off = offset.value_or(0);
    const uint64_t len = length.value_or(bytes);
    if (off > size || len > size - off)
      fail(who + ": external data range offset " + std::to_string(off) + " length " +
           std::to_string(len) + " exceeds file " + quote_name(location) + " of " +
           std::to_string(size) + " bytes");
    if (len != bytes)
      fail(who + ": external data length is " + std::to_string(len) + " bytes, shape " +
           shape_to_string(shape) + " " + std::string(dtype_name(dt)) + " needs " +
           std::to_string(bytes));
    Tensor t = Tensor::view(storage, static_cast<size_t>(off), dt, std::move(shape));
    return t.is_aligned() || mapped_ ? t : t.clone();  // like safetensors and GGUF
  }

  /// Payloads smaller than this stay inline in the mapped mode.
  static constexpr size_t kMappedMinBytes = 4096;

  std::string path_;
  bool mapped_ = false;
  std::shared_ptr<Storage> self_;  // the model file's mapping (mapped mode)
  std::string self_location_;
  fs::path base_dir_;
  std::vector<Weight> weights_;
  std::unordered_set<std::string> names_;
  std::unordered_map<std::string, int> next_suffix_;
  std::unordered_map<std::string, std::shared_ptr<Storage>> external_;
};

}  // namespace

// Every Error leaving the reader names the file (see attribute_errors).

static ModelFile read_onnx_unattributed(const std::string& path, bool mapped);

ModelFile read_onnx(const std::string& path) {
  return attribute_errors(path, [&] { return read_onnx_unattributed(path, false); });
}

ModelFile read_onnx_mapped(const std::string& path) {
  return attribute_errors(path, [&] { return read_onnx_unattributed(path, true); });
}

static ModelFile read_onnx_unattributed(const std::string& path, bool mapped) {
  return Reader(path, mapped).read();
}

std::optional<DType> dtype_of_onnx(int t) {
  using TP = onnx::TensorProto;
  switch (t) {
    case TP::FLOAT:
      return DType::f32;
    case TP::FLOAT16:
      return DType::f16;
    case TP::BFLOAT16:
      return DType::bf16;
    case TP::DOUBLE:
      return DType::f64;
    case TP::INT8:
      return DType::i8;
    case TP::UINT8:
      return DType::u8;
    case TP::INT16:
      return DType::i16;
    case TP::UINT16:
      return DType::u16;
    case TP::INT32:
      return DType::i32;
    case TP::INT64:
      return DType::i64;
    case TP::BOOL:
      return DType::boolean;
    default:
      return std::nullopt;
  }
}

int onnx_of_dtype(DType t) {
  using TP = onnx::TensorProto;
  switch (t) {
    case DType::f32:
      return TP::FLOAT;
    case DType::f16:
      return TP::FLOAT16;
    case DType::bf16:
      return TP::BFLOAT16;
    case DType::f64:
      return TP::DOUBLE;
    case DType::i8:
      return TP::INT8;
    case DType::u8:
      return TP::UINT8;
    case DType::i16:
      return TP::INT16;
    case DType::u16:
      return TP::UINT16;
    case DType::i32:
      return TP::INT32;
    case DType::i64:
      return TP::INT64;
    case DType::boolean:
      return TP::BOOL;
  }
  return TP::UNDEFINED;
}

}  // namespace tailor
