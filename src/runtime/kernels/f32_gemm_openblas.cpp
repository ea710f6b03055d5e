// The f32 GEMM kernel of the optimised table: one OpenBLAS cblas_sgemm call
// (OpenBLAS picks its own micro-kernel for the CPU; gemm_partition.cpp makes
// the calls concurrent).
#include "tailor/linalg/blas.h"
#include "tailor/runtime/kernels/registry.h"

namespace tailor::runtime::kernels {

void f32_gemm_openblas(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                       const float* a, int64_t lda, const float* b, int64_t ldb, float beta,
                       float* c, int64_t ldc) {
  linalg::sgemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

}  // namespace tailor::runtime::kernels
