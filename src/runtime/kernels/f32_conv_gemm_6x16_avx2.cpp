// f32_conv_gemm_6x16_avx2: convolution as an implicit-im2col GEMM, AVX2/FMA.
// The weights are packed in panels of 6 output channels (once, at load, by
// f32_conv_pack_6x16_avx2 when the caller keeps them), the input pixels are
// gathered straight from the image into blocks of up to 4 panels of 16
// output pixels (no im2col matrix; row segments of 64 pixels at a time), and a 6×16 register-tiled
// micro-kernel (12 accumulators; Goto & van de Geijn, "Anatomy of high-performance matrix
// multiplication", TOMS 34(3), 2008) runs the full reduction for each tile. Work items are (image,
// group, block of output pixels), a partition fixed by the shape; bias and activation are applied
// per block while it is in cache. Each output element sums its K products in ascending k order
// whatever the threads, so results are reproducible. Two shapes skip the gather and read the
// image directly with the same FMA chains: groups of ≤ 3 channels on stride-1 columns, and
// stride-2 columns with K ≤ 64 (the 3-channel stems), from each input row's two column phases.
#if defined(__AVX2__) && defined(__FMA__)

#include <immintrin.h>

#include <algorithm>
#include <vector>

#include "runtime/kernels/f32_conv_im2col_avx2.h"
#include "runtime/kernels/f32_conv_panels.h"
#include "runtime/kernels/f32_gemm_6x16_avx2.h"
#include "runtime/kernels/gemm_partition.h"
#include "tailor/linalg/parallel.h"
#include "tailor/runtime/kernels/registry.h"

namespace tailor::runtime::kernels {

namespace {

using detail::kernel_panel;
using detail::kKc;
using detail::kMr;
using detail::kNr;
using detail::pack_block;

// Panels of 16 output pixels gathered together (up to 4, 64 pixels): each
// input row segment is then read once for 64 outputs instead of 16, so
// whole cache lines are used and rows of different channels (often 4 KiB
// multiples apart, the same L1 set) are not re-fetched for every panel.
// Panel q of a block lies at bp + q·K·16, laid out k-major as one panel.
int64_t block_panels(int64_t k) {
  return std::clamp<int64_t>(3072 / k, 1, 4);  // block ≤ 192 KiB: L2-resident
}

// A group of few output channels (c_out ≤ 3) with strided columns (stride-1
// ones take the direct path below): the 6×16 micro-kernel would hold 2R accumulators, one FMA chain
// each, and wait on the FMA latency. Here R rows × NP panels of 16 columns
// (2·R·NP accumulators, NP ≤ few_rows_panels(R)): c[q·6·16 + r·16 + t] (+)= Σ_i ap[i·6 + r]·
// bp[q·b_panel + i·16 + t]. Each output is the same FMA chain as in the
// 6×16 kernel (ascending i, from +0 or from c), so the bits do not change.
template <int R, int NP, bool kAccumulate>
void kernel_rx16np(int64_t k, const float* ap, const float* bp, int64_t b_panel, float* c) {
  __m256 acc[R][NP][2];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int q = 0; q < NP; ++q)
#pragma GCC unroll 2
      for (int h = 0; h < 2; ++h)
        acc[r][q][h] = kAccumulate ? _mm256_loadu_ps(c + q * kMr * kNr + r * kNr + 8 * h)
                                   : _mm256_setzero_ps();
  for (int64_t i = 0; i < k; ++i) {
    __m256 a[R];
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) a[r] = _mm256_broadcast_ss(ap + i * kMr + r);
#pragma GCC unroll 4
    for (int q = 0; q < NP; ++q) {
#pragma GCC unroll 2
      for (int h = 0; h < 2; ++h) {
        const __m256 b = _mm256_loadu_ps(bp + q * b_panel + i * kNr + 8 * h);
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r) acc[r][q][h] = _mm256_fmadd_ps(a[r], b, acc[r][q][h]);
      }
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int q = 0; q < NP; ++q)
#pragma GCC unroll 2
      for (int h = 0; h < 2; ++h)
        _mm256_storeu_ps(c + q * kMr * kNr + r * kNr + 8 * h, acc[r][q][h]);
}

