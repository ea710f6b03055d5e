// The one ONNX TensorProto decoder: initializers and tensor attributes
// (Constant values) of every graph go through it, each decoded once.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>

#include "tailor/core/tensor.h"

namespace onnx {
class ModelProto;
class TensorProto;
}  // namespace onnx

namespace tailor::io_detail {

/// Printable, bounded form of a name taken from the file, quoted, for messages.
std::string quote_name(const std::string& s);

/// Decodes the TensorProtos of one ONNX file.
///
/// Data from `raw_data` (little-endian: the string's buffer moved out of the
/// ModelProto, which the reader owns, into the tensor's storage, so the bytes
/// are neither copied nor held twice; copied only when misaligned for the
/// type; the proto's raw_data is left empty), the typed fields (float_data; int32_data for
/// i32/i16/i8/u16/u8/bool and the bit patterns of f16/bf16; int64_data;
/// double_data; copied), or external data files (`location`, `offset`,
/// `length`; mapped once per file and viewed, a misaligned range copied),
/// which must resolve inside the model's folder, symbolic links included. In
/// the mapped mode (read_onnx_mapped) external data naming the model file
/// itself views its mapping, misaligned or not.
///
/// Throws Error (naming the model file) for an unsupported data type (STRING,
/// complex, UINT32/64, FLOAT8, INT4, ...), a segment, a negative dimension or
/// a size that overflows, data whose length disagrees with shape and type,
/// raw and typed data at once, an out-of-range int32_data value, and external
/// data that escapes the folder, is missing or whose range does not fit the file.
class OnnxTensorDecoder {
 public:
  /// `path`: the model file; `proto`: the parsed ModelProto the tensors
  /// belong to; `self`: the file's mapping in the mapped mode (else null).
  OnnxTensorDecoder(std::string path, std::shared_ptr<const onnx::ModelProto> proto,
                    std::shared_ptr<Storage> self);

  /// The tensor of `tp`; `name` (the initializer's or the Constant's output)
  /// for messages.
  Tensor decode(const onnx::TensorProto& tp, const std::string& name);

  [[noreturn]] void fail(const std::string& message) const;

 private:
  Tensor from_typed(const onnx::TensorProto& tp, const std::string& who, DType dt, Shape shape,
                    size_t typed, const std::string& what);
  Tensor from_external(const onnx::TensorProto& tp, const std::string& who, DType dt, Shape shape,
                       size_t bytes);
  Tensor view_range(const std::shared_ptr<Storage>& storage, const std::string& location,
                    std::optional<uint64_t> offset, std::optional<uint64_t> length,
                    const std::string& who, DType dt, Shape shape, size_t bytes);

  std::string path_;
  std::shared_ptr<const onnx::ModelProto> proto_;
  std::shared_ptr<Storage> self_;  // the model file's mapping (mapped mode)
  std::string self_location_;
  std::filesystem::path base_dir_;
  std::unordered_map<std::string, std::shared_ptr<Storage>> external_;
};

}  // namespace tailor::io_detail
