// f32_bias_act_avx2 and f32_exp_avx2: y = act(x + bias) (with the
// activation's affine maps around act, Activation) and y = exp(x), 8
// lanes at a time (AVX2/FMA), Cephes polynomials (f32_math_avx2.h); the loop
// tails use the one-lane versions of the same polynomials, so a value's
// result does not depend on its position.
#if defined(__AVX2__) && defined(__FMA__)

#include <immintrin.h>

#include <algorithm>
#include <cmath>

#include "runtime/kernels/f32_math_avx2.h"
#include "tailor/runtime/kernels/registry.h"

namespace tailor::runtime::kernels {

using namespace detail;

namespace {

// One activation on 8 lanes / one lane; templated on the kind so the inner
// loop has no branch. NaN propagates (x is the second operand of every
// vmaxps/vminps; the scalar std::max/std::min keep a NaN first argument).
template <ActivationKind K>
inline __m256 act8(__m256 v, __m256 a, __m256 b) {
  if constexpr (K == ActivationKind::none) {
    return v;
  } else if constexpr (K == ActivationKind::relu) {
    return _mm256_max_ps(_mm256_setzero_ps(), v);
  } else if constexpr (K == ActivationKind::clip) {
    return _mm256_min_ps(b, _mm256_max_ps(a, v));
  } else if constexpr (K == ActivationKind::hard_sigmoid) {
    const __m256 t = _mm256_fmadd_ps(v, a, b);
    return _mm256_min_ps(_mm256_set1_ps(1.f), _mm256_max_ps(_mm256_setzero_ps(), t));
  } else if constexpr (K == ActivationKind::hard_swish) {
    const __m256 t = _mm256_fmadd_ps(v, a, b);
    return _mm256_mul_ps(v,
                         _mm256_min_ps(_mm256_set1_ps(1.f), _mm256_max_ps(_mm256_setzero_ps(), t)));
  } else if constexpr (K == ActivationKind::sigmoid) {
    return sigmoid8(v);
  } else if constexpr (K == ActivationKind::leaky_relu) {
    const __m256 neg = _mm256_cmp_ps(v, _mm256_setzero_ps(), _CMP_LT_OQ);
    return _mm256_blendv_ps(v, _mm256_mul_ps(v, a), neg);
  } else {
    return tanh8(v);
  }
}

template <ActivationKind K>
inline float act1(float v, float a, float b) {
  if constexpr (K == ActivationKind::none) {
    return v;
  } else if constexpr (K == ActivationKind::relu) {
    return std::max(v, 0.f);
  } else if constexpr (K == ActivationKind::clip) {
    return std::min(std::max(v, a), b);
  } else if constexpr (K == ActivationKind::hard_sigmoid) {
    return std::min(std::max(std::fma(v, a, b), 0.f), 1.f);
  } else if constexpr (K == ActivationKind::hard_swish) {
    return v * std::min(std::max(std::fma(v, a, b), 0.f), 1.f);
  } else if constexpr (K == ActivationKind::sigmoid) {
    return sigmoid1(v);
  } else if constexpr (K == ActivationKind::leaky_relu) {
    return v < 0.f ? v * a : v;
  } else {
    return tanh1(v);
  }
}

// y[i] = act(x[i] + bias) for i < n; with Affine, the activation's affine
// maps around act, each one FMA (as f32_bias_act_ref's std::fma).
template <ActivationKind K, bool Affine>
void run_span(const Activation& act, float bias, const float* x, float* y, int64_t n) {
  const __m256 a = _mm256_set1_ps(act.alpha), b = _mm256_set1_ps(act.beta);
  const __m256 bv = _mm256_set1_ps(bias);
  const __m256 s0 = _mm256_set1_ps(act.pre_scale), t0 = _mm256_set1_ps(act.pre_shift);
  const __m256 s1 = _mm256_set1_ps(act.post_scale), t1 = _mm256_set1_ps(act.post_shift);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 v = _mm256_add_ps(_mm256_loadu_ps(x + i), bv);
    if constexpr (Affine) v = _mm256_fmadd_ps(v, s0, t0);
    v = act8<K>(v, a, b);
    if constexpr (Affine) v = _mm256_fmadd_ps(v, s1, t1);
    _mm256_storeu_ps(y + i, v);
  }
  for (; i < n; ++i) {
    float v = x[i] + bias;
    if constexpr (Affine) v = std::fma(v, act.pre_scale, act.pre_shift);
    v = act1<K>(v, act.alpha, act.beta);
    if constexpr (Affine) v = std::fma(v, act.post_scale, act.post_shift);
    y[i] = v;
  }
}

using SpanFn = void (*)(const Activation&, float, const float*, float*, int64_t);

template <bool Affine>
SpanFn span_fn(ActivationKind k) {
  switch (k) {
    case ActivationKind::none:
      return run_span<ActivationKind::none, Affine>;
    case ActivationKind::relu:
      return run_span<ActivationKind::relu, Affine>;
    case ActivationKind::clip:
      return run_span<ActivationKind::clip, Affine>;
    case ActivationKind::hard_sigmoid:
      return run_span<ActivationKind::hard_sigmoid, Affine>;
    case ActivationKind::hard_swish:
      return run_span<ActivationKind::hard_swish, Affine>;
    case ActivationKind::sigmoid:
      return run_span<ActivationKind::sigmoid, Affine>;
    case ActivationKind::leaky_relu:
      return run_span<ActivationKind::leaky_relu, Affine>;
    case ActivationKind::tanh:
      return run_span<ActivationKind::tanh, Affine>;
  }
  return run_span<ActivationKind::none, Affine>;  // unreachable: every kind is listed
}

}  // namespace

void f32_bias_act_avx2(const Activation& act, float bias, const float* x, float* y, int64_t n) {
  (act.has_affine() ? span_fn<true>(act.kind) : span_fn<false>(act.kind))(act, bias, x, y, n);
}

void f32_exp_avx2(const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, exp8(_mm256_loadu_ps(x + i)));
  for (; i < n; ++i) y[i] = exp1(x[i]);
}

}  // namespace tailor::runtime::kernels

#endif  // __AVX2__ && __FMA__