template <int R>
void kernel_rx16np_dispatch(int64_t np, bool accumulate, int64_t k, const float* ap,
                            const float* bp, int64_t b_panel, float* c) {
  auto run = [&]<int NP>() {
    if (accumulate) {
      kernel_rx16np<R, NP, true>(k, ap, bp, b_panel, c);
    } else {
      kernel_rx16np<R, NP, false>(k, ap, bp, b_panel, c);
    }
  };
  switch (np) {
    case 1:
      return run.template operator()<1>();
    case 2:
      return run.template operator()<2>();
    case 3:
      return run.template operator()<3>();
    default:
      return run.template operator()<4>();
  }
}

// The panels at once per rows: 8 (1 row × 4 panels) or 12 accumulators, of
// the 16 ymm registers.
int64_t few_rows_panels(int64_t rows) {
  return rows == 1 ? 4 : rows == 2 ? 3 : 2;
}

// kernel_rx16np for rows 1–3 and 1–few_rows_panels(rows) panels.
void kernel_few_rows(int64_t rows, int64_t np, bool accumulate, int64_t k, const float* ap,
                     const float* bp, int64_t b_panel, float* c) {
  switch (rows) {
    case 1:
      return kernel_rx16np_dispatch<1>(np, accumulate, k, ap, bp, b_panel, c);
    case 2:
      return kernel_rx16np_dispatch<2>(std::min<int64_t>(np, 3), accumulate, k, ap, bp, b_panel, c);
    default:
      return kernel_rx16np_dispatch<3>(std::min<int64_t>(np, 2), accumulate, k, ap, bp, b_panel, c);
  }
}

// Few output channels (a group's c_out ≤ 3) and stride-1 columns: direct
// convolution, no gather. An output row's R channels are summed in a row
// buffer one input channel at a time: per channel ci, per segment of 8·Q
// consecutive outputs (R·Q = 12 accumulators, enough independent FMA chains
// to hide the FMA latency), the partial sums are loaded (zero for ci = 0),
// each tap (ky, kx) ascending loads the 8·Q inputs it reads from the
// channel's zero-padded copy of the input row (zero rows outside the image)
// and multiplies them by the tap's weight from the packed panel, and the
// sums are stored back. Reading one channel's kh rows at a
// time streams them: summing all channels per segment instead read rows a
// plane apart (often a multiple of 1 MiB, the same cache sets) in turn, and
// ISNet's 64 → 1 side output at 512² ran at 2.5 GMAC/s. Each output is the
// implicit GEMM's FMA chain (k = (ci, ky, kx) ascending from +0, padding taps
// as products with 0; a stored f32 partial sum is exact), so the bits are
// those of the gathering path.
// acc rows r < R (row stride ld) [ox0, ox0 + 8·Q) (+)= Σ over taps (ky, kx)
// ascending of a[(ky·kw + kx)·6 + r] · rows[ky·dil_h·L + ox0 + kx·dil_w + ·],
// rows: the output row's first input row, zero-padded, L floats apart.
template <int R, int Q>
void direct_channel(const Conv2dParams& p, const float* rows, int64_t len, const float* a,
                    int64_t ox0, bool first, float* acc_rows, int64_t ld) {
  __m256 acc[R][Q];
#pragma GCC unroll 3
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 12
    for (int q = 0; q < Q; ++q)
      acc[r][q] = first ? _mm256_setzero_ps() : _mm256_loadu_ps(acc_rows + r * ld + ox0 + 8 * q);
  for (int64_t ky = 0; ky < p.kh; ++ky) {
    const float* xr = rows + ky * p.dil_h * len + ox0;
    for (int64_t kx = 0; kx < p.kw; ++kx) {
      const float* w = a + (ky * p.kw + kx) * kMr;
      const float* xk = xr + kx * p.dil_w;
#pragma GCC unroll 12
      for (int q = 0; q < Q; ++q) {
        const __m256 v = _mm256_loadu_ps(xk + 8 * q);
#pragma GCC unroll 3
        for (int r = 0; r < R; ++r)
          acc[r][q] = _mm256_fmadd_ps(_mm256_broadcast_ss(w + r), v, acc[r][q]);
      }
    }
  }
#pragma GCC unroll 3
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 12
    for (int q = 0; q < Q; ++q) _mm256_storeu_ps(acc_rows + r * ld + ox0 + 8 * q, acc[r][q]);
}

