// DADO on an objective with pairwise terms between adjacent layers (a chain,
// the junction tree DADO factorizes over) against dynamic programming.
#include "tailor/plan/dado.h"

#include <gtest/gtest.h>

#include <limits>

#include "random_problems.h"

namespace tailor::plan {
namespace {

/// Optimum of a chain objective under the budget by dynamic programming over
/// (layer, its option, bytes used); bytes must be small integers.
double chain_dp(const Problem& p) {
  const double inf = std::numeric_limits<double>::infinity();
  const size_t n = p.layers.size();
  const int64_t cap = p.budget;
  // best[x][b]: least cost of layers 0..i with layer i at option x using b bytes.
  std::vector<std::vector<double>> best(p.layers[0].size(), std::vector<double>(cap + 1, inf));
  for (size_t x = 0; x < p.layers[0].size(); ++x)
    if (p.layers[0][x].bytes <= cap) best[x][p.layers[0][x].bytes] = p.layers[0][x].cost;
  for (size_t i = 1; i < n; ++i) {
    const size_t k = p.layers[i].size();
    std::vector<std::vector<double>> next(k, std::vector<double>(cap + 1, inf));
    for (size_t a = 0; a < best.size(); ++a)
      for (int64_t b = 0; b <= cap; ++b) {
        if (best[a][b] == inf) continue;
        for (size_t x = 0; x < k; ++x) {
          const int64_t used = b + p.layers[i][x].bytes;
          if (used > cap) continue;
          const double v = best[a][b] + p.layers[i][x].cost + p.pairwise[i - 1][a * k + x];
          next[x][used] = std::min(next[x][used], v);
        }
      }
    best.swap(next);
  }
  double opt = inf;
  for (const auto& row : best)
    for (double v : row) opt = std::min(opt, v);
  return opt;
}

TEST(PlanDado, MatchesChainDynamicProgramming) {
  Rng rng(31);
  for (int t = 0; t < 30; ++t) {
    const int layers = 2 + static_cast<int>(rng.below(7));
    const int options = 2 + static_cast<int>(rng.below(4));
    Problem p = fixtures::random_problem(rng, layers, options, -1, 10);
    fixtures::add_chain_terms(rng, p, rng.uniform(0.2, 2.0));
    SCOPED_TRACE("instance " + std::to_string(t));
    const double opt = chain_dp(p);
    ASSERT_NEAR(opt, fixtures::brute_force(p), 1e-12);  // the oracle itself
    SolveOptions o;
    o.seed = static_cast<uint64_t>(t);
    const Solution s = solve_dado(p, o);
    EXPECT_LE(s.bytes, p.budget);
    EXPECT_NEAR(s.objective, opt, fixtures::tol(opt));
  }
}

TEST(PlanDado, MatchesTheOptimumWithoutPairwiseTerms) {
  Rng rng(32);
  for (int t = 0; t < 20; ++t) {
    const Problem p = fixtures::random_problem(rng, 2 + static_cast<int>(rng.below(7)), 4, -1, 10);
    SCOPED_TRACE("instance " + std::to_string(t));
    const double opt = fixtures::brute_force(p);
    EXPECT_NEAR(solve_dado(p, {}).objective, opt, fixtures::tol(opt));
  }
}

}  // namespace
}  // namespace tailor::plan
