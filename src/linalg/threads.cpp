// OpenMP and OpenBLAS thread counts, set in one place.
#include "tailor/linalg/threads.h"

#include <cblas.h>
#include <omp.h>

#include <string>
#include <thread>

#include "tailor/core/error.h"

namespace tailor::linalg {

namespace {
// OpenMP's default team size, read when the library is loaded (on the main
// thread, before any set_threads call).
const int kOpenMpDefault = omp_get_max_threads();
}  // namespace

void set_threads(int n) {
  check(n >= 0 && n <= kMaxThreads, "--threads",
        "must be between 0 and " + std::to_string(kMaxThreads) + ", got " + std::to_string(n));
  omp_set_num_threads(n > 0 ? n : kOpenMpDefault);
  if (openblas_get_num_threads() != 1) openblas_set_num_threads(1);
}

int threads() {
  return omp_get_max_threads();
}

int resolve_threads(int n) {
  if (n > 0) return n;
  const unsigned cores = std::thread::hardware_concurrency();
  return cores > 0 ? static_cast<int>(cores) : 1;
}

ThreadLimit::ThreadLimit(int n) : saved_(threads()) {
  set_threads(n);
}

ThreadLimit::~ThreadLimit() {
  omp_set_num_threads(saved_);
}

}  // namespace tailor::linalg
