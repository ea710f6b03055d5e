// Activation, unary math, BatchNormalization and Softmax operators over the
// registry's kernels (parallel chunks).
#include "tailor/runtime/kernels/elementwise.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "runtime/kernels/gemm_partition.h"
#include "tailor/core/error.h"
#include "tailor/linalg/parallel.h"
#include "tailor/runtime/kernels/registry.h"

namespace tailor::runtime::kernels {

namespace {
constexpr int64_t kChunk = 16384;  // elements per parallel_for item in flat loops

// y[i] = f(x[i]) by a span kernel, in fixed chunks over parallel_for's
// threads when detail::worth_threads_elements(n), else in one call on the
// calling thread; the same values either way.
template <class F>
void chunked(int64_t n, F f) {
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  if (chunks <= 1 || !detail::worth_threads_elements(n)) {
    if (n > 0) f(0, n);
    return;
  }
  linalg::parallel_for(chunks, true, [&](int64_t c) {
    const int64_t begin = c * kChunk;
    f(begin, std::min(kChunk, n - begin));
  });
}
}  // namespace

void apply_activation(const Activation& act, const float* x, float* y, int64_t n) {
  if (act.kind == ActivationKind::none && x == y) return;
  const F32BiasActFn fn = active_kernels().bias_act;
  chunked(n, [&](int64_t begin, int64_t len) { fn(act, 0.f, x + begin, y + begin, len); });
}

void bias_activation(const Activation& act, const float* bias, int64_t channels, int64_t spatial,
                     const float* x, float* y) {
  if (act.kind == ActivationKind::none && bias == nullptr && x == y) return;
  const F32BiasActFn fn = active_kernels().bias_act;
  auto channel = [&](int64_t c) {
    fn(act, bias ? bias[c] : 0.f, x + c * spatial, y + c * spatial, spatial);
  };
  linalg::parallel_for(channels, detail::worth_threads_elements(channels * spatial), channel);
}

void exp(const float* x, float* y, int64_t n) {
  const F32UnaryFn fn = active_kernels().exp;
  chunked(n, [&](int64_t begin, int64_t len) { fn(x + begin, y + begin, len); });
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
  active_kernels().batch_norm(n, channels, spatial, x, scale, bias, mean, var, epsilon, y, act);
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
  active_kernels().softmax(x, y, outer, axis, inner);
}

}  // namespace tailor::runtime::kernels