// Output rows [oy0, oy0 + t) of one image and group: per input channel, the
// input rows they read are copied once into zero-padded rows (zero rows
// outside the image), then each output row is summed from them in segments
// of 8·Q outputs, and the rest of the row in segments of 32.
template <int R, int Q>
void direct_rows_rq(const Conv2dParams& p, const float* xg, int64_t cig, const float* ag,
                    const float* bias, const Activation& act, int64_t oy0, int64_t t, float* yg) {
  constexpr int64_t cols = 8 * Q, tail_cols = 32;
  const int64_t ow = p.out_w(), ohw = p.out_h() * ow;
  const int64_t full = ow / cols * cols;  // the row's outputs in whole 8·Q segments
  const int64_t ld = full + (ow - full + tail_cols - 1) / tail_cols * tail_cols;  // one row
  const int64_t len = ld + (p.kw - 1) * p.dil_w;  // one padded input row
  const int64_t in_rows = (t - 1) * p.stride_h + (p.kh - 1) * p.dil_h + 1;
  const int64_t iy0 = oy0 * p.stride_h - p.pad_top;
  thread_local std::vector<float> sums, padded;
  sums.resize(static_cast<size_t>(t * R * ld));
  padded.assign(static_cast<size_t>(in_rows * len), 0.f);
  const int64_t cols_in = std::min(p.w, len - p.pad_left);  // columns copied per row
  const int64_t j0 = std::max<int64_t>(0, -iy0), j1 = std::min(in_rows, p.h - iy0);  // rows inside
  for (int64_t ci = 0; ci < cig; ++ci) {
    const float* xc = xg + ci * p.h * p.w;
    for (int64_t j = j0; j < j1; ++j)  // rows outside the image stay zero
      std::copy(xc + (iy0 + j) * p.w, xc + (iy0 + j) * p.w + cols_in,
                padded.data() + j * len + p.pad_left);
    if (ci + 1 < cig)  // the next channel's rows, from memory while this one computes
      for (int64_t j = j0; j < j1; ++j)
        for (int64_t c = 0; c < cols_in; c += 16)
          _mm_prefetch(reinterpret_cast<const char*>(xc + p.h * p.w + (iy0 + j) * p.w + c),
                       _MM_HINT_T0);
    const float* a = ag + ci * p.kh * p.kw * kMr;
    for (int64_t i = 0; i < t; ++i) {
      const float* rows = padded.data() + i * p.stride_h * len;
      float* row_sums = sums.data() + i * R * ld;
      for (int64_t ox0 = 0; ox0 < full; ox0 += cols)
        direct_channel<R, Q>(p, rows, len, a, ox0, ci == 0, row_sums, ld);
      for (int64_t ox0 = full; ox0 < ow; ox0 += tail_cols)
        direct_channel<R, tail_cols / 8>(p, rows, len, a, ox0, ci == 0, row_sums, ld);
    }
  }
  for (int64_t i = 0; i < t; ++i)
    for (int64_t o = 0; o < R; ++o)
      f32_bias_act_avx2(act, bias ? bias[o] : 0.f, sums.data() + (i * R + o) * ld,
                        yg + o * ohw + (oy0 + i) * ow, ow);
}

// Output rows per work item of the few-channel direct path.
constexpr int64_t kDirectRows = 8;

