// Cross-entropy search over per-layer choices.
#pragma once

#include "tailor/plan/problem.h"

namespace tailor::plan {

/// Settings of solve_cem.
struct CemOptions {
  /// Plans sampled per iteration.
  int samples = 128;
  /// Fraction of each population (incumbent included) refitted to.
  double elite_fraction = 0.1;
  /// Iterations (fewer when SolveOptions::time_limit_s runs out).
  int iterations = 40;
  /// Weight of the refit against the previous distribution (1: replace it).
  double rate = 0.7;
  /// Laplace pseudo-count per layer, spread evenly over its options, so no
  /// option's probability reaches zero.
  double laplace = 1.0;
};

/// The cross-entropy method (Rubinstein, 1999) as the rlx-opscope allocator
/// runs it: a factorized categorical distribution, one per layer, warm-started
/// as if every elite plan were the greedy plan (greedy.h); each iteration samples
/// plans, repairs each to the budget (downgrades, then upgrades that fit),
/// keeps the best fraction together with the incumbent, and refits every
/// layer's categorical to the elite counts with Laplace smoothing. The best
/// plan ever seen is kept and returned, so the result is never worse than the
/// greedy plan. Sampling runs on SolveOptions::threads workers with one random
/// stream per plan, so the result depends on the seed only. Accepts pairwise
/// terms (then the warm start ignores them and lower_bound is NaN). nodes
/// counts plans sampled. Throws Error for an infeasible budget.
Solution solve_cem(const Problem& problem, const SolveOptions& options, const CemOptions& cem = {});

}  // namespace tailor::plan
