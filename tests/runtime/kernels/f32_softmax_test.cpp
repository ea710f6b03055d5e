// f32_softmax_avx2 against f32_softmax_ref: a contiguous axis (inner = 1) of
// every length around the 8-lane width, a strided axis (inner > 1), wide
// input ranges, and a NaN that must turn its whole slice into NaN (and no
// other). Tolerance: Cephes exp ≤ 2 ulp (4ε), the float inverse of the double
// sum and the final product one rounding each, the reference ≤ 1 rounding:
// tol = 8ε·|y| + 2⁻¹²⁶ (exponentials below FLT_MIN flush to 0 on AVX2).
#include <cmath>
#include <limits>

#include "runtime/kernels/kernel_compare.h"

namespace tailor::runtime::kernels::testing {
namespace {

class F32Softmax : public KernelVsRef {
 protected:
  void check(int64_t outer, int64_t axis, int64_t inner, double range, bool nan) {
    auto x = uniform(outer * axis * inner, 5 + axis * 31 + inner, -range, range);
    if (nan) x[inner * (axis / 2)] = std::numeric_limits<float>::quiet_NaN();  // slice (0, 0)
    std::vector<float> want(x.size()), got(x.size(), -99.f);
    ref().softmax(x.data(), want.data(), outer, axis, inner);
    opt().softmax(x.data(), got.data(), outer, axis, inner);
    std::vector<double> tol(x.size());
    for (size_t i = 0; i < x.size(); ++i) tol[i] = 8 * kEps * std::fabs(want[i]) + 0x1p-126;
    const std::string what = "softmax " + std::to_string(outer) + "×" + std::to_string(axis) + "×" +
                             std::to_string(inner);
    expect_within(got, want, tol, what);
    if (!nan) return;
    for (int64_t a = 0; a < axis; ++a) {
      EXPECT_TRUE(std::isnan(got[a * inner])) << what << " NaN slice, a = " << a;
      if (inner > 1) {
        EXPECT_FALSE(std::isnan(got[a * inner + 1])) << what << " other slice";
      }
    }
  }
};

TEST_F(F32Softmax, ContiguousAxisMatchesReference) {
  for (int64_t axis = 1; axis <= 20; ++axis) check(3, axis, 1, 5.0, false);
  check(2, 1000, 1, 40.0, false);
  check(1, 37, 1, 100.0, false);  // exponentials down to e^−200: flushed / denormal
}

TEST_F(F32Softmax, StridedAxisMatchesReference) {
  check(2, 7, 3, 5.0, false);
  check(3, 9, 17, 20.0, false);
  check(1, 1, 5, 1.0, false);
}

TEST_F(F32Softmax, NanTurnsItsSliceNan) {
  check(2, 9, 1, 3.0, true);
  check(2, 40, 1, 3.0, true);  // NaN inside the 8-lane max and sum loops
  check(2, 9, 4, 3.0, true);
}

TEST_F(F32Softmax, ReferenceByHand) {
  // softmax([0, ln 3]) = [1/4, 3/4].
  const float x[2] = {0.f, std::log(3.f)};
  float y[2];
  f32_softmax_ref(x, y, 1, 2, 1);
  EXPECT_NEAR(y[0], 0.25f, 1e-7f);
  EXPECT_NEAR(y[1], 0.75f, 1e-7f);
}

}  // namespace
}  // namespace tailor::runtime::kernels::testing
