// Resize: the ONNX operator documentation's worked examples (linear with
// half_pixel / align_corners / asymmetric, nearest down- and upsampling),
// nearest-mode ties, and random shapes against a per-axis interpolation
// written from the specification.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "runtime/kernel_test_util.h"
#include "tailor/core/error.h"
#include "tailor/runtime/kernels/resize.h"

namespace tailor::runtime::kernels {
namespace {

using testing::random_values;

std::vector<float> run(ResizeParams p, const std::vector<float>& x) {
  std::vector<float> y(static_cast<size_t>(p.n * p.c * p.out_h * p.out_w));
  resize2d(p, x.data(), y.data());
  return y;
}

ResizeParams params(int64_t ih, int64_t iw, int64_t oh, int64_t ow, float sh, float sw,
                    ResizeMode mode, CoordinateTransform t,
                    NearestMode nm = NearestMode::round_prefer_floor) {
  ResizeParams p;
  p.c = 1, p.in_h = ih, p.in_w = iw, p.out_h = oh, p.out_w = ow, p.scale_h = sh, p.scale_w = sw;
  p.mode = mode, p.transform = t, p.nearest = nm;
  return p;
}

void expect_floats(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6) << "at " << i;
}

TEST(ResizeKernel, LinearDocumentationExamples) {
  const std::vector<float> x = {1, 2, 3, 4};
  // half_pixel, scales 2 (onnx resize_upsample_scales_linear): x_orig = (x + 0.5)/2 − 0.5
  // = −0.25 (clamped to 0), 0.25, 0.75, 1.25 (clamped to 1) per axis.
  expect_floats(
      run(params(2, 2, 4, 4, 2, 2, ResizeMode::linear, CoordinateTransform::half_pixel), x),
      {1, 1.25f, 1.75f, 2, 1.5f, 1.75f, 2.25f, 2.5f, 2.5f, 2.75f, 3.25f, 3.5f, 3, 3.25f, 3.75f, 4});
  // align_corners (resize_upsample_scales_linear_align_corners): x_orig = x/3.
  expect_floats(
      run(params(2, 2, 4, 4, 2, 2, ResizeMode::linear, CoordinateTransform::align_corners), x),
      {1, 4.f / 3, 5.f / 3, 2, 5.f / 3, 2, 7.f / 3, 8.f / 3, 7.f / 3, 8.f / 3, 3, 10.f / 3, 3,
       10.f / 3, 11.f / 3, 4});
  // asymmetric: x_orig = x/2 = 0, 0.5, 1, 1.5 (clamped to 1).
  expect_floats(
      run(params(2, 2, 4, 4, 2, 2, ResizeMode::linear, CoordinateTransform::asymmetric), x),
      {1, 1.5f, 2, 2, 2, 2.5f, 3, 3, 3, 3.5f, 4, 4, 3, 3.5f, 4, 4});
  // pytorch_half_pixel with an output length of 1 samples coordinate 0 on that axis:
  // rows of [[1, 2], [3, 4]] → 1×2 output [1, 2].
  expect_floats(
      run(params(2, 2, 1, 2, 0, 0, ResizeMode::linear, CoordinateTransform::pytorch_half_pixel), x),
      {1, 2});
}

TEST(ResizeKernel, NearestDocumentationExamples) {
  // resize_downsample_scales_nearest: [[1, 2, 3, 4], [5, 6, 7, 8]], scales 0.6 →
  // 1×2; half_pixel coordinates 1/3 → 0 and 2.0 → 2: [[1, 3]].
  expect_floats(
      run(params(2, 4, 1, 2, 0.6f, 0.6f, ResizeMode::nearest, CoordinateTransform::half_pixel),
          {1, 2, 3, 4, 5, 6, 7, 8}),
      {1, 3});
  // The detector's upsampling: asymmetric + floor, scale 2: each pixel repeated 2×2.
  expect_floats(run(params(2, 2, 4, 4, 2, 2, ResizeMode::nearest, CoordinateTransform::asymmetric,
                           NearestMode::floor),
                    {1, 2, 3, 4}),
                {1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4});
  // Ties: asymmetric, 1×5 → 1×2 at scale 0.4: x_orig(1) = 2.5 exactly;
  // round_prefer_floor takes index 2 (value 30), round_prefer_ceil index 3 (40).
  const std::vector<float> row = {10, 20, 30, 40, 50};
  expect_floats(run(params(1, 5, 1, 2, 1, 0.4f, ResizeMode::nearest,
                           CoordinateTransform::asymmetric, NearestMode::round_prefer_floor),
                    row),
                {10, 30});
  expect_floats(run(params(1, 5, 1, 2, 1, 0.4f, ResizeMode::nearest,
                           CoordinateTransform::asymmetric, NearestMode::round_prefer_ceil),
                    row),
                {10, 40});
  expect_floats(run(params(1, 5, 1, 2, 1, 0.4f, ResizeMode::nearest,
                           CoordinateTransform::asymmetric, NearestMode::ceil),
                    row),
                {10, 40});  // ceil(2.5) = 3
}

// Specification-level bilinear: per axis, clamp the original coordinate to
// [0, in − 1], interpolate between floor and floor + 1 (clamped) with weights
// (1 − f, f); the 2-D value is the product of the two 1-D interpolations.
double reference_linear(const std::vector<float>& x, int64_t ih, int64_t iw, double cy, double cx) {
  auto split = [](double c, int64_t in, int64_t& i0, int64_t& i1, double& f) {
    c = std::clamp(c, 0.0, double(in - 1));
    i0 = static_cast<int64_t>(std::floor(c));
    i1 = std::min(i0 + 1, in - 1);
    f = c - double(i0);
  };
  int64_t y0, y1, x0, x1;
  double fy, fx;
  split(cy, ih, y0, y1, fy);
  split(cx, iw, x0, x1, fx);
  auto at = [&](int64_t r, int64_t c) { return double(x[r * iw + c]); };
  return (1 - fy) * ((1 - fx) * at(y0, x0) + fx * at(y0, x1)) +
         fy * ((1 - fx) * at(y1, x0) + fx * at(y1, x1));
}

TEST(ResizeKernel, LinearMatchesDefinitionOnRandomShapes) {
  struct Case {
    int64_t ih, iw, oh, ow;
    CoordinateTransform t;
  };
  uint64_t seed = 70;
  for (const Case& c : {Case{5, 7, 11, 13, CoordinateTransform::half_pixel},
                        Case{9, 6, 4, 3, CoordinateTransform::half_pixel},
                        Case{5, 7, 10, 21, CoordinateTransform::pytorch_half_pixel},
                        Case{6, 5, 13, 9, CoordinateTransform::align_corners},
                        Case{4, 6, 9, 16, CoordinateTransform::asymmetric}}) {
    ResizeParams p = params(c.ih, c.iw, c.oh, c.ow, 0, 0, ResizeMode::linear, c.t);
    p.c = 2;
    const auto x = random_values(2 * c.ih * c.iw, seed++);
    const auto y = run(p, x);
    for (int64_t pl = 0; pl < 2; ++pl) {
      const std::vector<float> plane(x.begin() + pl * c.ih * c.iw,
                                     x.begin() + (pl + 1) * c.ih * c.iw);
      for (int64_t oy = 0; oy < c.oh; ++oy)
        for (int64_t ox = 0; ox < c.ow; ++ox) {
          auto coord = [&](int64_t o, int64_t in, int64_t out) -> double {
            const double s = double(out) / double(in);
            switch (c.t) {
              case CoordinateTransform::half_pixel:
                return (o + 0.5) / s - 0.5;
              case CoordinateTransform::pytorch_half_pixel:
                return out > 1 ? (o + 0.5) / s - 0.5 : 0.0;
              case CoordinateTransform::align_corners:
                return out == 1 ? 0.0 : double(o) * (in - 1) / (out - 1);
              default:
                return o / s;
            }
          };
          const double want =
              reference_linear(plane, c.ih, c.iw, coord(oy, c.ih, c.oh), coord(ox, c.iw, c.ow));
          // Inputs in [−1, 1], four terms: f32 coordinates and sums err ≲ 1e-6.
          ASSERT_NEAR(y[(pl * c.oh + oy) * c.ow + ox], want, 2e-6)
              << "transform " << int(c.t) << " at " << oy << "," << ox;
        }
    }
  }
}

TEST(ResizeKernel, RejectsEmptySizes) {
  std::vector<float> buf(16);
  EXPECT_THROW(
      resize2d(params(2, 2, 0, 4, 0, 0, ResizeMode::linear, CoordinateTransform::half_pixel),
               buf.data(), buf.data()),
      Error);
}

}  // namespace
}  // namespace tailor::runtime::kernels
