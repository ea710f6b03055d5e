// Implicit-im2col GEMM for convolutions, AVX2/FMA: the weights are packed in
// panels of 6 output channels, the input pixels are gathered straight from
// the image into panels of 16 output pixels (no im2col matrix), and a 6×16
// register-tiled micro-kernel (12 accumulators; Goto & van de Geijn, "Anatomy
// of high-performance matrix multiplication", TOMS 34(3), 2008) runs the full
// reduction for each tile. Each output element sums its K products in
// ascending k order whatever the threads, so results are reproducible.
#include <immintrin.h>

#include <algorithm>
#include <vector>

#include "runtime/kernels/conv_internal.h"
#include "runtime/kernels/epilogue.h"

namespace tailor::runtime::kernels::detail {

namespace {

constexpr int64_t kMr = 6;   // output channels per tile
constexpr int64_t kNr = 16;  // output pixels per tile

constexpr int64_t kKc = 256;  // reduction chunk: a 16·256 B panel (16 KB) stays in L1

// y[r, t] (+)= Σ_k ap[k·6 + r]·bp[k·16 + t] for r < rows, t < cols; with
// kAccumulate the sum continues from y's current values.
template <bool kAccumulate>
void kernel_6x16(int64_t k, const float* ap, const float* bp, float* y, int64_t ldy, int64_t rows,
                 int64_t cols) {
  alignas(32) float tile[kMr][kNr];
  const bool full = rows == kMr && cols == kNr;
  const float* src = y;
  int64_t lds = ldy;
  if (kAccumulate && !full) {
    for (int64_t r = 0; r < kMr; ++r) {
      for (int64_t t = 0; t < kNr; ++t) tile[r][t] = r < rows && t < cols ? y[r * ldy + t] : 0.f;
    }
    src = &tile[0][0];
    lds = kNr;
  }
  __m256 c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51;
  if (kAccumulate) {
    c00 = _mm256_loadu_ps(src), c01 = _mm256_loadu_ps(src + 8);
    c10 = _mm256_loadu_ps(src + lds), c11 = _mm256_loadu_ps(src + lds + 8);
    c20 = _mm256_loadu_ps(src + 2 * lds), c21 = _mm256_loadu_ps(src + 2 * lds + 8);
    c30 = _mm256_loadu_ps(src + 3 * lds), c31 = _mm256_loadu_ps(src + 3 * lds + 8);
    c40 = _mm256_loadu_ps(src + 4 * lds), c41 = _mm256_loadu_ps(src + 4 * lds + 8);
    c50 = _mm256_loadu_ps(src + 5 * lds), c51 = _mm256_loadu_ps(src + 5 * lds + 8);
  } else {
    c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
    c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
  }
  for (int64_t i = 0; i < k; ++i) {
    const __m256 b0 = _mm256_loadu_ps(bp + i * kNr), b1 = _mm256_loadu_ps(bp + i * kNr + 8);
    const float* a = ap + i * kMr;
    __m256 av = _mm256_broadcast_ss(a + 0);
    c00 = _mm256_fmadd_ps(av, b0, c00);
    c01 = _mm256_fmadd_ps(av, b1, c01);
    av = _mm256_broadcast_ss(a + 1);
    c10 = _mm256_fmadd_ps(av, b0, c10);
    c11 = _mm256_fmadd_ps(av, b1, c11);
    av = _mm256_broadcast_ss(a + 2);
    c20 = _mm256_fmadd_ps(av, b0, c20);
    c21 = _mm256_fmadd_ps(av, b1, c21);
    av = _mm256_broadcast_ss(a + 3);
    c30 = _mm256_fmadd_ps(av, b0, c30);
    c31 = _mm256_fmadd_ps(av, b1, c31);
    av = _mm256_broadcast_ss(a + 4);
    c40 = _mm256_fmadd_ps(av, b0, c40);
    c41 = _mm256_fmadd_ps(av, b1, c41);
    av = _mm256_broadcast_ss(a + 5);
    c50 = _mm256_fmadd_ps(av, b0, c50);
    c51 = _mm256_fmadd_ps(av, b1, c51);
  }
  if (full) {
    _mm256_storeu_ps(y, c00);
    _mm256_storeu_ps(y + 8, c01);
    _mm256_storeu_ps(y + ldy, c10);
    _mm256_storeu_ps(y + ldy + 8, c11);
    _mm256_storeu_ps(y + 2 * ldy, c20);
    _mm256_storeu_ps(y + 2 * ldy + 8, c21);
    _mm256_storeu_ps(y + 3 * ldy, c30);
    _mm256_storeu_ps(y + 3 * ldy + 8, c31);
    _mm256_storeu_ps(y + 4 * ldy, c40);
    _mm256_storeu_ps(y + 4 * ldy + 8, c41);
    _mm256_storeu_ps(y + 5 * ldy, c50);
    _mm256_storeu_ps(y + 5 * ldy + 8, c51);
    return;
  }
  _mm256_store_ps(tile[0], c00);
  _mm256_store_ps(tile[0] + 8, c01);
  _mm256_store_ps(tile[1], c10);
  _mm256_store_ps(tile[1] + 8, c11);
  _mm256_store_ps(tile[2], c20);
  _mm256_store_ps(tile[2] + 8, c21);
  _mm256_store_ps(tile[3], c30);
  _mm256_store_ps(tile[3] + 8, c31);
  _mm256_store_ps(tile[4], c40);
  _mm256_store_ps(tile[4] + 8, c41);
  _mm256_store_ps(tile[5], c50);
  _mm256_store_ps(tile[5] + 8, c51);
  for (int64_t r = 0; r < rows; ++r) std::copy(tile[r], tile[r] + cols, y + r * ldy);
}

// bp[k·16 + t0 + t] = im2col element (k, pixel (oy, ox0 + t)) for t < len:
// one run of pixels within output row oy, k = (ci·kh + ky)·kw + kx.
void pack_run(const Conv2dParams& p, const float* x, int64_t cig, int64_t oy, int64_t ox0,
              int64_t t0, int64_t len, float* bp) {
  for (int64_t ci = 0; ci < cig; ++ci) {
    const float* xc = x + ci * p.h * p.w;
    for (int64_t ky = 0; ky < p.kh; ++ky) {
      const int64_t iy = oy * p.stride_h - p.pad_top + ky * p.dil_h;
      float* dst = bp + ((ci * p.kh + ky) * p.kw) * kNr + t0;
      if (iy < 0 || iy >= p.h) {
        for (int64_t kx = 0; kx < p.kw; ++kx) std::fill(dst + kx * kNr, dst + kx * kNr + len, 0.f);
        continue;
      }
      const float* row = xc + iy * p.w;
      for (int64_t kx = 0; kx < p.kw; ++kx, dst += kNr) {
        const int64_t ix0 = ox0 * p.stride_w - p.pad_left + kx * p.dil_w;
        if (p.stride_w == 1 && len == kNr && ix0 >= 0 && ix0 + kNr <= p.w) {
          _mm256_storeu_ps(dst, _mm256_loadu_ps(row + ix0));
          _mm256_storeu_ps(dst + 8, _mm256_loadu_ps(row + ix0 + 8));
          continue;
        }
        for (int64_t t = 0; t < len; ++t) {
          const int64_t ix = ix0 + t * p.stride_w;
          dst[t] = (ix >= 0 && ix < p.w) ? row[ix] : 0.f;
        }
      }
    }
  }
}

// bp[k·16 + t] = im2col element (k, j + t) of one image and group for
// t < cols, 0 for cols ≤ t < 16: the panel split into runs within output rows.
void pack_b16(const Conv2dParams& p, const float* x, int64_t cig, int64_t j, int64_t cols,
              float* bp) {
  const int64_t ow = p.out_w(), k = cig * p.kh * p.kw;
  for (int64_t t0 = 0; t0 < cols;) {
    const int64_t oy = (j + t0) / ow, ox0 = (j + t0) % ow;
    const int64_t len = std::min(cols - t0, ow - ox0);
    pack_run(p, x, cig, oy, ox0, t0, len, bp);
    t0 += len;
  }
  if (cols < kNr) {
    for (int64_t i = 0; i < k; ++i) std::fill(bp + i * kNr + cols, bp + (i + 1) * kNr, 0.f);
  }
}

}  // namespace

int64_t packed_weights_size(const Conv2dParams& p) {
  const int64_t cog = p.c_out / p.groups, k = p.c_in / p.groups * p.kh * p.kw;
  return p.groups * ((cog + kMr - 1) / kMr) * kMr * k;
}

void pack_weights(const Conv2dParams& p, const float* w, float* ap) {
  const int64_t cog = p.c_out / p.groups, k = p.c_in / p.groups * p.kh * p.kw;
  const int64_t panels = (cog + kMr - 1) / kMr;
  for (int64_t g = 0; g < p.groups; ++g) {
    const float* wg = w + g * cog * k;
    float* ag = ap + g * panels * kMr * k;
    for (int64_t pn = 0; pn < panels; ++pn) {
      for (int64_t i = 0; i < k; ++i) {
        for (int64_t r = 0; r < kMr; ++r) {
          const int64_t o = pn * kMr + r;
          ag[(pn * k + i) * kMr + r] = o < cog ? wg[o * k + i] : 0.f;
        }
      }
    }
  }
}

void conv_block_avx2(const Conv2dParams& p, const float* xg, const float* ag, const float* bias,
                     const Activation& act, int64_t j0, int64_t nb, float* yg, float* bp) {
  const int64_t cig = p.c_in / p.groups, cog = p.c_out / p.groups;
  const int64_t k = cig * p.kh * p.kw, ohw = p.out_h() * p.out_w();
  const int64_t panels = (cog + kMr - 1) / kMr;
  // Partial sums of all channels for one 16-pixel panel, contiguous: output
  // rows lie ohw floats apart, often a multiple of 4 KiB, and accumulating
  // there would thrash L1 sets.
  thread_local std::vector<float> acc;
  acc.resize(static_cast<size_t>(panels * kMr * kNr));
  for (int64_t j = j0; j < j0 + nb; j += kNr) {
    const int64_t cols = std::min(kNr, j0 + nb - j);
    pack_b16(p, xg, cig, j, cols, bp);
    for (int64_t k0 = 0; k0 < k; k0 += kKc) {
      const int64_t kc = std::min(kKc, k - k0);
      for (int64_t pn = 0; pn < panels; ++pn) {
        const float* a = ag + (pn * k + k0) * kMr;
        float* c = acc.data() + pn * kMr * kNr;
        if (k0 == 0) {
          kernel_6x16<false>(kc, a, bp + k0 * kNr, c, kNr, kMr, kNr);
        } else {
          kernel_6x16<true>(kc, a, bp + k0 * kNr, c, kNr, kMr, kNr);
        }
      }
    }
    for (int64_t o = 0; o < cog; ++o) {
      bias_activation_span(act, bias ? bias[o] : 0.f, acc.data() + o * kNr, yg + o * ohw + j, cols);
    }
  }
}

}  // namespace tailor::runtime::kernels::detail
