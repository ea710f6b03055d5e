// f32_conv_gemm_6x16_avx2: convolution as an implicit-im2col GEMM, AVX2/FMA.
// The weights are packed in panels of 6 output channels (once, at load, by
// f32_conv_pack_6x16_avx2 when the caller keeps them), the input pixels are
// gathered straight from the image into blocks of up to 4 panels of 16
// output pixels (no im2col matrix; row segments of 64 pixels at a time), and a 6×16 register-tiled
// micro-kernel (12 accumulators; Goto & van de Geijn, "Anatomy of high-performance matrix
// multiplication", TOMS 34(3), 2008) runs the full reduction for each tile. Work items are (image,
// group, block of output pixels), a partition fixed by the shape; bias and activation are applied
// per block while it is in cache. Each output element sums its K products in ascending k order
// whatever the threads, so results are reproducible.
#if defined(__AVX2__) && defined(__FMA__)

#include <immintrin.h>

#include <algorithm>
#include <vector>

#include "runtime/kernels/f32_gemm_6x16_avx2.h"
#include "runtime/kernels/gemm_partition.h"
#include "tailor/runtime/kernels/registry.h"

namespace tailor::runtime::kernels {

namespace {

using detail::kernel_panel;
using detail::kKc;
using detail::kMr;
using detail::kNr;

// Panels of 16 output pixels gathered together (up to 4, 64 pixels): each
// input row segment is then read once for 64 outputs instead of 16, so
// whole cache lines are used and rows of different channels (often 4 KiB
// multiples apart, the same L1 set) are not re-fetched for every panel.
// Panel q of a block lies at bp + q·K·16, laid out k-major as one panel.
int64_t block_panels(int64_t k) {
  return std::clamp<int64_t>(3072 / k, 1, 4);  // block ≤ 192 KiB: L2-resident
}

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
void pack_run(const Conv2dParams& p, const float* x, int64_t cig, int64_t oy, int64_t ox0,
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
void pack_block(const Conv2dParams& p, const float* x, int64_t cig, int64_t j, int64_t cols,
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

// Output pixels [j0, j0 + nb) of all of one group's cog channels of one
// image: yg[o, j] = act(Σ_k W[o, k]·im2col(xg)[k, j] + bias[o]), k ascending
// (in chunks of 256). `ag` is that group's packed weights, `bias` that
// group's bias or null, `bp` a per-thread buffer of 16·K·block_panels(K) floats.
void conv_block(const Conv2dParams& p, const float* xg, const float* ag, const float* bias,
                const Activation& act, int64_t j0, int64_t nb, float* yg, float* bp) {
  const int64_t cig = p.c_in / p.groups, cog = p.c_out / p.groups;
  const int64_t k = cig * p.kh * p.kw, ohw = p.out_h() * p.out_w();
  const int64_t panels = (cog + kMr - 1) / kMr;
  const int64_t width = kNr * block_panels(k);
  // Partial sums of all channels for one 16-pixel panel, contiguous: output
  // rows lie ohw floats apart, often a multiple of 4 KiB, and accumulating
  // there would thrash L1 sets.
  thread_local std::vector<float> acc;
  acc.resize(static_cast<size_t>(panels * kMr * kNr));
  for (int64_t jb = j0; jb < j0 + nb; jb += width) {
    const int64_t bcols = std::min(width, j0 + nb - jb);
    pack_block(p, xg, cig, jb, bcols, bp);
    for (int64_t j = jb; j < jb + bcols; j += kNr) {
      const int64_t cols = std::min(kNr, jb + bcols - j);
      const float* bq = bp + (j - jb) / kNr * k * kNr;
      for (int64_t k0 = 0; k0 < k; k0 += kKc) {
        const int64_t kc = std::min(kKc, k - k0);
        for (int64_t pn = 0; pn < panels; ++pn) {
          const float* a = ag + (pn * k + k0) * kMr;
          kernel_panel(std::min(kMr, cog - pn * kMr), k0 > 0, kc, a, bq + k0 * kNr,
                       acc.data() + pn * kMr * kNr);
        }
      }
      for (int64_t o = 0; o < cog; ++o) {
        f32_bias_act_avx2(act, bias ? bias[o] : 0.f, acc.data() + o * kNr, yg + o * ohw + j, cols);
      }
    }
  }
}

}  // namespace

int64_t f32_conv_pack_6x16_avx2(const Conv2dParams& p, const float* w, float* packed) {
  // groups · ⌈cog/6⌉·6 · K floats: w [c_out, K] (K = c_in/groups·kh·kw) per
  // group in panels of 6 output channels, k-major: ap[g][panel][k][r]
  // (rows past cog zero).
  const int64_t cog = p.c_out / p.groups, k = p.c_in / p.groups * p.kh * p.kw;
  const int64_t panels = (cog + kMr - 1) / kMr;
  if (packed == nullptr) return p.groups * panels * kMr * k;
  for (int64_t g = 0; g < p.groups; ++g) {
    const float* wg = w + g * cog * k;
    float* ag = packed + g * panels * kMr * k;
    for (int64_t pn = 0; pn < panels; ++pn) {
      for (int64_t i = 0; i < k; ++i) {
        for (int64_t r = 0; r < kMr; ++r) {
          const int64_t o = pn * kMr + r;
          ag[(pn * k + i) * kMr + r] = o < cog ? wg[o * k + i] : 0.f;
        }
      }
    }
  }
  return p.groups * panels * kMr * k;
}

void f32_conv_gemm_packed_6x16_avx2(const Conv2dParams& p, const float* x, const float* packed,
                                    const float* bias, float* y, const Activation& act) {
  const int64_t ohw = p.out_h() * p.out_w();
  const int64_t cig = p.c_in / p.groups, cog = p.c_out / p.groups;
  const int64_t k = cig * p.kh * p.kw;
  const int64_t bn =
      p.column_block > 0 ? std::min(p.column_block, ohw) : detail::block_columns(ohw);
  const int64_t blocks = (ohw + bn - 1) / bn;
  const int64_t items = p.n * p.groups * blocks;
  const int64_t packed_group = (cog + kMr - 1) / kMr * kMr * k;
  const bool parallel = items > 1 && detail::worth_threads(p.n * p.c_out * ohw * k);
#pragma omp parallel if (parallel)
  {
    std::vector<float> panel(static_cast<size_t>(kNr * k * block_panels(k)));
#pragma omp for schedule(static)
    for (int64_t item = 0; item < items; ++item) {
      const int64_t blk = item % blocks, g = (item / blocks) % p.groups;
      const int64_t b = item / (blocks * p.groups);
      const int64_t j0 = blk * bn, nb = std::min(bn, ohw - j0);
      conv_block(p, x + (b * p.c_in + g * cig) * p.h * p.w, packed + g * packed_group,
                 bias ? bias + g * cog : nullptr, act, j0, nb, y + (b * p.c_out + g * cog) * ohw,
                 panel.data());
    }
  }
}

void f32_conv_gemm_6x16_avx2(const Conv2dParams& p, const float* x, const float* w,
                             const float* bias, float* y, const Activation& act) {
  std::vector<float> packed(static_cast<size_t>(f32_conv_pack_6x16_avx2(p, w, nullptr)));
  f32_conv_pack_6x16_avx2(p, w, packed.data());
  f32_conv_gemm_packed_6x16_avx2(p, x, packed.data(), bias, y, act);
}

}  // namespace tailor::runtime::kernels

#endif  // __AVX2__ && __FMA__
