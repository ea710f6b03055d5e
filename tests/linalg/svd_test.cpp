#include "tailor/linalg/svd.h"

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

// ‖A − U·diag(s)·Vt‖_F in double, from the factors.
double residual(const Matrix& a, const Svd& f) {
  Matrix us = f.u;
  for (int64_t j = 0; j < us.cols(); ++j) us.col(j) *= f.s(j);
  const Matrix approx = matmul(us, f.vt);
  double sum = 0;
  for (int64_t i = 0; i < a.size(); ++i) {
    const double d = static_cast<double>(a.data()[i]) - approx.data()[i];
    sum += d * d;
  }
  return std::sqrt(sum);
}

double frobenius(const Matrix& a) {
  double sum = 0;
  for (int64_t i = 0; i < a.size(); ++i) sum += static_cast<double>(a.data()[i]) * a.data()[i];
  return std::sqrt(sum);
}

std::vector<double> slow_decay(int64_t k) {
  std::vector<double> s(static_cast<size_t>(k));
  for (int64_t i = 0; i < k; ++i) s[static_cast<size_t>(i)] = 1.0 / std::sqrt(i + 1.0);
  return s;
}

double eckart_young(const std::vector<double>& sigma, int64_t rank) {
  double tail = 0;
  for (size_t i = static_cast<size_t>(rank); i < sigma.size(); ++i) tail += sigma[i] * sigma[i];
  return std::sqrt(tail);
}

void expect_orthonormal_columns(const Matrix& q, double tol) {
  const Matrix g = matmul(q, q, true, false);
  for (int64_t i = 0; i < g.rows(); ++i)
    for (int64_t j = 0; j < g.cols(); ++j) EXPECT_NEAR(g(i, j), i == j ? 1.0 : 0.0, tol);
}

TEST(Orthonormalize, GivesAnOrthonormalBasisOfTheSameSpan) {
  const Matrix a = gaussian(50, 7, 3);
  const Matrix q = orthonormalize(a);
  ASSERT_EQ(q.rows(), 50);
  ASSERT_EQ(q.cols(), 7);
  expect_orthonormal_columns(q, 1e-5);
  // A lies in span(Q): Q·Qᵀ·A = A.
  const Matrix back = matmul(q, matmul(q, a, true, false));
  EXPECT_LT(frobenius(back - a) / frobenius(a), 1e-5);
  EXPECT_THROW(orthonormalize(gaussian(3, 5, 1)), Error);
}

TEST(Matmul, ShapesAndTransposes) {
  Matrix a(2, 3), b(2, 3);
  a << 1, 2, 3, 4, 5, 6;
  b << 1, 0, -1, 2, 1, 0;
  const Matrix c = matmul(a, b, false, true);  // [2, 2]: A·Bᵀ
  EXPECT_FLOAT_EQ(c(0, 0), -2);
  EXPECT_FLOAT_EQ(c(0, 1), 4);
  EXPECT_FLOAT_EQ(c(1, 0), -2);
  EXPECT_FLOAT_EQ(c(1, 1), 13);
  EXPECT_THROW(matmul(a, b), Error);
}

TEST(SvdExact, RecoversAKnownSpectrum) {
  const auto sigma = slow_decay(60);
  const Matrix a = with_spectrum(90, 70, sigma, 11);
  const Svd f = svd_exact(a);
  ASSERT_EQ(f.s.size(), 70);
  for (int i = 0; i < 60; ++i) EXPECT_NEAR(f.s(i), sigma[static_cast<size_t>(i)], 1e-5);
  for (int i = 60; i < 70; ++i) EXPECT_NEAR(f.s(i), 0.0, 1e-5);
  expect_orthonormal_columns(f.u, 1e-5);
  EXPECT_LT(residual(a, f) / frobenius(a), 1e-5);
}

