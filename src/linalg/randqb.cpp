#include "tailor/linalg/randqb.h"

#include <cblas.h>
#include <fmt/format.h>
#include <lapacke.h>

#include <algorithm>
#include <cmath>

#include "tailor/core/error.h"
#include "tailor/core/rng.h"

namespace tailor::linalg {
namespace {

/// Y ← Y − Q·(Qᵀ·Y) for Qᵀ [k, m] and Y [m, b]: removes Y's component in span(Q).
void project_out(const Matrix& qt, Matrix& y) {
  if (qt.rows() == 0) return;
  const Matrix qty = matmul(qt, y);  // [k, b]
  sgemm(/*trans_a=*/true, false, y.rows(), y.cols(), qt.rows(), -1.0f, qt.data(), qt.cols(),
        qty.data(), qty.cols(), 1.0f, y.data(), y.cols());
}

/// Orthonormal basis of span(Y) for Y [m, b] by Cholesky QR (Y = Q·R with
/// R the Cholesky factor of YᵀY; Fukaya et al., "CholeskyQR2", 2014), the Gram
/// matrix and its factorization in double: all BLAS-3, several times faster
/// than Householder QR on tall blocks. Used between power iterations, where
/// only the span matters; falls back to Householder QR when the Gram matrix is
/// not numerically positive definite (Y too ill-conditioned).
Matrix orthonormalize_fast(Matrix y) {
  const int64_t m = y.rows(), b = y.cols();
  if (b == 0 || m < b) return orthonormalize(std::move(y));
  using MatrixD = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const MatrixD yd = y.cast<double>();
  MatrixD gram = MatrixD::Zero(b, b);
  cblas_dsyrk(CblasRowMajor, CblasUpper, CblasTrans, static_cast<blasint>(b),
              static_cast<blasint>(m), 1.0, yd.data(), static_cast<blasint>(b), 0.0, gram.data(),
              static_cast<blasint>(b));
  const lapack_int info =
      LAPACKE_dpotrf(LAPACK_ROW_MAJOR, 'U', static_cast<lapack_int>(b), gram.data(), b);
  if (info != 0) return orthonormalize(std::move(y));
  for (int64_t i = 0; i < b; ++i)
    if (!(gram(i, i) > 1e-6 * gram(0, 0))) return orthonormalize(std::move(y));  // near-singular
  const Matrix r = gram.triangularView<Eigen::Upper>().toDenseMatrix().cast<float>();
  // Y ← Y·R⁻¹ (R upper triangular [b, b]).
  cblas_strsm(CblasRowMajor, CblasRight, CblasUpper, CblasNoTrans, CblasNonUnit,
              static_cast<blasint>(m), static_cast<blasint>(b), 1.0f, r.data(),
              static_cast<blasint>(b), y.data(), static_cast<blasint>(b));
  return y;
}

}  // namespace

BlockedQb::BlockedQb(const Matrix& a, const SvdOptions& options)
    : BlockedQb(a.data(), a.rows(), a.cols(), options) {}

BlockedQb::BlockedQb(const float* a, int64_t m, int64_t n, const SvdOptions& options)
    : a_(a), m_(m), n_(n), options_(options), qt_(0, m), b_(0, n) {
  check(m > 0 && n > 0, "linalg::BlockedQb", fmt::format("empty matrix [{}, {}]", m, n));
  for (int64_t i = 0; i < m * n; ++i) total_ += double(a[i]) * a[i];
}

void BlockedQb::grow(int64_t block) {
  check(block >= 1, "linalg::BlockedQb", fmt::format("block must be ≥ 1, found {}", block));
  const int64_t m = m_, n = n_;
  const int64_t b = std::min(block, std::min(m, n) - k_);
  if (b <= 0) return;

  // Gaussian test block Ω [n, b], one Rng stream per call.
  Rng rng = Rng(options_.seed).split(draws_++);
  Matrix omega(n, b);
  for (int64_t i = 0; i < omega.size(); ++i) omega.data()[i] = static_cast<float>(rng.normal());

  // Range of the residual (I − Q·Qᵀ)·A, sharpened by q power iterations; AᵀY
  // needs no projection since Y ⟂ span(Q) makes AᵀY = (A − Q·B)ᵀ·Y.
  // Products with A go straight to sgemm on its elements (no copy of A).
  const auto times_a = [&](const Matrix& x) {  // A·X [m, b] for X [n, b]
    Matrix r(m, x.cols());
    sgemm(false, false, m, x.cols(), n, 1.0f, a_, n, x.data(), x.cols(), 0.0f, r.data(), x.cols());
    return r;
  };
  Matrix y = times_a(omega);  // [m, b]
  project_out(qt_, y);
  y = orthonormalize_fast(std::move(y));
  for (int i = 0; i < options_.power_iterations; ++i) {
    Matrix aty(n, b);  // Aᵀ·Y [n, b]
    sgemm(true, false, n, b, m, 1.0f, a_, n, y.data(), b, 0.0f, aty.data(), b);
    const Matrix z = orthonormalize_fast(std::move(aty));
    y = times_a(z);
    project_out(qt_, y);
    y = orthonormalize_fast(std::move(y));
  }
  // Twice is enough (Giraud et al. 2005): the block is orthogonal to Q to working precision.
  project_out(qt_, y);
  y = orthonormalize(std::move(y));

  Matrix bi(b, n);  // Q_iᵀ·A [b, n]
  sgemm(true, false, b, n, m, 1.0f, y.data(), b, a_, n, 0.0f, bi.data(), n);
  qt_.conservativeResize(k_ + b, Eigen::NoChange);
  qt_.bottomRows(b) = y.transpose();
  b_.conservativeResize(k_ + b, Eigen::NoChange);
  b_.bottomRows(b) = bi;
  for (int64_t i = 0; i < bi.size(); ++i) captured_ += double(bi.data()[i]) * bi.data()[i];
  k_ += b;
}

std::vector<double> BlockedQb::squared_singular_values() const {
  if (k_ == 0) return {};
  const Matrix gram = matmul(b_, b_, false, /*trans_b=*/true);  // B·Bᵀ [k, k]
  Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> g = gram.cast<double>();
  std::vector<double> w(static_cast<size_t>(k_));
  const lapack_int info = LAPACKE_dsyevd(LAPACK_ROW_MAJOR, 'N', 'U', static_cast<lapack_int>(k_),
                                         g.data(), static_cast<lapack_int>(k_), w.data());
  check(info == 0, "linalg::BlockedQb",
        fmt::format("LAPACK dsyevd failed on a [{}, {}] Gram matrix (info {})", k_, k_, info));
  std::reverse(w.begin(), w.end());  // ascending → non-increasing
  for (double& x : w) x = std::max(x, 0.0);
  return w;
}

Svd BlockedQb::svd(int64_t rank, SvdSides sides) const {
  check(rank >= 1 && rank <= k_, "linalg::BlockedQb",
        fmt::format("rank must be in [1, {}], found {}", k_, rank));
  // B·Bᵀ = W_B·diag(σ̂²)·W_Bᵀ (Gram in double, a block of B at a time:
  // exact products, no double copy of B); then U = Q·W_B, Vt =
  // diag(1/σ̂)·W_Bᵀ·B. Cheaper than gesdd of the wide B when k is large, and
  // accurate to double rounding on σ̂² (relative error ~1e-16·σ̂_1²/σ̂_i² on σ̂_i).
  MatrixD gram = MatrixD::Zero(k_, k_);
  gram_accumulate(b_.data(), k_, b_.cols(), /*trans=*/false, gram);
  // Symmetric: the row-major buffer is also column-major, upper triangle filled.
  std::vector<double> w(static_cast<size_t>(k_));
  const lapack_int info = LAPACKE_dsyevd(LAPACK_COL_MAJOR, 'V', 'U', static_cast<lapack_int>(k_),
                                         gram.data(), static_cast<lapack_int>(k_), w.data());
  check(info == 0, "linalg::BlockedQb",
        fmt::format("LAPACK dsyevd failed on a [{}, {}] Gram matrix (info {})", k_, k_, info));
  // Eigenvalues ascend: the leading `rank` are the last columns, reversed.
  Matrix wb(k_, rank);  // [k, rank], f32
  Svd r;
  r.s.resize(rank);
  for (int64_t j = 0; j < rank; ++j) {
    const int64_t src = k_ - 1 - j;
    r.s(j) = static_cast<float>(std::sqrt(std::max(w[src], 0.0)));
    // Column-major eigenvectors: vector src is row src of the row-major buffer.
    for (int64_t i = 0; i < k_; ++i) wb(i, j) = static_cast<float>(gram(src, i));
  }
  if (sides != SvdSides::right) r.u = matmul(qt_, wb, /*trans_a=*/true);  // Q·W_B [m, rank]
  if (sides != SvdSides::left) {
    r.vt = matmul(wb, b_, /*trans_a=*/true);  // W_Bᵀ·B [rank, n], rows scaled below
    for (int64_t j = 0; j < rank; ++j)
      if (r.s(j) > 0)
        r.vt.row(j) /= r.s(j);
      else
        r.vt.row(j).setZero();
  }
  return r;
}

}  // namespace tailor::linalg
