// A model file as tailor sees it: named weight tensors with their orientation,
// file metadata, and (for ONNX) the graph.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tailor/core/tensor.h"

namespace onnx {
class ModelProto;
}

namespace tailor {

/// How a weight is stored relative to the [out, in] view (DESIGN.md, "Weight
/// orientation"): one row per output channel, the reduction axis last.
enum class WeightLayout {
  /// Stored [out, in, ...]: PyTorch/HF linear weights and embeddings, llama2.c
  /// and GGUF matrices (after reversing ggml's ne order), ONNX Gemm B with
  /// transB = 1 and Gather tables. Trailing dims are flattened into `in`.
  out_in,
  /// Stored [in, out]: ONNX MatMul's second operand, Gemm's B with transB = 0.
  in_out,
  /// Conv kernel [out, in/groups, kh, kw (, ...)], viewed [out, in/groups·kh·kw];
  /// safetensors gives it to every floating tensor of rank ≥ 3 (PyTorch convention).
  conv,
  /// ConvTranspose kernel [in, out/groups, kh, kw (, ...)], viewed
  /// [out/groups, in·kh·kw] (dims 0 and 1 exchanged, then flattened).
  conv_transpose,
  /// No matrix view: rank 0 or 1 (biases, norm gains, scalars), non-floating
  /// tensors, and in ONNX tensors that no matrix operation consumes (biases and
  /// scales broadcast into Add or Mul, whatever their rank).
  none,
};

/// "out_in", "in_out", "conv", "conv_transpose", "none".
const char* layout_name(WeightLayout layout);

/// One weight tensor of a model.
struct Weight {
  std::string name;
  /// The tensor exactly as stored: dtype, shape, bytes (often a view of a
  /// memory-mapped file).
  Tensor tensor;
  WeightLayout layout = WeightLayout::none;

  /// Shape of the [out, in] view: {out, in}, or {} when layout is none.
  Shape out_in_shape() const;
  /// The [out, in] view as a contiguous f32 tensor (converted and, for in_out
  /// and conv_transpose, transposed; a copy). Throws Error for layout none.
  Tensor out_in() const;
};

/// A loaded model file.
struct ModelFile {
  std::string path;
  /// "onnx", "safetensors", "gguf" or "llama2c".
  std::string format;
  /// Every weight tensor, in file order.
  std::vector<Weight> weights;
  /// Key/value metadata of the file (safetensors `__metadata__`, GGUF
  /// string/number keys, llama2.c header fields, ONNX producer/opset).
  std::map<std::string, std::string> metadata;
  /// The ONNX graph (format "onnx" only), kept for the runtime.
  std::shared_ptr<onnx::ModelProto> onnx;

  /// Weight by name, or nullptr.
  const Weight* find(const std::string& name) const;
};

/// Loads a model. A folder is read as a Hugging Face folder (its
/// model.safetensors). A file goes by its leading bytes and extension, in this
/// order: the GGUF magic; `.onnx`; `.safetensors`, or a plausible safetensors
/// header (u64 length within the file, then '{') on any extension but `.bin`;
/// `.bin`: a safetensors header if plausible, a PyTorch zip (refused by name),
/// else a llama2.c checkpoint; finally a protobuf opening with ir_version is
/// read as ONNX. Throws Error naming the file for an empty path, a file no
/// reader accepts, one that is not a regular file, or one that fails the
/// reader's validation.
ModelFile load_model(const std::string& path);

/// load_model, with ONNX files read by read_onnx_mapped (large weights
/// viewed in the mapped file, never parsed whole): for `tailor profile`.
ModelFile load_model_mapped(const std::string& path);

}  // namespace tailor
