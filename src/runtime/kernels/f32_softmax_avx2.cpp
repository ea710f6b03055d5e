// f32_softmax_avx2: max, exponentials (Cephes, f32_math_avx2.h; 8 lanes when
// the axis is contiguous), a double sum in fixed order, one multiply by its
// inverse; parallel over the outer index.
#if defined(__AVX2__) && defined(__FMA__)

#include <immintrin.h>

#include <algorithm>

#include "runtime/kernels/f32_math_avx2.h"
#include "tailor/runtime/kernels/registry.h"

namespace tailor::runtime::kernels {

using detail::exp1;
using detail::exp8;

void f32_softmax_avx2(const float* x, float* y, int64_t outer, int64_t axis, int64_t inner) {
  constexpr int64_t kChunk = 16384;  // elements below which one thread runs
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

#endif  // __AVX2__ && __FMA__