TEST(SvdTruncated, ChoosesExactForSmallOrHighRank) {
  EXPECT_TRUE(svd_prefers_exact(200, 4096, 8));      // small side ≤ 256
  EXPECT_TRUE(svd_prefers_exact(1024, 1024, 256));   // rank ≥ min/4
  EXPECT_FALSE(svd_prefers_exact(1024, 1024, 64));   // sketch pays
  EXPECT_FALSE(svd_prefers_exact(4096, 1024, 255));  // just below min/4
}

// Slowly decaying spectrum σ_i = 1/√(i+1): the hard case for sketching. The
// rank-R error must be within 1% of the Eckart–Young optimum √(Σ_{i≥R} σ_i²).
TEST(SvdRandomized, SlowDecayWithinOnePercentOfEckartYoung) {
  const auto sigma = slow_decay(384);
  const Matrix a = with_spectrum(640, 384, sigma, 21);
  for (int64_t rank : {16, 48}) {
    ASSERT_FALSE(svd_prefers_exact(640, 384, rank));
    const Svd f = svd_truncated(a, rank);
    ASSERT_EQ(f.u.cols(), rank);
    const double optimum = eckart_young(sigma, rank);
    const double err = residual(a, f);
    EXPECT_LE(err, 1.01 * optimum) << "rank " << rank;
    EXPECT_GE(err, 0.999 * optimum) << "rank " << rank;  // cannot beat the optimum
    expect_orthonormal_columns(f.u, 1e-4);
    for (int i = 1; i < rank; ++i) EXPECT_LE(f.s(i), f.s(i - 1));
  }
}

TEST(SvdExact, TruncatedSlowDecayMatchesEckartYoung) {
  const auto sigma = slow_decay(120);
  const Matrix a = with_spectrum(150, 120, sigma, 31);
  const Svd f = svd_truncated(a, 20);
  EXPECT_NEAR(residual(a, f) / eckart_young(sigma, 20), 1.0, 1e-4);
}

TEST(SvdTruncated, ExactOnExactlyLowRankInputs) {
  // Randomized path (min side 320 > 256) and exact path (small).
  for (auto [m, n, r] : {std::tuple<int64_t, int64_t, int64_t>{500, 320, 20}, {80, 100, 9}}) {
    const Matrix a = matmul(gaussian(m, r, 41), gaussian(r, n, 42));
    const Svd f = svd_truncated(a, r);
    EXPECT_LT(residual(a, f) / frobenius(a), 1e-5) << m << "x" << n << " rank " << r;
  }
}

TEST(SvdRandomized, SameSeedSameFactorsAndRankChecked) {
  const Matrix a = gaussian(300, 280, 5);
  SvdOptions o;
  o.seed = 9;
  const Svd f1 = svd_randomized(a, 10, o), f2 = svd_randomized(a, 10, o);
  EXPECT_EQ(f1.u, f2.u);
  EXPECT_EQ(f1.vt, f2.vt);
  EXPECT_THROW(svd_randomized(a, 0, o), Error);
  EXPECT_THROW(svd_truncated(a, 281, o), Error);
}

// The Gram route: the same spectrum and the same optimal truncation as gesdd,
// wide (A·Aᵀ) and tall (Aᵀ·A), each side formed only when asked for.
TEST(SvdGram, RecoversAKnownSpectrumWideAndTall) {
  const auto sigma = slow_decay(60);
  for (auto [m, n] : {std::pair<int64_t, int64_t>{90, 140}, {140, 90}}) {
    const Matrix a = with_spectrum(m, n, sigma, 13);
    const Svd f = svd_gram(a.data(), m, n, 20);
    ASSERT_EQ(f.u.rows(), m);
    ASSERT_EQ(f.u.cols(), 20);
    ASSERT_EQ(f.vt.rows(), 20);
    ASSERT_EQ(f.vt.cols(), n);
    for (int i = 0; i < 20; ++i) EXPECT_NEAR(f.s(i), sigma[static_cast<size_t>(i)], 1e-5);
    expect_orthonormal_columns(f.u, 1e-4);
    EXPECT_NEAR(residual(a, f) / eckart_young(sigma, 20), 1.0, 1e-4) << m << "x" << n;
    const Svd left = svd_gram(a.data(), m, n, 20, SvdSides::left);
    const Svd right = svd_gram(a.data(), m, n, 20, SvdSides::right);
    EXPECT_EQ(left.vt.size(), 0);
    EXPECT_EQ(right.u.size(), 0);
    EXPECT_LT((left.u - f.u).cwiseAbs().maxCoeff(), 1e-6);
    EXPECT_LT((right.vt - f.vt).cwiseAbs().maxCoeff(), 1e-6);
  }
  const Matrix a = gaussian(30, 40, 2);
  EXPECT_THROW(svd_gram(a.data(), 30, 40, 0), Error);
  EXPECT_THROW(svd_gram(a.data(), 30, 40, 31), Error);
}

