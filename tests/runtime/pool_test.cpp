// MaxPool / AveragePool / GlobalAveragePool: hand-computed windows, the
// ceil_mode output-size rule, count_include_pad, and random shapes against
// direct loops over each window.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "runtime/kernel_test_util.h"
#include "tailor/core/error.h"
#include "tailor/runtime/kernels/pool.h"

namespace tailor::runtime::kernels {
namespace {

using testing::random_values;

std::vector<float> iota_values(int64_t n) {
  std::vector<float> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), 1.f);
  return v;
}

TEST(PoolKernel, HandComputed2x2) {
  // x = 1..16 as 4×4; 2×2 windows, stride 2: max = [6, 8, 14, 16],
  // mean = [(1+2+5+6)/4, (3+4+7+8)/4, (9+10+13+14)/4, (11+12+15+16)/4] = [3.5, 5.5, 11.5, 13.5].
  Pool2dParams p;
  p.c = 1, p.h = 4, p.w = 4, p.kh = p.kw = 2, p.stride_h = p.stride_w = 2;
  const auto x = iota_values(16);
  std::vector<float> y(4);
  max_pool2d(p, x.data(), y.data());
  EXPECT_EQ(y, (std::vector<float>{6, 8, 14, 16}));
  average_pool2d(p, x.data(), y.data());
  EXPECT_EQ(y, (std::vector<float>{3.5f, 5.5f, 11.5f, 13.5f}));
}

TEST(PoolKernel, CeilModeKeepsThePartialLastWindow) {
  // x = 1..25 as 5×5, 2×2 stride 2, ceil_mode: windows start at 0, 2, 4; the
  // last covers only column/row 4. max = [[7, 9, 10], [17, 19, 20], [22, 24, 25]].
  Pool2dParams p;
  p.c = 1, p.h = 5, p.w = 5, p.kh = p.kw = 2, p.stride_h = p.stride_w = 2, p.ceil_mode = true;
  ASSERT_EQ(p.out_h(), 3);
  const auto x = iota_values(25);
  std::vector<float> y(9);
  max_pool2d(p, x.data(), y.data());
  EXPECT_EQ(y, (std::vector<float>{7, 9, 10, 17, 19, 20, 22, 24, 25}));
  // Average over the in-image part only: the last window of row 0 holds 5 and 10 → 7.5.
  average_pool2d(p, x.data(), y.data());
  EXPECT_EQ(y[2], 7.5f);
  // With pads 1 on both sides: ceil((5 + 2 − 2)/2) + 1 = 4, but the 4th window
  // would start at 6 ≥ 5 + 1 (entirely in the trailing pad) and is dropped: 3.
  p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = 1;
  EXPECT_EQ(p.out_h(), 3);
  EXPECT_EQ(p.out_w(), 3);
  p.ceil_mode = false;
  EXPECT_EQ(p.out_h(), 3);  // floor(5/2) + 1
}

TEST(PoolKernel, CountIncludePad) {
  // x = 1..9 as 3×3, 2×2 windows, stride 1, pads 1: output 4×4. The corner
  // window sees only x[0][0] = 1: 1/4 with count_include_pad, 1/1 without.
  // The window at (1, 1) covers 1, 2, 4, 5 fully: 3 either way.
  Pool2dParams p;
  p.c = 1, p.h = 3, p.w = 3, p.kh = p.kw = 2;
  p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = 1;
  const auto x = iota_values(9);
  std::vector<float> y(16);
  p.count_include_pad = true;
  average_pool2d(p, x.data(), y.data());
  EXPECT_EQ(y[0], 0.25f);
  EXPECT_EQ(y[5], 3.f);
  EXPECT_EQ(y[15], 9.f / 4.f);
  p.count_include_pad = false;
  average_pool2d(p, x.data(), y.data());
  EXPECT_EQ(y[0], 1.f);
  EXPECT_EQ(y[5], 3.f);
  EXPECT_EQ(y[15], 9.f);
}