// Output rows [oy0, oy0 + t) of one image and group (cog ≤ 3 channels), bias
// and activation once their sums are complete; 12 accumulators (R·Q) in a
// row's whole segments, 4R in its last < 8·Q outputs.
void direct_rows(const Conv2dParams& p, const float* xg, int64_t cig, int64_t cog, const float* ag,
                 const float* bias, const Activation& act, int64_t oy0, int64_t t, float* yg) {
  if (cog == 1) {
    direct_rows_rq<1, 12>(p, xg, cig, ag, bias, act, oy0, t, yg);
  } else if (cog == 2) {
    direct_rows_rq<2, 6>(p, xg, cig, ag, bias, act, oy0, t, yg);
  } else {
    direct_rows_rq<3, 4>(p, xg, cig, ag, bias, act, oy0, t, yg);
  }
}

// Stride-2 columns and a short reduction (the 3-channel stems: K = 27):
// the gather of 16-pixel panels would cost more than the products. Direct,
// items (image, group, output row). Per row, each input row (ci, ky) the
// row reads is split once into its two column phases, phase φ holding
// x[iy, 2j + φ] at j (zero outside the image); tap (ci, ky, kx), whose
// column for output ox is 2·ox − pad_left + kx·dil_w = 2(ox + s) + φ, then
// reads the contiguous run of phase φ from j = ox + s. An R×16 register
// tile (R ≤ 6 channels of a packed panel, 16 outputs) runs over k = (ci,
// ky, kx) ascending from +0, padding taps included as products with 0: each
// output is the gathering path's FMA chain, so the bits are the same.
constexpr int64_t kStride2DirectMaxK = 64;

// Groups of ≤ 3 channels keep the gathering path's wider few-row tiles; a
// column block (a tuning decision) is the gathering path's.
bool stride2_direct(const Conv2dParams& p, int64_t k, int64_t cog) {
  return p.stride_w == 2 && k <= kStride2DirectMaxK && cog > 3 && p.column_block == 0;
}

// acc rows r < R of out (row stride ld) = Σ_i ap[i·6 + r]·taps[i][ox0 .. ox0 + 16).
template <int R>
void stride2_tile(int64_t k, const float* ap, const float* const* taps, int64_t ox0, float* out,
                  int64_t ld) {
  __m256 acc[R][2];
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
  for (int64_t i = 0; i < k; ++i) {
    const float* t = taps[i] + ox0;
    const __m256 b0 = _mm256_loadu_ps(t), b1 = _mm256_loadu_ps(t + 8);
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      const __m256 a = _mm256_broadcast_ss(ap + i * kMr + r);
      acc[r][0] = _mm256_fmadd_ps(a, b0, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(a, b1, acc[r][1]);
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r) {
    _mm256_storeu_ps(out + r * ld + ox0, acc[r][0]);
    _mm256_storeu_ps(out + r * ld + ox0 + 8, acc[r][1]);
  }
}

using Stride2TileFn = void (*)(int64_t, const float*, const float* const*, int64_t, float*,
                               int64_t);
constexpr Stride2TileFn kStride2Tiles[kMr] = {stride2_tile<1>, stride2_tile<2>, stride2_tile<3>,
                                              stride2_tile<4>, stride2_tile<5>, stride2_tile<6>};

// dst[m] = row[2(m − lead) + φ] for m < len (0 outside [0, w)).
void column_phase(const float* row, int64_t w, int64_t phi, int64_t lead, int64_t len, float* dst) {
  int64_t m = 0;
  for (; m < len; ++m) {  // left edge, until the source is inside
    const int64_t ix = 2 * (m - lead) + phi;
    if (ix >= 0) break;
    dst[m] = 0.f;
  }
  for (; m + 8 <= len && 2 * (m - lead) + phi + 16 <= w; m += 8) {
    // The even elements of 16 consecutive floats; restore the lane order.
    const float* s = row + 2 * (m - lead) + phi;
    const __m256 e = _mm256_shuffle_ps(_mm256_loadu_ps(s), _mm256_loadu_ps(s + 8), 0x88);
    _mm256_storeu_ps(dst + m, _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(e), 0xD8)));
  }
  for (; m < len; ++m) {
    const int64_t ix = 2 * (m - lead) + phi;
    dst[m] = ix >= 0 && ix < w ? row[ix] : 0.f;
  }
}

