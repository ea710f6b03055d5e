// Dense matrices and the BLAS-3 / LAPACK operations the factorizations and
// encoders need: f32 and f64 matrix products (OpenBLAS cblas_sgemm,
// cblas_dgemm), Householder QR and the Cholesky factor of an inverse (LAPACK).
#pragma once

#include <Eigen/Core>
#include <cstdint>

namespace tailor::linalg {

/// Row-major f32 matrix: element (i, j) at data()[i·cols() + j]. Storage is
/// Eigen's; the heavy products go to OpenBLAS, not Eigen's own kernels.
using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
/// f32 column vector (singular values and the like).
using Vector = Eigen::VectorXf;

/// C[m, n] = alpha·op(A)·op(B) + beta·C on row-major pointers (cblas_sgemm):
/// op(A) is [m, k] (A stored [k, m] when trans_a), op(B) is [k, n] (B stored
/// [n, k] when trans_b); lda, ldb, ldc are row strides in elements.
void sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
           int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

/// The same in double precision (cblas_dgemm), for the encoders' products
/// with a Gram H and its factors (GPTQ). OpenBLAS runs serially once
/// set_threads has been called (threads.h; the tailor command and GPTQ's
/// encoder do), so results do not depend on the thread count; its kernels
/// are chosen for the CPU at run time, so they may differ between machines.
void dgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha,
           const double* a, int64_t lda, const double* b, int64_t ldb, double beta, double* c,
           int64_t ldc);

/// y = alpha·op(A)·x + beta·y on row-major A [m, n] (cblas_sgemv): op(A) is A
/// ([m, n], x has n elements, y m) or Aᵀ when `trans` (x has m, y n); lda is
/// A's row stride in elements.
void sgemv(bool trans, int64_t m, int64_t n, float alpha, const float* a, int64_t lda,
           const float* x, float beta, float* y);

/// op(A)·op(B) as a new matrix; op transposes when the flag is set. Throws
/// tailor::Error when the inner dimensions differ.
Matrix matmul(const Matrix& a, const Matrix& b, bool trans_a = false, bool trans_b = false);

/// Orthonormal basis of the column space of `a` [m, k], m ≥ k: the thin Q
/// [m, k] of a Householder QR (LAPACK sgeqrf + sorgqr; Golub & Van Loan,
/// "Matrix Computations", 4th ed., §5.2). Throws tailor::Error when m < k or
/// LAPACK reports a failure.
Matrix orthonormalize(Matrix a);

/// The upper Cholesky factor of a symmetric positive definite matrix's
/// inverse, in place: on entry `a` holds A [n, n] (row-major; only its upper
/// triangle is read);
/// on return it holds U, upper triangular with a positive diagonal and zeros
/// below it, such that A⁻¹ = UᵀU (the factor GPTQ's updates run through,
/// Frantar et al. 2023, §3). Without forming A⁻¹: with J the reversal
/// permutation, JAJ = L̃L̃ᵀ (LAPACK dpotrf) gives A⁻¹ = (JL̃⁻¹J)ᵀ(JL̃⁻¹J), and
/// JL̃⁻¹J (dtrtri) is upper triangular: n³/3 + n³/3 flops, against ≈ 8n³/3
/// for inverting A and factoring the inverse. Returns false, `a` then
/// unspecified, when A is not positive definite (dpotrf) or its factor is
/// singular (dtrtri); throws tailor::Error on any other LAPACK failure.
bool inverse_cholesky_upper(double* a, int64_t n);

}  // namespace tailor::linalg
