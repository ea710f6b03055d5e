#include "tailor/plan/two_budget.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <functional>
#include <limits>

#include "random_problems.h"
#include "tailor/core/error.h"
#include "tailor/plan/exact.h"
#include "tailor/plan/plan.h"
#include "test_util.h"

namespace tailor::plan {
namespace {

using fixtures::random_problem;
using fixtures::tol;
using tailor::testing::expect_error_naming;

/// Exhaustive enumeration: the least cost under both budgets (+∞ when no
/// plan fits both) and the least latency of a plan within the byte budget.
struct Brute {
  double best = HUGE_VAL;
  double least_latency = HUGE_VAL;
};

Brute brute_force(const Problem& p) {
  Brute b;
  std::function<void(size_t, int64_t, double, double)> visit = [&](size_t i, int64_t bytes,
                                                                   double lat, double cost) {
    if (i == p.layers.size()) {
      if (bytes > p.budget) return;
      b.least_latency = std::min(b.least_latency, lat);
      if (lat <= p.latency_budget) b.best = std::min(b.best, cost);
      return;
    }
    for (const Option& o : p.layers[i])
      visit(i + 1, bytes + o.bytes, lat + o.latency, cost + o.cost);
  };
  visit(0, 0, 0, 0);
  return b;
}

/// A random problem with latencies uniform in [0, 1) and a latency budget a
/// random fraction of the way from the least to the most latency.
Problem random_two_budget(Rng& rng, int layers, int options) {
  Problem p = random_problem(rng, layers, options);
  double lo = 0, hi = 0;
  for (auto& layer : p.layers) {
    double a = HUGE_VAL, b = 0;
    for (Option& o : layer) {
      o.latency = rng.uniform(0, 1);
      a = std::min(a, o.latency);
      b = std::max(b, o.latency);
    }
    lo += a;
    hi += b;
  }
  p.latency_budget = lo + rng.uniform(0.0, 0.8) * (hi - lo);
  p.latency_unit = "ms";
  return p;
}

TEST(PlanTwoBudgets, EqualsBruteForceOnSmallRandomProblems) {
  Rng rng(16);
  int solved = 0, refused = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const int layers = 2 + static_cast<int>(rng.below(5));
    const int options = 2 + static_cast<int>(rng.below(5));
    const Problem p = random_two_budget(rng, layers, options);
    const Brute b = brute_force(p);
    if (b.best == HUGE_VAL) {
      // No plan within the bytes reaches the latency budget: an error naming
      // the least latency reachable at that byte budget.
      expect_error_naming([&] { solve_exact(p, {}); }, "random.json",
                          fmt::format("smallest reachable latency at that byte budget is {:.4g} ms",
                                      b.least_latency));
      ++refused;
      continue;
    }
    const Solution s = solve_exact(p, {});
    ASSERT_EQ(s.choice.size(), p.layers.size());
    EXPECT_LE(choice_bytes(p, s.choice), p.budget) << trial;
    EXPECT_LE(choice_latency(p, s.choice), p.latency_budget + 1e-9) << trial;
    EXPECT_TRUE(s.proven_optimal) << trial;
    EXPECT_NEAR(s.objective, b.best, tol(b.best)) << trial;
    EXPECT_LE(s.lower_bound, b.best + tol(b.best)) << trial;
    ++solved;
  }
  EXPECT_GT(solved, 100);
  EXPECT_GT(refused, 5);
}

// int8 and int8-a8 under a weight-error objective: the same bytes and cost,
// int8-a8 faster. With a latency budget that does not bind, each layer takes
// the faster of the tie (the solver alone took the first option listed).
TEST(PlanTwoBudgets, TiesGoToTheLowerLatency) {
  Problem p;
  p.source = "ties.json";
  // Per layer: dense (4 bytes, cost 0, 10 ms), int8 (1, 0.5, 6 ms), int8-a8
  // (1, 0.5, 2 ms), and a costlier option of 1 byte and 1 ms.
  for (int i = 0; i < 3; ++i) p.layers.push_back({{4, 0, 10}, {1, 0.5, 6}, {1, 0.5, 2}, {1, 2, 1}});
  p.budget = 3;  // one byte per layer
  p.latency_budget = 100;
  p.latency_unit = "ms";
  const Solution s = solve_exact(p, {});
  EXPECT_EQ(s.choice, (Choice{2, 2, 2}));
  EXPECT_DOUBLE_EQ(s.objective, 1.5);
  EXPECT_EQ(s.bytes, 3);
}

TEST(PlanTwoBudgets, CertifiedBoundAndFeasiblePlanOnLargerProblems) {
  // 40 layers × 8 options, the latency budget halfway between the least
  // latency within the bytes and the byte-only optimum's (so it binds): no
  // enumeration, but the plan fits both budgets, its bound does not exceed
  // it, and no plan differing from a proven one in two adjacent layers beats it.
  Rng rng(7);
  int proven = 0;
  for (int trial = 0; trial < 5; ++trial) {
    Problem p = random_two_budget(rng, 40, 8);
    p.latency_budget = std::numeric_limits<double>::infinity();
    const double free_latency = choice_latency(p, solve_exact(p, {}).choice);
    Problem fastest = p;
    for (auto& layer : fastest.layers)
      for (Option& o : layer) o.cost = o.latency;
    const double least = solve_exact(fastest, {}).objective;
    ASSERT_LT(least, free_latency);
    p.latency_budget = 0.5 * (least + free_latency);
    const Solution s = solve_exact(p, {});
    EXPECT_LE(choice_bytes(p, s.choice), p.budget);
    EXPECT_LE(choice_latency(p, s.choice), p.latency_budget + 1e-9);
    EXPECT_LE(s.lower_bound, s.objective + tol(s.objective));
    if (!s.proven_optimal) continue;
    ++proven;
    for (size_t i = 0; i + 1 < p.layers.size(); i += 3)
      for (size_t a = 0; a < p.layers[i].size(); ++a)
        for (size_t b = 0; b < p.layers[i + 1].size(); ++b) {
          Choice c = s.choice;
          c[i] = static_cast<int>(a);
          c[i + 1] = static_cast<int>(b);
          if (choice_bytes(p, c) <= p.budget && choice_latency(p, c) <= p.latency_budget) {
            EXPECT_GE(evaluate(p, c), s.objective - tol(s.objective));
          }
        }
  }
  EXPECT_GE(proven, 1);
}

TEST(PlanTwoBudgets, UnreachableBudgetsNameTheSmallestLatencyAtThatByteBudget) {
  // Each layer: a small slow option (1 byte, 3 ms, cost 1) or a large fast one
  // (5 bytes, 1 ms, cost 0). 6 planned bytes take one fast option at most:
  // the least latency is 1 + 3 = 4 ms, plus the 2 ms rest = 6 ms.
  Problem p;
  p.source = "hand.json";
  p.layers = {{{1, 1.0, 3.0}, {5, 0.0, 1.0}}, {{1, 1.0, 3.0}, {5, 0.0, 1.0}}};
  p.budget = 6;
  p.fixed_bytes = 10;
  p.fixed_latency = 2;
  p.latency_unit = "ms";
  p.latency_budget = 5.5 - 2;
  expect_error_naming([&] { solve_exact(p, {}); }, "hand.json",
                      "--max-latency 5.5 ms is out of reach within 16 bytes: the smallest "
                      "reachable latency at that byte budget is 6 ms");
  // 6 ms reachable: the plan takes one fast option (cost 1).
  p.latency_budget = 6 - 2;
  const Solution s = solve_exact(p, {});
  EXPECT_DOUBLE_EQ(s.objective, 1.0);
  EXPECT_DOUBLE_EQ(choice_latency(p, s.choice), 4.0);
  // Only exact takes two budgets.
  expect_error_naming([&] { solve("greedy", p, {}); }, "--solver", "only exact");
}

TEST(PlanTwoBudgets, BudgetsFromAProfile) {
  ModelProfile prof;
  prof.model = "m.onnx";
  prof.dense_bytes = 4 * 100 + 40;
  prof.fixed_bytes = 40;
  LayerProfile l;
  l.name = "w";
  l.shape_out_in = {10, 10};
  l.numel = 100;
  l.dense_bytes = 400;
  Candidate dense, low;
  dense.label = "dense";
  dense.bytes = 400;
  dense.macs = 100;
  low.label = "lowrank-r2";
  low.rel_error = 0.5;
  low.bytes = 160;
  low.macs = 40;
  l.candidates = {dense, low};
  prof.layers = {l};
  Problem p = make_problem(prof, Objective::sum, 1000, "p.json");
  expect_error_naming([&] { add_latency_budget(p, prof, 5); }, "p.json",
                      "needs measured latencies");
  prof.layers[0].candidates[0].latency_ms = 2.0;
  prof.layers[0].candidates[1].latency_ms = 0.5;
  prof.latency_rest_ms = 1.0;
  expect_error_naming([&] { add_latency_budget(p, prof, -1); }, "--max-latency", "> 0");
  expect_error_naming([&] { add_second_budget(p, prof, 2.0, 50); }, "--max-macs",
                      "not with --max-latency");
  add_latency_budget(p, prof, 2.0);  // 1 ms rest + 0.5: only lowrank-r2 fits
  EXPECT_DOUBLE_EQ(p.latency_budget, 1.0);
  Solution s = solve_exact(p, {});
  EXPECT_EQ(s.choice, Choice{1});
  const Plan plan = make_plan(prof, p, s, "exact", Objective::sum, 0);
  EXPECT_DOUBLE_EQ(plan.predicted_latency, 1.5);
  EXPECT_DOUBLE_EQ(plan.max_latency, 2.0);
  EXPECT_EQ(plan.latency_unit, "ms");
  Problem q = make_problem(prof, Objective::sum, 1000, "p.json");
  add_macs_budget(q, prof, 100);  // dense's 100 MACs fit
  EXPECT_EQ(solve_exact(q, {}).choice, Choice{0});
  add_macs_budget(q, prof, 99);
  EXPECT_EQ(solve_exact(q, {}).choice, Choice{1});
}

}  // namespace
}  // namespace tailor::plan