// Output row oy of one image and group: all cog channels, bias and activation.
void stride2_row(const Conv2dParams& p, const float* xg, int64_t cig, int64_t cog, const float* ag,
                 const float* bias, const Activation& act, int64_t oy, float* yg) {
  const int64_t ow = p.out_w(), ohw = p.out_h() * ow, k = cig * p.kh * p.kw;
  const int64_t owp = (ow + kNr - 1) / kNr * kNr;  // tiles read up to owp
  // Tap shifts s = ⌊(kx·dil − pad_left) / 2⌋ span [s_lo, s_hi]; phase
  // arrays start at j = s_lo ("lead" = −s_lo zeros' worth of columns).
  auto shift = [&](int64_t kx) {
    const int64_t c = kx * p.dil_w - p.pad_left;
    return c >= 0 ? c / 2 : -((1 - c) / 2);
  };
  const int64_t s_lo = shift(0), s_hi = shift(p.kw - 1), len = owp + s_hi - s_lo;
  thread_local std::vector<float> phases, out;
  thread_local std::vector<const float*> taps;
  phases.resize(static_cast<size_t>(cig * p.kh * 2 * len));
  out.resize(static_cast<size_t>(kMr * owp));
  taps.resize(static_cast<size_t>(k));
  for (int64_t ci = 0; ci < cig; ++ci)
    for (int64_t ky = 0; ky < p.kh; ++ky) {
      const int64_t iy = oy * p.stride_h - p.pad_top + ky * p.dil_h;
      float* ph = phases.data() + (ci * p.kh + ky) * 2 * len;
      for (int64_t phi = 0; phi < 2; ++phi) {
        if (iy < 0 || iy >= p.h) {
          std::fill(ph + phi * len, ph + (phi + 1) * len, 0.f);
        } else {
          column_phase(xg + (ci * p.h + iy) * p.w, p.w, phi, -s_lo, len, ph + phi * len);
        }
      }
      for (int64_t kx = 0; kx < p.kw; ++kx) {
        const int64_t c = kx * p.dil_w - p.pad_left, s = shift(kx);
        taps[static_cast<size_t>((ci * p.kh + ky) * p.kw + kx)] =
            ph + (c - 2 * s) * len + (s - s_lo);
      }
    }
  for (int64_t pn = 0; pn * kMr < cog; ++pn) {
    const int64_t rows = std::min(kMr, cog - pn * kMr);
    for (int64_t ox0 = 0; ox0 < ow; ox0 += kNr)
      kStride2Tiles[rows - 1](k, ag + pn * k * kMr, taps.data(), ox0, out.data(), owp);
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t o = pn * kMr + r;
      f32_bias_act_avx2(act, bias ? bias[o] : 0.f, out.data() + r * owp, yg + o * ohw + oy * ow,
                        ow);
    }
  }
}

