// Scalar references of the activations (ONNX operators of the same names)
// and of Exp, after their definitions with <cmath>: y = act(x + bias), with
// the activation's affine maps around act (Activation). NaN in,
// NaN out for every kind (ONNX follows numpy).
#include <cmath>

#include "tailor/runtime/kernels/registry.h"

namespace tailor::runtime::kernels {
namespace {

float activation_ref(const Activation& act, float v) {
  if (std::isnan(v)) return v;
  switch (act.kind) {
    case ActivationKind::none:
      return v;
    case ActivationKind::relu:
      return v > 0.f ? v : 0.f;
    case ActivationKind::clip:
      return v < act.alpha ? act.alpha : (v > act.beta ? act.beta : v);
    case ActivationKind::hard_sigmoid: {
      const float t = act.alpha * v + act.beta;
      return t < 0.f ? 0.f : (t > 1.f ? 1.f : t);
    }
    case ActivationKind::hard_swish: {
      const float t = act.alpha * v + act.beta;
      return v * (t < 0.f ? 0.f : (t > 1.f ? 1.f : t));
    }
    case ActivationKind::sigmoid:
      return 1.f / (1.f + std::exp(-v));
    case ActivationKind::leaky_relu:
      return v >= 0.f ? v : act.alpha * v;
    case ActivationKind::tanh:
      return std::tanh(v);
  }
  return v;
}

}  // namespace

void f32_bias_act_ref(const Activation& act, float bias, const float* x, float* y, int64_t n) {
  if (!act.has_affine()) {
    for (int64_t i = 0; i < n; ++i) y[i] = activation_ref(act, x[i] + bias);
    return;
  }
  // Each affine map one fused multiply-add (one rounding), written out so
  // the result does not hang on the compiler's contraction setting.
  for (int64_t i = 0; i < n; ++i) {
    const float v = std::fma(x[i] + bias, act.pre_scale, act.pre_shift);
    y[i] = std::fma(activation_ref(act, v), act.post_scale, act.post_shift);
  }
}

void f32_exp_ref(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = std::exp(x[i]);
}

}  // namespace tailor::runtime::kernels
