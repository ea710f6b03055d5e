// conv2d with a column block equals the default blocking (implicit GEMM and 1×1 paths).
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "tailor/core/rng.h"
#include "tailor/runtime/kernels/conv.h"

namespace tailor::runtime::kernels {
namespace {

std::vector<float> random_vec(size_t n, uint64_t seed) {
  Rng rng(seed);
  std::vector<float> v(n);
  for (float& x : v) x = static_cast<float>(rng.uniform(-1, 1));
  return v;
}

void expect_blocks_agree(Conv2dParams p) {
  const auto x = random_vec(static_cast<size_t>(p.n * p.c_in * p.h * p.w), 1);
  const auto w = random_vec(static_cast<size_t>(p.c_out * p.c_in / p.groups * p.kh * p.kw), 2);
  const auto b = random_vec(static_cast<size_t>(p.c_out), 3);
  const size_t ny = static_cast<size_t>(p.n * p.c_out * p.out_h() * p.out_w());
  std::vector<float> full(ny), blocked(ny);
  conv2d(p, x.data(), w.data(), b.data(), full.data(), Activation::relu());
  for (int64_t block : {1, 7, 100, 1000000}) {
    p.column_block = block;
    conv2d(p, x.data(), w.data(), b.data(), blocked.data(), Activation::relu());
    for (size_t i = 0; i < ny; ++i)
      ASSERT_NEAR(blocked[i], full[i], 1e-5f) << "block " << block << " at " << i;
  }
}

TEST(ConvColumnBlock, Im2colPathPaddedStridedGrouped) {
  Conv2dParams p;
  p.n = 2, p.c_in = 4, p.h = 13, p.w = 11, p.c_out = 6, p.kh = 3, p.kw = 2;
  p.stride_h = 2, p.stride_w = 1, p.pad_top = 1, p.pad_left = 2, p.pad_bottom = 0, p.pad_right = 1;
  p.dil_h = 1, p.dil_w = 2, p.groups = 2;
  expect_blocks_agree(p);
}

TEST(ConvColumnBlock, PointwisePath) {
  Conv2dParams p;
  p.c_in = 5, p.h = 9, p.w = 17, p.c_out = 3;
  expect_blocks_agree(p);
}

}  // namespace
}  // namespace tailor::runtime::kernels
