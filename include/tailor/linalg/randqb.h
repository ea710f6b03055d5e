// Blocked randomized QB factorization A ≈ Q·B grown block by block with an
// exact Frobenius-norm error indicator: the leading spectrum of a large matrix
// (and its energy ranks) without a full SVD.
#pragma once

#include <cstdint>
#include <vector>

#include "tailor/linalg/svd.h"

namespace tailor::linalg {

/// A ≈ Q·B for A [m, n]: Q [m, k] with orthonormal columns, B = Qᵀ·A [k, n],
/// grown `block` columns at a time by the blocked randomized range finder
/// "randQB_b" (Martinsson & Voronin, "A randomized blocked algorithm for
/// efficiently computing rank-revealing factorizations of matrices", SIAM J.
/// Sci. Comput. 38(5), 2016, Algorithm 2) with power (subspace) iterations per
/// block (Halko, Martinsson & Tropp, SIAM Review 53(2), 2011, Algorithm 4.4),
/// each new block re-orthogonalised against Q twice.
///
/// Since QᵀA = B and Q has orthonormal columns, AᵀA = BᵀB + RᵀR with
/// R = A − Q·B, so ‖A − Q·B‖_F² = ‖A‖_F² − ‖B‖_F² exactly (the error indicator
/// of Yu, Gu & Li, "Efficient randomized algorithms for the fixed-precision
/// low-rank matrix approximation", SIAM J. Matrix Anal. Appl. 39(3), 2018):
/// the energy captured and the energy left are known without any SVD of A.
/// The singular values σ̂ of B are those of Q·Qᵀ·A, so σ̂_i ≤ σ_i(A) for every
/// i (interlacing); power iterations make the leading ones accurate.
///
/// Deterministic: the Gaussian test blocks come from tailor::Rng(options.seed)
/// in order. Keeps a pointer to A's elements (never a copy), which must
/// outlive the object.
class BlockedQb {
 public:
  /// Starts with k = 0. `options` gives the seed and the power iterations q
  /// (oversampling is not used: every column of Q counts).
  BlockedQb(const Matrix& a, const SvdOptions& options);
  /// The same for A [m, n] given as f32 row-major contiguous elements.
  BlockedQb(const float* a, int64_t m, int64_t n, const SvdOptions& options);

  /// Appends min(block, min(m, n) − k) orthonormal columns to Q and their rows
  /// to B (nothing once k = min(m, n)). Throws tailor::Error for block < 1.
  void grow(int64_t block);

  /// Columns of Q (rows of B) so far.
  int64_t rank() const { return k_; }
  /// ‖A‖_F², accumulated in double (exact up to rounding).
  double total_energy() const { return total_; }
  /// ‖B‖_F² = Σ_i σ̂_i² ≤ Σ_{i≤k} σ_i(A)², in double.
  double captured_energy() const { return captured_; }
  /// σ̂_i² for i < k, non-increasing: the eigenvalues of B·Bᵀ (LAPACK dsyevd
  /// on the Gram matrix formed in f32 by sgemm, solved in double).
  std::vector<double> squared_singular_values() const;
  /// Rank-`rank` SVD of Q·B (Halko et al. Algorithm 5.1): U = Q·U_B [m, rank],
  /// s [rank], Vt [rank, n], with U_B and σ̂² the eigenvectors and eigenvalues
  /// of B·Bᵀ (formed in double a block at a time by gram_accumulate, solved
  /// by LAPACK dsyevd) and Vt = diag(1/σ̂)·U_Bᵀ·B (a row with σ̂ = 0 is left
  /// 0). `sides` says which of U and Vt are formed (the other stays 0×0).
  /// Throws tailor::Error unless 1 ≤ rank ≤ k.
  Svd svd(int64_t rank, SvdSides sides = SvdSides::both) const;

 private:
  const float* a_;
  int64_t m_, n_;
  SvdOptions options_;
  uint64_t draws_ = 0;
  int64_t k_ = 0;
  Matrix qt_;  // Qᵀ [k, m]
  Matrix b_;   // B [k, n]
  double total_ = 0;
  double captured_ = 0;
};

}  // namespace tailor::linalg
