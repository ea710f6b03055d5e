// Singular value decompositions: exact (LAPACK gesdd) and randomized truncated
// (Halko, Martinsson & Tropp 2011), behind one entry point that picks between them.
#pragma once

#include <cstdint>

#include "tailor/linalg/blas.h"

namespace tailor::linalg {

/// A (possibly truncated) SVD A ≈ U·diag(s)·Vt of A [m, n]: U [m, k] with
/// orthonormal columns, s [k] non-negative and non-increasing, Vt [k, n] with
/// orthonormal rows.
struct Svd {
  Matrix u;
  Vector s;
  Matrix vt;
};

/// Options of the randomized range finder and of the choice between methods.
struct SvdOptions {
  /// Extra sample columns p beyond the rank (Halko et al. §4.2 recommend 5–10).
  int64_t oversampling = 10;
  /// Power (subspace) iterations q, each re-orthonormalised by QR (Halko et
  /// al. Algorithm 4.4); slowly decaying spectra need q ≥ 2.
  int power_iterations = 4;
  /// Seed of the Gaussian test matrix (tailor::Rng): same seed, same factors.
  uint64_t seed = 0x5eed;
  /// svd_truncated uses exact gesdd when min(m, n) is at most this many elements.
  int64_t exact_max_dim = 256;
};

/// Thin SVD of `a` [m, n] by LAPACK sgesdd (divide and conquer): k = min(m, n)
/// singular triplets. Throws tailor::Error when gesdd does not converge.
Svd svd_exact(const Matrix& a);

/// Rank-`rank` SVD of `a` [m, n] by randomized subspace iteration (Halko,
/// Martinsson & Tropp, "Finding structure with randomness", SIAM Review 53(2),
/// 2011, Algorithms 4.4 and 5.1): Y = A·Ω with Ω [n, rank + p] Gaussian, q
/// rounds of Q = qr(A·qr(Aᵀ·Q)), then the exact SVD of the small Qᵀ·A.
/// Throws tailor::Error unless 1 ≤ rank ≤ min(m, n).
Svd svd_randomized(const Matrix& a, int64_t rank, const SvdOptions& options = {});

/// True when svd_truncated(m×n, rank) runs exact gesdd: for small matrices
/// (min(m, n) ≤ options.exact_max_dim), and when the rank is a large share of
/// the smaller side (rank ≥ min(m, n)/4, or rank + oversampling ≥ min(m, n)),
/// where a sketch saves little and exact is both faster and optimal.
bool svd_prefers_exact(int64_t m, int64_t n, int64_t rank, const SvdOptions& options = {});

/// Best rank-`rank` approximation factors of `a` [m, n]: svd_exact truncated
/// to `rank`, or svd_randomized, as svd_prefers_exact chooses. Throws
/// tailor::Error unless 1 ≤ rank ≤ min(m, n).
Svd svd_truncated(const Matrix& a, int64_t rank, const SvdOptions& options = {});

}  // namespace tailor::linalg