namespace tailor::plan {
namespace {

// A menu of four plans (predicted ms 30, 29, 28, 27; faster ones do more
// damage: objective 100 − predicted); `solve` takes the slowest within the
// target, as the solver's lowest objective would.
Plan menu_plan(double target) {
  Plan p;
  p.predicted_latency = 27;
  for (double t : {30.0, 29.0, 28.0})
    if (t <= target) {
      p.predicted_latency = t;
      break;
    }
  p.objective_value = 100 - p.predicted_latency;
  p.choices = {{"layer", std::to_string(p.predicted_latency), 0, 0}};
  return p;
}

// The original predicted and measured at 40 ms; a plan's measured savings
// are `gain` times its predicted ones.
std::function<std::pair<double, double>(const Plan&)> measured_with_gain(double gain) {
  return [gain](const Plan& p) {
    return std::make_pair(40.0, 40.0 - gain * (40.0 - p.predicted_latency));
  };
}

TEST(PlanLatencyCalibration, MapsTheBudgetThroughTheMeasuredSavings) {
  // Budget 26 below the predicted floor 27: round 1 plans at 27 and measures
  // 40 − 1.6·13 = 19.2; the line through (40, 40) and (27, 19.2) maps 26 to a
  // predicted 40 − 14·13/20.8 = 31.25, so round 2 takes the 30 ms plan, which
  // measures 24 (within 26·1.05); the next budget is 40 − 14·10/16 = 31.25
  // again, so it stops. Of 19.2 and 24 the 30 ms plan has the lower objective.
  const CalibratedPlan c =
      latency_calibrated_plan(26, 40, 27, menu_plan, measured_with_gain(1.6), "m", 100);
  ASSERT_EQ(c.rounds.size(), 2u);
  EXPECT_DOUBLE_EQ(c.rounds[0].target, 27);
  EXPECT_DOUBLE_EQ(c.rounds[0].on_profile_clock, 40 - 1.6 * 13);
  EXPECT_DOUBLE_EQ(c.rounds[1].target, 40 - 14.0 * 13 / (1.6 * 13));
  EXPECT_DOUBLE_EQ(c.rounds[1].on_profile_clock, 24);
  EXPECT_DOUBLE_EQ(c.plan.predicted_latency, 30);
}

TEST(PlanLatencyCalibration, StopsWhenTheFirstPlanLandsOnTheBudget) {
  const CalibratedPlan c =
      latency_calibrated_plan(28, 40, 27, menu_plan, measured_with_gain(1.0), "m", 100);
  ASSERT_EQ(c.rounds.size(), 1u);
  EXPECT_DOUBLE_EQ(c.plan.predicted_latency, 28);
}

TEST(PlanLatencyCalibration, APlanSomePercentUnderTheBudgetGivesWayToALessDamagingOne) {
  // Budget 27.5, savings measured 1.05× the predicted: the 27 ms plan
  // measures 40 − 1.05·13 = 26.35, 4.2% under. The line through (40, 40) and
  // (27, 26.35) maps 27.5 to 40 − 12.5·13/13.65 = 28.10, whose 28 ms plan
  // measures 40 − 1.05·12 = 27.4: under the budget, within 1% of it, and of
  // the lower objective (72 against 73). Before, the loop stopped at the
  // first plan, within 5% under.
  const CalibratedPlan c =
      latency_calibrated_plan(27.5, 40, 27, menu_plan, measured_with_gain(1.05), "m", 100);
  ASSERT_EQ(c.rounds.size(), 2u);
  EXPECT_DOUBLE_EQ(c.rounds[0].on_profile_clock, 40 - 1.05 * 13);
  EXPECT_DOUBLE_EQ(c.rounds[1].target, 40 - 12.5 * 13 / (1.05 * 13));
  EXPECT_DOUBLE_EQ(c.rounds[1].on_profile_clock, 40 - 1.05 * 12);
  EXPECT_DOUBLE_EQ(c.plan.predicted_latency, 28);
}

TEST(PlanLatencyCalibration, OutOfReachNamesTheFastestMeasuredPlan) {
  // Measured as predicted: the floor plan measures 27 ms, over 20·1.05; the
  // mapped budget (20) is below the floor, which was already tried.
  try {
    latency_calibrated_plan(20, 40, 27, menu_plan, measured_with_gain(1.0), "model.onnx", 1234);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("model.onnx"), std::string::npos) << what;
    EXPECT_NE(what.find("1234 bytes"), std::string::npos) << what;
    EXPECT_NE(what.find("measured 27 ms"), std::string::npos) << what;
  }
}

TEST(PlanLatencyCalibration, APlanSlowerThanTheOriginalIsFollowedByTheFastestPlan) {
  // Plans measure 15 ms over their prediction, slower than the original (40):
  // no line maps the budget. Before, the loop stopped after round 1 (the
  // byte-only optimum, 30 ms → 45) and called it the fastest plan; now round
  // 2 measures the predicted-fastest plan (27 → 42) and the error names it
  // and every round.
  const auto slower = [](const Plan& p) { return std::make_pair(40.0, p.predicted_latency + 15); };
  try {
    latency_calibrated_plan(35, 40, 27, menu_plan, slower, "model.onnx", 1234);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("the fastest plan at that byte budget measured 42 ms"), std::string::npos)
        << what;
    EXPECT_NE(what.find("predicted → measured ms: 30 → 45, 27 → 42"), std::string::npos) << what;
  }
}

