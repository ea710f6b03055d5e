#include "tailor/plan/exact.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "random_problems.h"
#include "tailor/core/error.h"
#include "tailor/plan/greedy.h"
#include "test_util.h"

namespace tailor::plan {
namespace {

using fixtures::brute_force;
using fixtures::random_problem;
using fixtures::tol;
using tailor::testing::expect_error_naming;

void expect_valid(const Problem& p, const Solution& s) {
  ASSERT_EQ(s.choice.size(), p.layers.size());
  EXPECT_LE(choice_bytes(p, s.choice), p.budget);
  EXPECT_EQ(s.bytes, choice_bytes(p, s.choice));
  EXPECT_DOUBLE_EQ(s.objective, evaluate(p, s.choice));
  EXPECT_LE(s.lower_bound, s.objective + tol(s.objective));
}

TEST(PlanExact, EqualsBruteForceOnSmallRandomProblems) {
  Rng rng(11);
  for (int t = 0; t < 400; ++t) {
    const int layers = 1 + static_cast<int>(rng.below(8));
    const int options = 1 + static_cast<int>(rng.below(6));
    // Mostly loose-to-tight budgets, some at the extremes, some byte scales huge.
    const double tightness = t % 10 == 0 ? 0.0 : t % 10 == 1 ? 1.0 : -1;
    const int64_t max_bytes = t % 7 == 0 ? int64_t{1} << 40 : t % 5 == 0 ? 4 : 1000;
    const Problem p = random_problem(rng, layers, options, tightness, max_bytes);
    const Solution s = solve_exact(p, {});
    SCOPED_TRACE("instance " + std::to_string(t));
    expect_valid(p, s);
    const double opt = brute_force(p);
    EXPECT_NEAR(s.objective, opt, tol(opt));
    EXPECT_TRUE(s.proven_optimal);
    EXPECT_DOUBLE_EQ(s.lower_bound, s.objective);
  }
}

TEST(PlanExact, EqualsBruteForceWithTiesAndDuplicates) {
  Rng rng(12);
  for (int t = 0; t < 200; ++t) {
    Problem p = random_problem(rng, 1 + static_cast<int>(rng.below(7)), 4, -1, 6);
    for (auto& opts : p.layers) {
      for (Option& o : opts) o.cost = static_cast<double>(rng.below(4)) * 0.25;
      opts.push_back(opts.front());  // an exact duplicate
    }
    const Solution s = solve_exact(p, {});
    SCOPED_TRACE("instance " + std::to_string(t));
    expect_valid(p, s);
    EXPECT_NEAR(s.objective, brute_force(p), 1e-12);
  }
}

TEST(PlanExact, NoLayersAndLooseBudgets) {
  Problem empty;
  empty.budget = 0;
  const Solution s0 = solve_exact(empty, {});
  EXPECT_TRUE(s0.choice.empty());
  EXPECT_EQ(s0.objective, 0);
  EXPECT_TRUE(s0.proven_optimal);

  Rng rng(13);
  Problem loose = random_problem(rng, 10, 5, 1.0);
  const Solution s = solve_exact(loose, {});
  double best = 0;
  for (const auto& opts : loose.layers) {
    double m = opts[0].cost;
    for (const Option& o : opts) m = std::min(m, o.cost);
    best += m;
  }
  EXPECT_NEAR(s.objective, best, 1e-12);
  EXPECT_TRUE(s.proven_optimal);
}

TEST(PlanExact, InfeasibleBudgetNamesSmallestReachableBudget) {
  Problem p;
  p.source = "tiny.json";
  p.layers = {{{100, 0.0}, {40, 0.5}}, {{300, 0.0}, {60, 0.2}}};
  p.fixed_bytes = 1000;
  p.budget = 99;  // total budget 1,099; reachable 1,000 + 40 + 60 = 1,100
  for (auto* solver : {&solve_exact, &solve_greedy})
    expect_error_naming([&] { solver(p, {}); }, "tiny.json", "1,100 bytes");
  p.budget = 100;
  EXPECT_EQ(solve_exact(p, {}).bytes, 100);
}

TEST(PlanExact, RefusesPairwiseTerms) {
  Rng rng(14);
  Problem p = random_problem(rng, 3, 3);
  fixtures::add_chain_terms(rng, p, 1.0);
  expect_error_naming([&] { solve_exact(p, {}); }, "random.json", "pairwise");
}

TEST(PlanExact, SamePlanOnOneAndTwoThreads) {
  Rng rng(15);
  for (int t = 0; t < 5; ++t) {
    const Problem p = random_problem(rng, 300, 12);
    SolveOptions one, two;
    one.threads = 1;
    two.threads = 2;
    EXPECT_EQ(solve_exact(p, one).choice, solve_exact(p, two).choice);
  }
}

TEST(PlanExact, TimeLimitReturnsAFeasiblePlanAndACertifiedBound) {
  Rng rng(16);
  const Problem p = random_problem(rng, 400, 16, 0.3, 1000000);
  const Solution full = solve_exact(p, {});
  ASSERT_TRUE(full.proven_optimal);
  SolveOptions limited;
  limited.time_limit_s = 1e-9;
  const Solution s = solve_exact(p, limited);
  expect_valid(p, s);
  EXPECT_LE(s.lower_bound, full.objective + tol(full.objective));
  EXPECT_GE(s.objective, full.objective - tol(full.objective));
  if (!s.proven_optimal) {
    EXPECT_GT(s.objective - s.lower_bound, 0);
  }
}

TEST(PlanExact, TimeLimitOnASubsetSumLikeProblemCertifiesItsGap) {
  // Costs almost on one line through every option: the LP is nearly
  // degenerate and the search turns into subset sum, which a time limit cuts.
  Rng rng(18);
  Problem p = random_problem(rng, 2000, 16, 0.5, 1000000);
  for (auto& opts : p.layers)
    for (Option& o : opts) o.cost = 1 - static_cast<double>(o.bytes) * 1e-6 + rng.uniform(0, 1e-9);
  SolveOptions limited;
  limited.time_limit_s = 0.3;
  const Solution s = solve_exact(p, limited);
  expect_valid(p, s);
  EXPECT_FALSE(s.proven_optimal);
  EXPECT_GE(s.lower_bound, solve_greedy(p, {}).lower_bound - tol(s.objective));
  EXPECT_LT(s.seconds, 3.0);
}

// ---- An independent oracle: the same problem as a 0-1 program for CBC. ----

std::string cbc_binary() {
  for (const char* p : {"/usr/bin/cbc", "/usr/local/bin/cbc"})
    if (std::ifstream(p).good()) return p;
  return "";
}

/// Solves `p` with CBC; returns the plan CBC reports.
Choice solve_with_cbc(const Problem& p, const std::string& dir, int t) {
  const std::string lp = dir + "/mckp" + std::to_string(t) + ".lp";
  const std::string sol = dir + "/mckp" + std::to_string(t) + ".sol";
  {
    std::ofstream out(lp);
    out.precision(17);
    out << "Minimize\n obj:";
    for (size_t i = 0; i < p.layers.size(); ++i)
      for (size_t j = 0; j < p.layers[i].size(); ++j)
        out << " + " << p.layers[i][j].cost << " x_" << i << "_" << j;
    out << "\nSubject To\n";
    for (size_t i = 0; i < p.layers.size(); ++i) {
      out << " one_" << i << ":";
      for (size_t j = 0; j < p.layers[i].size(); ++j) out << " + x_" << i << "_" << j;
      out << " = 1\n";
    }
    out << " budget:";
    for (size_t i = 0; i < p.layers.size(); ++i)
      for (size_t j = 0; j < p.layers[i].size(); ++j)
        out << " + " << p.layers[i][j].bytes << " x_" << i << "_" << j;
    out << " <= " << p.budget << "\nBinary\n";
    for (size_t i = 0; i < p.layers.size(); ++i)
      for (size_t j = 0; j < p.layers[i].size(); ++j) out << " x_" << i << "_" << j << "\n";
    out << "End\n";
  }
  const std::string cmd = cbc_binary() + " " + lp +
                          " ratioGap 0 allowableGap 0 integerTolerance 1e-9 solve solution " + sol +
                          " > /dev/null 2>&1";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::ifstream in(sol);
  std::string status;
  std::getline(in, status);
  EXPECT_EQ(status.rfind("Optimal", 0), 0u) << status;
  Choice c(p.layers.size(), -1);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    int index;
    std::string name;
    double value;
    if (!(ls >> index >> name >> value) || value < 0.5) continue;
    size_t i, j;
    if (std::sscanf(name.c_str(), "x_%zu_%zu", &i, &j) == 2) c[i] = static_cast<int>(j);
  }
  return c;
}

TEST(PlanExact, EqualsCbcOnFiftyRandomProblems) {
  if (cbc_binary().empty())
    GTEST_SKIP() << "cbc not installed (apt-get install coinor-cbc; scripts/install-deps.sh "
                    "does): the independent ILP oracle is skipped";
  tailor::testing::TempDir dir;
  Rng rng(17);
  for (int t = 0; t < 50; ++t) {
    const Problem p = random_problem(rng, 40, 12, -1, 100000);
    SCOPED_TRACE("instance " + std::to_string(t));
    const Solution s = solve_exact(p, {});
    expect_valid(p, s);
    const Choice cbc = solve_with_cbc(p, dir.path().string(), t);
    ASSERT_LE(choice_bytes(p, cbc), p.budget);
    const double cbc_value = evaluate(p, cbc);
    EXPECT_NEAR(s.objective, cbc_value, 1e-9 * std::max(1.0, cbc_value));
    EXPECT_LE(s.objective, cbc_value + tol(cbc_value));
  }
}

}  // namespace
}  // namespace tailor::plan
