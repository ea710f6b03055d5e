// Activations, vectorised unary math, BatchNormalization, Softmax, threads.
#include "tailor/runtime/kernels/elementwise.h"

#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <string>

#include "runtime/kernels/epilogue.h"
#include "runtime/kernels/gemm_blocked.h"
#include "runtime/kernels/vec_avx2.h"
#include "tailor/core/error.h"

namespace tailor::runtime::kernels {

using namespace detail;

namespace {
std::atomic<bool> g_threads_configured{false};
}  // namespace

bool detail::threads_configured() {
  return g_threads_configured.load();
}

void set_num_threads(int n) {
  check(n >= 1, "", "thread count must be at least 1, got " + std::to_string(n));
  omp_set_num_threads(n);
  // The kernels split their products into fixed blocks over OpenMP threads,
  // each block one single-threaded OpenBLAS call (gemm_blocked.h).
  openblas_set_num_threads(1);
  g_threads_configured = true;
}

int num_threads() {
  return omp_get_max_threads();
}

namespace {

// One activation over [begin, end) of x into y; templated on the kind so the
// inner loop has no branch.
template <ActivationKind K>
inline __m256 act8(__m256 v, __m256 a, __m256 b) {
  if constexpr (K == ActivationKind::none) {
    return v;
  } else if constexpr (K == ActivationKind::relu) {
    return _mm256_max_ps(v, _mm256_setzero_ps());
  } else if constexpr (K == ActivationKind::clip) {
    return _mm256_min_ps(_mm256_max_ps(v, a), b);
  } else if constexpr (K == ActivationKind::hard_sigmoid) {
    const __m256 t = _mm256_fmadd_ps(v, a, b);
    return _mm256_min_ps(_mm256_max_ps(t, _mm256_setzero_ps()), _mm256_set1_ps(1.f));
  } else if constexpr (K == ActivationKind::hard_swish) {
    const __m256 t = _mm256_fmadd_ps(v, a, b);
    return _mm256_mul_ps(v,
                         _mm256_min_ps(_mm256_max_ps(t, _mm256_setzero_ps()), _mm256_set1_ps(1.f)));
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

// y[i] = act(x[i] + bias) for i < n.
template <ActivationKind K>
void run_span(const Activation& act, float bias, const float* x, float* y, int64_t n) {
  const __m256 a = _mm256_set1_ps(act.alpha), b = _mm256_set1_ps(act.beta);
  const __m256 bv = _mm256_set1_ps(bias);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(y + i, act8<K>(_mm256_add_ps(_mm256_loadu_ps(x + i), bv), a, b));
  }
  for (; i < n; ++i) y[i] = act1<K>(x[i] + bias, act.alpha, act.beta);
}

using SpanFn = void (*)(const Activation&, float, const float*, float*, int64_t);

SpanFn span_fn(ActivationKind k) {
  switch (k) {
    case ActivationKind::none:
      return run_span<ActivationKind::none>;
    case ActivationKind::relu:
      return run_span<ActivationKind::relu>;
    case ActivationKind::clip:
      return run_span<ActivationKind::clip>;
    case ActivationKind::hard_sigmoid:
      return run_span<ActivationKind::hard_sigmoid>;
    case ActivationKind::hard_swish:
      return run_span<ActivationKind::hard_swish>;
    case ActivationKind::sigmoid:
      return run_span<ActivationKind::sigmoid>;
    case ActivationKind::leaky_relu:
      return run_span<ActivationKind::leaky_relu>;
    case ActivationKind::tanh:
      return run_span<ActivationKind::tanh>;
  }
  throw Error("", "unknown activation kind " + std::to_string(static_cast<int>(k)));
}

constexpr int64_t kChunk = 16384;  // elements per OpenMP task in flat loops

}  // namespace

void detail::bias_activation_span(const Activation& act, float bias, const float* x, float* y,
                                  int64_t n) {
  span_fn(act.kind)(act, bias, x, y, n);
}

void apply_activation(const Activation& act, const float* x, float* y, int64_t n) {
  if (act.kind == ActivationKind::none && x == y) return;
  const SpanFn fn = span_fn(act.kind);
  const int64_t chunks = (n + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(static) if (chunks > 1)
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t begin = c * kChunk;
    fn(act, 0.f, x + begin, y + begin, std::min(kChunk, n - begin));
  }
}

void bias_activation(const Activation& act, const float* bias, int64_t channels, int64_t spatial,
                     const float* x, float* y) {
  if (act.kind == ActivationKind::none && bias == nullptr && x == y) return;
  const SpanFn fn = span_fn(act.kind);
#pragma omp parallel for schedule(static) if (channels * spatial > kChunk)
  for (int64_t c = 0; c < channels; ++c) {
    fn(act, bias ? bias[c] : 0.f, x + c * spatial, y + c * spatial, spatial);
  }
}

void exp(const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, exp8(_mm256_loadu_ps(x + i)));
  for (; i < n; ++i) y[i] = exp1(x[i]);
}

void sigmoid(const float* x, float* y, int64_t n) {
  apply_activation(Activation::sigmoid(), x, y, n);
}

void tanh(const float* x, float* y, int64_t n) {
  apply_activation(Activation::tanh(), x, y, n);
}

void batch_norm(int64_t n, int64_t channels, int64_t spatial, const float* x, const float* scale,
                const float* bias, const float* mean, const float* var, float epsilon, float* y,
                const Activation& act) {
  check(n >= 0 && channels >= 0 && spatial >= 0, "",
        "BatchNormalization sizes must be non-negative");
  const SpanFn fn = span_fn(act.kind);
#pragma omp parallel for schedule(static) if (n * channels * spatial > kChunk)
  for (int64_t bc = 0; bc < n * channels; ++bc) {
    const int64_t c = bc % channels;
    const float s = scale[c] / std::sqrt(var[c] + epsilon);
    const float shift = bias[c] - mean[c] * s;
    const float* xs = x + bc * spatial;
    float* ys = y + bc * spatial;
    const __m256 sv = _mm256_set1_ps(s), tv = _mm256_set1_ps(shift);
    int64_t i = 0;
    for (; i + 8 <= spatial; i += 8) {
      _mm256_storeu_ps(ys + i, _mm256_fmadd_ps(_mm256_loadu_ps(xs + i), sv, tv));
    }
    for (; i < spatial; ++i) ys[i] = std::fma(xs[i], s, shift);
    if (act.kind != ActivationKind::none) fn(act, 0.f, ys, ys, spatial);
  }
}

void fold_batch_norm(int64_t c_out, int64_t k, const float* w, const float* bias_in,
                     const float* scale, const float* beta, const float* mean, const float* var,
                     float epsilon, float* w_out, float* bias_out) {
  for (int64_t o = 0; o < c_out; ++o) {
    const float s = scale[o] / std::sqrt(var[o] + epsilon);
    for (int64_t j = 0; j < k; ++j) w_out[o * k + j] = w[o * k + j] * s;
    bias_out[o] = ((bias_in ? bias_in[o] : 0.f) - mean[o]) * s + beta[o];
  }
}

void softmax(const float* x, float* y, int64_t outer, int64_t axis, int64_t inner) {
  check(outer >= 0 && axis >= 1 && inner >= 1, "",
        "Softmax needs a non-empty axis, got " + std::to_string(axis));
  if (inner == 1) {
#pragma omp parallel for schedule(static) if (outer * axis > kChunk)
    for (int64_t o = 0; o < outer; ++o) {
      const float* xs = x + o * axis;
      float* ys = y + o * axis;
      float mx = xs[0];
      for (int64_t a = 1; a < axis; ++a) mx = std::max(mx, xs[a]);
      int64_t a = 0;
      const __m256 mv = _mm256_set1_ps(mx);
      for (; a + 8 <= axis; a += 8) {
        _mm256_storeu_ps(ys + a, exp8(_mm256_sub_ps(_mm256_loadu_ps(xs + a), mv)));
      }
      for (; a < axis; ++a) ys[a] = exp1(xs[a] - mx);
      double sum = 0.0;  // fixed order, double: exact enough for any axis length
      for (a = 0; a < axis; ++a) sum += ys[a];
      const float inv = static_cast<float>(1.0 / sum);
      for (a = 0; a < axis; ++a) ys[a] *= inv;
    }
    return;
  }
#pragma omp parallel for schedule(static) if (outer * axis * inner > kChunk)
  for (int64_t o = 0; o < outer; ++o) {
    const float* xs = x + o * axis * inner;
    float* ys = y + o * axis * inner;
    for (int64_t i = 0; i < inner; ++i) {
      float mx = xs[i];
      for (int64_t a = 1; a < axis; ++a) mx = std::max(mx, xs[a * inner + i]);
      double sum = 0.0;
      for (int64_t a = 0; a < axis; ++a) {
        const float e = exp1(xs[a * inner + i] - mx);
        ys[a * inner + i] = e;
        sum += e;
      }
      const float inv = static_cast<float>(1.0 / sum);
      for (int64_t a = 0; a < axis; ++a) ys[a * inner + i] *= inv;
    }
  }
}

}  // namespace tailor::runtime::kernels
