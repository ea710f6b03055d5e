// f32_softmax_avx2: max, exponentials (Cephes, f32_math_avx2.h; 8 lanes when
// the axis is contiguous, with the max and the double sum on lanes too), a
// double sum in fixed order, one multiply by its inverse; parallel over the
// outer index.
#if defined(__AVX2__) && defined(__FMA__)

#include <immintrin.h>

#include <algorithm>

#include "runtime/kernels/f32_math_avx2.h"
#include "runtime/kernels/gemm_partition.h"
#include "tailor/linalg/parallel.h"
#include "tailor/runtime/kernels/registry.h"

namespace tailor::runtime::kernels {

using detail::exp1;
using detail::exp8;

namespace {

// One contiguous row: the max on 8 lanes (a NaN anywhere still makes every
// output NaN, through the sum), exponentials and their sum in one pass (8
// double lanes, 4 + 4, then combined in a fixed order: the result does not
// depend on the threads), then one multiply by the sum's inverse.
void softmax_row(const float* xs, float* ys, int64_t axis) {
  int64_t a = 0;
  float mx = xs[0];
  if (axis >= 8) {
    __m256 m8 = _mm256_loadu_ps(xs);
    for (a = 8; a + 8 <= axis; a += 8) m8 = _mm256_max_ps(m8, _mm256_loadu_ps(xs + a));
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, m8);
    for (float v : lanes) mx = std::max(mx, v);
  }
  for (; a < axis; ++a) mx = std::max(mx, xs[a]);
  const __m256 mv = _mm256_set1_ps(mx);
  __m256d s0 = _mm256_setzero_pd(), s1 = _mm256_setzero_pd();
  for (a = 0; a + 8 <= axis; a += 8) {
    const __m256 e = exp8(_mm256_sub_ps(_mm256_loadu_ps(xs + a), mv));
    _mm256_storeu_ps(ys + a, e);
    s0 = _mm256_add_pd(s0, _mm256_cvtps_pd(_mm256_castps256_ps128(e)));
    s1 = _mm256_add_pd(s1, _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)));
  }
  alignas(32) double part[4];
  _mm256_store_pd(part, _mm256_add_pd(s0, s1));
  double sum = (part[0] + part[1]) + (part[2] + part[3]);
  for (; a < axis; ++a) {
    ys[a] = exp1(xs[a] - mx);
    sum += ys[a];
  }
  const float inv = static_cast<float>(1.0 / sum);
  const __m256 iv = _mm256_set1_ps(inv);
  for (a = 0; a + 8 <= axis; a += 8)
    _mm256_storeu_ps(ys + a, _mm256_mul_ps(_mm256_loadu_ps(ys + a), iv));
  for (; a < axis; ++a) ys[a] *= inv;
}

}  // namespace

void f32_softmax_avx2(const float* x, float* y, int64_t outer, int64_t axis, int64_t inner) {
  // Max, exp-and-sum, scale: three passes (detail::worth_threads_elements).
  const bool threads = detail::worth_threads_elements(outer * axis * inner, 3);
  if (inner == 1) {
    linalg::parallel_for(outer, threads,
                         [&](int64_t o) { softmax_row(x + o * axis, y + o * axis, axis); });
    return;
  }
  linalg::parallel_for(outer, threads, [&](int64_t o) {
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
  });
}

}  // namespace tailor::runtime::kernels

#endif  // __AVX2__ && __FMA__
