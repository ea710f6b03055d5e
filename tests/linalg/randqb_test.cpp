// BlockedQb against matrices with known spectra: the exact Frobenius identity,
// interlacing (σ̂ ≤ σ), orthonormality, accuracy of the leading σ̂ and of the
// factors against the Eckart–Young optimum computed from the chosen σ.
#include "tailor/linalg/randqb.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "spectrum_util.h"
#include "tailor/core/error.h"
#include "tailor/core/rng.h"
#include "tailor/linalg/blas.h"

namespace tailor::linalg {
namespace {

using testing::gaussian;
using testing::with_spectrum;

double frobenius2(const Matrix& a) {
  double s = 0;
  for (int64_t i = 0; i < a.size(); ++i) s += double(a.data()[i]) * a.data()[i];
  return s;
}

TEST(BlockedQb, CapturedPlusResidualIsTheTotalAndSigmaHatInterlaces) {
  std::vector<double> sigma;
  for (int i = 0; i < 150; ++i) sigma.push_back(std::pow(0.97, i));
  const Matrix a = with_spectrum(300, 200, sigma, 3);
  BlockedQb qb(a, SvdOptions{});
  EXPECT_NEAR(qb.total_energy(), frobenius2(a), 1e-6 * frobenius2(a));
  qb.grow(40);
  qb.grow(25);
  ASSERT_EQ(qb.rank(), 65);
  // Q·B from the rank-65 SVD of Q·B reproduces Q·B; ‖A − QB‖² = total − ‖B‖².
  const Svd f = qb.svd(65);
  Matrix us = f.u;
  for (int64_t j = 0; j < us.cols(); ++j) us.col(j) *= f.s(j);
  const Matrix residual = a - matmul(us, f.vt);
  EXPECT_NEAR(frobenius2(residual), qb.total_energy() - qb.captured_energy(),
              1e-5 * qb.total_energy());
  // U orthonormal.
  const Matrix utu = matmul(f.u, f.u, true, false);
  EXPECT_LT((utu - Matrix::Identity(65, 65)).cwiseAbs().maxCoeff(), 1e-4);
  // σ̂_i² ≤ σ_i² (interlacing), the leading ones accurate, their sum ‖B‖².
  const std::vector<double> s2 = qb.squared_singular_values();
  ASSERT_EQ(s2.size(), 65u);
  double sum = 0;
  for (size_t i = 0; i < s2.size(); ++i) {
    sum += s2[i];
    EXPECT_LE(s2[i], sigma[i] * sigma[i] * (1 + 1e-4)) << i;
    if (i < 50) {
      EXPECT_NEAR(std::sqrt(s2[i]), sigma[i], 1e-3 * sigma[i]) << i;
    }
  }
  EXPECT_NEAR(sum, qb.captured_energy(), 1e-5 * qb.captured_energy());
  // Rank-40 factors within 1% of the Eckart–Young error sqrt(Σ_{i≥40} σ_i²).
  double tail = 0;
  for (size_t i = 40; i < sigma.size(); ++i) tail += sigma[i] * sigma[i];
  const Svd r40 = qb.svd(40);
  Matrix us40 = r40.u;
  for (int64_t j = 0; j < 40; ++j) us40.col(j) *= r40.s(j);
  EXPECT_LT(std::sqrt(frobenius2(a - matmul(us40, r40.vt))), 1.01 * std::sqrt(tail));
}

TEST(BlockedQb, StopsAtTheSmallerSideAndIsDeterministic) {
  const Matrix a = gaussian(70, 50, 9);
  BlockedQb qb(a, SvdOptions{});
  qb.grow(30);
  qb.grow(30);  // only 20 left
  EXPECT_EQ(qb.rank(), 50);
  qb.grow(5);
  EXPECT_EQ(qb.rank(), 50);
  // Full rank: everything captured.
  EXPECT_NEAR(qb.captured_energy(), qb.total_energy(), 1e-5 * qb.total_energy());
  BlockedQb again(a, SvdOptions{});
  again.grow(30);
  again.grow(30);
  EXPECT_EQ(qb.squared_singular_values(), again.squared_singular_values());
  EXPECT_THROW(qb.grow(0), Error);
  EXPECT_THROW(qb.svd(51), Error);
  EXPECT_THROW(qb.svd(0), Error);
}

}  // namespace
}  // namespace tailor::linalg
