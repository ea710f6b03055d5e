#include "tailor/linalg/svd.h"

#include <cblas.h>
#include <fmt/format.h>
#include <lapacke.h>

#include <algorithm>
#include <cmath>

#include "tailor/core/error.h"
#include "tailor/core/rng.h"

namespace tailor::linalg {
namespace {

void check_rank(const Matrix& a, int64_t rank, const char* who) {
  const int64_t k = std::min(a.rows(), a.cols());
  check(rank >= 1 && rank <= k, who,
        fmt::format("rank must be in [1, {}] for a [{}, {}] matrix, found {}", k, a.rows(),
                    a.cols(), rank));
}

Svd truncate(Svd full, int64_t rank) {
  Svd out;
  out.u = full.u.leftCols(rank);
  out.s = full.s.head(rank);
  out.vt = full.vt.topRows(rank);
  return out;
}

}  // namespace

Svd svd_exact(const Matrix& a) {
  const int64_t m = a.rows(), n = a.cols(), k = std::min(m, n);
  check(k >= 1, "linalg::svd_exact", fmt::format("empty matrix [{}, {}]", m, n));
  Matrix work = a;  // gesdd overwrites its input
  Svd r;
  r.u.resize(m, k);
  r.s.resize(k);
  r.vt.resize(k, n);
  // Row-major A [m, n] is column-major Aᵀ [n, m] = V·Σ·Uᵀ: LAPACK's "U" of Aᵀ,
  // column-major [n, k], is Vᵀ row-major [k, n], and its "Vᵀ" [k, m] is U
  // row-major [m, k]. Calling it on that layout spares LAPACKE's row-major
  // wrapper its transposed copies of A, U and Vᵀ.
  const lapack_int info =
      LAPACKE_sgesdd(LAPACK_COL_MAJOR, 'S', static_cast<lapack_int>(n), static_cast<lapack_int>(m),
                     work.data(), static_cast<lapack_int>(n), r.s.data(), r.vt.data(),
                     static_cast<lapack_int>(n), r.u.data(), static_cast<lapack_int>(k));
  check(info == 0, "linalg::svd_exact",
        fmt::format("LAPACK sgesdd failed on a [{}, {}] matrix (info {})", m, n, info));
  return r;
}

Svd svd_randomized(const Matrix& a, int64_t rank, const SvdOptions& options) {
  check_rank(a, rank, "linalg::svd_randomized");
  const int64_t m = a.rows(), n = a.cols();
  const int64_t l = std::min(rank + std::max<int64_t>(options.oversampling, 0), std::min(m, n));

  // Gaussian test matrix Ω [n, l] (Halko et al. §4.1), drawn bit-exactly from the seed.
  Rng rng(options.seed);
  Matrix omega(n, l);
  for (int64_t i = 0; i < omega.size(); ++i) omega.data()[i] = static_cast<float>(rng.normal());

  // Range finder with subspace iteration (Algorithm 4.4): every product is
  // re-orthonormalised so that rounding does not collapse the basis onto the
  // leading singular vector.
  Matrix q = orthonormalize(matmul(a, omega));  // [m, l]
  for (int i = 0; i < options.power_iterations; ++i) {
    const Matrix z = orthonormalize(matmul(a, q, /*trans_a=*/true));  // [n, l]
    q = orthonormalize(matmul(a, z));                                 // [m, l]
  }

  // Direct SVD of the small projection B = Qᵀ·A [l, n] (Algorithm 5.1).
  const Matrix b = matmul(q, a, /*trans_a=*/true);
  Svd small = svd_exact(b);
  Svd r;
  r.u = matmul(q, small.u.leftCols(rank));
  r.s = small.s.head(rank);
  r.vt = small.vt.topRows(rank);
  return r;
}

bool svd_prefers_exact(int64_t m, int64_t n, int64_t rank, const SvdOptions& options) {
  const int64_t k = std::min(m, n);
  return k <= options.exact_max_dim || 4 * rank >= k || rank + options.oversampling >= k;
}

Svd svd_truncated(const Matrix& a, int64_t rank, const SvdOptions& options) {
  check_rank(a, rank, "linalg::svd_truncated");
  if (svd_prefers_exact(a.rows(), a.cols(), rank, options)) return truncate(svd_exact(a), rank);
  return svd_randomized(a, rank, options);
}

void gram_accumulate(const float* a, int64_t m, int64_t n, bool trans, MatrixD& g) {
  const int64_t order = trans ? n : m;
  check(g.rows() == order && g.cols() == order, "linalg::gram_accumulate",
        fmt::format("Gram matrix is [{}, {}], expected [{}, {}] for a [{}, {}] matrix{}", g.rows(),
                    g.cols(), order, order, m, n, trans ? " (transposed)" : ""));
  if (m == 0 || n == 0) return;
  constexpr int64_t kBlockElements = int64_t(1) << 20;  // 8 MB of doubles per block
  std::vector<double> buf;
  if (!trans) {
    // Columns [j0, j0 + b) of A as a row-major [m, b] block, which BLAS reads
    // as the column-major [b, m] matrix C = A_blockᵀ: A·Aᵀ += Cᵀ·C.
    const int64_t bs = std::clamp<int64_t>(kBlockElements / m, 1, n);
    buf.resize(static_cast<size_t>(m * bs));
    for (int64_t j0 = 0; j0 < n; j0 += bs) {
      const int64_t b = std::min(bs, n - j0);
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < b; ++j) buf[i * b + j] = a[i * n + j0 + j];
      cblas_dsyrk(CblasColMajor, CblasUpper, CblasTrans, static_cast<blasint>(m),
                  static_cast<blasint>(b), 1.0, buf.data(), static_cast<blasint>(b), 1.0, g.data(),
                  static_cast<blasint>(m));
    }
  } else {
    // Rows [i0, i0 + b) of A, row-major [b, n] = column-major [n, b] C: AᵀA += C·Cᵀ.
    const int64_t bs = std::clamp<int64_t>(kBlockElements / n, 1, m);
    buf.resize(static_cast<size_t>(bs * n));
    for (int64_t i0 = 0; i0 < m; i0 += bs) {
      const int64_t b = std::min(bs, m - i0);
      std::copy_n(a + i0 * n, b * n, buf.data());
      cblas_dsyrk(CblasColMajor, CblasUpper, CblasNoTrans, static_cast<blasint>(n),
                  static_cast<blasint>(b), 1.0, buf.data(), static_cast<blasint>(n), 1.0, g.data(),
                  static_cast<blasint>(n));
    }
  }
}

