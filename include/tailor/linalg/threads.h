// The one place that sets how many threads tailor computes with: OpenMP's
// team size and OpenBLAS's, for `--threads N` of every command.
#pragma once

namespace tailor::linalg {

/// The most threads set_threads accepts: libgomp cannot start thousands of
/// threads (100000 segfaulted, 1000 under a 3 GB address-space limit aborted
/// with "Thread creation failed").
inline constexpr int kMaxThreads = 1024;

/// Bounds the threads of the work the calling thread starts to `n`:
///  - its OpenMP parallel regions use n threads (omp_set_num_threads); n = 0
///    restores OpenMP's default (OMP_NUM_THREADS, else one per core);
///  - OpenBLAS runs every call serially (openblas_set_num_threads(1)): the
///    runtime splits its products into fixed blocks over the OpenMP threads
///    (runtime/kernels/gemm_partition.h) and the profiler and encoder run one
///    layer per worker, so no BLAS call needs threads of its own and results
///    do not depend on the count.
/// OpenBLAS (Debian's pthread variant) starts its own pool when it is loaded,
/// before main, unless OPENBLAS_NUM_THREADS=1 is in the environment; the
/// `tailor` command puts it there (tools/tailor/main.cpp), so the process
/// never holds more compute threads than asked for.
/// OpenMP's count belongs to the calling thread: a std::thread starts with
/// OpenMP's default, so a worker that may start parallel regions bounds itself
/// (ThreadLimit). Throws Error naming --threads unless 0 ≤ n ≤ kMaxThreads.
void set_threads(int n);

/// The OpenMP team size the calling thread's parallel regions get
/// (omp_get_max_threads).
int threads();

/// The worker count `--threads n` asks for: n when n > 0, else the cores
/// (std::thread::hardware_concurrency, at least 1).
int resolve_threads(int n);

/// For the scope of the object, the calling thread's OpenMP regions use `n`
/// threads (set_threads(n)); the previous count is restored on exit. A worker
/// thread of a pool of N holds ThreadLimit(1), so the pool stays at N threads.
class ThreadLimit {
 public:
  explicit ThreadLimit(int n);
  ~ThreadLimit();
  ThreadLimit(const ThreadLimit&) = delete;
  ThreadLimit& operator=(const ThreadLimit&) = delete;

 private:
  int saved_;
};

}  // namespace tailor::linalg
