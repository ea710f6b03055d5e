// f32_conv1x1_12x32_avx512: 1×1, stride-1, unpadded convolution (any
// groups) with AVX-512F, on weights packed once at load
// (f32_conv1x1_pack_12x32). Per group, y_g = W_g·x_g with x_g the
// [c_in/groups, H·W] matrix: 12 output channels × 32 pixels per register
// tile (24 zmm accumulators; per k, two loads of x and 12 broadcasts of the
// panel's contiguous column feed 24 FMAs), the whole K in one FMA chain per
// output, ascending k from +0 (the products and sums of
// f32_conv1x1_6x16_avx2, so the two give the same bits). A strip's last
// < 32 pixels are read by masked loads, in place. The tiles of a strip of up
// to 128 pixels go to an L1 buffer and the AVX2 epilogue (f32_bias_act_avx2:
// bias, pre map, activation, post map) stores each channel's row of it at
// once, so bias and activation round as in every other conv kernel.
// Strips, work items and the copies of large planes: f32_conv1x1_strips.h.
// Built in the x86-64-v3 build through function target attributes; the
// registry picks it where cpu_features() reports AVX-512F.
#if defined(__AVX2__) && defined(__FMA__)

#include <immintrin.h>

#include <algorithm>

#include "runtime/kernels/f32_conv1x1_strips.h"
#include "runtime/kernels/f32_conv_panels.h"
#include "tailor/runtime/kernels/registry.h"

// GCC 12's AVX-512 intrinsics pass _mm512_undefined_*() (deliberately
// uninitialized) as the merge operand of some operations, which its
// -Wmaybe-uninitialized then reports at every use (GCC bug 105593).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace tailor::runtime::kernels {

namespace conv1x1_avx512 {

constexpr int64_t kMr = 12;  // output channels per tile (a packed panel)
constexpr int64_t kNr = 32;  // pixels per tile: two zmm

constexpr int64_t kStrip = 4 * kNr;  // pixels per strip: the epilogue's span

// c[r·c_row + t] = Σ_{i<k} ap[i·12 + r]·b[i·b_k + t] for r < 12, t < 32, one
// FMA chain per output from +0 in ascending i; with kFull false, lanes
// outside (m0, m1) read as 0 (nothing past them is touched).
template <bool kFull>
__attribute__((target("avx512f"), always_inline)) inline void tile_12x32(int64_t k, const float* ap,
                                                                         const float* b,
                                                                         int64_t b_k, __mmask16 m0,
                                                                         __mmask16 m1, float* c,
                                                                         int64_t c_row) {
  __m512 acc[kMr][2];
#pragma GCC unroll 12
  for (int r = 0; r < kMr; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
  for (int64_t i = 0; i < k; ++i) {
    const float* bi = b + i * b_k;
    const __m512 b0 = kFull ? _mm512_loadu_ps(bi) : _mm512_maskz_loadu_ps(m0, bi);
    const __m512 b1 = kFull ? _mm512_loadu_ps(bi + 16) : _mm512_maskz_loadu_ps(m1, bi + 16);
    const float* ai = ap + i * kMr;
#pragma GCC unroll 12
    for (int r = 0; r < kMr; ++r) {
      const __m512 av = _mm512_set1_ps(ai[r]);
      acc[r][0] = _mm512_fmadd_ps(av, b0, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(av, b1, acc[r][1]);
    }
  }
#pragma GCC unroll 12
  for (int r = 0; r < kMr; ++r) {
    _mm512_store_ps(c + r * c_row, acc[r][0]);
    _mm512_store_ps(c + r * c_row + 16, acc[r][1]);
  }
}

// Pixels [j, j + cols) (cols ≤ 128) of every output channel of one group:
// b points at x_g's column j (row stride b_k), ap at the group's panels.
// Per panel, the strip's tiles into an L1 buffer, then the epilogue over
// each channel's cols values at once.
__attribute__((target("avx512f"))) void strip(const float* ap, int64_t cog, int64_t k,
                                              const float* b, int64_t b_k, const float* bias,
                                              const Activation& act, float* yj, int64_t ohw,
                                              int64_t cols) {
  alignas(64) float buf[kMr * kStrip];
  const auto mask = [](int64_t n) -> __mmask16 {
    return n >= 16 ? __mmask16{0xFFFF} : n <= 0 ? __mmask16{0} : __mmask16((1u << n) - 1);
  };
  for (int64_t o0 = 0; o0 < cog; o0 += kMr) {
    const float* a = ap + o0 * k;
    for (int64_t t = 0; t < cols; t += kNr) {
      if (cols - t >= kNr) {
        tile_12x32<true>(k, a, b + t, b_k, 0, 0, buf + t, kStrip);
      } else {
        tile_12x32<false>(k, a, b + t, b_k, mask(cols - t), mask(cols - t - 16), buf + t, kStrip);
      }
    }
    const int64_t rows = std::min(kMr, cog - o0);
    for (int64_t r = 0; r < rows; ++r)
      f32_bias_act_avx2(act, bias ? bias[o0 + r] : 0.f, buf + r * kStrip, yj + (o0 + r) * ohw,
                        cols);
  }
}

}  // namespace conv1x1_avx512

int64_t f32_conv1x1_pack_12x32(const Conv2dParams& p, const float* w, float* packed) {
  return detail::pack_conv_panels(p, w, conv1x1_avx512::kMr, packed);
}

void f32_conv1x1_12x32_avx512(const Conv2dParams& p, const float* x, const float* packed,
                              const float* bias, float* y, const Activation& act) {
  using conv1x1_avx512::kMr;
  using conv1x1_avx512::kNr;
  const int64_t ohw = p.h * p.w;
  const int64_t cig = p.c_in / p.groups, cog = p.c_out / p.groups;
  const int64_t group_size = (cog + kMr - 1) / kMr * kMr * cig;
  detail::conv1x1_strips<kNr, conv1x1_avx512::kStrip, false>(
      p, x, [&](const float* xs, int64_t xs_k, int64_t b, int64_t g, int64_t j, int64_t cols) {
        conv1x1_avx512::strip(packed + g * group_size, cog, cig, xs, xs_k,
                              bias ? bias + g * cog : nullptr, act,
                              y + (b * p.c_out + g * cog) * ohw + j, ohw, cols);
      });
}

}  // namespace tailor::runtime::kernels

#pragma GCC diagnostic pop

#endif  // __AVX2__ && __FMA__
