// linalg::dgemm on a product worked by hand, and inverse_cholesky_upper
// against its definition (A⁻¹ = UᵀU, U upper with a positive diagonal) on a
// 3×3 matrix worked by hand and on seeded positive definite matrices, and
// against Eigen's inverse-then-factor route.
#include <gtest/gtest.h>

#include <Eigen/Cholesky>
#include <Eigen/Dense>
#include <cmath>
#include <vector>

#include "tailor/core/rng.h"
#include "tailor/linalg/blas.h"

namespace tailor::linalg {
namespace {

using MatD = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// [[1, 2], [3, 4]] · [[5, 6], [7, 8]] = [[19, 22], [43, 50]]; with alpha 2,
// beta −1 and C = 1 everywhere: 2·19 − 1 = 37, 43, 85, 99. Through the
// transposed operands (A and B stored transposed): the same product. With
// k = 0 C becomes beta·C.
TEST(Dgemm, ProductsByHandAndAnEmptyInnerDimension) {
  const std::vector<double> a = {1, 2, 3, 4}, b = {5, 6, 7, 8};
  const std::vector<double> at = {1, 3, 2, 4}, bt = {5, 7, 6, 8};
  std::vector<double> c(4, 1.0);
  dgemm(false, false, 2, 2, 2, 2.0, a.data(), 2, b.data(), 2, -1.0, c.data(), 2);
  EXPECT_EQ(c, (std::vector<double>{37, 43, 85, 99}));
  std::vector<double> c2(4, 0.0);
  dgemm(true, true, 2, 2, 2, 1.0, at.data(), 2, bt.data(), 2, 0.0, c2.data(), 2);
  EXPECT_EQ(c2, (std::vector<double>{19, 22, 43, 50}));
  std::vector<double> c3 = {1, 2, 3, 4};
  dgemm(false, false, 2, 2, 0, 1.0, a.data(), 1, b.data(), 2, 0.5, c3.data(), 2);
  EXPECT_EQ(c3, (std::vector<double>{0.5, 1, 1.5, 2}));
}

// A = [[4, 2, 0], [2, 9, 0], [0, 0, 16]]: its leading 2×2 block has
// determinant 4·9 − 2·2 = 32, so A⁻¹ = [[9/32, −1/16, 0], [−1/16, 1/8, 0],
// [0, 0, 1/16]]. UᵀU = A⁻¹ with U upper is A⁻¹'s Cholesky factor from the top
// left: U00 = √(9/32) = 3/(4√2); U01 = (−1/16)/U00 = −√2/12; U11 = √(1/8 −
// U01²) = √(1/8 − 1/72) = 1/3; U22 = √(1/16) = 1/4; the rest 0.
TEST(InverseCholeskyUpper, AThreeByThreeByHand) {
  std::vector<double> a = {4, 2, 0, 2, 9, 0, 0, 0, 16};
  ASSERT_TRUE(inverse_cholesky_upper(a.data(), 3));
  const std::vector<double> want = {
      3 / (4 * std::sqrt(2.0)), -std::sqrt(2.0) / 12, 0, 0, 1.0 / 3, 0, 0, 0, 0.25};
  for (size_t i = 0; i < 9; ++i) EXPECT_NEAR(a[i], want[i], 1e-15) << i;
}

TEST(InverseCholeskyUpper, UTransposeUIsTheInverseAndMatchesEigensRoute) {
  for (const int64_t n : {1, 2, 7, 64, 257}) {
    Rng rng(static_cast<uint64_t>(n));
    MatD x(2 * n, n);
    for (int64_t i = 0; i < x.size(); ++i) x.data()[i] = rng.normal();
    const MatD a = x.transpose() * x + 0.01 * MatD::Identity(n, n);
    MatD u = a;
    ASSERT_TRUE(inverse_cholesky_upper(u.data(), n)) << n;
    for (int64_t i = 0; i < n; ++i) {
      EXPECT_GT(u(i, i), 0) << n;
      for (int64_t k = 0; k < i; ++k) EXPECT_EQ(u(i, k), 0.0) << n << " " << i << "," << k;
    }
    const MatD identity = u.transpose() * u * a;
    EXPECT_LT((identity - MatD::Identity(n, n)).cwiseAbs().maxCoeff(), 1e-9) << n;
    // Eigen: invert A, factor the inverse (LLT), U = Lᵀ.
    const MatD inv = a.llt().solve(MatD::Identity(n, n));
    const MatD eigen_u = inv.llt().matrixU();
    EXPECT_LT((u - eigen_u).cwiseAbs().maxCoeff(), 1e-9 * eigen_u.cwiseAbs().maxCoeff()) << n;
  }
}

TEST(InverseCholeskyUpper, NotPositiveDefiniteIsFalseAndEmptyIsTrue) {
  std::vector<double> indefinite = {1, 2, 2, 1};  // eigenvalues 3 and −1
  EXPECT_FALSE(inverse_cholesky_upper(indefinite.data(), 2));
  std::vector<double> singular = {1, 1, 1, 1};
  EXPECT_FALSE(inverse_cholesky_upper(singular.data(), 2));
  EXPECT_TRUE(inverse_cholesky_upper(nullptr, 0));
}

}  // namespace
}  // namespace tailor::linalg
