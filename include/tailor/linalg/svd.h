// Singular value decompositions: exact (LAPACK gesdd) and randomized truncated
// (Halko, Martinsson & Tropp 2011), behind one entry point that picks between them.
#pragma once

#include <cstdint>
#include <vector>

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
  /// svd_leading (and the profiler, tucker and tt, which call it) takes the
  /// SVD of a matrix with at least this many elements from the Gram matrix of
  /// its smaller side (svd_gram: 8·min(m, n)² bytes, no copy of A, no LAPACK
  /// workspace of A's size) instead of gesdd (copies of A, U, Vᵀ and their
  /// transposes, several times A's size). Default 2²² elements (16 MB of f32).
  int64_t gram_min_elements = int64_t(1) << 22;
};

/// Row-major f64 matrix (Gram matrices).
using MatrixD = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

/// Which singular vectors a one-sided SVD forms: U [m, k], Vᵀ [k, n], or both.
enum class SvdSides { left, right, both };

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

/// G += A·Aᵀ ([m, m]), or G += Aᵀ·A ([n, n]) when `trans`, for A [m, n] f32
/// row-major (contiguous), accumulated in double: A is converted a block of
/// about 1 M elements at a time (never a double copy of A) and each block
/// added by BLAS dsyrk. Only one triangle of G is written, the one
/// top_eigenpairs reads. Throws tailor::Error when G has the wrong size.
void gram_accumulate(const float* a, int64_t m, int64_t n, bool trans, MatrixD& g);

/// The `k` largest eigenvalues (non-increasing, in double) and their
/// orthonormal eigenvectors (columns of `vectors` [N, k], f32) of a symmetric
/// G [N, N] filled by gram_accumulate, by LAPACK dsyevr (MRRR; Dhillon &
/// Parlett 2004) for that index range only: workspace O(N), vectors O(N·k).
/// `g` is overwritten. Throws tailor::Error unless 1 ≤ k ≤ N, or when dsyevr fails.
struct SymmetricEigen {
  Matrix vectors;
  std::vector<double> values;
};
SymmetricEigen top_eigenpairs(MatrixD& g, int64_t k);

/// Leading `rank` singular triplets of A [m, n] (f32 row-major, contiguous)
/// from the eigendecomposition of the Gram matrix of its smaller side
/// (A·Aᵀ when m ≤ n, Aᵀ·A otherwise; gram_accumulate + top_eigenpairs):
/// σ_i = sqrt(λ_i) (λ_i < 0 from rounding read as 0), the smaller side's
/// vectors are the eigenvectors, the other side's are A·V·diag(1/σ) or
/// diag(1/σ)·Uᵀ·A (a vector with σ = 0 is left 0). `sides` says which of
/// U [m, rank] and Vᵀ [rank, n] are formed (the other stays 0×0). Memory:
/// 8·min(m, n)² bytes for G, 8·min(m, n)·rank for the eigenvectors, and the
/// factors asked for. Accuracy: λ carry absolute errors ~1e-16·σ_1², so σ_i
/// is accurate while σ_i ≫ 1e-8·σ_1 (the squared condition number of the
/// Gram approach; enough for energy ranks and for projections onto the
/// leading subspace). `sigma2`, when given, receives the λ_i (double).
/// Throws tailor::Error unless 1 ≤ rank ≤ min(m, n).
Svd svd_gram(const float* a, int64_t m, int64_t n, int64_t rank, SvdSides sides = SvdSides::both,
             std::vector<double>* sigma2 = nullptr);

/// Leading `rank` singular triplets of A [m, n] (f32 row-major, contiguous):
/// svd_gram when m·n ≥ options.gram_min_elements, otherwise svd_truncated on
/// a copy of A (both sides then formed whatever `sides` says).
Svd svd_leading(const float* a, int64_t m, int64_t n, int64_t rank, const SvdOptions& options = {},
                SvdSides sides = SvdSides::both);

}  // namespace tailor::linalg
