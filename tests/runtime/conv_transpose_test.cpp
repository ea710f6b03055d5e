// ConvTranspose: a hand-computed case and random shapes against the
// definition (each input pixel scatters its kernel-weighted copy).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "runtime/kernel_test_util.h"
#include "tailor/core/error.h"
#include "tailor/runtime/kernels/conv.h"

namespace tailor::runtime::kernels {
namespace {

using testing::expect_close;
using testing::random_values;

TEST(ConvTransposeKernel, HandComputed) {
  // x = [[1, 2], [3, 4]], w = [[1, 10], [100, 1000]], stride 2, no pads: each
  // input pixel v writes the 2×2 block v·w, blocks not overlapping:
  // y = [[1, 10, 2, 20], [100, 1000, 200, 2000], [3, 30, 4, 40], [300, 3000, 400, 4000]], + bias 1.
  ConvTranspose2dParams p;
  p.c_in = 1, p.c_out = 1, p.h = 2, p.w = 2, p.kh = 2, p.kw = 2, p.stride_h = 2, p.stride_w = 2;
  const std::vector<float> x = {1, 2, 3, 4}, w = {1, 10, 100, 1000};
  const float bias = 1.f;
  std::vector<float> y(16);
  conv_transpose2d(p, x.data(), w.data(), &bias, y.data());
  EXPECT_EQ(y, (std::vector<float>{2, 11, 3, 21, 101, 1001, 201, 2001, 4, 31, 5, 41, 301, 3001, 401,
                                   4001}));
  // Stride 1, kernel 2×2, pads 1 on every side: the full 3×3 result
  //   [[1, 12, 20], [103, 1234, 2040], [300, 3400, 4000]]
  // cropped by one pixel each side leaves the centre, 1234 = 1·1000 + 2·100 + 3·10 + 4·1.
  p.stride_h = p.stride_w = 1;
  p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = 1;
  ASSERT_EQ(p.out_h(), 1);
  std::vector<float> y1(1);
  conv_transpose2d(p, x.data(), w.data(), nullptr, y1.data());
  EXPECT_EQ(y1[0], 1234.f);
}

// Definition: y[b, g·cog + o, iy·sh − pt + ky·dh, ix·sw − pl + kx·dw] +=
// x[b, g·cig + ci, iy, ix]·w[g·cig + ci, o, ky, kx], then + bias.
void check(const ConvTranspose2dParams& p, uint64_t seed) {
  const int64_t cig = p.c_in / p.groups, cog = p.c_out / p.groups;
  const int64_t oh = p.out_h(), ow = p.out_w();
  const auto x = random_values(p.n * p.c_in * p.h * p.w, seed);
  const auto w = random_values(p.c_in * cog * p.kh * p.kw, seed + 1);
  const auto bias = random_values(p.c_out, seed + 2);
  std::vector<double> want(static_cast<size_t>(p.n * p.c_out * oh * ow)), mag(want.size());
  for (int64_t b = 0; b < p.n; ++b)
    for (int64_t o = 0; o < p.c_out; ++o)
      for (int64_t i = 0; i < oh * ow; ++i) {
        want[(b * p.c_out + o) * oh * ow + i] = bias[o];
        mag[(b * p.c_out + o) * oh * ow + i] = std::fabs(bias[o]);
      }
  for (int64_t b = 0; b < p.n; ++b)
    for (int64_t g = 0; g < p.groups; ++g)
      for (int64_t ci = 0; ci < cig; ++ci)
        for (int64_t iy = 0; iy < p.h; ++iy)
          for (int64_t ix = 0; ix < p.w; ++ix)
            for (int64_t o = 0; o < cog; ++o)
              for (int64_t ky = 0; ky < p.kh; ++ky)
                for (int64_t kx = 0; kx < p.kw; ++kx) {
                  const int64_t oy = iy * p.stride_h - p.pad_top + ky * p.dil_h;
                  const int64_t ox = ix * p.stride_w - p.pad_left + kx * p.dil_w;
                  if (oy < 0 || oy >= oh || ox < 0 || ox >= ow) continue;
                  const double t = double(x[((b * p.c_in + g * cig + ci) * p.h + iy) * p.w + ix]) *
                                   w[(((g * cig + ci) * cog + o) * p.kh + ky) * p.kw + kx];
                  const size_t idx =
                      static_cast<size_t>(((b * p.c_out + g * cog + o) * oh + oy) * ow + ox);
                  want[idx] += t;
                  mag[idx] += std::fabs(t);
                }
  std::vector<float> y(want.size(), -99.f);
  conv_transpose2d(p, x.data(), w.data(), bias.data(), y.data());
  expect_close(y, want, mag, 1e-5, 1e-6, "conv_transpose seed " + std::to_string(seed));
}

TEST(ConvTransposeKernel, MatchesDefinitionOnRandomShapes) {
  // n, c_in, h, w, c_out, kh, kw, sh, sw, pt, pl, pb, pr, oph, opw, dh, dw, groups
  const std::vector<std::vector<int64_t>> cases = {
      {1, 8, 5, 6, 4, 2, 2, 2, 2, 0, 0, 0, 0, 0, 0, 1, 1, 1},  // the detector's 2×2 stride 2
      {2, 4, 4, 5, 6, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1},  // output_padding
      {1, 6, 5, 4, 4, 3, 2, 1, 2, 0, 1, 2, 0, 0, 1, 1, 1, 2},  // asymmetric pads, groups 2
      {1, 3, 4, 4, 3, 3, 3, 1, 1, 1, 1, 1, 1, 0, 0, 2, 2, 3},  // dilation 2, depthwise-like
      {1, 4, 3, 7, 2, 4, 3, 3, 2, 2, 0, 1, 1, 2, 1, 1, 1, 1},  // stride 3, output_padding 2
      {2, 4, 4, 5, 6, 3, 3, 3, 3, 0, 0, 0, 0, 0, 0, 1, 1, 2},  // 3×3 stride 3 tiles, groups 2
      {1, 2, 3, 9, 3, 1, 2, 1, 2, 0, 0, 0, 0, 0, 0, 1, 1, 1},  // 1×2 stride (1, 2) tiles
      // The detector's upsampling at full width: columns of 96 rows over
      // 21×23 pixels (the 1×1 kernel's tiles and masked tail on AVX-512).
      {1, 24, 21, 23, 24, 2, 2, 2, 2, 0, 0, 0, 0, 0, 0, 1, 1, 1},
  };
  uint64_t seed = 500;
  for (const auto& c : cases) {
    ConvTranspose2dParams p{c[0], c[1],  c[2],  c[3],  c[4],  c[5],  c[6],  c[7],  c[8],
                            c[9], c[10], c[11], c[12], c[13], c[14], c[15], c[16], c[17]};
    check(p, seed);
    seed += 10;
  }
}

TEST(ConvTransposeKernel, RejectsInvalidParameters) {
  ConvTranspose2dParams p;
  p.c_in = 2, p.c_out = 2, p.h = 3, p.w = 3, p.kh = p.kw = 2, p.stride_h = p.stride_w = 2;
  std::vector<float> buf(1000);
  p.out_pad_h = 2;  // must be < max(stride, dilation) = 2
  EXPECT_THROW(conv_transpose2d(p, buf.data(), buf.data(), nullptr, buf.data()), Error);
  p.out_pad_h = 0;
  p.groups = 3;
  EXPECT_THROW(conv_transpose2d(p, buf.data(), buf.data(), nullptr, buf.data()), Error);
}

}  // namespace
}  // namespace tailor::runtime::kernels
