#include "tailor/core/bootstrap.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <numeric>
#include <tuple>
#include <vector>

#include "tailor/core/error.h"

namespace tailor {
namespace {

double mean_of(const std::vector<double>& x, const std::vector<size_t>& drawn) {
  double s = 0;
  for (size_t i : drawn) s += x[i];
  return s / static_cast<double>(drawn.size());
}

// The ends are the order statistics v[⌊0.025·R⌋] and v[⌈0.975·R⌉ − 1] of
// the draws' values: a statistic that returns its call count 0, 1, …, R − 1
// has v[i] = i.
TEST(Bootstrap, TheEndsAreTheDrawsOrderStatistics) {
  for (const auto& [r, lo, hi] : std::vector<std::tuple<int, double, double>>{
           {10000, 250, 9749}, {2000, 50, 1949}, {40, 1, 38}, {1, 0, 0}, {3, 0, 2}}) {
    int calls = 0;
    const Interval i = bootstrap_interval(
        5, [&](const std::vector<size_t>&) { return static_cast<double>(calls++); }, 7, r);
    EXPECT_EQ(calls, r);
    EXPECT_EQ(i.low, lo) << r;
    EXPECT_EQ(i.high, hi) << r;
  }
}

// Two items 0 and 1: a draw of two is {0, 0} (mean 0), mixed (0.5) or {1, 1}
// (1), with probabilities ¼, ½, ¼; ¼ is far above 2.5%, so the interval is
// [0, 1]. Equal items give an interval of width 0 at their value.
TEST(Bootstrap, TwoItemsSpanTheirValuesAndEqualItemsCollapse) {
  const std::vector<double> two{0, 1};
  const Interval i = bootstrap_interval(
      2, [&](const std::vector<size_t>& d) { return mean_of(two, d); }, 0);
  EXPECT_EQ(i.low, 0.0);
  EXPECT_EQ(i.high, 1.0);
  const std::vector<double> same(9, 0.25);
  const Interval j = bootstrap_interval(
      9, [&](const std::vector<size_t>& d) { return mean_of(same, d); }, 3);
  EXPECT_EQ(j.low, 0.25);
  EXPECT_EQ(j.high, 0.25);
}

// The mean of 0, 1, …, 99 resampled: by the central limit theorem the draws'
// mean is about normal with mean 49.5 and standard deviation σ/√n, σ² =
// (n² − 1)/12 (the items' own variance), so the ends sit near 49.5 ∓ 1.96 ·
// 2.886 = 43.84 and 55.16; 2000 draws place each within about 0.3 of them.
TEST(Bootstrap, TheMeanOfManyItemsFollowsTheNormalApproximation) {
  std::vector<double> x(100);
  std::iota(x.begin(), x.end(), 0.0);
  const Interval i = bootstrap_interval(
      100, [&](const std::vector<size_t>& d) { return mean_of(x, d); }, 11);
  const double sd = std::sqrt((100.0 * 100.0 - 1) / 12 / 100);
  EXPECT_NEAR(i.low, 49.5 - 1.959964 * sd, 0.45);
  EXPECT_NEAR(i.high, 49.5 + 1.959964 * sd, 0.45);
}

TEST(Bootstrap, SeededNanAndTooFewItems) {
  std::vector<double> x{3, 1, 4, 1, 5, 9, 2, 6};
  auto mean = [&](const std::vector<size_t>& d) { return mean_of(x, d); };
  const Interval a = bootstrap_interval(x.size(), mean, 5),
                 b = bootstrap_interval(x.size(), mean, 5);
  EXPECT_EQ(a.low, b.low);
  EXPECT_EQ(a.high, b.high);
  EXPECT_LT(a.low, a.high);
  // One item, or none: no interval.
  EXPECT_TRUE(std::isnan(bootstrap_interval(1, mean, 0).low));
  EXPECT_TRUE(std::isnan(bootstrap_interval(0, mean, 0).high));
  // A NaN item stays NaN in every draw that takes it: the interval is NaN.
  x[2] = std::numeric_limits<double>::quiet_NaN();
  const Interval n = bootstrap_interval(x.size(), mean, 5);
  EXPECT_TRUE(std::isnan(n.low) && std::isnan(n.high));
  EXPECT_THROW(bootstrap_interval(x.size(), mean, 5, 0), Error);
}

TEST(Bootstrap, IntervalText) {
  EXPECT_EQ(interval_text({0.00211, 0.009337}), "95% 0.00211–0.009337");
  EXPECT_EQ(interval_text({1.5, 2.0}), "95% 1.5–2");
  EXPECT_EQ(interval_text({}), "");
  EXPECT_EQ(interval_text({1.5, 2.0}, " (", ")"), " (95% 1.5–2)");
  EXPECT_EQ(interval_text({}, " (", ")"), "");
}

}  // namespace
}  // namespace tailor