SymmetricEigen top_eigenpairs(MatrixD& g, int64_t k) {
  const int64_t order = g.rows();
  check(g.cols() == order && k >= 1 && k <= order, "linalg::top_eigenpairs",
        fmt::format("need 1 <= k <= N for a square [N, N] matrix, found k = {} for [{}, {}]", k,
                    g.rows(), g.cols()));
  // G is symmetric, so its row-major storage is also its column-major one;
  // gram_accumulate filled the column-major upper triangle. Column-major
  // LAPACKE calls make no transposed copies.
  std::vector<double> w(static_cast<size_t>(order)), z(static_cast<size_t>(order * k));
  std::vector<lapack_int> support(static_cast<size_t>(2 * k));
  lapack_int found = 0;
  const auto n = static_cast<lapack_int>(order);
  const lapack_int info = LAPACKE_dsyevr(LAPACK_COL_MAJOR, 'V', 'I', 'U', n, g.data(), n, 0.0, 0.0,
                                         static_cast<lapack_int>(order - k + 1), n, 0.0, &found,
                                         w.data(), z.data(), n, support.data());
  check(info == 0 && found == k, "linalg::top_eigenpairs",
        fmt::format("LAPACK dsyevr failed on a [{}, {}] matrix (info {}, {} of {} eigenpairs)",
                    order, order, info, found, k));
  // Eigenvalues ascend: the largest is the last, its vector the last column.
  SymmetricEigen r;
  r.vectors.resize(order, k);
  r.values.resize(static_cast<size_t>(k));
  for (int64_t j = 0; j < k; ++j) {
    const int64_t src = k - 1 - j;
    r.values[j] = w[src];
    const double* col = z.data() + src * order;
    for (int64_t i = 0; i < order; ++i) r.vectors(i, j) = static_cast<float>(col[i]);
  }
  return r;
}

Svd svd_gram(const float* a, int64_t m, int64_t n, int64_t rank, SvdSides sides,
             std::vector<double>* sigma2) {
  const int64_t k = std::min(m, n);
  check(rank >= 1 && rank <= k, "linalg::svd_gram",
        fmt::format("rank must be in [1, {}] for a [{}, {}] matrix, found {}", k, m, n, rank));
  const bool wide = m <= n;  // the Gram matrix of the smaller side: A·Aᵀ or Aᵀ·A
  SymmetricEigen e;
  {
    MatrixD g = MatrixD::Zero(k, k);
    gram_accumulate(a, m, n, /*trans=*/!wide, g);
    e = top_eigenpairs(g, rank);
  }  // G freed before the factors are formed
  Svd r;
  r.s.resize(rank);
  std::vector<float> inv(static_cast<size_t>(rank));
  for (int64_t j = 0; j < rank; ++j) {
    const double lambda = std::max(e.values[j], 0.0);
    r.s(j) = static_cast<float>(std::sqrt(lambda));
    inv[j] = r.s(j) > 0 ? 1.0f / r.s(j) : 0.0f;
    e.values[j] = lambda;
  }
  if (sigma2) *sigma2 = e.values;
  if (wide) {
    if (sides != SvdSides::left) {  // Vᵀ = diag(1/σ)·Uᵀ·A [rank, n]
      r.vt.resize(rank, n);
      sgemm(true, false, rank, n, m, 1.0f, e.vectors.data(), rank, a, n, 0.0f, r.vt.data(), n);
      for (int64_t j = 0; j < rank; ++j) r.vt.row(j) *= inv[j];
    }
    if (sides != SvdSides::right) r.u = std::move(e.vectors);
  } else {
    if (sides != SvdSides::right) {  // U = A·V·diag(1/σ) [m, rank]
      r.u.resize(m, rank);
      sgemm(false, false, m, rank, n, 1.0f, a, n, e.vectors.data(), rank, 0.0f, r.u.data(), rank);
      for (int64_t j = 0; j < rank; ++j) r.u.col(j) *= inv[j];
    }
    if (sides != SvdSides::left) r.vt = e.vectors.transpose();
  }
  return r;
}

Svd svd_leading(const float* a, int64_t m, int64_t n, int64_t rank, const SvdOptions& options,
                SvdSides sides) {
  if (m * n >= options.gram_min_elements) return svd_gram(a, m, n, rank, sides);
  return svd_truncated(Eigen::Map<const Matrix>(a, m, n), rank, options);
}

}  // namespace tailor::linalg
