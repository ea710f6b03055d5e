#include "tailor/linalg/randqb.h"

#include <fmt/format.h>
#include <lapacke.h>

#include <algorithm>

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

}  // namespace

BlockedQb::BlockedQb(const Matrix& a, const SvdOptions& options)
    : a_(a), options_(options), qt_(0, a.rows()), b_(0, a.cols()) {
  check(a.size() > 0, "linalg::BlockedQb",
        fmt::format("empty matrix [{}, {}]", a.rows(), a.cols()));
  for (int64_t i = 0; i < a.size(); ++i) total_ += double(a.data()[i]) * a.data()[i];
}

void BlockedQb::grow(int64_t block) {
  check(block >= 1, "linalg::BlockedQb", fmt::format("block must be ≥ 1, found {}", block));
  const int64_t m = a_.rows(), n = a_.cols();
  const int64_t b = std::min(block, std::min(m, n) - k_);
  if (b <= 0) return;

  // Gaussian test block Ω [n, b], one Rng stream per call.
  Rng rng = Rng(options_.seed).split(draws_++);
  Matrix omega(n, b);
  for (int64_t i = 0; i < omega.size(); ++i) omega.data()[i] = static_cast<float>(rng.normal());

  // Range of the residual (I − Q·Qᵀ)·A, sharpened by q power iterations; AᵀY
  // needs no projection since Y ⟂ span(Q) makes AᵀY = (A − Q·B)ᵀ·Y.
  Matrix y = matmul(a_, omega);  // [m, b]
  project_out(qt_, y);
  y = orthonormalize(std::move(y));
  for (int i = 0; i < options_.power_iterations; ++i) {
    const Matrix z = orthonormalize(matmul(a_, y, /*trans_a=*/true));  // [n, b]
    y = matmul(a_, z);
    project_out(qt_, y);
    y = orthonormalize(std::move(y));
  }
  // Twice is enough (Giraud et al. 2005): the block is orthogonal to Q to working precision.
  project_out(qt_, y);
  y = orthonormalize(std::move(y));

  const Matrix bi = matmul(y, a_, /*trans_a=*/true);  // Q_iᵀ·A [b, n]
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

Svd BlockedQb::svd(int64_t rank) const {
  check(rank >= 1 && rank <= k_, "linalg::BlockedQb",
        fmt::format("rank must be in [1, {}], found {}", k_, rank));
  const Svd small = svd_exact(b_);
  Svd r;
  r.u = matmul(qt_, small.u.leftCols(rank), /*trans_a=*/true);
  r.s = small.s.head(rank);
  r.vt = small.vt.topRows(rank);
  return r;
}

}  // namespace tailor::linalg
