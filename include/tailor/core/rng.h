// Seeded random numbers that are the same on every platform and thread count.
#pragma once

#include <cstdint>

namespace tailor {

/// xoshiro256** (Blackman & Vigna, 2018) seeded through splitmix64. Unlike the
/// standard library's distributions, every draw here is specified bit for bit,
/// so a seed gives the same sequence with any compiler or library.
class Rng {
 public:
  explicit Rng(uint64_t seed);
  /// Next 64 random bits.
  uint64_t next_u64();
  /// Uniform in the open interval (0, 1): never 0, never 1 (safe for log(u)
  /// and for the Gumbel transform −log(−log u)).
  double uniform_open();
  /// Uniform in [lo, hi).
  double uniform(double lo, double hi);
  /// Uniform integer in [0, n); n > 0. Unbiased (Lemire's method).
  uint64_t below(uint64_t n);
  /// Standard normal N(0, 1) by the Box–Muller transform.
  double normal();
  /// Gumbel(0, 1): −log(−log u), u uniform in (0, 1).
  double gumbel();
  /// An independent generator for stream `stream` (e.g. a layer index), so
  /// parallel work draws the same numbers whatever the thread schedule.
  Rng split(uint64_t stream) const;

 private:
  uint64_t s_[4];
  uint64_t seed_;
  bool has_spare_ = false;
  double spare_ = 0;
};

}  // namespace tailor
