// The "ai.tailor" ops the fusion and layout passes emit and the runtime runs
// (src/runtime/ops_fused.cpp, ops_layout.cpp). Attribute contracts:
//
// - FusedConv(X, W, [B]) (defined in tailor/graph/passes/fuse_conv.h): ONNX
//   Conv attributes plus `activation` (string: "none", "relu", "clip",
//   "hard_sigmoid", "hard_swish", "sigmoid", "leaky_relu", "tanh") and floats
//   `alpha`, `beta` (Clip min/max, HardSigmoid and HardSwish alpha/beta,
//   LeakyRelu alpha). Y = act(Conv(X, W) + B). "The activation" below means
//   these three attributes.
// - FusedGemm(A, B, [C]): ONNX Gemm attributes (its own alpha, beta) plus
//   `activation` with `activation_alpha`, `activation_beta`.
// - FusedMatMul(A, B, [bias]): Y = act(MatMul(A, B) + bias), bias [n] over
//   the last axis; the activation.
// - LayerNormalization(X, [scale], [bias]): `axis` (-1 only), `epsilon`;
//   d = X − mean(X), Y = d / sqrt(mean(d²) + ε) · scale + bias over the last axis.
// - Softmax(X): `axis`; softmax over that one axis (ONNX opset-13 semantics).
// - FusedElementwise(X0..Xn−1, n ≤ 4): `program` (ints, one (op, dst, a, b)
//   quadruple per step; op an ElementwiseOp; registers 0..n−1 hold the inputs
//   broadcast to the output, step s writes register n+s; an operand r < 0
//   reads constants[−r−1]), `params` (floats, 2 per step), `constants`
//   (floats). Y = the last register, of the inputs' broadcast shape.
// - Attention(Q, K, V, [mask]): Q [b, h, r, d], K and V [b, h, t, d], mask
//   [r, t]; float `scale`. Y [b, h, r, d] = softmax(Q·Kᵀ·scale + mask)·V, the
//   softmax over the t keys (llm/decoder_fusions emits it for decoder graphs).
// - RMSNormalization(X, scale): `epsilon`, `axis` (-1 only); Y = X /
//   sqrt(mean(X²) + ε) · scale over the last axis (ONNX opset 23's
//   RMSNormalization; llm/decoder_fusions emits it).
// - ConvNhwc(X, W, [B]): X [n, h, w, c_in], W [c_out, kh, kw, c_in/group]
//   (OHWI), Y [n, out_h, out_w, c_out]; attributes as FusedConv (2-D only).
#pragma once

#include <cstddef>
#include <cstdint>

namespace tailor::graph {

/// Steps of a FusedElementwise program. Unary steps read `a`; binary steps
/// (add … pow) read `a` and `b`. Numerics follow the runtime's unfused ops.
enum class ElementwiseOp : int64_t {
  relu,
  sigmoid,
  tanh,
  exp,
  log,
  sqrt,
  reciprocal,
  neg,
  abs,
  clip,          ///< min(p1, max(p0, x))
  hard_sigmoid,  ///< max(0, min(1, p0·x + p1))
  hard_swish,    ///< x·max(0, min(1, x/6 + 1/2))
  leaky_relu,    ///< x ≥ 0 ? x : p0·x
  square,        ///< x·x (Pow with exponent 2)
  cube,          ///< x·x·x (Pow with exponent 3)
  identity,      ///< x (Pow with exponent 1)
  pow_const,     ///< pow(x, p0) in double (Pow with another constant exponent)
  add,
  sub,
  mul,
  div,
  max,
  min,
  pow,
  count
};

/// Limits of a FusedElementwise node.
inline constexpr size_t kFusedElementwiseMaxInputs = 4;
inline constexpr int64_t kFusedElementwiseMaxSteps = 24;

}  // namespace tailor::graph