// Direct loops: window of output (oy, ox) = rows oy·sh − pt + ky·dh, ky < kh
// (likewise columns); max over in-image elements; mean over in-image elements,
// or over the window clipped to [−pad_begin, size + pad_end) with count_include_pad.
void check_pool(const Pool2dParams& p, uint64_t seed) {
  const auto x = random_values(p.n * p.c * p.h * p.w, seed);
  const int64_t oh = p.out_h(), ow = p.out_w();
  std::vector<float> want_max, got(static_cast<size_t>(p.n * p.c * oh * ow));
  std::vector<double> want_avg;
  for (int64_t pl = 0; pl < p.n * p.c; ++pl)
    for (int64_t oy = 0; oy < oh; ++oy)
      for (int64_t ox = 0; ox < ow; ++ox) {
        float m = -std::numeric_limits<float>::infinity();
        double s = 0;
        int64_t count = 0, padded = 0;
        for (int64_t ky = 0; ky < p.kh; ++ky)
          for (int64_t kx = 0; kx < p.kw; ++kx) {
            const int64_t iy = oy * p.stride_h - p.pad_top + ky * p.dil_h;
            const int64_t ix = ox * p.stride_w - p.pad_left + kx * p.dil_w;
            if (iy < p.h + p.pad_bottom && ix < p.w + p.pad_right) ++padded;
            if (iy < 0 || iy >= p.h || ix < 0 || ix >= p.w) continue;
            const float v = x[(pl * p.h + iy) * p.w + ix];
            m = std::max(m, v);
            s += v;
            ++count;
          }
        want_max.push_back(m);
        want_avg.push_back(s / double(p.count_include_pad ? padded : count));
      }
  max_pool2d(p, x.data(), got.data());
  EXPECT_EQ(got, want_max) << "max_pool seed " << seed;
  if (p.dil_h == 1 && p.dil_w == 1) {
    average_pool2d(p, x.data(), got.data());
    for (size_t i = 0; i < got.size(); ++i) {
      // ≤ kh·kw terms of magnitude ≤ 1 summed in f32: error ≤ kh·kw·2⁻²⁴.
      ASSERT_NEAR(got[i], want_avg[i], 1e-6) << "average_pool seed " << seed << " at " << i;
    }
  }
}

TEST(PoolKernel, MatchesDefinitionOnRandomShapes) {
  uint64_t seed = 900;
  // n, c, h, w, kh, kw, sh, sw, pt, pl, pb, pr, dh, dw, ceil, include_pad
  for (const auto& c : std::vector<std::vector<int64_t>>{
           {1, 3, 9, 11, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 0, 0},
           {2, 2, 9, 11, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1},
           {1, 2, 7, 10, 2, 2, 2, 2, 0, 0, 0, 0, 1, 1, 1, 0},   // ISNet's ceil_mode pool
           {1, 3, 9, 37, 2, 2, 2, 2, 0, 0, 0, 0, 1, 1, 1, 0},   // vectorised 2×2/2 rows + tails
           {1, 2, 12, 10, 3, 2, 3, 2, 0, 0, 0, 0, 1, 1, 0, 0},  // the recogniser's 3×2 average
           {1, 2, 13, 9, 3, 3, 1, 2, 2, 0, 1, 2, 2, 1, 0, 0},   // dilations (max only)
           {1, 1, 8, 8, 4, 3, 3, 2, 3, 1, 0, 2, 1, 1, 1, 1},    // asymmetric pads, ceil
       }) {
    Pool2dParams p{c[0], c[1], c[2],  c[3],  c[4],  c[5],  c[6],       c[7],
                   c[8], c[9], c[10], c[11], c[12], c[13], c[14] == 1, c[15] == 1};
    check_pool(p, seed++);
  }
}

TEST(PoolKernel, GlobalAverageAndErrors) {
  // Two planes: 1..10 → 5.5; 11..20 → 15.5.
  const auto x = iota_values(20);
  std::vector<float> y(2);
  global_average_pool(2, 10, x.data(), y.data());
  EXPECT_EQ(y, (std::vector<float>{5.5f, 15.5f}));
  Pool2dParams p;
  p.c = 1, p.h = 3, p.w = 3, p.kh = p.kw = 2, p.pad_top = 2;  // pad ≥ kernel
  EXPECT_THROW(max_pool2d(p, x.data(), y.data()), Error);
  p.pad_top = 0;
  p.dil_h = 2;
  EXPECT_THROW(average_pool2d(p, x.data(), y.data()), Error);
}

}  // namespace
}  // namespace tailor::runtime::kernels
