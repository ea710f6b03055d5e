// f32_rope_avx2 against f32_rope_ref: both run the operations F32RopeFn
// names in its order, so they agree bit for bit, for d around the kernel's
// 8 columns (masked tails), several rows at strides wider than d, R random
// (not only a rotation) and with ±inf and NaN in x. And the reference by
// hand on the pair rotation of the llama graphs.
#include <cmath>
#include <limits>

#include "runtime/kernels/kernel_compare.h"

namespace tailor::runtime::kernels::testing {
namespace {

class F32Rope : public KernelVsRef {};

TEST_F(F32Rope, Avx2EqualsTheReferenceBitForBit) {
  uint64_t seed = 40;
  for (const int64_t d : {1, 3, 8, 13, 16, 64}) {
    for (const int64_t rows : {1, 4}) {
      const int64_t xs = d + 2, ys = d + 5;  // row strides wider than d
      std::vector<float> x = uniform(rows * xs, seed += 5, -3.0, 3.0);
      if (d >= 3 && rows > 1) {  // non-finite values in the last row
        x[(rows - 1) * xs] = std::numeric_limits<float>::infinity();
        x[(rows - 1) * xs + 2] = std::numeric_limits<float>::quiet_NaN();
      }
      const std::vector<float> cs = uniform(d, seed + 1), sn = uniform(d, seed + 2),
                               r = uniform(d * d, seed + 3);
      std::vector<float> want(static_cast<size_t>(rows * ys), 7.0f), got = want;
      ref().rope(x.data(), xs, cs.data(), sn.data(), r.data(), d, rows, want.data(), ys);
      opt().rope(x.data(), xs, cs.data(), sn.data(), r.data(), d, rows, got.data(), ys);
      // The gaps between rows keep their 7s in both.
      expect_same(got, want, "rope d " + std::to_string(d) + " rows " + std::to_string(rows));
    }
  }
}

TEST(F32RopeReference, PairRotationByHand) {
  // R of the llama graphs for d = 4, pairs (0, 2) and (1, 3): (x·R) =
  // [−x2, −x3, x0, x1]. x = [1, 2, 3, 4], cos = [0.5, 1, 2, 0], sin = [1, 0.5, 1, 2]:
  // y = x·cos + (x·R)·sin = [0.5 − 3, 2 − 2, 6 + 1, 0 + 4] = [−2.5, 0, 7, 4].
  const std::vector<float> r = {0,  0,  1, 0,  //
                                0,  0,  0, 1,  //
                                -1, 0,  0, 0,  //
                                0,  -1, 0, 0};
  const std::vector<float> x = {1, 2, 3, 4}, cs = {0.5f, 1, 2, 0}, sn = {1, 0.5f, 1, 2};
  std::vector<float> y(4);
  f32_rope_ref(x.data(), 4, cs.data(), sn.data(), r.data(), 4, 1, y.data(), 4);
  EXPECT_EQ(y, (std::vector<float>{-2.5f, 0, 7, 4}));
}

}  // namespace
}  // namespace tailor::runtime::kernels::testing
