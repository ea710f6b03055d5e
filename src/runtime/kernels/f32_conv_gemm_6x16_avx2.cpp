// f32_conv_gemm_6x16_avx2: convolution as an implicit-im2col GEMM, AVX2/FMA.
// The weights are packed in panels of 6 output channels, the input pixels
// are gathered straight from the image into panels of 16 output pixels (no
// im2col matrix), and a 6×16 register-tiled micro-kernel (12 accumulators;
// Goto & van de Geijn, "Anatomy of high-performance matrix multiplication",
// TOMS 34(3), 2008) runs the full reduction for each tile. Work items are
// (image, group, block of output pixels), a partition fixed by the shape;
// bias and activation are applied per block while it is in cache. Each output
// element sums its K products in ascending k order whatever the threads, so
// results are reproducible.
#if defined(__AVX2__) && defined(__FMA__)

#include <immintrin.h>

#include <algorithm>
#include <vector>

#include "runtime/kernels/gemm_partition.h"
#include "tailor/runtime/kernels/registry.h"

namespace tailor::runtime::kernels {

namespace {

constexpr int64_t kMr = 6;   // output channels per tile
constexpr int64_t kNr = 16;  // output pixels per tile

constexpr int64_t kKc = 256;  // reduction chunk: a 16·256 B panel (16 KB) stays in L1

// c[r·16 + t] (+)= Σ_k ap[k·6 + r]·bp[k·16 + t] for r < R, t < 16 (c a
// contiguous 6×16 tile); with kAccumulate the sums continue from c. R < 6
// serves a last panel of fewer channels without computing the padding rows.
template <int R, bool kAccumulate>
void kernel_rx16(int64_t k, const float* ap, const float* bp, float* c) {
  __m256 acc[R][2];
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r) {
    acc[r][0] = kAccumulate ? _mm256_loadu_ps(c + r * kNr) : _mm256_setzero_ps();
    acc[r][1] = kAccumulate ? _mm256_loadu_ps(c + r * kNr + 8) : _mm256_setzero_ps();
  }
  for (int64_t i = 0; i < k; ++i) {
    const __m256 b0 = _mm256_loadu_ps(bp + i * kNr), b1 = _mm256_loadu_ps(bp + i * kNr + 8);
    const float* a = ap + i * kMr;
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      const __m256 av = _mm256_broadcast_ss(a + r);
      acc[r][0] = _mm256_fmadd_ps(av, b0, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(av, b1, acc[r][1]);
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r) {
    _mm256_storeu_ps(c + r * kNr, acc[r][0]);
    _mm256_storeu_ps(c + r * kNr + 8, acc[r][1]);
  }
}

template <int R>
void kernel_rx16_dispatch(bool accumulate, int64_t k, const float* ap, const float* bp, float* c) {
  if (accumulate) {
    kernel_rx16<R, true>(k, ap, bp, c);
  } else {
    kernel_rx16<R, false>(k, ap, bp, c);
  }
}

// The micro-kernel for a panel of `rows` (1–6) output channels.
void kernel_panel(int64_t rows, bool accumulate, int64_t k, const float* ap, const float* bp,
                  float* c) {
  switch (rows) {
    case 1:
      return kernel_rx16_dispatch<1>(accumulate, k, ap, bp, c);
    case 2:
      return kernel_rx16_dispatch<2>(accumulate, k, ap, bp, c);
    case 3:
      return kernel_rx16_dispatch<3>(accumulate, k, ap, bp, c);
    case 4:
      return kernel_rx16_dispatch<4>(accumulate, k, ap, bp, c);
    case 5:
      return kernel_rx16_dispatch<5>(accumulate, k, ap, bp, c);
    default:
      return kernel_rx16_dispatch<6>(accumulate, k, ap, bp, c);
  }
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
        if (p.stride_w == 2 && len == kNr && ix0 >= 0 && ix0 + 2 * kNr <= p.w) {
          // Even elements of 32 consecutive floats: shuffle pairs of vectors,
          // then restore the 128-bit lane order.
          const float* r = row + ix0;
          const __m256 e0 = _mm256_shuffle_ps(_mm256_loadu_ps(r), _mm256_loadu_ps(r + 8), 0x88);
          const __m256 e1 =
              _mm256_shuffle_ps(_mm256_loadu_ps(r + 16), _mm256_loadu_ps(r + 24), 0x88);
          _mm256_storeu_ps(dst,
                           _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(e0), 0xD8)));
          _mm256_storeu_ps(dst + 8,
                           _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(e1), 0xD8)));
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

// Floats of the packed weights: groups · ⌈cog/6⌉·6 · K.
int64_t packed_weights_size(const Conv2dParams& p) {
  const int64_t cog = p.c_out / p.groups, k = p.c_in / p.groups * p.kh * p.kw;
  return p.groups * ((cog + kMr - 1) / kMr) * kMr * k;
}

// Packs w [c_out, K] (K = c_in/groups·kh·kw) per group into panels of 6
// output channels, k-major: ap[g][panel][k][r] (rows past cog zero).
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

// Output pixels [j0, j0 + nb) of all of one group's cog channels of one
// image: yg[o, j] = act(Σ_k W[o, k]·im2col(xg)[k, j] + bias[o]), k ascending
// (in chunks of 256). `ag` is that group's packed weights, `bias` that
// group's bias or null, `bp` a per-thread buffer of 16·K floats.
void conv_block(const Conv2dParams& p, const float* xg, const float* ag, const float* bias,
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
        kernel_panel(std::min(kMr, cog - pn * kMr), k0 > 0, kc, a, bp + k0 * kNr,
                     acc.data() + pn * kMr * kNr);
      }
    }
    for (int64_t o = 0; o < cog; ++o) {
      f32_bias_act_avx2(act, bias ? bias[o] : 0.f, acc.data() + o * kNr, yg + o * ohw + j, cols);
    }
  }
}

}  // namespace

void f32_conv_gemm_6x16_avx2(const Conv2dParams& p, const float* x, const float* w,
                             const float* bias, float* y, const Activation& act) {
  const int64_t ohw = p.out_h() * p.out_w();
  const int64_t cig = p.c_in / p.groups, cog = p.c_out / p.groups;
  const int64_t k = cig * p.kh * p.kw;
  const int64_t bn =
      p.column_block > 0 ? std::min(p.column_block, ohw) : detail::block_columns(ohw);
  const int64_t blocks = (ohw + bn - 1) / bn;
  const int64_t items = p.n * p.groups * blocks;
  std::vector<float> packed(static_cast<size_t>(packed_weights_size(p)));
  pack_weights(p, w, packed.data());
  const int64_t packed_group = static_cast<int64_t>(packed.size()) / p.groups;
#pragma omp parallel if (items > 1)
  {
    std::vector<float> panel(static_cast<size_t>(kNr * k));
#pragma omp for schedule(static)
    for (int64_t item = 0; item < items; ++item) {
      const int64_t blk = item % blocks, g = (item / blocks) % p.groups;
      const int64_t b = item / (blocks * p.groups);
      const int64_t j0 = blk * bn, nb = std::min(bn, ohw - j0);
      conv_block(p, x + (b * p.c_in + g * cig) * p.h * p.w, packed.data() + g * packed_group,
                 bias ? bias + g * cog : nullptr, act, j0, nb, y + (b * p.c_out + g * cog) * ohw,
                 panel.data());
    }
  }
}

}  // namespace tailor::runtime::kernels

#endif  // __AVX2__ && __FMA__
