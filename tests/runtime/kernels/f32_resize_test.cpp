// f32_resize_avx2 against f32_resize_ref: nearest (every nearest_mode with
// every coordinate transformation) must be equal, the same source index
// picked; linear (every transformation, up- and downsampling, scales given or
// derived from sizes, widths around the 8-lane gathers) within 8ε·max|x|: the
// AVX2 kernel interpolates x then y, each an fma of two weighted values
// (2 roundings of a value ≤ max|x|, weights summing to 1 with ≤ ε error),
// ≤ 3ε·max|x| per axis; the reference sums four products in double (≤ ε).
#include <algorithm>
#include <cmath>

#include "runtime/kernels/kernel_compare.h"
#include "tailor/runtime/kernels/resize.h"

namespace tailor::runtime::kernels::testing {
namespace {

struct Size {
  int64_t in_h, in_w, out_h, out_w;
  float scale_h, scale_w;  // 0: derived from the sizes
};

const Size kSizes[] = {
    {4, 5, 8, 10, 2.f, 2.f},  {3, 7, 9, 21, 0.f, 0.f},      {8, 9, 4, 4, 0.f, 0.f},
    {5, 17, 7, 33, 0.f, 0.f}, {6, 6, 3, 2, 0.5f, 0.4f},     {1, 1, 3, 5, 0.f, 0.f},
    {7, 3, 1, 1, 0.f, 0.f},   {10, 12, 25, 30, 2.5f, 2.5f},
};

const CoordinateTransform kTransforms[] = {
    CoordinateTransform::half_pixel, CoordinateTransform::pytorch_half_pixel,
    CoordinateTransform::align_corners, CoordinateTransform::asymmetric,
    CoordinateTransform::tf_half_pixel_for_nearest};

class F32Resize : public KernelVsRef {
 protected:
  void check(const Size& s, ResizeMode mode, CoordinateTransform t, NearestMode nm, uint64_t seed) {
    ResizeParams p;
    p.n = 2, p.c = 3, p.in_h = s.in_h, p.in_w = s.in_w, p.out_h = s.out_h, p.out_w = s.out_w;
    p.scale_h = s.scale_h, p.scale_w = s.scale_w;
    p.mode = mode, p.transform = t, p.nearest = nm;
    validate(p);
    const auto x = uniform(p.n * p.c * p.in_h * p.in_w, seed);
    const size_t ny = static_cast<size_t>(p.n * p.c * p.out_h * p.out_w);
    std::vector<float> want(ny), got(ny, -99.f);
    ref().resize(p, x.data(), want.data());
    opt().resize(p, x.data(), got.data());
    double max_x = 0;
    for (float v : x) max_x = std::max(max_x, static_cast<double>(std::fabs(v)));
    const double tol = mode == ResizeMode::nearest ? 0.0 : 8 * kEps * max_x;
    expect_within(got, want, std::vector<double>(ny, tol),
                  std::string(mode == ResizeMode::nearest ? "nearest" : "linear") + " " +
                      std::to_string(s.in_h) + "×" + std::to_string(s.in_w) + "→" +
                      std::to_string(s.out_h) + "×" + std::to_string(s.out_w) + " transform " +
                      std::to_string(static_cast<int>(t)) + " nearest_mode " +
                      std::to_string(static_cast<int>(nm)));
  }
};

TEST_F(F32Resize, NearestMatchesReference) {
  uint64_t seed = 1;
  for (const Size& s : kSizes) {
    for (const CoordinateTransform t : kTransforms) {
      for (const NearestMode nm : {NearestMode::round_prefer_floor, NearestMode::round_prefer_ceil,
                                   NearestMode::floor, NearestMode::ceil}) {
        check(s, ResizeMode::nearest, t, nm, ++seed);
      }
    }
  }
}

TEST_F(F32Resize, LinearMatchesReference) {
  uint64_t seed = 100;
  for (const Size& s : kSizes) {
    for (const CoordinateTransform t : kTransforms) {
      if (t == CoordinateTransform::tf_half_pixel_for_nearest) continue;  // nearest only
      check(s, ResizeMode::linear, t, NearestMode::round_prefer_floor, ++seed);
    }
  }
}

TEST_F(F32Resize, ReferenceByHand) {
  // 1×2 → 1×4 linear, half_pixel, x = [0, 1]: source x = (o + 0.5)/2 − 0.5 =
  // −0.25, 0.25, 0.75, 1.25 → clamped 0, 0.25, 0.75, 1 → [0, 0.25, 0.75, 1].
  ResizeParams p;
  p.c = 1, p.in_h = 1, p.in_w = 2, p.out_h = 1, p.out_w = 4;
  p.mode = ResizeMode::linear;
  const std::vector<float> x = {0.f, 1.f};
  std::vector<float> y(4);
  f32_resize_ref(p, x.data(), y.data());
  EXPECT_EQ(y, (std::vector<float>{0.f, 0.25f, 0.75f, 1.f}));
}

}  // namespace
}  // namespace tailor::runtime::kernels::testing
