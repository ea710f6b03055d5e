// f32_conv1x1_6x16_avx2: 1×1, stride-1, unpadded convolution (any groups),
// AVX2/FMA. Per group, y_g = W_g·x_g with x_g the [c_in/groups, H·W]
// matrix: 6 output channels × 16 pixels per register tile (the 6×16
// micro-kernel's strided form, W rows read in place), bias and activation
// applied while the tile is in L1, then stored. x is read in place on planes
// of up to kInPlacePixels; on larger ones, whose rows (4 KiB multiples apart
// at 160², 320²) share L1 sets and would evict each other, and for the last
// pixels of a block, the next 64 pixels of every row are copied together
// (zero-padded) first. Against the gemm path (OpenBLAS on x, then a
// bias/activation pass) this saves OpenBLAS's zeroing of y, its copy of x and
// the second pass over y. Work items are (image, group, block of
// block_columns(H·W) pixels), a partition fixed by the shape; each output
// sums its K products in ascending k (chunks of 256), whatever the threads.
#if defined(__AVX2__) && defined(__FMA__)

#include <immintrin.h>

#include <algorithm>
#include <vector>

#include "runtime/kernels/f32_gemm_6x16_avx2.h"
#include "runtime/kernels/gemm_partition.h"
#include "tailor/runtime/kernels/registry.h"

namespace tailor::runtime::kernels {

namespace {

using detail::kKc;
using detail::kMr;
using detail::kNr;

constexpr int64_t kWide = 4 * kNr;        // pixels copied together
constexpr int64_t kInPlacePixels = 8192;  // planes up to this many read in place

// Pixels [j, j + cols) (cols ≤ 16) of every output channel of one group:
// b points at x_g's column j (row stride b_k), a at W_g [cog, k] row-major.
void strip(const float* a, int64_t cog, int64_t k, const float* b, int64_t b_k, const float* bias,
           const Activation& act, float* yj, int64_t ohw, int64_t cols) {
  alignas(32) float tile[kMr * kNr];
  for (int64_t o0 = 0; o0 < cog; o0 += kMr) {
    const int64_t rows = std::min(kMr, cog - o0);
    for (int64_t k0 = 0; k0 < k; k0 += kKc) {
      detail::kernel_panel_strided(rows, k0 > 0, std::min(kKc, k - k0), a + o0 * k + k0, k, 1,
                                   b + k0 * b_k, b_k, tile);
    }
    for (int64_t r = 0; r < rows; ++r) {
      f32_bias_act_avx2(act, bias ? bias[o0 + r] : 0.f, tile + r * kNr, yj + (o0 + r) * ohw, cols);
    }
  }
}

}  // namespace

void f32_conv1x1_6x16_avx2(const Conv2dParams& p, const float* x, const float* w, const float* bias,
                           float* y, const Activation& act) {
  const int64_t ohw = p.h * p.w;
  const int64_t cig = p.c_in / p.groups, cog = p.c_out / p.groups;
  const int64_t bn = detail::block_columns(ohw);
  const int64_t blocks = (ohw + bn - 1) / bn;
  const int64_t items = p.n * p.groups * blocks;
  const bool parallel = items > 1 && detail::worth_threads(p.n * p.c_out * ohw * cig);
  // kernels_bench BM_Conv1x1Path, 48→48 at 160² (25600 pixels), 1 thread:
  // 45 GFLOP/s with x in place, 63 copied.
  const bool copy_x = ohw > kInPlacePixels;
#pragma omp parallel if (parallel)
  {
    std::vector<float> strip_x;  // [cig, kWide] copy of x's next pixels, zero-padded
#pragma omp for schedule(static)
    for (int64_t item = 0; item < items; ++item) {
      const int64_t blk = item % blocks, g = (item / blocks) % p.groups;
      const int64_t b = item / (blocks * p.groups);
      const int64_t j0 = blk * bn, j1 = std::min(ohw, j0 + bn);
      const float* xg = x + (b * p.c_in + g * cig) * ohw;
      const float* wg = w + g * cog * cig;
      const float* bg = bias ? bias + g * cog : nullptr;
      float* yg = y + (b * p.c_out + g * cog) * ohw;
      for (int64_t jw = j0; jw < j1; jw += kWide) {
        const int64_t wide = std::min(kWide, j1 - jw);
        const float* src = xg + jw;
        int64_t src_k = ohw;
        if (copy_x || wide < kWide) {
          strip_x.resize(static_cast<size_t>(cig * kWide));
          for (int64_t i = 0; i < cig; ++i) {
            float* dst = strip_x.data() + i * kWide;
            std::copy(xg + i * ohw + jw, xg + i * ohw + jw + wide, dst);
            std::fill(dst + wide, dst + kWide, 0.f);
          }
          src = strip_x.data(), src_k = kWide;
        }
        for (int64_t j = 0; j < wide; j += kNr)
          strip(wg, cog, cig, src + j, src_k, bg, act, yg + jw + j, ohw, std::min(kNr, wide - j));
      }
    }
  }
}

}  // namespace tailor::runtime::kernels

#endif  // __AVX2__ && __FMA__
