// The search heuristics against the exact solver: always feasible, never
// better than the optimum, deterministic for a seed whatever the thread count.
#include <gtest/gtest.h>

#include <functional>

#include "random_problems.h"
#include "tailor/core/error.h"
#include "tailor/plan/cem.h"
#include "tailor/plan/dado.h"
#include "tailor/plan/exact.h"
#include "tailor/plan/greedy.h"
#include "tailor/plan/gumbel.h"
#include "test_util.h"

namespace tailor::plan {
namespace {

using fixtures::tol;
using Solver = std::function<Solution(const Problem&, const SolveOptions&)>;

std::vector<std::pair<std::string, Solver>> heuristics() {
  GumbelOptions sampled;
  sampled.mode = GumbelOptions::Mode::sampled;
  return {{"greedy", [](const Problem& p, const SolveOptions& o) { return solve_greedy(p, o); }},
          {"cem", [](const Problem& p, const SolveOptions& o) { return solve_cem(p, o); }},
          {"dado", [](const Problem& p, const SolveOptions& o) { return solve_dado(p, o); }},
          {"gumbel", [](const Problem& p, const SolveOptions& o) { return solve_gumbel(p, o); }},
          {"gumbel-sampled", [sampled](const Problem& p, const SolveOptions& o) {
             return solve_gumbel(p, o, sampled);
           }}};
}

void check_against_exact(const Problem& p, const std::string& what) {
  const Solution exact = solve_exact(p, {});
  ASSERT_TRUE(exact.proven_optimal);
  for (const auto& [name, solve] : heuristics()) {
    SCOPED_TRACE(what + " " + name);
    SolveOptions o;
    o.seed = 7;
    const Solution s = solve(p, o);
    ASSERT_EQ(s.choice.size(), p.layers.size());
    EXPECT_LE(choice_bytes(p, s.choice), p.budget);
    EXPECT_EQ(s.bytes, choice_bytes(p, s.choice));
    EXPECT_DOUBLE_EQ(s.objective, evaluate(p, s.choice));
    EXPECT_GE(s.objective, exact.objective - tol(exact.objective));
    EXPECT_LE(s.lower_bound, exact.objective + tol(exact.objective));
  }
}

TEST(PlanHeuristics, NeverOverBudgetNeverBetterThanExactOnRandomProblems) {
  Rng rng(21);
  for (int t = 0; t < 30; ++t) {
    const int layers = 1 + static_cast<int>(rng.below(60));
    const int options = 1 + static_cast<int>(rng.below(12));
    const double tightness = t % 6 == 0 ? 0.0 : -1;
    check_against_exact(fixtures::random_problem(rng, layers, options, tightness),
                        "random " + std::to_string(t));
  }
}

TEST(PlanHeuristics, NeverOverBudgetNeverBetterThanExactOnSyntheticModels) {
  Rng rng(22);
  for (double bpw : {2.5, 4.5, 8.0})
    check_against_exact(fixtures::synthetic_model(rng, 120, bpw == 4.5, bpw),
                        "synthetic " + std::to_string(bpw) + " bpw");
}

TEST(PlanHeuristics, SameSeedSamePlanOnOneAndTwoThreads) {
  Rng rng(23);
  Problem chain = fixtures::random_problem(rng, 50, 6);
  fixtures::add_chain_terms(rng, chain, 0.5);
  const std::vector<std::pair<std::string, Problem>> problems = {
      {"random", fixtures::random_problem(rng, 80, 10)},
      {"synthetic", fixtures::synthetic_model(rng, 100, true)},
      {"chain", chain}};
  for (const auto& [what, p] : problems) {
    for (const auto& [name, solve] : heuristics()) {
      if (!p.additive() && name != "cem" && name != "dado") continue;
      SCOPED_TRACE(what + " " + name);
      SolveOptions one, two;
      one.seed = two.seed = 99;
      one.threads = 1;
      two.threads = 2;
      const Solution a = solve(p, one), b = solve(p, two), c = solve(p, one);
      EXPECT_EQ(a.choice, b.choice);
      EXPECT_EQ(a.choice, c.choice);
      EXPECT_EQ(a.objective, b.objective);
    }
  }
}

TEST(PlanHeuristics, InfeasibleBudgetAndEmptyProblems) {
  Problem p;
  p.source = "small.json";
  p.layers = {{{10, 0.0}, {5, 1.0}}, {{10, 0.0}, {7, 1.0}}};
  p.budget = 11;
  for (const auto& [name, solve] : heuristics()) {
    SCOPED_TRACE(name);
    tailor::testing::expect_error_naming([&, &solve = solve] { solve(p, {}); }, "small.json",
                                         "smallest reachable budget 12 bytes");
    const Solution empty = solve(Problem{}, {});
    EXPECT_TRUE(empty.choice.empty());
    EXPECT_EQ(empty.objective, 0);
  }
}

TEST(PlanHeuristics, PairwiseTermsOnlyForCemAndDado) {
  Rng rng(24);
  Problem p = fixtures::random_problem(rng, 6, 4);
  fixtures::add_chain_terms(rng, p, 1.0);
  const double opt = fixtures::brute_force(p);
  for (const auto& [name, solve] : heuristics()) {
    SCOPED_TRACE(name);
    if (name == "cem" || name == "dado") {
      const Solution s = solve(p, {});
      EXPECT_LE(s.bytes, p.budget);
      EXPECT_GE(s.objective, opt - tol(opt));
      EXPECT_TRUE(std::isnan(s.lower_bound));
    } else {
      tailor::testing::expect_error_naming([&, &solve = solve] { solve(p, {}); }, "random.json",
                                           "pairwise");
    }
  }
}

TEST(PlanHeuristics, TimeLimitStillGivesAFeasiblePlan) {
  Rng rng(25);
  const Problem p = fixtures::random_problem(rng, 200, 12);
  SolveOptions o;
  o.time_limit_s = 1e-9;
  for (const auto& [name, solve] : heuristics()) {
    SCOPED_TRACE(name);
    const Solution s = solve(p, o);
    EXPECT_LE(s.bytes, p.budget);
    EXPECT_EQ(s.choice.size(), p.layers.size());
  }
}

}  // namespace
}  // namespace tailor::plan
