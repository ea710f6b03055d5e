// The f32 GEMM kernel of the optimised table: one OpenBLAS cblas_sgemm call
// (OpenBLAS picks its own micro-kernel for the CPU; gemm_partition.cpp makes
// the calls concurrent).
#include <algorithm>

#include "tailor/linalg/blas.h"
#include "tailor/runtime/kernels/registry.h"

namespace tailor::runtime::kernels {

void f32_gemm_openblas(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                       const float* a, int64_t lda, const float* b, int64_t ldb, float beta,
                       float* c, int64_t ldc) {
  if (m == 1 && !trans_a) {
    // One row (a decoder step): a matrix-vector product; OpenBLAS's sgemm
    // packs B first, several times the cost at this size. With beta = 0 the
    // row is cleared first: BLAS may scale what is there, and 0·inf is NaN.
    if (beta == 0.f) std::fill(c, c + n, 0.f);
    linalg::sgemv(!trans_b, trans_b ? n : k, trans_b ? k : n, alpha, b, ldb, a, beta, c);
    return;
  }
  linalg::sgemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

}  // namespace tailor::runtime::kernels
