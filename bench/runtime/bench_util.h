// Shared by the runtime benchmarks: the process's CPU clock and seeded
// uniform test values.
#pragma once

#include <time.h>

#include <cstdint>
#include <vector>

#include "tailor/core/rng.h"

namespace tailor::bench {

/// CPU seconds (user + system) this process has used, all threads.
inline double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

/// n values uniform in [lo, hi) from Rng(seed).
inline std::vector<float> random_values(int64_t n, uint64_t seed, double lo = -1.0,
                                        double hi = 1.0) {
  Rng rng(seed);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = static_cast<float>(rng.uniform(lo, hi));
  return v;
}

}  // namespace tailor::bench
