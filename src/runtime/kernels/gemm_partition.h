// Fixed work partitions of the GEMM-based operators: a product split into
// blocks that OpenMP threads share, each block one serial call of the gemm
// kernel. The partition depends only on the shape, never on the thread
// count, so neither do the results.
#pragma once

#include <cstdint>

#include "tailor/runtime/kernels/registry.h"

namespace tailor::runtime::kernels::detail {

/// Output columns per block for a product with n columns: about n/4 (so two
/// to four threads balance), a multiple of 16, within [64, 512] (large
/// blocks amortise OpenBLAS's packing; an im2col block of K·512 floats still
/// streams well from L2). A function of n only, never of the thread count.
inline int64_t block_columns(int64_t n) {
  const int64_t quarter = ((n + 3) / 4 + 15) / 16 * 16;
  return quarter < 64 ? 64 : (quarter > 512 ? 512 : quarter);
}
/// The one rule of the runtime for whether an operator's loop runs over the
/// OpenMP team or on the calling thread alone (every kernel and op asks
/// worth_threads or worth_threads_elements; none keeps a threshold of its own).
///
/// Multiply-adds below which an operator runs on the calling thread: waking
/// the OpenMP team (passive waiting: a futex wake and a context switch per
/// worker; an empty 2-thread region measured 9–12 µs median here, tens of µs
/// on a loaded machine) costs more than sharing 1 M multiply-adds
/// (20–40 µs of one core) saves. A function of the shape only, so results never depend on it
/// (the partitions are fixed either way).
constexpr int64_t kParallelMinMacs = int64_t{1} << 20;
/// Whether `macs` multiply-adds are worth an OpenMP parallel region.
inline bool worth_threads(int64_t macs) {
  return macs >= kParallelMinMacs;
}
/// What one element of a memory-bound pass (a load, one vector operation, a
/// store: ~0.1–0.2 ns of one AVX2 core in cache) costs in the multiply-adds
/// of worth_threads (~0.03 ns each in the blocked gemm): a plain elementwise
/// op goes parallel from 256 K elements (~40 µs), where two threads save
/// about twice a wake-up. (The ops' former thresholds, 16 K and 64 K
/// elements, woke the team for 3–15 µs of work.)
constexpr int64_t kElementMacs = 4;
/// Whether a pass over `elements` values doing about `ops` vector operations
/// per value (a FusedElementwise program's steps, a normalisation's passes)
/// is worth an OpenMP parallel region: worth_threads(elements·ops·kElementMacs).
inline bool worth_threads_elements(int64_t elements, int64_t ops = 1) {
  return worth_threads(elements * (ops < 1 ? 1 : ops) * kElementMacs);
}
/// Rows per block when a product is split by rows.
constexpr int64_t kBlockM = 64;

/// True when OpenBLAS runs single-threaded (linalg::set_threads makes it so), so
/// that concurrent gemm calls from OpenMP threads neither oversubscribe nor race.
bool blas_is_serial();

/// C = alpha·op(A)·op(B) + beta·C by `gemm` (F32GemmFn's contract), split by
/// columns in block_columns(n) blocks when that gives several, else by rows
/// in kBlockM blocks, over OpenMP threads when blas_is_serial(), not already
/// in a parallel region and worth_threads(m·n·k) (else the same blocks in
/// order on the calling thread); with a multi-threaded OpenBLAS one call.
void gemm_blocked(F32GemmFn gemm, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                  float alpha, const float* a, int64_t lda, const float* b, int64_t ldb, float beta,
                  float* c, int64_t ldc);

/// y = alpha·x·op(B) + beta·y by `gemv` (F32GemvFn's contract): one call, or
/// block_columns(n) blocks of columns over OpenMP threads when
/// worth_threads(n·k) and not already in a parallel region. The gemv
/// contract makes the values the same either way.
void gemv_blocked(F32GemvFn gemv, bool trans_b, int64_t n, int64_t k, float alpha, const float* x,
                  const float* b, int64_t ldb, float beta, float* y);

}  // namespace tailor::runtime::kernels::detail
