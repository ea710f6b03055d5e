// Percentile bootstrap intervals (bootstrap.h).
#include "tailor/core/bootstrap.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "tailor/core/error.h"
#include "tailor/core/rng.h"

namespace tailor {

Interval bootstrap_interval(size_t n,
                            const std::function<double(const std::vector<size_t>&)>& statistic,
                            uint64_t seed, int resamples) {
  if (resamples < 1) throw Error("bootstrap", "resamples must be at least 1");
  if (n < 2) return {};
  Rng rng(seed);
  std::vector<size_t> pick(n);
  std::vector<double> values;
  values.reserve(static_cast<size_t>(resamples));
  for (int d = 0; d < resamples; ++d) {
    for (size_t& i : pick) i = static_cast<size_t>(rng.below(n));
    const double v = statistic(pick);
    if (std::isnan(v)) return {};
    values.push_back(v);
  }
  std::sort(values.begin(), values.end());
  // ⌊0.025·R⌋ and ⌈0.975·R⌉ − 1 in integers (0.975 has no exact double).
  const auto r = static_cast<size_t>(resamples);
  const size_t lo = 25 * r / 1000, hi = (975 * r + 999) / 1000 - 1;
  return {values[lo], values[hi]};
}

std::string interval_text(const Interval& interval, std::string_view before,
                          std::string_view after) {
  if (std::isnan(interval.low) || std::isnan(interval.high)) return {};
  return fmt::format("{}95% {:.4g}–{:.4g}{}", before, interval.low, interval.high, after);
}

}  // namespace tailor
