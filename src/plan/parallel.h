// A static parallel loop for the solvers: the range is cut into contiguous
// chunks, one per worker, so results never depend on the schedule as long as
// each index writes only its own outputs.
#pragma once

#include <algorithm>
#include <cstddef>
#include <exception>
#include <thread>
#include <vector>

namespace tailor::plan {

/// Calls fn(begin, end) on `threads` workers over [0, n) in contiguous chunks
/// (on the calling thread alone when threads ≤ 1 or n is small). The first
/// exception a worker throws is rethrown after all have finished.
template <typename Fn>
void parallel_for(size_t n, int threads, Fn&& fn) {
  const size_t workers = std::min<size_t>(std::max(threads, 1), std::max<size_t>(n, 1));
  if (workers <= 1) {
    if (n > 0) fn(size_t{0}, n);
    return;
  }
  std::vector<std::thread> pool;
  std::vector<std::exception_ptr> errors(workers);
  const size_t chunk = (n + workers - 1) / workers;
  for (size_t w = 0; w < workers; ++w) {
    const size_t begin = std::min(n, w * chunk), end = std::min(n, begin + chunk);
    pool.emplace_back([&, w, begin, end] {
      try {
        if (begin < end) fn(begin, end);
      } catch (...) {
        errors[w] = std::current_exception();
      }
    });
  }
  for (auto& t : pool) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace tailor::plan
