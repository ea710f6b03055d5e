// Fixed-partition parallel GEMM over the registry's gemm kernel (see gemm_partition.h).
#include "runtime/kernels/gemm_partition.h"

#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <vector>

#include "tailor/linalg/parallel.h"
#include "tailor/runtime/kernels/conv.h"

namespace tailor::runtime::kernels::detail {

bool blas_is_serial() {
  return openblas_get_num_threads() == 1;
}

void gemm_blocked(F32GemmFn gemm, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                  float alpha, const float* a, int64_t lda, const float* b, int64_t ldb, float beta,
                  float* c, int64_t ldc) {
  // The partition depends only on the shape, never on the thread count. A
  // product too small to be worth sharing (worth_threads) runs the
  // same blocks in order on the calling thread, so its result is the same.
  const bool parallel = blas_is_serial() && !omp_in_parallel();
  const bool threads = worth_threads(m * n * k);
  const int64_t bn = block_columns(n);
  if (parallel && n > bn) {
    const int64_t blocks = (n + bn - 1) / bn;
    auto block = [&](int64_t blk) {
      const int64_t j0 = blk * bn, nb = std::min(bn, n - j0);
      gemm(trans_a, trans_b, m, nb, k, alpha, a, lda, trans_b ? b + j0 * ldb : b + j0, ldb, beta,
           c + j0, ldc);
    };
    linalg::parallel_for(blocks, threads, block);
    return;
  }
  if (parallel && m >= 2 * kBlockM) {
    const int64_t blocks = (m + kBlockM - 1) / kBlockM;
    auto block = [&](int64_t blk) {
      const int64_t i0 = blk * kBlockM, mb = std::min(kBlockM, m - i0);
      gemm(trans_a, trans_b, mb, n, k, alpha, trans_a ? a + i0 : a + i0 * lda, lda, b, ldb, beta,
           c + i0 * ldc, ldc);
    };
    linalg::parallel_for(blocks, threads, block);
    return;
  }
  // Small products (or a multi-threaded OpenBLAS) run as one call.
  gemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void gemv_blocked(F32GemvFn gemv, bool trans_b, int64_t n, int64_t k, float alpha, const float* x,
                  const float* b, int64_t ldb, float beta, float* y) {
  const int64_t bn = block_columns(n);
  if (n <= bn || !worth_threads(n * k) || omp_in_parallel()) {
    gemv(trans_b, n, k, alpha, x, b, ldb, beta, y);
    return;
  }
  const int64_t blocks = (n + bn - 1) / bn;
  linalg::parallel_for(blocks, true, [&](int64_t blk) {
    const int64_t j0 = blk * bn;
    gemv(trans_b, std::min(bn, n - j0), k, alpha, x, trans_b ? b + j0 * ldb : b + j0, ldb, beta,
         y + j0);
  });
}

void matmul_by_conv1x1(const KernelTable& kt, const float* a, const float* b, float* y, int64_t m,
                       int64_t k, int64_t n) {
  Conv2dParams cp;
  cp.c_out = m;
  cp.c_in = k;
  cp.h = 1;
  cp.w = n;
  std::vector<float> packed(static_cast<size_t>(kt.conv1x1_pack(cp, a, nullptr)));
  kt.conv1x1_pack(cp, a, packed.data());
  kt.conv1x1(cp, b, packed.data(), nullptr, y, Activation{});
}

}  // namespace tailor::runtime::kernels::detail
