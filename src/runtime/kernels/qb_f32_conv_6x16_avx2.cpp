// qb_f32_conv_6x16_avx2: a groups-1 convolution on packed-code weights
// (int8, int4, int3, ternary; per channel or per group), Ŵ viewed
// [c_out, K = c_in·kh·kw], Y[b, o, p] = act(Σ_k Ŵ[o, k]·im2col(X_b)[k, p] +
// bias[o]) written NCHW with no im2row matrix and no scatter. Work items are
// (image, block of output pixels), a partition fixed by the shape. Within an
// item each group of 24 output channels is decoded once (the schemes' panel
// decoder, 24·K floats, L2-resident) and reused for every pixel of the
// block; a 6×16 register tile (12 FMA accumulators; Goto & van de Geijn, TOMS
// 34(3), 2008) (f32_gemm_6x16_avx2.h's strided form) reads the decoded rows by broadcast and the
// pixels either straight from X's rows (1×1, stride 1, unpadded: the NCHW plane is already the
// im2col matrix; a last panel of fewer than 16 pixels from a zero-padded copy) or from the block's
// implicit-im2col panels (f32_conv_im2col_avx2.h, the dense conv's gather). Bias and activation run
// in the epilogue while the tile is in cache. Each output sums its K products in ascending order
// whatever the threads, so results are reproducible.
#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)

#include <immintrin.h>

#include <algorithm>
#include <vector>

#include "runtime/kernels/f32_conv_im2col_avx2.h"
#include "runtime/kernels/f32_gemm_6x16_avx2.h"
#include "runtime/kernels/gemm_partition.h"
#include "tailor/linalg/parallel.h"
#include "tailor/runtime/kernels/registry.h"

namespace tailor::runtime::kernels {
namespace {

using detail::kKc;  // reduction chunk: a 16-pixel panel's chunk (16 KiB) stays in L1
using detail::kMr;  // output channels per tile
using detail::kNr;  // output pixels per tile
// Output channels decoded together (4 panels of 6): each chunk of a pixel
// panel, loaded into L1 once, serves all of them; their decoded rows
// (24·K floats) stay in L2.
constexpr int64_t kGroupPanels = 4;
constexpr int64_t kGroupRows = kGroupPanels * kMr;

schemes::kernels::PackedDecodeFn decoder(int bits) {
  switch (bits) {
    case 8:
      return schemes::kernels::q8_f32_decode_avx2;
    case 4:
      return schemes::kernels::q4_f32_decode_avx2;
    case 3:
      return schemes::kernels::q3_f32_decode_avx2;
    default:
      return schemes::kernels::q2_f32_decode_avx2;
  }
}

// Pixels per work item: a multiple of 16 whose block of the im2col matrix
// (K rows) stays within ~192 KiB of L2 while every channel panel sweeps it,
// 16 to 512.
int64_t block_pixels(int64_t k, int64_t ohw) {
  const int64_t fit = std::clamp<int64_t>((192 * 1024 / 4) / k / kNr * kNr, kNr, 512);
  return std::min(fit, (ohw + kNr - 1) / kNr * kNr);
}

}  // namespace

void qb_f32_conv_6x16_avx2(const QbConvParams& p, const float* x, const float* bias, float* y,
                           const Activation& act) {
  const schemes::kernels::PackedGemmArgs& w = p.w;
  const Conv2dParams& c = p.conv;
  const schemes::kernels::PackedDecodeFn decode = decoder(p.bits);
  const int64_t k = w.in, out = w.out, ohw = c.out_h() * c.out_w(), chw = c.c_in * c.h * c.w;
  // The NCHW plane is the im2col matrix itself: read it in place.
  const bool in_place = c.kh == 1 && c.kw == 1 && c.stride_h == 1 && c.stride_w == 1 &&
                        c.pad_top == 0 && c.pad_left == 0 && c.pad_bottom == 0 && c.pad_right == 0;
  const int64_t bn = block_pixels(k, ohw), blocks = (ohw + bn - 1) / bn, items = c.n * blocks;
  const bool parallel = items > 1 && detail::worth_threads(c.n * out * ohw * k);
  linalg::parallel_for(items, parallel, [&](int64_t item) {
    // Per-thread buffers kept between calls (they only grow, to under 1 MiB
    // for these shapes): no heap allocation per call.
    thread_local std::vector<float> a, bp, acc;
    a.resize(static_cast<size_t>(kGroupRows * k));
    // In place: the zero-padded last panel; else the block's im2col panels.
    bp.resize(static_cast<size_t>(in_place ? k * kNr : k * bn));
    acc.resize(static_cast<size_t>(kGroupRows * bn));
    const int64_t b = item / blocks, j0 = (item % blocks) * bn, nb = std::min(bn, ohw - j0);
    const int64_t whole = nb / kNr, rest = nb % kNr;  // full 16-pixel panels, last panel
    const int64_t panels = whole + (rest != 0);
    const float* xb = x + b * chw;
    float* yb = y + b * out * ohw;
    if (!in_place) {
      detail::pack_block(c, xb, c.c_in, j0, nb, bp.data());
    } else if (rest != 0) {
      const float* src = xb + j0 + whole * kNr;
      for (int64_t i = 0; i < k; ++i) {
        std::copy_n(src + i * ohw, rest, bp.data() + i * kNr);
        std::fill(bp.data() + i * kNr + rest, bp.data() + (i + 1) * kNr, 0.f);
      }
    }
    for (int64_t g0 = 0; g0 < out; g0 += kGroupRows) {
      const int64_t grows = std::min(kGroupRows, out - g0), gp = (grows + kMr - 1) / kMr;
      decode(w, g0, grows, a.data());
      for (int64_t q = 0; q < panels; ++q) {
        for (int64_t k0 = 0; k0 < k; k0 += kKc) {
          const int64_t kc = std::min(kKc, k - k0);
          const float* bq;
          int64_t ldb = kNr;
          if (!in_place) {
            bq = bp.data() + (q * k + k0) * kNr;
          } else if (q < whole) {
            bq = xb + k0 * ohw + j0 + q * kNr;
            ldb = ohw;
          } else {
            bq = bp.data() + k0 * kNr;
          }
          // The chunk of 16 pixels (kc rows, L1) serves every panel of the group.
          for (int64_t pi = 0; pi < gp; ++pi)
            detail::kernel_panel_strided(std::min(kMr, grows - pi * kMr), k0 > 0, kc,
                                         a.data() + pi * kMr * k + k0, k, 1, bq, ldb,
                                         acc.data() + (q * kGroupPanels + pi) * kMr * kNr);
        }
      }
      for (int64_t i = 0; i < grows; ++i) {
        const int64_t pi = i / kMr, r = i % kMr;
        const float bo = bias ? bias[g0 + i] : 0.f;
        float* yo = yb + (g0 + i) * ohw + j0;
        for (int64_t q = 0; q < panels; ++q)
          f32_bias_act_avx2(act, bo, acc.data() + ((q * kGroupPanels + pi) * kMr + r) * kNr,
                            yo + q * kNr, q < whole ? kNr : rest);
      }
    }
  });
}

}  // namespace tailor::runtime::kernels

#endif  // __AVX2__ && __FMA__ && __F16C__
