// The implicit-im2col gather of the 6×16 conv kernels (AVX2): a block of
// output pixels of one image and group becomes 16-pixel panels of the im2col
// matrix, k-major, straight from the NCHW image (no im2col matrix). Shared by
// f32_conv_gemm_6x16_avx2 (dense packed weights) and qb_f32_conv_6x16_avx2
// (packed-code weights).
#pragma once

#if defined(__AVX2__) && defined(__FMA__)

#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "runtime/kernels/f32_gemm_6x16_avx2.h"
#include "tailor/runtime/kernels/conv.h"

namespace tailor::runtime::kernels::detail {

// dst[t] = row[ix0 + t·stride] for t < cnt ≤ 16 (0 outside [0, w)).
inline void gather_piece(const float* row, int64_t w, int64_t ix0, int64_t stride, int64_t cnt,
                         float* dst) {
  if (stride == 1 && ix0 >= 0 && ix0 + cnt <= w) {
    // No loop: GCC turns a copy loop into an inline `rep movs`, whose start-up
    // cost (tens of cycles) on every 16-float piece was a quarter of a run.
    const float* src = row + ix0;
    int64_t t = 0;
    if (cnt >= 8) {
      _mm256_storeu_ps(dst, _mm256_loadu_ps(src));
      t = 8;
    }
    if (cnt - t >= 8) {
      _mm256_storeu_ps(dst + 8, _mm256_loadu_ps(src + 8));
    } else if (cnt > t) {
      // A mask of r = cnt − t leading ones: 8 entries of kOnes from 8 − r on.
      alignas(32) static const int32_t kOnes[16] = {-1, -1, -1, -1, -1, -1, -1, -1,
                                                    0,  0,  0,  0,  0,  0,  0,  0};
      const __m256i m = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kOnes + 8 - (cnt - t)));
      _mm256_maskstore_ps(dst + t, m, _mm256_maskload_ps(src + t, m));
    }
    return;
  }
  if (stride == 2 && cnt == kNr && ix0 >= 0 && ix0 + 2 * kNr <= w) {
    // Even elements of 32 consecutive floats: shuffle pairs of vectors, then
    // restore the 128-bit lane order.
    const float* r = row + ix0;
    const __m256 e0 = _mm256_shuffle_ps(_mm256_loadu_ps(r), _mm256_loadu_ps(r + 8), 0x88);
    const __m256 e1 = _mm256_shuffle_ps(_mm256_loadu_ps(r + 16), _mm256_loadu_ps(r + 24), 0x88);
    _mm256_storeu_ps(dst, _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(e0), 0xD8)));
    _mm256_storeu_ps(dst + 8, _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(e1), 0xD8)));
    return;
  }
  for (int64_t t = 0; t < cnt; ++t) {
    const int64_t ix = ix0 + t * stride;
    dst[t] = (ix >= 0 && ix < w) ? row[ix] : 0.f;
  }
}

// Block positions [t0, t0 + len) = pixels (oy, ox0 + t) of one output row:
// im2col element (k, t0 + t), k = (ci·kh + ky)·kw + kx, goes to panel
// (t0 + t) / 16 at bp[panel·K·16 + k·16 + (t0 + t) mod 16].
inline void pack_run(const Conv2dParams& p, const float* x, int64_t cig, int64_t oy, int64_t ox0,
                     int64_t t0, int64_t len, float* bp) {
  const int64_t panel_stride = cig * p.kh * p.kw * kNr;
  for (int64_t ci = 0; ci < cig; ++ci) {
    const float* xc = x + ci * p.h * p.w;
    for (int64_t ky = 0; ky < p.kh; ++ky) {
      const int64_t iy = oy * p.stride_h - p.pad_top + ky * p.dil_h;
      const bool inside = iy >= 0 && iy < p.h;
      const float* row = xc + (inside ? iy : 0) * p.w;
      for (int64_t kx = 0; kx < p.kw; ++kx) {
        const int64_t kidx = (ci * p.kh + ky) * p.kw + kx;
        const int64_t ix0 = ox0 * p.stride_w - p.pad_left + kx * p.dil_w;
        for (int64_t t = 0; t < len;) {
          const int64_t q = (t0 + t) / kNr, lane = (t0 + t) % kNr;
          const int64_t cnt = std::min(kNr - lane, len - t);
          float* dst = bp + q * panel_stride + kidx * kNr + lane;
          if (inside) {
            gather_piece(row, p.w, ix0 + t * p.stride_w, p.stride_w, cnt, dst);
          } else {
            std::fill(dst, dst + cnt, 0.f);
          }
          t += cnt;
        }
      }
    }
  }
}

// The block of output pixels [j, j + cols) (cols ≤ 16·block_panels) of one
// image and group, split into runs within output rows; lanes past cols in
// the last panel are 0.
inline void pack_block(const Conv2dParams& p, const float* x, int64_t cig, int64_t j, int64_t cols,
                       float* bp) {
  const int64_t ow = p.out_w(), k = cig * p.kh * p.kw;
  for (int64_t t0 = 0; t0 < cols;) {
    const int64_t oy = (j + t0) / ow, ox0 = (j + t0) % ow;
    const int64_t len = std::min(cols - t0, ow - ox0);
    pack_run(p, x, cig, oy, ox0, t0, len, bp);
    t0 += len;
  }
  if (cols % kNr != 0) {
    float* last = bp + (cols / kNr) * k * kNr;
    for (int64_t i = 0; i < k; ++i)
      std::fill(last + i * kNr + cols % kNr, last + (i + 1) * kNr, 0.f);
  }
}

}  // namespace tailor::runtime::kernels::detail

#endif  // __AVX2__ && __FMA__
