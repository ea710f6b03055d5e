#include "tailor/linalg/svd.h"

#include <fmt/format.h>
#include <lapacke.h>

#include <algorithm>

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
  const lapack_int info =
      LAPACKE_sgesdd(LAPACK_ROW_MAJOR, 'S', static_cast<lapack_int>(m), static_cast<lapack_int>(n),
                     work.data(), static_cast<lapack_int>(n), r.s.data(), r.u.data(),
                     static_cast<lapack_int>(k), r.vt.data(), static_cast<lapack_int>(n));
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

}  // namespace tailor::linalg
