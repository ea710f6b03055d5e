// Scalar reference GEMM: C[i, j] = alpha·Σ_l op(A)[i, l]·op(B)[l, j] + beta·C[i, j],
// l ascending, accumulated in double and rounded once; beta = 0 does not
// read C (BLAS convention).
#include "tailor/runtime/kernels/registry.h"

namespace tailor::runtime::kernels {

void f32_gemm_ref(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                  const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                  int64_t ldc) {
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0.0;
      for (int64_t l = 0; l < k; ++l) {
        const float av = trans_a ? a[l * lda + i] : a[i * lda + l];
        const float bv = trans_b ? b[j * ldb + l] : b[l * ldb + j];
        acc += static_cast<double>(av) * bv;
      }
      float& cij = c[i * ldc + j];
      const float ab = static_cast<float>(alpha * acc);
      cij = beta == 0.f ? ab : ab + beta * cij;
    }
  }
}

}  // namespace tailor::runtime::kernels