TEST(PlanLatencyCalibration, StopsWhenTheBudgetDoesNotBindAndThePlanIsWithin) {
  // Budget 35: the 30 ms plan (the byte-only optimum) measures 40 − 1.6·10 = 24. Before,
  // the loop mapped 35 to 36.9 and measured the same plan three more times.
  int measured = 0;
  const auto measure = [&](const Plan& p) {
    ++measured;
    return measured_with_gain(1.6)(p);
  };
  const CalibratedPlan c = latency_calibrated_plan(35, 40, 27, menu_plan, measure, "m", 100);
  EXPECT_EQ(measured, 1);
  ASSERT_EQ(c.rounds.size(), 1u);
  EXPECT_DOUBLE_EQ(c.plan.predicted_latency, 30);
}

TEST(PlanLatencyCalibration, SlackInThePlanIsNotABudgetThatDoesNotBind) {
  // Budget 29.5: the 29 ms plan (predicted 0.5 under, but not the byte-only
  // optimum, the 30 ms plan) measures 40 − 1.6·11 = 22.4, far under; the
  // next budget 40 − 10.5·11/17.6 = 33.44 gives the 30 ms plan, measured 24:
  // within, and the lower objective.
  const CalibratedPlan c =
      latency_calibrated_plan(29.5, 40, 27, menu_plan, measured_with_gain(1.6), "m", 100);
  ASSERT_EQ(c.rounds.size(), 2u);
  EXPECT_DOUBLE_EQ(c.rounds[0].predicted, 29);
  EXPECT_DOUBLE_EQ(c.rounds[1].target, 40 - 10.5 * 11 / (1.6 * 11));
  EXPECT_DOUBLE_EQ(c.plan.predicted_latency, 30);
}