// Output pixels [j0, j0 + nb) of all of one group's cog channels of one
// image: yg[o, j] = act(Σ_k W[o, k]·im2col(xg)[k, j] + bias[o]), k ascending
// (in chunks of 256). `ag` is that group's packed weights, `bias` that
// group's bias or null, `bp` a per-thread buffer of 16·K·block_panels(K) floats.
// Always inlined into its work item: called out of line (from parallel_for's
// item function) the recogniser's 1×3 conv (960 → 60 channels, 40 pixels)
// took 0.29 ms instead of 0.16.
[[gnu::always_inline]] inline void conv_block(const Conv2dParams& p, const float* xg,
                                              const float* ag, const float* bias,
                                              const Activation& act, int64_t j0, int64_t nb,
                                              float* yg, float* bp) {
  const int64_t cig = p.c_in / p.groups, cog = p.c_out / p.groups;
  const int64_t k = cig * p.kh * p.kw, ohw = p.out_h() * p.out_w();
  const int64_t panels = (cog + kMr - 1) / kMr;
  const int64_t width = kNr * block_panels(k);
  // Partial sums of all channels for one 16-pixel panel, contiguous: output
  // rows lie ohw floats apart, often a multiple of 4 KiB, and accumulating
  // there would thrash L1 sets.
  thread_local std::vector<float> acc;
  acc.resize(static_cast<size_t>(std::max<int64_t>(panels, 4) * kMr * kNr));
  for (int64_t jb = j0; jb < j0 + nb; jb += width) {
    const int64_t bcols = std::min(width, j0 + nb - jb);
    pack_block(p, xg, cig, jb, bcols, bp);
    const int64_t np = (bcols + kNr - 1) / kNr;  // the block's column panels
    if (cog <= 3 && np >= 2) {                   // few channels: all the block's panels at once
      const int64_t step = few_rows_panels(cog);
      for (int64_t q0 = 0; q0 < np; q0 += step) {
        for (int64_t k0 = 0; k0 < k; k0 += kKc) {
          const int64_t kc = std::min(kKc, k - k0);
          kernel_few_rows(cog, std::min(step, np - q0), k0 > 0, kc, ag + k0 * kMr,
                          bp + (q0 * k + k0) * kNr, k * kNr, acc.data() + q0 * kMr * kNr);
        }
      }
      for (int64_t q = 0; q < np; ++q) {
        const int64_t j = jb + q * kNr, cols = std::min(kNr, jb + bcols - j);
        for (int64_t o = 0; o < cog; ++o)
          f32_bias_act_avx2(act, bias ? bias[o] : 0.f, acc.data() + q * kMr * kNr + o * kNr,
                            yg + o * ohw + j, cols);
      }
      continue;
    }
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
  return detail::pack_conv_panels(p, w, kMr, packed);  // ap[g][panel][k][r], 6 rows
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
  if ((cog <= 3 && p.stride_w == 1) || stride2_direct(p, k, cog)) {
    // direct: items (image, group, block of output rows)
    const bool few = cog <= 3 && p.stride_w == 1;
    const int64_t oh = p.out_h(), rb = few ? kDirectRows : 1, ob = (oh + rb - 1) / rb;
    const int64_t rows = p.n * p.groups * ob;
    const bool par = rows > 1 && detail::worth_threads(p.n * p.c_out * ohw * k);
    linalg::parallel_for(rows, par, [&](int64_t item) {
      const int64_t oy = item % ob * rb, g = (item / ob) % p.groups, b = item / (ob * p.groups);
      const float* xg = x + (b * p.c_in + g * cig) * p.h * p.w;
      const float* bg = bias ? bias + g * cog : nullptr;
      float* yg = y + (b * p.c_out + g * cog) * ohw;
      if (few) {
        direct_rows(p, xg, cig, cog, packed + g * packed_group, bg, act, oy, std::min(rb, oh - oy),
                    yg);
      } else {
        stride2_row(p, xg, cig, cog, packed + g * packed_group, bg, act, oy, yg);
      }
    });
    return;
  }
  const bool parallel = items > 1 && detail::worth_threads(p.n * p.c_out * ohw * k);
  linalg::parallel_for(items, parallel, [&](int64_t item) {
    thread_local std::vector<float> panel;
    panel.resize(static_cast<size_t>(kNr * k * block_panels(k)));
    const int64_t blk = item % blocks, g = (item / blocks) % p.groups;
    const int64_t b = item / (blocks * p.groups);
    const int64_t j0 = blk * bn, nb = std::min(bn, ohw - j0);
    conv_block(p, x + (b * p.c_in + g * cig) * p.h * p.w, packed + g * packed_group,
               bias ? bias + g * cog : nullptr, act, j0, nb, y + (b * p.c_out + g * cog) * ohw,
               panel.data());
  });
}

void f32_conv_gemm_6x16_avx2(const Conv2dParams& p, const float* x, const float* w,
                             const float* bias, float* y, const Activation& act) {
  std::vector<float> packed(static_cast<size_t>(f32_conv_pack_6x16_avx2(p, w, nullptr)));
  f32_conv_pack_6x16_avx2(p, w, packed.data());
  f32_conv_gemm_packed_6x16_avx2(p, x, packed.data(), bias, y, act);
}

}  // namespace tailor::runtime::kernels

#endif  // __AVX2__ && __FMA__
