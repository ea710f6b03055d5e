// The "ai.tailor" ops the fusion and layout passes emit and the runtime runs
// (src/runtime/ops_fused.cpp, ops_layout.cpp). Attribute contracts:
//
// - FusedConv(X, W, [B]) (emitted by src/graph/passes/fuse_conv_bias_activation.h):
//   ONNX Conv attributes plus `activation` (string: a name of kFusedActivations
//   below) and floats `alpha`, `beta` (its parameters, as that table says).
//   Y = act(Conv(X, W) + B). "The activation" below means these three attributes,
//   and with an activation (not none) optional floats `pre_scale`, `pre_shift`,
//   `post_scale`, `post_shift` (kEpilogueAffineAttributes; defaults 1, 0, 1, 0):
//   Y = act((Conv(X, W) + B)·pre_scale + pre_shift)·post_scale + post_shift,
//   each map one fused multiply-add (within one rounding of the Mul and Add
//   nodes they replace, which round twice).
// - FusedConvTranspose(X, W, [B]) (emitted by the same file): ONNX
//   ConvTranspose attributes plus the activation, with its affine maps as
//   FusedConv's. Y = act(ConvTranspose(X, W) + B), the activation applied as
//   each output row is written.
// - FusedGemm(A, B, [C]): ONNX Gemm attributes (its own alpha, beta) plus
//   `activation` with `activation_alpha`, `activation_beta`.
// - FusedMatMul(A, B, [bias]): Y = act(MatMul(A, B) + bias), bias [n] over
//   the last axis; the activation.
// - LayerNormalization(X, [scale], [bias]): `axis` (-1 only), `epsilon`;
//   d = X − mean(X), Y = d / sqrt(mean(d²) + ε) · scale + bias over the last axis.
// - Softmax(X): `axis`; softmax over that one axis (ONNX opset-13 semantics).
// - SqueezeExcite(X, W1, [B1], W2, [B2]) (src/graph/passes/fuse_squeeze_excite.h):
//   X [n, C, h, w], W1 [m, C, 1, 1], B1 [m], W2 [C, m, 1, 1], B2 [C]; the
//   activation (`activation`, `alpha`, `beta`, as FusedConv's, no affine
//   maps) and the gate's (`gate`, `gate_alpha`, `gate_beta`, the same table).
//   s = gate(W2·act(W1·mean_hw(X) + B1) + B2) [n, C], Y = X · s broadcast over
//   each channel's plane: GlobalAveragePool, two 1×1 FusedConvs and the Mul,
//   computed by the same kernels in the same order (the same bits).
// - FusedElementwise(X0..Xn−1, n ≤ 4): `program` (ints, one (op, dst, a, b)
//   quadruple per step; op an ElementwiseOp; registers 0..n−1 hold the inputs
//   broadcast to the output, step s writes register n+s; an operand r < 0
//   reads constants[−r−1]), `params` (floats, 2 per step), `constants`
//   (floats). Y = the last register, of the inputs' broadcast shape.
//   Optional ints `upsample` (fh, fw per input, ≥ 1): input i, of rank 4, is
//   read as its nearest upsampling, pixel (y / fh, x / fw) (the Resize of
//   mode nearest, asymmetric, floor, whole scales [1, 1, fh, fw] that the
//   fusion absorbs); the output is then of rank 4.
// - Attention(Q, K, V, [mask]): Q [b, h, r, d], K and V [b, h, t, d], mask
//   [r, t]; float `scale`. Y [b, h, r, d] = softmax(Q·Kᵀ·scale + mask)·V, the
//   softmax over the t keys (llm/decoder_fusions emits it for decoder graphs).
// - GroupQueryAttention(Q, K, V, past_K, past_V, cos, sin, R, [mask]) → (Y,
//   present_K, present_V): ints `num_heads` H, `kv_num_heads` KV (H a
//   multiple), float `scale`. Q [S, H·d], K and V [S, KV·d], pasts [1, KV, P, d],
//   cos and sin [S, 1, d], R [d, d], mask [(H/KV)·S, P + S]. RoPE(t) = t·cos +
//   (t·R)·sin per head row; present_K = Concat(past_K, RoPE(K) as [1, KV, S, d],
//   axis 2), present_V likewise without RoPE; Y [S, H·d] is Attention of
//   RoPE(Q) (the H/KV query heads of a KV head stacked as its rows) over the
//   presents, heads back side by side (llm/decoder_fusions emits it). Int
//   `rope_tables` 1: cos and sin are whole tables [n ≥ P + S, 1, d], rows
//   P … P + S − 1 read; int `causal` 1 (no mask input): the mask is built,
//   −inf where key j > P + i for query row i of each head, else 0.
// - RMSNormalization(X, scale, [skip]) → (Y, [S]): `epsilon`, `axis` (-1
//   only); Y = X / sqrt(mean(X²) + ε) · scale over the last axis (ONNX opset
//   23's RMSNormalization; llm/decoder_fusions emits it). With skip (X's
//   shape): X is first replaced by S = X + skip (f32 sums, the residual Add it
//   absorbs, as onnxruntime's SkipSimplifiedLayerNormalization), output 1.
// - ConvNhwc(X, W, [B]): X [n, h, w, c_in], W [c_out, kh, kw, c_in/group]
//   (OHWI), Y [n, out_h, out_w, c_out]; attributes as FusedConv (2-D only).
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string_view>

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

