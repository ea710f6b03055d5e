// Weight orientation as an analysis of the graph: which input of which op
// consumes each initializer or Constant decides its [out, in] view (DESIGN.md,
// "Weight orientation"). Readers of formats without a graph (safetensors,
// GGUF, llama2.c) record their convention in Model::weight_convention, which
// orients the tensors no node consumes.
#pragma once

#include <string>
#include <vector>

#include "tailor/core/tensor.h"
#include "tailor/graph/graph.h"

namespace tailor {

/// How a weight is stored relative to the [out, in] view: one row per output
/// channel, the reduction axis last.
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

}  // namespace tailor

namespace tailor::graph {

/// One weight of a model: an initializer or a Constant node's value, with its
/// orientation.
struct WeightView {
  /// The initializer's name, or the Constant's output; a subgraph weight whose
  /// name repeats an earlier one is prefixed (see weights()).
  std::string name;
  /// The tensor exactly as stored (shared with the graph, often a view of a
  /// memory-mapped file): dtype, shape, bytes.
  Tensor tensor;
  WeightLayout layout = WeightLayout::none;

  /// Shape of the [out, in] view: {out, in}, or {} when layout is none.
  Shape out_in_shape() const;
  /// The [out, in] view as a contiguous f32 tensor (converted and, for in_out
  /// and conv_transpose, transposed; a copy). Throws Error naming the weight
  /// for layout none.
  Tensor out_in() const;
};

/// Every weight of `model` with its layout, in this order: a graph's
/// initializers (initializer_order), then its Constant nodes' values (node
/// order; value_float(s) as f32 and value_int(s) as i64 scalars or vectors;
/// string constants are no weights), then the weights of its subgraphs (If,
/// Loop, Scan), node by node, attribute by attribute. Names as in the graph; a
/// subgraph weight whose name repeats an earlier one gets "<node name>/<attribute>/"
/// prefixed ("<attribute>.<i>" for the i-th graph of a `graphs` attribute,
/// "<op type>@<index>" for an unnamed node, "#2", "#3" appended should the
/// prefixed name repeat too).
///
/// Layout from the direct consumers of each weight, in its own graph or by
/// outer-scope reference from a subgraph: Conv kernels conv, ConvTranspose
/// kernels conv_transpose (rank ≥ 3), MatMul's rank-2 B and Gemm's B with
/// transB = 0 in_out, Gemm's B with transB = 1, Gather's data (embedding
/// tables) and batched MatMul operands out_in; should consumers disagree, conv
/// wins over conv_transpose over in_out over out_in. A weight consumed only by
/// other ops (a bias or scale broadcast into Add or Mul, whatever its rank) is
/// none. A weight no node consumes (every weight of a weights-only model)
/// follows model.weight_convention: none (onnx), PyTorch's rank 2 out_in and
/// rank ≥ 3 conv (pytorch), out_in (out_in). Rank < 2 and non-floating
/// tensors are always none. The tensors are shared, never copied.
std::vector<WeightView> weights(const Model& model);

/// The entry of `all` named `name`, or nullptr.
const WeightView* find_weight(const std::vector<WeightView>& all, const std::string& name);

}  // namespace tailor::graph
