// f32_conv1x1_6x16_avx2: 1×1, stride-1, unpadded convolution (any groups),
// AVX2/FMA. Per group, y_g = W_g·x_g with x_g the [c_in/groups, H·W]
// matrix: 6 output channels × 16 pixels per register tile (the 6×16
// micro-kernel's strided form on x, W in the 6-row panels of
// f32_conv_pack_6x16_avx2, packed once at load), bias and activation
// applied while the tile is in L1, then stored. The strips of 16 pixels, the
// work items and the copies of x (large planes, a block's last < 16 pixels)
// are f32_conv1x1_strips.h's. Against the gemm path (OpenBLAS on x, then a
// bias/activation pass) this saves OpenBLAS's zeroing of y, its copy of x and
// the second pass over y. Each output sums its K products in ascending k
// (chunks of 256), whatever the threads.
#if defined(__AVX2__) && defined(__FMA__)

#include <immintrin.h>

#include <algorithm>

#include "runtime/kernels/f32_conv1x1_strips.h"
#include "runtime/kernels/f32_gemm_6x16_avx2.h"
#include "tailor/runtime/kernels/registry.h"

namespace tailor::runtime::kernels {

namespace conv1x1_avx2 {

using detail::kKc;
using detail::kMr;
using detail::kNr;

// Pixels [j, j + cols) (cols ≤ 16) of every output channel of one group:
// b points at x_g's column j (row stride b_k), ap at the group's 6-row panels.
void strip(const float* ap, int64_t cog, int64_t k, const float* b, int64_t b_k, const float* bias,
           const Activation& act, float* yj, int64_t ohw, int64_t cols) {
  alignas(32) float tile[kMr * kNr];
  for (int64_t o0 = 0; o0 < cog; o0 += kMr) {
    const int64_t rows = std::min(kMr, cog - o0);
    for (int64_t k0 = 0; k0 < k; k0 += kKc) {
      detail::kernel_panel_strided(rows, k0 > 0, std::min(kKc, k - k0), ap + o0 * k + k0 * kMr, 1,
                                   kMr, b + k0 * b_k, b_k, tile);
    }
    for (int64_t r = 0; r < rows; ++r) {
      f32_bias_act_avx2(act, bias ? bias[o0 + r] : 0.f, tile + r * kNr, yj + (o0 + r) * ohw, cols);
    }
  }
}

}  // namespace conv1x1_avx2

void f32_conv1x1_6x16_avx2(const Conv2dParams& p, const float* x, const float* packed,
                           const float* bias, float* y, const Activation& act) {
  using detail::kMr;
  using detail::kNr;
  const int64_t ohw = p.h * p.w;
  const int64_t cig = p.c_in / p.groups, cog = p.c_out / p.groups;
  const int64_t group_size = (cog + kMr - 1) / kMr * kMr * cig;
  // Strips of 64 pixels (tails copied), each 16 at a time.
  detail::conv1x1_strips<kNr, 4 * kNr, true>(
      p, x, [&](const float* xs, int64_t xs_k, int64_t b, int64_t g, int64_t j, int64_t cols) {
        for (int64_t t = 0; t < cols; t += kNr) {
          conv1x1_avx2::strip(
              packed + g * group_size, cog, cig, xs + t, xs_k, bias ? bias + g * cog : nullptr, act,
              y + (b * p.c_out + g * cog) * ohw + j + t, ohw, std::min(kNr, cols - t));
        }
      });
}

}  // namespace tailor::runtime::kernels

#endif  // __AVX2__ && __FMA__
