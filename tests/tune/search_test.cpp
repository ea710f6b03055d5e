// Search: every method on a synthetic additive cost with a known optimum (the
// softmax, Gumbel and Adam arithmetic of the gradient method is tested in
// tests/decision).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include "tailor/core/rng.h"
#include "tailor/tune/search.h"

namespace tailor::tune {
namespace {

// 6 decisions × 3 choices, cost 1 + Σ_d a_d[c_d] with known a ≥ 0; the cost
// model's terms are the one-hot choices plus a constant, so it can fit exactly.
struct Synthetic {
  DecisionSpace space;
  std::vector<std::vector<double>> a;
  Configuration optimum;
  int calls = 0;
  Synthetic() {
    Rng rng(5);
    for (int d = 0; d < 6; ++d) {
      space.decisions.push_back({"d" + std::to_string(d), "kernel", {"a", "b", "c"}, 0});
      std::vector<double> row;
      for (int c = 0; c < 3; ++c) row.push_back(rng.uniform(0.1, 2.0));
      optimum.push_back(static_cast<int>(std::min_element(row.begin(), row.end()) - row.begin()));
      a.push_back(row);
    }
  }
  double cost(const Configuration& c) const {
    double t = 1;
    for (size_t d = 0; d < c.size(); ++d) t += a[d][static_cast<size_t>(c[d])];
    return t;
  }
  Oracle oracle() {
    return [this](const Configuration& c) -> std::optional<double> {
      ++calls;
      return cost(c);
    };
  }
  FeatureFn features() const {
    return [](const Configuration& c) {
      std::vector<double> f(1 + 3 * c.size(), 0.0);
      f[0] = 1;
      for (size_t d = 0; d < c.size(); ++d) f[1 + 3 * d + static_cast<size_t>(c[d])] = 1;
      return f;
    };
  }
};

TEST(TuneSearch, MethodsFindTheKnownOptimumOfASyntheticCost) {
  Synthetic s;
  ASSERT_EQ(s.space.points(), 729.0);
  {
    CostModel m(19);
    const SearchResult r = search_gradient(s.space, s.oracle(), s.features(), 30, 1, m);
    ASSERT_GE(r.best, 0);
    EXPECT_LE(r.evaluations.size(), 30u);
    EXPECT_EQ(r.evaluations[static_cast<size_t>(r.best)].config, s.optimum);
  }
  {
    const SearchResult r = search_greedy(s.space, s.oracle(), 30);
    EXPECT_EQ(r.evaluations[static_cast<size_t>(r.best)].config,
              s.optimum);  // additive: coordinate-wise optimal
  }
  s.calls = 0;
  {
    const SearchResult r = search_random(s.space, s.oracle(), 10, 2);
    EXPECT_EQ(r.evaluations.size(), 10u);
    EXPECT_EQ(s.calls, 10);
    EXPECT_EQ(r.evaluations[0].config, s.space.default_configuration());
  }
}

TEST(TuneSearch, GradientExploresWhenTheDefaultFailsItsCheck) {
  // The synthetic cost, but every configuration keeping decision 0 at its
  // default (choice 0) fails the check: a third of the space, the default
  // included. The gradient method still finds passing configurations, and
  // its best is the optimum among those with decision 0 ≠ 0.
  Synthetic s;
  const Oracle oracle = [&](const Configuration& c) -> std::optional<double> {
    if (c[0] == 0) return std::nullopt;
    return s.cost(c);
  };
  Configuration want = s.optimum;
  want[0] = s.a[0][1] < s.a[0][2] ? 1 : 2;
  CostModel m(19);
  const SearchResult r = search_gradient(s.space, oracle, s.features(), 40, 1, m);
  ASSERT_GE(r.best, 0);
  EXPECT_FALSE(r.evaluations[0].latency_ms.has_value());  // the default, first
  EXPECT_EQ(r.evaluations[static_cast<size_t>(r.best)].config, want);
}

// 8 on/off kernel-variant decisions, each defaulting to off.
DecisionSpace eight_variants() {
  DecisionSpace space;
  for (int d = 0; d < 8; ++d)
    space.decisions.push_back({"k" + std::to_string(d), "kernel_variant", {"off", "on"}, 0});
  return space;
}

int count_on(const Configuration& c) {
  return static_cast<int>(std::count(c.begin(), c.end(), 1));
}

// The cost model's terms: constant, count off, count on ("on" is cheaper).
std::vector<double> on_off_terms(const Configuration& c) {
  return {1.0, 8.0 - count_on(c), static_cast<double>(count_on(c))};
}

// Each choice on saves 1 ms (10 − count on); a configuration whose `error`
// exceeds `tolerance` fails its check.
Oracle within(std::function<double(const Configuration&)> error, double tolerance) {
  return [error, tolerance](const Configuration& c) -> std::optional<double> {
    if (error(c) > tolerance) return std::nullopt;
    return 10.0 - count_on(c);
  };
}

TEST(TuneSearch, AFailedMoveIsHalvedUntilItPasses) {
  // 8 on/off decisions; each one on saves 1 ms (10 − k), but a configuration
  // with more than 3 on fails its check (an approximate choice past the
  // tolerance). The cost model knows "on" is cheaper (terms: constant, count
  // off, count on), so every argmax turns all of them on and fails. Halving
  // each failed move (8 → 4 → 2 from the default, then the rest around the
  // best) reaches 3 on, the best passing latency, within 16 measurements.
  const DecisionSpace space = eight_variants();
  const auto on = count_on;
  const Oracle oracle = [&](const Configuration& c) -> std::optional<double> {
    if (on(c) > 3) return std::nullopt;
    return 10.0 - on(c);
  };
  const FeatureFn features = on_off_terms;
  CostModel m = CostModel::from_coefficients({1.0, 1.0, 0.1});
  const SearchResult r = search_gradient(space, oracle, features, 16, 3, m);
  ASSERT_GE(r.best, 0);
  EXPECT_DOUBLE_EQ(*r.evaluations[static_cast<size_t>(r.best)].latency_ms, 7.0);
  // The second measurement turns all 8 on and fails; the third is 4 of them.
  ASSERT_GE(r.evaluations.size(), 3u);
  EXPECT_EQ(on(r.evaluations[1].config), 8);
  EXPECT_FALSE(r.evaluations[1].latency_ms.has_value());
  EXPECT_EQ(on(r.evaluations[2].config), 4);
}

TEST(TuneSearch, AFailedMoveIsBisectedUntilTheChoiceThatFailsIsFound) {
  // 8 on/off decisions; each one on saves 1 ms (10 − count on), but any
  // configuration with k5 on fails its check. The first move turns all 8 on
  // and fails; bisecting it (halves of 4, 2, 1, each passing half kept as
  // the base, a half measured before looked up) finds k5 failing alone and
  // keeps the other 7 on by the 8th measurement: 3 ms, the best passing
  // latency. k5, its logit pushed down by each failure, is never on again.
  const DecisionSpace space = eight_variants();
  const auto on = count_on;
  const Oracle oracle = [&](const Configuration& c) -> std::optional<double> {
    if (c[5] == 1) return std::nullopt;
    return 10.0 - on(c);
  };
  const FeatureFn features = on_off_terms;
  for (uint64_t seed : {1, 2, 3}) {
    CostModel m = CostModel::from_coefficients({1.0, 1.0, 0.1});
    const SearchResult r = search_gradient(space, oracle, features, 40, seed, m);
    ASSERT_GE(r.best, 0);
    EXPECT_DOUBLE_EQ(*r.evaluations[static_cast<size_t>(r.best)].latency_ms, 3.0);
    EXPECT_LE(r.best, 7) << "seed " << seed;
    EXPECT_EQ(on(r.evaluations[1].config), 8);
    // k5 is on in the first move and in at most one measurement per halving
    // (8 → 4 → 2 → 1), and in none after the best.
    int with_k5 = 0;
    for (size_t i = 0; i < r.evaluations.size(); ++i) {
      with_k5 += r.evaluations[i].config[5];
      if (i > static_cast<size_t>(r.best)) {
        EXPECT_EQ(r.evaluations[i].config[5], 0) << "seed " << seed << ", measurement " << i;
      }
    }
    EXPECT_LE(with_k5, 4) << "seed " << seed;
  }
}

TEST(TuneSearch, TheScreenStrikesAChoiceThatFailsAloneSoTheFirstMovePasses) {
  // As above, k5 fails the check (error 1 against a tolerance of 0.01); each
  // other choice adds 0.001 of error. Screened on the default (8 checks, no
  // measurements), k5 is struck: the first move turns the other 7 on and
  // passes, the best passing latency (3 ms) at the 2nd measurement, where
  // bisection needs up to the 8th. k5 is never measured.
  const DecisionSpace space = eight_variants();
  auto error = [](const Configuration& c) { return c[5] == 1 ? 1.0 : 0.001 * count_on(c); };
  const Oracle oracle = within(error, 0.01);
  int checks = 0;
  const ErrorScreen screen{[&](const Configuration& c) {
                             ++checks;
                             return error(c);
                           },
                           0.01};
  for (uint64_t seed : {1, 2, 3}) {
    CostModel m = CostModel::from_coefficients({1.0, 1.0, 0.1});
    checks = 0;
    const SearchResult r = search_gradient(space, oracle, on_off_terms, 12, seed, m, {}, &screen);
    ASSERT_GE(r.best, 0);
    EXPECT_EQ(r.best, 1) << "seed " << seed;
    EXPECT_DOUBLE_EQ(*r.evaluations[1].latency_ms, 3.0);
    for (const Evaluation& e : r.evaluations) EXPECT_EQ(e.config[5], 0) << "seed " << seed;
    // The default and the 8 single choices, then a lookup per measurement
    // (κ) and per bisected part.
    EXPECT_GE(checks, 9);
  }
  // With the screen turned off, the same search bisects its first move.
  GradientOptions off;
  off.screen = false;
  CostModel m = CostModel::from_coefficients({1.0, 1.0, 0.1});
  const SearchResult r = search_gradient(space, oracle, on_off_terms, 12, 1, m, off, &screen);
  EXPECT_EQ(count_on(r.evaluations[1].config), 8);
  EXPECT_FALSE(r.evaluations[1].latency_ms.has_value());
}

TEST(TuneSearch, TheScreenTrimsAMoveToTheToleranceByGainPerError) {
  // Each choice saves 1 ms; choice d alone adds (d + 1)·0.001 of error, and
  // errors add; the tolerance is 0.0105. The most choices that fit are the 4
  // of least error (0.001 + 0.002 + 0.003 + 0.004 = 0.010): 6 ms. The model
  // predicts equal gains, so the trimmed first move drops k7, k6, k5, k4
  // (least gain per unit of error first) and is that optimum.
  const DecisionSpace space = eight_variants();
  auto error = [](const Configuration& c) {
    double e = 0;
    for (size_t d = 0; d < c.size(); ++d) e += c[d] * 0.001 * static_cast<double>(d + 1);
    return e;
  };
  const Oracle oracle = within(error, 0.0105);
  const ErrorScreen screen{error, 0.0105};
  CostModel m = CostModel::from_coefficients({1.0, 1.0, 0.1});
  const SearchResult r = search_gradient(space, oracle, on_off_terms, 6, 1, m, {}, &screen);
  ASSERT_GE(r.evaluations.size(), 2u);
  EXPECT_EQ(r.evaluations[1].config, (Configuration{1, 1, 1, 1, 0, 0, 0, 0}));
  EXPECT_DOUBLE_EQ(*r.evaluations[1].latency_ms, 6.0);
}

TEST(TuneSearch, TheScreenLearnsThatErrorsAddUpFasterThanTheirSum) {
  // Errors add up to twice their sum (δ = 0.002 each alone; c on at once:
  // 0.004·c − 0.002 past the first), tolerance 0.0105: at most 3 on. Predicted
  // additively, the first move takes 5 and fails (0.018); its measured ratio
  // raises κ, so later moves are trimmed to what fits, and the search
  // reaches 3 on (7 ms) with no failed move after it.
  const DecisionSpace space = eight_variants();
  auto error = [](const Configuration& c) {
    const int on = count_on(c);
    return on == 0 ? 0.0 : 0.004 * on - 0.002;
  };
  const Oracle oracle = within(error, 0.0105);
  const ErrorScreen screen{error, 0.0105};
  CostModel m = CostModel::from_coefficients({1.0, 1.0, 0.1});
  const SearchResult r = search_gradient(space, oracle, on_off_terms, 16, 1, m, {}, &screen);
  ASSERT_GE(r.best, 0);
  EXPECT_DOUBLE_EQ(*r.evaluations[static_cast<size_t>(r.best)].latency_ms, 7.0);
  EXPECT_EQ(count_on(r.evaluations[1].config), 5);
  EXPECT_FALSE(r.evaluations[1].latency_ms.has_value());
  int failed_after_best = 0;
  for (size_t i = static_cast<size_t>(r.best) + 1; i < r.evaluations.size(); ++i)
    failed_after_best += !r.evaluations[i].latency_ms.has_value();
  EXPECT_EQ(failed_after_best, 0);
}

TEST(TuneSearch, ExhaustiveCoversSmallSpacesAndFailedChecksAreSkipped) {
  DecisionSpace space;
  space.decisions = {{"p", "pass", {"off", "on"}, 1}, {"t", "threads", {"1", "2", "4"}, 2}};
  // (1, 0) fails its check: never the best although its "latency" would be 0.
  const Oracle oracle = [](const Configuration& c) -> std::optional<double> {
    if (c == Configuration{1, 0}) return std::nullopt;
    return 10.0 - c[0] - c[1];
  };
  const SearchResult r = search_exhaustive(space, oracle);
  ASSERT_EQ(r.evaluations.size(), 6u);
  EXPECT_EQ(r.evaluations[static_cast<size_t>(r.best)].config, (Configuration{1, 2}));
}

}  // namespace
}  // namespace tailor::tune
