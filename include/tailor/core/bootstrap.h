// Percentile bootstrap intervals over a sample's items (inputs, lines,
// sequences), seeded and the same on every platform.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

namespace tailor {

/// A two-sided interval [low, high]; NaN, NaN where none was computed.
struct Interval {
  double low = std::numeric_limits<double>::quiet_NaN();
  double high = std::numeric_limits<double>::quiet_NaN();
};

/// Resamples a bootstrap_interval draws unless told otherwise.
inline constexpr int kBootstrapResamples = 2000;

/// The 95% percentile bootstrap interval (Efron & Tibshirani, "An
/// Introduction to the Bootstrap", 1993, ch. 13) of a statistic of n items:
/// `resamples` times, n indices drawn from [0, n) with replacement
/// (tailor::Rng(seed).below, in draw order), and `statistic` of each draw
/// (an index may repeat; the statistic counts it as often as drawn). With the
/// draws' values sorted ascending v[0..R), low = v[⌊0.025·R⌋] and high =
/// v[⌈0.975·R⌉ − 1] (R = 10,000: v[250] and v[9749]). NaN, NaN for n < 2 or
/// when any draw is NaN (a NaN statistic stays NaN). Throws Error (source
/// "bootstrap") for resamples < 1.
Interval bootstrap_interval(size_t n,
                            const std::function<double(const std::vector<size_t>&)>& statistic,
                            uint64_t seed, int resamples = kBootstrapResamples);

/// `before` + "95% low–high" + `after`, the ends with 4 significant digits
/// (e.g. "95% 0.0021–0.00934"), as compress and the report print an
/// interval; empty (without `before` and `after`) when either end is NaN.
std::string interval_text(const Interval& interval, std::string_view before = "",
                          std::string_view after = "");

}  // namespace tailor
