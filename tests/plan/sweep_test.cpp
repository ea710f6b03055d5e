// The budget sweep: evenly spaced budgets by hand, each point the brute-force
// optimum of its budget.
#include "tailor/plan/sweep.h"

#include <gtest/gtest.h>

#include "random_problems.h"
#include "tailor/core/error.h"
#include "test_util.h"

namespace tailor::plan {
namespace {

TEST(PlanSweep, SpacedBudgetsByHand) {
  // 260 to 1700 in 10 points: steps of 1440/9 = 160.
  std::vector<int64_t> want;
  for (int64_t i = 0; i < 10; ++i) want.push_back(260 + 160 * i);
  EXPECT_EQ(spaced_budgets(260, 1700, 10), want);
  // 0 to 10 in 4 points: ⌊0⌋, ⌊10/3⌋ = 3, ⌊20/3⌋ = 6, then exactly 10.
  EXPECT_EQ(spaced_budgets(0, 10, 4), (std::vector<int64_t>{0, 3, 6, 10}));
  // A range narrower than the points: each budget once.
  EXPECT_EQ(spaced_budgets(5, 6, 5), (std::vector<int64_t>{5, 6}));
  EXPECT_EQ(spaced_budgets(7, 7, 3), (std::vector<int64_t>{7}));
  EXPECT_EQ(spaced_budgets(1, 9, 1), (std::vector<int64_t>{9}));
  EXPECT_THROW(spaced_budgets(0, 10, 0), Error);
  EXPECT_THROW(spaced_budgets(10, 0, 3), Error);
}

TEST(PlanSweep, EveryPointIsTheOptimumOfItsBudget) {
  Rng rng(17);
  for (int k = 0; k < 20; ++k) {
    Problem p = fixtures::random_problem(rng, 2 + k % 4, 2 + k % 3);
    p.fixed_bytes = 50 * k;
    const int64_t lo = p.fixed_bytes + min_bytes(p);
    const std::vector<int64_t> budgets = spaced_budgets(lo, lo + 2000, 6);
    const std::vector<SweepPoint> sweep = sweep_budgets(p, budgets, {});
    ASSERT_EQ(sweep.size(), budgets.size());
    for (size_t i = 0; i < sweep.size(); ++i) {
      Problem q = p;
      q.budget = budgets[i] - p.fixed_bytes;
      EXPECT_EQ(sweep[i].budget_bytes, budgets[i]);
      EXPECT_NEAR(sweep[i].objective, fixtures::brute_force(q), fixtures::tol(sweep[i].objective));
      EXPECT_LE(sweep[i].total_bytes, budgets[i]);
      EXPECT_GE(sweep[i].total_bytes, lo);
      EXPECT_TRUE(sweep[i].proven_optimal);
    }
    // The optimum never rises as the budget grows.
    for (size_t i = 1; i < sweep.size(); ++i)
      EXPECT_LE(sweep[i].objective, sweep[i - 1].objective + fixtures::tol(sweep[i].objective));
  }
}

TEST(PlanSweep, InfeasibleBudgetNamesTheSource) {
  Rng rng(3);
  Problem p = fixtures::random_problem(rng, 3, 3);
  p.fixed_bytes = 100;
  const int64_t lo = p.fixed_bytes + min_bytes(p);
  testing::expect_error_naming(
      [&] {
        sweep_budgets(p, {lo, lo - 1}, {});
      },
      "random.json", std::to_string(lo));
}

}  // namespace
}  // namespace tailor::plan
