// Graph rewrite of a planned model: every planned weight, in its scheme's
// stored form, becomes standard ONNX operators (a file any ONNX runtime runs,
// holding the planned bytes), which tailor's runtime recognises and runs
// without forming the dense weight (rewrite_tailor).
//
// Standard ONNX, in the model's own opset (9 and later):
//
//   lowrank-r{R}, Ŵ = A·B, A [out, R], B [R, in]:
//     MatMul(X, W)          → MatMul(MatMul(X, Bᵀ), Aᵀ)
//     Gemm(X, W, C)         → Gemm(MatMul(X, Bᵀ), Aᵀ, C)   (alpha, beta kept; transA = 0)
//     Conv(X, W, b), group 1 → Conv(Conv(X, B as [R, in, k, k], strides/pads/dilations of the
//                             original), A as [out, R, 1, 1], b)
//     Conv, groups g > 1    → B stored once: Reshape X [N, g·c, H, W] → [N·g, c, H, W], Conv
//                             with B (group 1), Reshape → [N, g·R, OH, OW], Conv 1×1 with A
//                             (group g), b
//   tucker (conv kernel, group 1; Kim et al. 2016):
//     Conv(X, W, b)         → Conv(Conv(Conv(X, U1ᵀ 1×1), core k×k, strides/pads/dilations),
//                             U0 1×1, b)
//   int8-a8 (W8A8): each reader (1×1 Conv of stride 1, unpadded; MatMul; Gemm) becomes
//     graph::emit_w8a8's form: the reader on the codes and its input rounded to int8 per
//     row (per pixel / per row, as the kernels), the integer sums scaled after
//   every other planned weight (quantized codes, sparse-2:4, monarch, tt, tucker of a
//   matrix or grouped conv, low-rank read by several nodes): its weight-level form
//   (graph/weight_forms.h): the factors verbatim and the operators computing Ŵ from
//   them, feeding the original consumers.
//
// Every rewritten graph passes graph::verify.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tailor/graph/graph.h"
#include "tailor/graph/weights.h"
#include "tailor/plan/plan.h"
#include "tailor/schemes/scheme.h"

namespace tailor::compress {

/// A planned layer in its scheme's stored form.
struct EncodedLayer {
  /// The weight's name in the model file (an initializer or Constant output).
  std::string name;
  /// How the weight is stored in the file (its [out, in] view).
  WeightLayout layout = WeightLayout::none;
  /// The stored shape of the weight (e.g. [out, in/g, kh, kw] for a conv kernel).
  Shape stored_shape;
  /// The stored element type (f32, or f16/bf16 for half-precision models).
  DType stored_dtype = DType::f32;
  std::shared_ptr<const schemes::Encoded> encoded;
  /// rel_error of the stored factors against W (DESIGN.md), measured here.
  double rel_error = 0;
};

/// Encodes weight `w` (layout ≠ none) under scheme `label`
/// (schemes::parse_scheme(label, defaults)) as encode_plan encodes the
/// `index`-th layer of a plan: SVDs seeded Rng(seed).split(index). Throws
/// Error naming the weight for an unknown label or a shape the scheme refuses.
EncodedLayer encode_layer(const graph::WeightView& w, const std::string& label,
                          const schemes::SchemeParams& defaults, uint64_t seed, size_t index);

/// Encodes every choice of `plan` whose label is not "dense" from `model`'s
/// weights (graph::weights, names and layouts as the profile saw them): W's [out, in] view (conv
/// kernels in their 4-D shape, so tucker takes its Tucker-2 form) through
/// schemes::parse_scheme(label, defaults); layer i's SVDs are seeded Rng(seed).split(i) as the
/// profiler seeds them. Runs on `threads` workers (0: all cores); the result does not depend on it.
/// `grams` (runtime::gram, by layer name) gives a -gptq label its layer's
/// calibration Gram as profile_layer does.
/// Throws Error naming the layer when the plan names a weight the model lacks
/// or a label the catalog does not know, or a -gptq label's layer has no Gram.
std::vector<EncodedLayer> encode_plan(
    const graph::Model& model, const plan::Plan& plan, const schemes::SchemeParams& defaults,
    uint64_t seed, int threads = 0,
    const std::map<std::string, std::shared_ptr<const schemes::Gram>>& grams = {});

/// How one layer was rewritten.
struct LayerRewrite {
  std::string layer;
  std::string label;
  /// What replaced it, e.g. "MatMul·MatMul", "Conv k×k·Conv 1×1", "Cast·Mul (int8)",
  /// "Cast·Mul (4-bit packed)", "dense decoded".
  std::string form;
  /// Bytes of the initializers that now hold the layer in the written file.
  int64_t file_bytes = 0;
};

/// The standard-ONNX rewrite of `model` (see the file comment). `log`, when
/// given, receives one entry per layer. Throws Error naming the layer when
/// its weight is neither an initializer nor a Constant output of the main
/// graph, or its stored shape differs from the model's.
graph::Model rewrite_standard(const graph::Model& model, const std::vector<EncodedLayer>& layers,
                              std::vector<LayerRewrite>* log = nullptr);

/// The graph tailor runs for the same file: rewrite_standard's model with the
/// compressed-weight forms recognised (graph::recognise_compressed_weights:
/// MatMul / Gemm / group-1 Conv reading one → CompressedLinear / CompressedConv
/// holding the stored factors; no dense weight formed). What `tailor run` makes
/// of model.onnx. Same errors as rewrite_standard.
graph::Model rewrite_tailor(const graph::Model& model, const std::vector<EncodedLayer>& layers,
                            std::vector<LayerRewrite>* log = nullptr);

}  // namespace tailor::compress
