// The one ONNX TensorProto decoder (see onnx_tensor.h).
#include "onnx_tensor.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <bit>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <limits>

#include "tailor/core/error.h"
#include "tailor/core/onnx_dtype.h"
#include "tailor/core/text.h"

namespace tailor::io_detail {

static_assert(std::endian::native == std::endian::little,
              "raw_data and external data are little-endian; tailor reads them in place");

namespace fs = std::filesystem;

namespace {

/// A tensor's raw_data bytes, moved out of the ModelProto (the string's heap
/// buffer changes owner; nothing is copied), owned and writable.
class StringStorage final : public Storage {
 public:
  explicit StringStorage(std::string bytes) : bytes_(std::move(bytes)) {}
  const std::byte* data() const override {
    return reinterpret_cast<const std::byte*>(bytes_.data());
  }
  std::byte* mutable_data() override { return reinterpret_cast<std::byte*>(bytes_.data()); }
  size_t size() const override { return bytes_.size(); }

 private:
  std::string bytes_;
};

}  // namespace

std::string quote_name(const std::string& s) {
  std::string out = escape_control(s, 120);
  out.insert(out.begin(), '\'');
  out.push_back('\'');
  return out;
}

OnnxTensorDecoder::OnnxTensorDecoder(std::string path,
                                     std::shared_ptr<const onnx::ModelProto> proto,
                                     std::shared_ptr<Storage> self)
    : path_(std::move(path)), proto_(std::move(proto)), self_(std::move(self)) {
  const fs::path dir = fs::path(path_).parent_path();
  base_dir_ = dir.empty() ? fs::path(".") : dir;
  if (self_) self_location_ = fs::path(path_).filename().string();
}

void OnnxTensorDecoder::fail(const std::string& message) const {
  throw Error(path_, message);
}

/// Decodes a TensorProto named `name` (messages use it), validating shape,
/// type and data length before anything is allocated.
Tensor OnnxTensorDecoder::decode(const onnx::TensorProto& tp, const std::string& name) {
  const std::string who = "tensor " + quote_name(name);
  const int type = tp.data_type();
  const std::optional<DType> dt = dtype_of_onnx(type);
  if (!dt)
    fail(who + " has unsupported ONNX data type " + std::to_string(type) + " (" +
         std::string(onnx_type_name(type)) + ")");
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
    return from_external(tp, who, *dt, std::move(shape), bytes);
  }
  if (tp.has_raw_data()) {
    if (typed) fail(who + " has both raw_data and typed data fields");
    const std::string& raw = tp.raw_data();
    if (raw.size() != bytes)
      fail(who + ": raw_data holds " + std::to_string(raw.size()) + " bytes, " + what + " needs " +
           std::to_string(bytes));
    // The bytes move out of the proto this decoder's reader owns (decoded
    // once, held once); a buffer misaligned for the type is copied.
    auto storage = std::make_shared<StringStorage>(
        std::move(*const_cast<onnx::TensorProto&>(tp).mutable_raw_data()));
    if (bytes > 0 && reinterpret_cast<uintptr_t>(storage->data()) % es == 0)
      return Tensor::view(std::move(storage), 0, *dt, std::move(shape));
    Tensor t = Tensor::zeros(*dt, std::move(shape));
    if (bytes) std::memcpy(t.mutable_raw(), storage->data(), bytes);
    return t;
  }
  return from_typed(tp, who, *dt, std::move(shape), typed, what);
}

/// Tensor data from the typed repeated fields (float_data, int32_data, ...).
Tensor OnnxTensorDecoder::from_typed(const onnx::TensorProto& tp, const std::string& who, DType dt,
                                     Shape shape, size_t typed, const std::string& what) {
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
Tensor OnnxTensorDecoder::from_external(const onnx::TensorProto& tp, const std::string& who,
                                        DType dt, Shape shape, size_t bytes) {
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
  if (self_ && location == self_location_)  // a payload of the model file itself
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
  const auto [bi, ri] = std::mismatch(real_base.begin(), real_base.end(), real.begin(), real.end());
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
Tensor OnnxTensorDecoder::view_range(const std::shared_ptr<Storage>& storage,
                                     const std::string& location, std::optional<uint64_t> offset,
                                     std::optional<uint64_t> length, const std::string& who,
                                     DType dt, Shape shape, size_t bytes) {
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
  return t.is_aligned() || self_ ? t : t.clone();  // like safetensors and GGUF
}

}  // namespace tailor::io_detail
