// Graph rewrite of a planned model: every planned weight, in its scheme's
// stored form, becomes either standard ONNX operators (a file any ONNX runtime
// runs) or tailor's own CompressedLinear / CompressedConv nodes (run by
// tailor's runtime without forming the dense weight).
//
// Standard ONNX, in the model's own opset (9–17; nothing here needs more):
//
//   lowrank-r{R}, Ŵ = A·B, A [out, R], B [R, in]:
//     MatMul(X, W)          → MatMul(MatMul(X, Bᵀ), Aᵀ)
//     Gemm(X, W, C)         → Gemm(MatMul(X, Bᵀ), Aᵀ, C)   (alpha, beta kept; transA = 0)
//     Conv(X, W, b), groups g, kernel k×k
//                           → Conv(Conv(X, B as [g·R, in/g, k, k], group g, strides/pads/
//                             dilations of the original), A as [out, R, 1, 1], b, group g)
//                             (for g > 1 B is repeated per group: g·R·in/g·k·k stored)
//   tucker (conv kernel, group 1; Kim et al. 2016):
//     Conv(X, W, b)         → Conv(Conv(Conv(X, U1ᵀ 1×1), core k×k, strides/pads/dilations),
//                             U0 1×1, b)
//   int8 / int4 / int3 / int4-g{G} / ternary (Ŵ = q·s, s f16):
//     W                     → Mul(Cast(q → float), Cast(s f16 → float)) reshaped (and
//                             transposed for [in, out] weights) to W's stored shape, feeding
//                             the original consumers. int8 codes are an INT8 initializer;
//                             4-bit and narrower codes are packed two per byte in a UINT8
//                             initializer (low nibble first, two's complement) and unpacked
//                             with Cast, Div, Floor, Mul, Sub, Unsqueeze, Concat, Reshape
//                             (opset 9 has no BitShift, INT4 needs opset 21), so 3-bit and
//                             ternary codes take 4 bits in the file (their plan bytes assume
//                             3 and 2).
//   lowrank with another consumer (or several): W → MatMul(A, B) reshaped as above.
//   sparse-2:4, monarch, tt, tucker elsewhere: W → the decoded weight Ŵ as a dense f32
//     initializer (the file does not shrink for these layers; weights.safetensors does).
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

/// The rewrite for tailor's runtime: MatMul(X, W) with W [in, out] →
/// CompressedLinear(X); Gemm(X, W, C) with transA = 0, alpha = beta = 1 and C
/// absent or [out] → CompressedLinear(X, C); Conv (2-D, group 1, auto_pad
/// NOTSET) → CompressedConv(X, b); every such node holds the Encoded weight
/// (domain ai.tailor, no dense weight formed). Any other use of a planned
/// weight gets Ŵ decoded as a dense initializer (an f32 one and a Cast to the
/// stored dtype when that is not f32, as rewrite_standard writes it, so both
/// graphs hold the same Ŵ). Same errors as rewrite_standard.
graph::Model rewrite_tailor(const graph::Model& model, const std::vector<EncodedLayer>& layers,
                            std::vector<LayerRewrite>* log = nullptr);

}  // namespace tailor::compress
