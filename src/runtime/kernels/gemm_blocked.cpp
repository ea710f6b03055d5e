// Fixed-partition parallel sgemm over OpenBLAS (see gemm_blocked.h).
#include "runtime/kernels/gemm_blocked.h"

#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <mutex>

#include "tailor/linalg/blas.h"

namespace tailor::runtime::kernels::detail {

bool blas_is_serial() {
  return openblas_get_num_threads() == 1;
}

void sgemm_blocked(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                   const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                   int64_t ldc) {
  if (m == 1 && !trans_a) {
    // One row (a decoder step): a matrix-vector product; OpenBLAS's sgemm
    // packs B first, several times the cost at this size. With beta = 0 the
    // row is cleared first: BLAS may scale what is there, and 0·inf is NaN.
    if (beta == 0.f) std::fill(c, c + n, 0.f);
    linalg::sgemv(!trans_b, trans_b ? n : k, trans_b ? k : n, alpha, b, ldb, a, beta, c);
    return;
  }
  // The partition depends only on the shape, never on the thread count.
  const bool parallel = blas_is_serial() && !omp_in_parallel();
  const int64_t bn = block_columns(n);
  if (parallel && n > bn) {
    const int64_t blocks = (n + bn - 1) / bn;
#pragma omp parallel for schedule(static)
    for (int64_t blk = 0; blk < blocks; ++blk) {
      const int64_t j0 = blk * bn, nb = std::min(bn, n - j0);
      linalg::sgemm(trans_a, trans_b, m, nb, k, alpha, a, lda, trans_b ? b + j0 * ldb : b + j0, ldb,
                    beta, c + j0, ldc);
    }
    return;
  }
  if (parallel && m >= 2 * kBlockM) {
    const int64_t blocks = (m + kBlockM - 1) / kBlockM;
#pragma omp parallel for schedule(static)
    for (int64_t blk = 0; blk < blocks; ++blk) {
      const int64_t i0 = blk * kBlockM, mb = std::min(kBlockM, m - i0);
      linalg::sgemm(trans_a, trans_b, mb, n, k, alpha, trans_a ? a + i0 : a + i0 * lda, lda, b, ldb,
                    beta, c + i0 * ldc, ldc);
    }
    return;
  }
  // Small products (or a multi-threaded OpenBLAS) run as one call.
  linalg::sgemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

}  // namespace tailor::runtime::kernels::detail
