// Fixed work partitions of the GEMM-based operators: a product split into
// blocks that parallel_for's threads share, each block one serial call of the gemm
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
/// The one rule of the runtime for whether an operator's loop is shared with
/// linalg::parallel_for's workers or runs on the calling thread alone (every
/// kernel and op asks worth_threads or worth_threads_elements; none keeps a
/// threshold of its own). Every loop of src/runtime goes through
/// parallel_for; the scheme kernels of src/schemes still open OpenMP regions.
///
/// Multiply-adds below which an operator runs on the calling thread. The
/// pool's workers poll between loops, so handing a loop to them costs
/// ~0.5 µs (median of 3000 loops of 4 empty items, 2 threads, 5–50 µs of
/// serial work between loops; an OpenMP region under OMP_WAIT_POLICY=passive
/// costs 8–12 µs here, 20–45 µs on a loaded machine). 256 K multiply-adds are 2.5–9 µs of one core
/// (30–100 GMAC/s, AVX2 to AVX-512 kernels): the smallest loop where two
/// threads still save a few times the hand-over and the cache lines the
/// other core's output costs the next operator. A function of the shape
/// only, so results never depend on it (the partitions are fixed either way).
constexpr int64_t kParallelMinMacs = int64_t{1} << 18;
/// Whether `macs` multiply-adds are worth sharing over threads.
inline bool worth_threads(int64_t macs) {
  return macs >= kParallelMinMacs;
}
/// What one element of a memory-bound pass (a load, one vector operation, a
/// store) counts for in the multiply-adds of worth_threads: one, so a plain
/// elementwise op goes parallel from 256 K elements. Sharing such a pass
/// costs more than its time suggests: the other core's half of the input
/// sits in this core's cache and the next op reads that half of the output
/// back (the recogniser's SqueezeExcite scaling pass over 115 K elements,
/// 0.048 ms at 1 thread, took 0.063 ms at 2 with this counted as 4).
constexpr int64_t kElementMacs = 1;
/// Whether a pass over `elements` values doing about `ops` vector operations
/// per value (a FusedElementwise program's steps, a normalisation's passes)
/// is worth sharing over threads: worth_threads(elements·ops·kElementMacs).
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
/// in kBlockM blocks, over parallel_for's threads when blas_is_serial(), not already
/// in an OpenMP region and worth_threads(m·n·k) (else the same blocks in
/// order on the calling thread); with a multi-threaded OpenBLAS one call.
void gemm_blocked(F32GemmFn gemm, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                  float alpha, const float* a, int64_t lda, const float* b, int64_t ldb, float beta,
                  float* c, int64_t ldc);

/// y = alpha·x·op(B) + beta·y by `gemv` (F32GemvFn's contract): one call, or
/// block_columns(n) blocks of columns over parallel_for's threads when
/// worth_threads(n·k) and not already in an OpenMP region. The gemv
/// contract makes the values the same either way.
void gemv_blocked(F32GemvFn gemv, bool trans_b, int64_t n, int64_t k, float alpha, const float* x,
                  const float* b, int64_t ldb, float beta, float* y);

/// Fewer columns of b than this keep gemm in matmul_by_conv1x1's callers: a
/// 32-column tile would be mostly masked lanes.
constexpr int64_t kConv1x1MatmulMinColumns = 16;

/// y [m, n] = a [m, k] · b [k, n], all row-major, by the table's 1×1 conv
/// kernel: a is the conv's weight [c_out = m, c_in = k] (conv1x1_pack, per
/// call: m·k floats), b its image [c_in, h·w = n], y its output [c_out, n].
/// For the tables whose KernelTable::matmul_conv1x1 is set (matmul, and
/// ConvTranspose's columns).
void matmul_by_conv1x1(const KernelTable& kt, const float* a, const float* b, float* y, int64_t m,
                       int64_t k, int64_t n);

}  // namespace tailor::runtime::kernels::detail