/// The activation a fused op applies to its result (FusedConv, FusedGemm,
/// FusedMatMul, ConvNhwc). The runtime maps it to its kernels' epilogue
/// (src/runtime/ops_fused.cpp, activation_from_node).
enum class FusedActivation : uint8_t {
  none,          ///< x
  relu,          ///< max(0, x)
  clip,          ///< min(max(x, alpha), beta)
  hard_sigmoid,  ///< max(0, min(1, alpha·x + beta))
  hard_swish,    ///< x·max(0, min(1, alpha·x + beta)), alpha 1/6, beta 1/2
  sigmoid,       ///< 1 / (1 + exp(−x))
  leaky_relu,    ///< x ≥ 0 ? x : alpha·x
  tanh,          ///< tanh(x)
};

/// One row of the activation table: the `activation` attribute value, the
/// ONNX op (default domain) the fusion pass absorbs into it, and where its
/// two parameters come from.
struct FusedActivationInfo {
  FusedActivation kind;
  /// The value of the fused node's `activation` attribute.
  std::string_view name;
  /// The ONNX op it replaces ("" for none).
  std::string_view onnx_op;
  /// The ONNX op's attribute read into alpha ("": alpha is always
  /// `alpha_default`), and its ONNX default.
  std::string_view alpha_attribute;
  float alpha_default;
  /// The same for beta.
  std::string_view beta_attribute;
  float beta_default;
};

/// Every activation a fused op can carry. Parameters as the ONNX operators
/// define them (onnx/docs/Operators.md): HardSigmoid alpha 0.2, beta 0.5;
/// LeakyRelu alpha 0.01; HardSwish is HardSigmoid with alpha 1/6, beta 1/2;
/// Clip's bounds are attributes `min`, `max` before opset 11 and inputs 1, 2
/// from opset 11 (absent: −∞, +∞), which the fusion pass reads itself.
inline constexpr FusedActivationInfo kFusedActivations[] = {
    {FusedActivation::none, "none", "", "", 0.f, "", 0.f},
    {FusedActivation::relu, "relu", "Relu", "", 0.f, "", 0.f},
    {FusedActivation::clip, "clip", "Clip", "min", -std::numeric_limits<float>::infinity(), "max",
     std::numeric_limits<float>::infinity()},
    {FusedActivation::hard_sigmoid, "hard_sigmoid", "HardSigmoid", "alpha", 0.2f, "beta", 0.5f},
    {FusedActivation::hard_swish, "hard_swish", "HardSwish", "", 1.f / 6.f, "", 0.5f},
    {FusedActivation::sigmoid, "sigmoid", "Sigmoid", "", 0.f, "", 0.f},
    {FusedActivation::leaky_relu, "leaky_relu", "LeakyRelu", "alpha", 0.01f, "", 0.f},
    {FusedActivation::tanh, "tanh", "Tanh", "", 0.f, "", 0.f},
};

/// The row whose `name` is `name` (a fused node's `activation` attribute), or
/// nullptr when there is none.
constexpr const FusedActivationInfo* fused_activation_named(std::string_view name) {
  for (const auto& a : kFusedActivations)
    if (a.name == name) return &a;
  return nullptr;
}

/// The row that absorbs the ONNX op `op_type` (default domain), or nullptr.
constexpr const FusedActivationInfo* fused_activation_for_op(std::string_view op_type) {
  if (op_type.empty()) return nullptr;
  for (const auto& a : kFusedActivations)
    if (a.onnx_op == op_type) return &a;
  return nullptr;
}

/// The attributes of the scalar affine maps an epilogue applies before and
/// after its activation (FusedConv's contract above; any node carrying an
/// activation), in the order scale, shift, scale, shift.
inline constexpr std::string_view kEpilogueAffineAttributes[] = {"pre_scale", "pre_shift",
                                                                 "post_scale", "post_shift"};

/// Limits of a FusedElementwise node.
inline constexpr size_t kFusedElementwiseMaxInputs = 4;
inline constexpr int64_t kFusedElementwiseMaxSteps = 24;

}  // namespace tailor::graph
