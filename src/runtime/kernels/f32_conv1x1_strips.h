// The work partition and x staging shared by the f32 1×1 conv kernels
// (f32_conv1x1_6x16_avx2, f32_conv1x1_12x32_avx512): per image and group,
// y_g = W_g·x_g with x_g the [c_in/groups, H·W] matrix, cut into strips of up
// to kStrip pixels (whole register tiles of kTile pixels but the last) that
// a kernel computes for every output channel of the group. Work items are
// (image, group, block of pixels), the block block_columns(H·W) rounded up
// to a multiple of kTile: a partition fixed by the shape, so each output's
// value never depends on the thread count. x is read in place on planes of
// up to kConv1x1InPlacePixels; on larger ones, whose rows (4 KiB multiples
// apart at 160², 320²) share L1 sets and would evict each other, each strip
// of every row is copied (zero-padded to kStrip) first, and with kCopyTails
// so is a strip that does not end on a whole tile (a kernel that masks its
// loads reads those in place too).
#pragma once

#if defined(__AVX2__) && defined(__FMA__)

#include <algorithm>
#include <cstdint>
#include <vector>

#include "runtime/kernels/gemm_partition.h"
#include "tailor/linalg/parallel.h"
#include "tailor/runtime/kernels/conv.h"

namespace tailor::runtime::kernels::detail {

/// Planes up to this many pixels are read in place by the 1×1 conv kernels
/// (kernels_bench BM_Conv1x1Path, 48→48 at 160² = 25600 pixels, 1 thread:
/// 45 GFLOP/s with x in place, 63 copied).
constexpr int64_t kConv1x1InPlacePixels = 8192;

/// Calls strip(xs, xs_k, b, g, j, cols) for every strip of cols ≤ kStrip
/// pixels [j, j + cols) of image b, group g: xs points at x_g's column j (row
/// stride xs_k floats; in a copy, the columns past cols hold zeros). The
/// items run over parallel_for's threads when worth_threads says the product pays.
template <int64_t kTile, int64_t kStrip, bool kCopyTails, class Strip>
void conv1x1_strips(const Conv2dParams& p, const float* x, const Strip& strip) {
  static_assert(kStrip % kTile == 0);
  const int64_t ohw = p.h * p.w;
  const int64_t cig = p.c_in / p.groups;
  const int64_t bn = (block_columns(ohw) + kTile - 1) / kTile * kTile;
  const int64_t blocks = (ohw + bn - 1) / bn;
  const int64_t items = p.n * p.groups * blocks;
  const bool parallel = items > 1 && worth_threads(p.n * p.c_out * ohw * cig);
  const bool copy_x = ohw > kConv1x1InPlacePixels;
  linalg::parallel_for(items, parallel, [&](int64_t item) {
    thread_local std::vector<float> strip_x;  // [cig, kStrip] copy of x's next pixels, zero-padded
    const int64_t blk = item % blocks, g = (item / blocks) % p.groups;
    const int64_t b = item / (blocks * p.groups);
    const int64_t j0 = blk * bn, j1 = std::min(ohw, j0 + bn);
    const float* xg = x + (b * p.c_in + g * cig) * ohw;
    for (int64_t j = j0; j < j1; j += kStrip) {
      const int64_t cols = std::min(kStrip, j1 - j);
      const float* src = xg + j;
      int64_t src_k = ohw;
      if (copy_x || (kCopyTails && cols % kTile != 0)) {
        strip_x.resize(static_cast<size_t>(cig * kStrip));
        for (int64_t i = 0; i < cig; ++i) {
          float* dst = strip_x.data() + i * kStrip;
          std::copy(xg + i * ohw + j, xg + i * ohw + j + cols, dst);
          std::fill(dst + cols, dst + kStrip, 0.f);
        }
        src = strip_x.data(), src_k = kStrip;
      }
      strip(src, src_k, b, g, j, cols);
    }
  });
}

}  // namespace tailor::runtime::kernels::detail

#endif  // __AVX2__ && __FMA__