// Each plan measures 1 ms over its prediction.
std::pair<double, double> measured_plus_one(const Plan& p) {
  return {40.0, p.predicted_latency + 1};
}

TEST(PlanLatencyCalibration, PrefersAPlanWithinTheBudgetToOneWithinFivePercentOver) {
  // Budget 28: the 28 ms plan measures 29 (within 28·1.05, but over), so round
  // 2 maps 28 to 40 − 12·12/11 < 27, i.e. the floor 27, whose plan measures
  // 28. Chosen: the 27 ms plan, though the 28 ms one has the lower objective.
  const CalibratedPlan c =
      latency_calibrated_plan(28, 40, 27, menu_plan, measured_plus_one, "m", 100);
  ASSERT_EQ(c.rounds.size(), 2u);
  EXPECT_DOUBLE_EQ(c.rounds[0].on_profile_clock, 29);
  EXPECT_DOUBLE_EQ(c.rounds[1].target, 27);
  EXPECT_DOUBLE_EQ(c.plan.predicted_latency, 27);
}

TEST(PlanLatencyCalibration, ARepeatedPlanIsNotMeasuredAgain) {
  // Budget 27.5: the 27 ms plan measures 28 (over 27.5), and the mapped
  // budget (the floor 27) gives the same plan: one measurement. 28 is within
  // 27.5·1.05, so that plan is taken.
  int measured = 0;
  const auto measure = [&](const Plan& p) {
    ++measured;
    return measured_plus_one(p);
  };
  const CalibratedPlan c = latency_calibrated_plan(27.5, 40, 27, menu_plan, measure, "m", 100);
  EXPECT_EQ(measured, 1);
  ASSERT_EQ(c.rounds.size(), 1u);
  EXPECT_DOUBLE_EQ(c.plan.predicted_latency, 27);
}

}  // namespace
}  // namespace tailor::plan
