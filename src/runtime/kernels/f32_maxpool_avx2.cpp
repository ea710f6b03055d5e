// f32_maxpool_avx2: MaxPool, NCHW f32. 2×2 stride-2 unpadded undilated
// windows 8 outputs at a time (vmaxps on two rows, then even/odd lanes); every
// other window, and the columns past the last full vector, by a scalar max
// over the window's in-image elements (padding never wins, NaN kept).
#if defined(__AVX2__) && defined(__FMA__)

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "runtime/kernels/gemm_partition.h"
#include "tailor/linalg/parallel.h"
#include "tailor/runtime/kernels/registry.h"

namespace tailor::runtime::kernels {

namespace {

// Max over the in-image part of the window of output (oy, ox).
float window_max_avx2(const Pool2dParams& p, const float* xp, int64_t oy, int64_t ox) {
  const int64_t y0 = oy * p.stride_h - p.pad_top, x0 = ox * p.stride_w - p.pad_left;
  // The taps inside the image, ky in [ky0, ky1) and kx in [kx0, kx1), so the
  // loops carry no bounds checks; the max is branch-free (a select) and a NaN
  // is remembered apart.
  const int64_t ky0 = y0 < 0 ? (-y0 + p.dil_h - 1) / p.dil_h : 0;
  const int64_t ky1 = std::min(p.kh, (p.h - y0 + p.dil_h - 1) / p.dil_h);
  const int64_t kx0 = x0 < 0 ? (-x0 + p.dil_w - 1) / p.dil_w : 0;
  const int64_t kx1 = std::min(p.kw, (p.w - x0 + p.dil_w - 1) / p.dil_w);
  float m = -std::numeric_limits<float>::infinity();
  bool nan = false;
  for (int64_t ky = ky0; ky < ky1; ++ky) {
    const float* row = xp + (y0 + ky * p.dil_h) * p.w + x0;
    for (int64_t kx = kx0; kx < kx1; ++kx) {
      const float v = row[kx * p.dil_w];
      nan |= std::isnan(v);
      m = v > m ? v : m;
    }
  }
  return nan ? std::numeric_limits<float>::quiet_NaN() : m;
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
  const auto plane = [&](int64_t pl) {
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
  };
  linalg::parallel_for(planes, detail::worth_threads_elements(planes * oh * ow, p.kh * p.kw),
                       plane);
}

}  // namespace tailor::runtime::kernels

#endif  // __AVX2__ && __FMA__
