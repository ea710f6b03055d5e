// f32_maxpool_avx2: MaxPool, NCHW f32. 2×2 stride-2 unpadded undilated
// windows 8 outputs at a time (vmaxps on two rows, then even/odd lanes); every
// other window, and the columns past the last full vector, by a scalar max
// over the window's in-image elements (padding never wins, NaN kept).
#if defined(__AVX2__) && defined(__FMA__)

#include <immintrin.h>

#include <cmath>
#include <limits>

#include "tailor/runtime/kernels/registry.h"

namespace tailor::runtime::kernels {

namespace {

// Max over the in-image part of the window of output (oy, ox).
float window_max_avx2(const Pool2dParams& p, const float* xp, int64_t oy, int64_t ox) {
  const int64_t y0 = oy * p.stride_h - p.pad_top, x0 = ox * p.stride_w - p.pad_left;
  float m = -std::numeric_limits<float>::infinity();
  for (int64_t ky = 0; ky < p.kh; ++ky) {
    const int64_t iy = y0 + ky * p.dil_h;
    if (iy < 0 || iy >= p.h) continue;
    for (int64_t kx = 0; kx < p.kw; ++kx) {
      const int64_t ix = x0 + kx * p.dil_w;
      if (ix < 0 || ix >= p.w) continue;
      const float v = xp[iy * p.w + ix];
      if (v > m || std::isnan(v)) m = v;
    }
  }
  return m;
}

// 2×2 windows, stride 2, no pads: outputs [ox, ox + 8) of row oy from two
// input rows, for 2·ox + 16 ≤ w. NaN handling follows vmaxps (a NaN in the
// window may be dropped), as in onnxruntime's vectorised pooling.
inline void max_2x2s2_8(const float* r0, const float* r1, float* out) {
  const __m256 m0 = _mm256_max_ps(_mm256_loadu_ps(r0), _mm256_loadu_ps(r1));
  const __m256 m1 = _mm256_max_ps(_mm256_loadu_ps(r0 + 8), _mm256_loadu_ps(r1 + 8));
  const __m256 even = _mm256_shuffle_ps(m0, m1, 0x88), odd = _mm256_shuffle_ps(m0, m1, 0xDD);
  const __m256 m = _mm256_max_ps(even, odd);  // lanes in order 0 1 4 5 2 3 6 7 (by 64-bit pairs)
  _mm256_storeu_ps(out, _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(m), 0xD8)));
}

}  // namespace

void f32_maxpool_avx2(const Pool2dParams& p, const float* x, float* y) {
  const int64_t oh = p.out_h(), ow = p.out_w(), planes = p.n * p.c;
  const bool k2s2 = p.kh == 2 && p.kw == 2 && p.stride_h == 2 && p.stride_w == 2 &&
                    p.pad_top == 0 && p.pad_left == 0 && p.dil_h == 1 && p.dil_w == 1;
#pragma omp parallel for schedule(static) if (planes * oh * ow > 16384)
  for (int64_t pl = 0; pl < planes; ++pl) {
    const float* xp = x + pl * p.h * p.w;
    float* yp = y + pl * oh * ow;
    for (int64_t oy = 0; oy < oh; ++oy) {
      int64_t ox = 0;
      if (k2s2 && 2 * oy + 1 < p.h) {
        const float* r0 = xp + 2 * oy * p.w;
        for (; 2 * ox + 16 <= p.w && ox + 8 <= ow; ox += 8) {
          max_2x2s2_8(r0 + 2 * ox, r0 + p.w + 2 * ox, yp + oy * ow + ox);
        }
      }
      for (; ox < ow; ++ox) yp[oy * ow + ox] = window_max_avx2(p, xp, oy, ox);
    }
  }
}

}  // namespace tailor::runtime::kernels

#endif  // __AVX2__ && __FMA__
