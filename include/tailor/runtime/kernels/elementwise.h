// Activations (fusable into conv/gemm epilogues), vectorised unary math,
// BatchNormalization (inference) and Softmax. Thread counts: linalg/threads.h.
#pragma once

#include <cstdint>

namespace tailor::runtime::kernels {

/// Which elementwise function follows a kernel (ONNX operator of the same name).
enum class ActivationKind : uint8_t {
  none,          ///< identity
  relu,          ///< max(0, x)
  clip,          ///< min(max(x, alpha), beta) (Clip; Relu6 is clip(0, 6))
  hard_sigmoid,  ///< max(0, min(1, alpha·x + beta)) (ONNX default alpha 0.2, beta 0.5)
  hard_swish,    ///< x·max(0, min(1, alpha·x + beta)) (HardSwish: alpha 1/6, beta 0.5)
  sigmoid,       ///< 1 / (1 + exp(−x))
  leaky_relu,    ///< x ≥ 0 ? x : alpha·x (ONNX default alpha 0.01)
  tanh,          ///< tanh(x)
};

/// An activation with its two parameters (meaning per kind, see ActivationKind),
/// and the scalar affine maps a fused epilogue applies around it (the Mul and
/// Add by one-element constants of the PP-OCRv4 "learnable affine blocks"):
///   v = x·pre_scale + pre_shift;  y = act(v)·post_scale + post_shift
/// each one fused multiply-add (a single rounding; the unfused ONNX Mul and Add
/// round twice, so the two agree within one rounding of the map's result; the
/// reference and the vector kernels compute the same FMA, so they agree
/// exactly); an identity map (scale 1, shift 0) is skipped, so the
/// plain activation's results are unchanged. The maps are only set together
/// with an activation (kind ≠ none): `kind == none` means y = x.
struct Activation {
  ActivationKind kind = ActivationKind::none;
  float alpha = 0.f;
  float beta = 0.f;
  float pre_scale = 1.f;
  float pre_shift = 0.f;
  float post_scale = 1.f;
  float post_shift = 0.f;

  /// True when a pre or post map is not the identity.
  bool has_affine() const {
    return pre_scale != 1.f || pre_shift != 0.f || post_scale != 1.f || post_shift != 0.f;
  }

  static Activation none() { return {}; }
  static Activation relu() { return {ActivationKind::relu, 0.f, 0.f}; }
  static Activation clip(float lo, float hi) { return {ActivationKind::clip, lo, hi}; }
  static Activation hard_sigmoid(float alpha = 0.2f, float beta = 0.5f) {
    return {ActivationKind::hard_sigmoid, alpha, beta};
  }
  static Activation hard_swish(float alpha = 1.f / 6.f, float beta = 0.5f) {
    return {ActivationKind::hard_swish, alpha, beta};
  }
  static Activation sigmoid() { return {ActivationKind::sigmoid, 0.f, 0.f}; }
  static Activation leaky_relu(float alpha = 0.01f) {
    return {ActivationKind::leaky_relu, alpha, 0.f};
  }
  static Activation tanh() { return {ActivationKind::tanh, 0.f, 0.f}; }
};

/// y[i] = act(x[i]) for i < n; y may equal x (in place). By the bias_act
/// kernel of active_kernels() (registry.h) in fixed chunks of 16384 elements
/// over the OpenMP threads. NaN in, NaN out.
void apply_activation(const Activation& act, const float* x, float* y, int64_t n);

/// y[c·spatial + i] = act(x[c·spatial + i] + bias[c]) for c < channels (with
/// the activation's affine maps around act, see Activation): the
/// epilogue of conv/gemm (bias may be null: no bias). In place allowed.
void bias_activation(const Activation& act, const float* bias, int64_t channels, int64_t spatial,
                     const float* x, float* y);

/// exp, sigmoid and tanh over n floats (in place allowed), by the registry's
/// exp and bias_act kernels: on AVX2 Cephes single-precision polynomials
/// (Moshier), within ~2 ulp of the correctly rounded result over the finite
/// range, exp saturating to 0 / +inf outside [−87.3, 88.7]; the references
/// use std::exp / std::tanh. NaN in, NaN out.
void exp(const float* x, float* y, int64_t n);
void sigmoid(const float* x, float* y, int64_t n);
void tanh(const float* x, float* y, int64_t n);

/// BatchNormalization, inference mode (ONNX, training_mode = 0):
/// y[b, c, i] = (x[b, c, i] − mean[c]) / sqrt(var[c] + epsilon) · scale[c] + bias[c],
/// then `act`. x, y [n, channels, spatial] (spatial = product of the dims after C).
void batch_norm(int64_t n, int64_t channels, int64_t spatial, const float* x, const float* scale,
                const float* bias, const float* mean, const float* var, float epsilon, float* y,
                const Activation& act = {});

/// Folds an inference BatchNormalization that follows a conv into the conv's
/// weights w [c_out, k] (k = c_in/groups·kh·kw) and bias [c_out] (written;
/// `bias_in` may be null = zero bias): w' = w·s, b' = (b − mean)·s + beta with
/// s = scale / sqrt(var + epsilon).
void fold_batch_norm(int64_t c_out, int64_t k, const float* w, const float* bias_in,
                     const float* scale, const float* beta, const float* mean, const float* var,
                     float epsilon, float* w_out, float* bias_out);

/// Softmax over the middle axis of x viewed as [outer, axis, inner]:
/// y[o, a, i] = exp(x[o, a, i] − max_a) / Σ_a exp(x[o, a, i] − max_a).
/// Opset ≥ 13 (per axis): outer = Π dims before `axis`, inner = Π dims after.
/// Opset < 13 ("coerce to 2-D"): outer = Π dims before `axis`, axis = Π dims
/// from `axis` on, inner = 1. In place allowed.
void softmax(const float* x, float* y, int64_t outer, int64_t axis, int64_t inner);

}  // namespace tailor::runtime::kernels
