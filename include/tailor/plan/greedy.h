// Greedy Lagrangian allocation: the LP relaxation's sweep, kept integer.
#pragma once

#include "tailor/plan/problem.h"

namespace tailor::plan {

/// Every layer starts at its fewest-bytes option; upgrades along each layer's
/// lower convex hull of (bytes, cost) are taken in order of cost saved per
/// byte while they fit, skipping those that do not (the greedy of Sinha &
/// Zoltners, 1979, for the multiple-choice knapsack). Never over budget.
/// lower_bound is the LP/Lagrangian bound; nodes counts hull segments looked
/// at. Throws Error for an infeasible budget (naming the smallest reachable
/// one) or a problem with pairwise terms.
Solution solve_greedy(const Problem& problem, const SolveOptions& options);

}  // namespace tailor::plan
