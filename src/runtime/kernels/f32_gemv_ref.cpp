// Scalar reference GEMV: y[j] = alpha·Σ_l x[l]·op(B)[l, j] + beta·y[j], l
// ascending, accumulated in double and rounded once; beta = 0 does not read
// y (BLAS convention). Column j alone decides y[j].
#include "tailor/runtime/kernels/registry.h"

namespace tailor::runtime::kernels {

void f32_gemv_ref(bool trans_b, int64_t n, int64_t k, float alpha, const float* x, const float* b,
                  int64_t ldb, float beta, float* y) {
  for (int64_t j = 0; j < n; ++j) {
    double acc = 0.0;
    for (int64_t l = 0; l < k; ++l)
      acc += static_cast<double>(x[l]) * (trans_b ? b[j * ldb + l] : b[l * ldb + j]);
    const float ab = static_cast<float>(alpha * acc);
    y[j] = beta == 0.f ? ab : ab + beta * y[j];
  }
}

}  // namespace tailor::runtime::kernels
