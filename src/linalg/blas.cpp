#include "tailor/linalg/blas.h"

#include <cblas.h>
#include <fmt/format.h>
#include <lapacke.h>

#include <algorithm>
#include <vector>

#include "tailor/core/error.h"

namespace tailor::linalg {

namespace {

/// cblas_sgemm / cblas_dgemm (`blas`) on row-major pointers; an empty inner
/// dimension leaves C scaled by beta, as BLAS defines it, without a call.
template <class T, class Blas>
void gemm(Blas blas, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha,
          const T* a, int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = beta == 0 ? T(0) : beta * c[i * ldc + j];
    return;
  }
  blas(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
       static_cast<blasint>(m), static_cast<blasint>(n), static_cast<blasint>(k), alpha, a,
       static_cast<blasint>(lda), b, static_cast<blasint>(ldb), beta, c, static_cast<blasint>(ldc));
}

}  // namespace

void sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
           int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  gemm(cblas_sgemm, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void dgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha,
           const double* a, int64_t lda, const double* b, int64_t ldb, double beta, double* c,
           int64_t ldc) {
  gemm(cblas_dgemm, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void sgemv(bool trans, int64_t m, int64_t n, float alpha, const float* a, int64_t lda,
           const float* x, float beta, float* y) {
  if (m == 0 || n == 0) {
    // Nothing to reduce over: y = beta·y over op(A)'s rows.
    const int64_t rows = trans ? n : m;
    for (int64_t i = 0; i < rows; ++i) y[i] = beta == 0 ? 0.0f : beta * y[i];
    return;
  }
  cblas_sgemv(CblasRowMajor, trans ? CblasTrans : CblasNoTrans, static_cast<blasint>(m),
              static_cast<blasint>(n), alpha, a, static_cast<blasint>(lda), x, 1, beta, y, 1);
}

Matrix matmul(const Matrix& a, const Matrix& b, bool trans_a, bool trans_b) {
  const int64_t m = trans_a ? a.cols() : a.rows();
  const int64_t ka = trans_a ? a.rows() : a.cols();
  const int64_t kb = trans_b ? b.cols() : b.rows();
  const int64_t n = trans_b ? b.rows() : b.cols();
  check(ka == kb, "linalg::matmul",
        fmt::format("inner dimensions differ: op(A) is [{}, {}], op(B) is [{}, {}]", m, ka, kb, n));
  Matrix c(m, n);
  sgemm(trans_a, trans_b, m, n, ka, 1.0f, a.data(), a.cols(), b.data(), b.cols(), 0.0f, c.data(),
        n);
  return c;
}

Matrix orthonormalize(Matrix a) {
  const int64_t m = a.rows(), k = a.cols();
  check(m >= k, "linalg::orthonormalize",
        fmt::format("expected a tall matrix (rows ≥ cols), found [{}, {}]", m, k));
  if (k == 0) return a;
  std::vector<float> tau(static_cast<size_t>(k));
  lapack_int info =
      LAPACKE_sgeqrf(LAPACK_ROW_MAJOR, static_cast<lapack_int>(m), static_cast<lapack_int>(k),
                     a.data(), static_cast<lapack_int>(k), tau.data());
  check(info == 0, "linalg::orthonormalize", fmt::format("LAPACK sgeqrf failed (info {})", info));
  info =
      LAPACKE_sorgqr(LAPACK_ROW_MAJOR, static_cast<lapack_int>(m), static_cast<lapack_int>(k),
                     static_cast<lapack_int>(k), a.data(), static_cast<lapack_int>(k), tau.data());
  check(info == 0, "linalg::orthonormalize", fmt::format("LAPACK sorgqr failed (info {})", info));
  return a;
}

bool inverse_cholesky_upper(double* a, int64_t n) {
  if (n == 0) return true;
  const auto ln = static_cast<lapack_int>(n);
  const size_t nn = static_cast<size_t>(n) * static_cast<size_t>(n);
  // Row-major (i, k) ↔ (n−1−i, n−1−k) is flat index f ↔ n²−1−f: J·A·J.
  // LAPACK is called column-major on the row-major buffer, so its upper
  // triangle is the row-major lower one (A symmetric: the same matrix) and
  // LAPACKE copies nothing: dpotrf's U = L̃ᵀ, dtrtri's U⁻¹ = L̃⁻¹ᵀ there.
  std::reverse(a, a + nn);
  lapack_int info = LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'U', ln, a, ln);
  check(info >= 0, "linalg::inverse_cholesky_upper",
        fmt::format("LAPACK dpotrf failed (info {})", info));
  if (info > 0) return false;
  info = LAPACKE_dtrtri(LAPACK_COL_MAJOR, 'U', 'N', ln, a, ln);
  check(info >= 0, "linalg::inverse_cholesky_upper",
        fmt::format("LAPACK dtrtri failed (info {})", info));
  if (info > 0) return false;
  for (int64_t i = 0; i < n; ++i)  // dpotrf left A's upper triangle there
    std::fill(a + i * n + i + 1, a + (i + 1) * n, 0.0);
  std::reverse(a, a + nn);  // J·L̃⁻¹·J: upper triangular
  return true;
}

}  // namespace tailor::linalg
