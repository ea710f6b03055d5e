// f32_maxpool_avx2 against f32_maxpool_ref: a max is exact, so outputs must
// be equal, on 2×2 stride-2 windows (the vector path: even and odd widths,
// widths past and short of a full 16-column vector, ceil_mode's partial last
// window) and general windows (pads, strides, dilations, ceil_mode). A NaN
// propagates on the general path; on the 2×2 stride-2 vector path it may be
// dropped (vmaxps, as onnxruntime), so NaNs are tested on general shapes only.
#include <cmath>
#include <limits>

#include "runtime/kernels/kernel_compare.h"
#include "tailor/runtime/kernels/pool.h"

namespace tailor::runtime::kernels::testing {
namespace {

struct PoolCase {
  int64_t n, c, h, w, kh, kw, sh, sw, pt, pl, pb, pr, dh, dw;
  bool ceil_mode;
};

Pool2dParams params(const PoolCase& c) {
  Pool2dParams p;
  p.n = c.n, p.c = c.c, p.h = c.h, p.w = c.w, p.kh = c.kh, p.kw = c.kw;
  p.stride_h = c.sh, p.stride_w = c.sw, p.pad_top = c.pt, p.pad_left = c.pl;
  p.pad_bottom = c.pb, p.pad_right = c.pr, p.dil_h = c.dh, p.dil_w = c.dw;
  p.ceil_mode = c.ceil_mode;
  return p;
}

const PoolCase kVectorCases[] = {
    {1, 3, 8, 32, 2, 2, 2, 2, 0, 0, 0, 0, 1, 1, false},
    {2, 2, 9, 35, 2, 2, 2, 2, 0, 0, 0, 0, 1, 1, true},
    {1, 2, 7, 17, 2, 2, 2, 2, 0, 0, 0, 0, 1, 1, false},
    {1, 1, 6, 15, 2, 2, 2, 2, 0, 0, 0, 0, 1, 1, true},
    {1, 2, 5, 64, 2, 2, 2, 2, 0, 0, 1, 1, 1, 1, false},  // bottom/right pads only
};

const PoolCase kGeneralCases[] = {
    {1, 3, 9, 11, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, false},
    {2, 2, 10, 13, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, true},
    {1, 2, 12, 12, 3, 2, 1, 3, 2, 0, 1, 1, 2, 1, false},
    {1, 1, 7, 7, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, false},
    {1, 2, 20, 21, 5, 5, 3, 3, 2, 2, 2, 2, 1, 2, true},
    {1, 1, 4, 4, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, false},  // padded 2×2 s2: scalar path
};

class F32MaxPool : public KernelVsRef {
 protected:
  void check(const PoolCase& c, bool nans, uint64_t seed) {
    const Pool2dParams p = params(c);
    validate(p);
    auto x = uniform(p.n * p.c * p.h * p.w, seed);
    if (nans) {
      for (size_t i = 5; i < x.size(); i += 23) x[i] = std::numeric_limits<float>::quiet_NaN();
    }
    const size_t ny = static_cast<size_t>(p.n * p.c * p.out_h() * p.out_w());
    std::vector<float> want(ny), got(ny, -99.f);
    ref().max_pool(p, x.data(), want.data());
    opt().max_pool(p, x.data(), got.data());
    expect_same(got, want,
                "maxpool " + std::to_string(c.h) + "×" + std::to_string(c.w) + " k" +
                    std::to_string(c.kh) + "×" + std::to_string(c.kw) + " s" +
                    std::to_string(c.sh) + "," + std::to_string(c.sw) + (nans ? " NaN" : ""));
  }
};

TEST_F(F32MaxPool, VectorPathMatchesReference) {
  uint64_t seed = 1;
  for (const PoolCase& c : kVectorCases) check(c, false, ++seed);
}

TEST_F(F32MaxPool, GeneralPathMatchesReferenceWithNans) {
  uint64_t seed = 50;
  for (const PoolCase& c : kGeneralCases) {
    check(c, false, ++seed);
    check(c, true, ++seed);
  }
}

TEST_F(F32MaxPool, ReferenceByHand) {
  // 3×3 window, pads 1, stride 2 on [[1, 2, 3], [4, 9, 6], [7, 8, NaN]]:
  // corners see {1, 2, 4, 9} → 9, {2, 3, 9, 6} → 9, {4, 9, 7, 8} → 9, {9, 6, 8, NaN} → NaN.
  const PoolCase c{1, 1, 3, 3, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, false};
  const std::vector<float> x = {1, 2, 3, 4, 9, 6, 7, 8, std::numeric_limits<float>::quiet_NaN()};
  std::vector<float> y(4);
  f32_maxpool_ref(params(c), x.data(), y.data());
  EXPECT_EQ(y[0], 9.f);
  EXPECT_EQ(y[1], 9.f);
  EXPECT_EQ(y[2], 9.f);
  EXPECT_TRUE(std::isnan(y[3]));
}

}  // namespace
}  // namespace tailor::runtime::kernels::testing