// G = A·Aᵀ and Aᵀ·A by the definition in double, on a matrix spanning several
// conversion blocks (2²⁰ elements each).
TEST(GramAccumulate, EqualsTheDefinitionAcrossBlocks) {
  const int64_t m = 3, n = 400'000;
  const Matrix a = gaussian(m, n, 8);
  MatrixD g = MatrixD::Zero(m, m);
  gram_accumulate(a.data(), m, n, false, g);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j <= i; ++j) {  // the triangle written (column-major upper)
      double s = 0;
      for (int64_t c = 0; c < n; ++c) s += double(a(i, c)) * a(j, c);
      EXPECT_NEAR(g(i, j), s, 1e-9 * std::abs(s) + 1e-6) << i << "," << j;
    }
  const Matrix t = gaussian(700'000, 2, 9);
  MatrixD h = MatrixD::Zero(2, 2);
  gram_accumulate(t.data(), t.rows(), 2, true, h);
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j <= i; ++j) {
      double s = 0;
      for (int64_t r = 0; r < t.rows(); ++r) s += double(t(r, i)) * t(r, j);
      EXPECT_NEAR(h(i, j), s, 1e-9 * std::abs(s) + 1e-6) << i << "," << j;
    }
  MatrixD wrong = MatrixD::Zero(2, 2);
  EXPECT_THROW(gram_accumulate(a.data(), m, n, false, wrong), Error);
}

TEST(TopEigenpairs, LargestOfADiagonalMatrixInOrder) {
  MatrixD g = MatrixD::Zero(4, 4);
  g(0, 0) = 2;
  g(1, 1) = 5;
  g(2, 2) = -1;
  g(3, 3) = 3;
  const SymmetricEigen e = top_eigenpairs(g, 2);
  ASSERT_EQ(e.values.size(), 2u);
  EXPECT_NEAR(e.values[0], 5, 1e-12);
  EXPECT_NEAR(e.values[1], 3, 1e-12);
  EXPECT_NEAR(std::abs(e.vectors(1, 0)), 1, 1e-6);
  EXPECT_NEAR(std::abs(e.vectors(3, 1)), 1, 1e-6);
  MatrixD h = MatrixD::Zero(3, 3);
  EXPECT_THROW(top_eigenpairs(h, 4), Error);
}

TEST(SvdLeading, GramAboveTheThresholdGesddBelow) {
  const auto sigma = slow_decay(50);
  const Matrix a = with_spectrum(70, 60, sigma, 17);
  SvdOptions gram;
  gram.gram_min_elements = 0;
  const Svd by_gram = svd_leading(a.data(), 70, 60, 10, gram, SvdSides::left);
  const Svd by_gesdd = svd_leading(a.data(), 70, 60, 10);
  EXPECT_EQ(by_gram.vt.size(), 0);  // tall, left asked: U = A·V·diag(1/σ)
  EXPECT_EQ(by_gesdd.vt.rows(), 10);
  for (int i = 0; i < 10; ++i) EXPECT_NEAR(by_gram.s(i), by_gesdd.s(i), 1e-5);
  expect_orthonormal_columns(by_gram.u, 1e-4);
}

}  // namespace
}  // namespace tailor::linalg
