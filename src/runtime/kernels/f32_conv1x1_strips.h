// The work partition and x staging shared by the f32 1×1 conv kernels
// (f32_conv1x1_6x16_avx2, f32_conv1x1_12x32_avx512): per image and group,
// y_g = W_g·x_g with x_g the [c_in/groups, H·W] matrix, cut into strips of
// kNr pixels that a micro-kernel computes for every output channel of the
// group. Work items are (image, group, block of pixels), the block
// block_columns(H·W) rounded up to a multiple of kNr: a partition fixed by the
// shape, so each output's value never depends on the thread count. x is read
// in place on planes of up to kConv1x1InPlacePixels; on larger ones, whose
// rows (4 KiB multiples apart at 160², 320²) share L1 sets and would evict
// each other, the next 4·kNr pixels of every row are copied together
// (zero-padded) first, and with kCopyTails so is a block's last part that is
// not a whole number of strips (a kernel that masks its loads reads those in
// place too).
#pragma once

#if defined(__AVX2__) && defined(__FMA__)

#include <algorithm>
#include <cstdint>
#include <vector>

#include "runtime/kernels/gemm_partition.h"
#include "tailor/runtime/kernels/conv.h"

namespace tailor::runtime::kernels::detail {

/// Planes up to this many pixels are read in place by the 1×1 conv kernels
/// (kernels_bench BM_Conv1x1Path, 48→48 at 160² = 25600 pixels, 1 thread:
/// 45 GFLOP/s with x in place, 63 copied).
constexpr int64_t kConv1x1InPlacePixels = 8192;

/// Calls strip(xs, xs_k, b, g, j, cols) for every strip of cols ≤ kNr pixels
/// [j, j + cols) of image b, group g: xs points at x_g's column j (row stride
/// xs_k floats; in a copy, kNr-multiple columns past cols hold zeros). The
/// items run over the OpenMP team when worth_threads says the product pays.
template <int64_t kNr, bool kCopyTails, class Strip>
void conv1x1_strips(const Conv2dParams& p, const float* x, const Strip& strip) {
  constexpr int64_t kWide = 4 * kNr;  // pixels copied together
  const int64_t ohw = p.h * p.w;
  const int64_t cig = p.c_in / p.groups;
  const int64_t bn = (block_columns(ohw) + kNr - 1) / kNr * kNr;
  const int64_t blocks = (ohw + bn - 1) / bn;
  const int64_t items = p.n * p.groups * blocks;
  const bool parallel = items > 1 && worth_threads(p.n * p.c_out * ohw * cig);
  const bool copy_x = ohw > kConv1x1InPlacePixels;
#pragma omp parallel if (parallel)
  {
    std::vector<float> strip_x;  // [cig, kWide] copy of x's next pixels, zero-padded
#pragma omp for schedule(static)
    for (int64_t item = 0; item < items; ++item) {
      const int64_t blk = item % blocks, g = (item / blocks) % p.groups;
      const int64_t b = item / (blocks * p.groups);
      const int64_t j0 = blk * bn, j1 = std::min(ohw, j0 + bn);
      const float* xg = x + (b * p.c_in + g * cig) * ohw;
      for (int64_t jw = j0; jw < j1; jw += kWide) {
        const int64_t wide = std::min(kWide, j1 - jw);
        const float* src = xg + jw;
        int64_t src_k = ohw;
        if (copy_x || (kCopyTails && wide % kNr != 0)) {
          strip_x.resize(static_cast<size_t>(cig * kWide));
          for (int64_t i = 0; i < cig; ++i) {
            float* dst = strip_x.data() + i * kWide;
            std::copy(xg + i * ohw + jw, xg + i * ohw + jw + wide, dst);
            std::fill(dst + wide, dst + kWide, 0.f);
          }
          src = strip_x.data(), src_k = kWide;
        }
        for (int64_t j = 0; j < wide; j += kNr)
          strip(src + j, src_k, b, g, jw + j, std::min(kNr, wide - j));
      }
    }
  }
}

}  // namespace tailor::runtime::kernels::detail

#endif  // __AVX2__ && __FMA__
