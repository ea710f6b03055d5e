// Proven-optimal allocation: the multiple-choice knapsack solved exactly.
#pragma once

#include "tailor/plan/problem.h"

namespace tailor::plan {

/// Solves the multiple-choice knapsack to proven optimality (up to a relative
/// 1e-12 on the objective):
/// 1. per layer, the Pareto set and the lower convex hull of (bytes, cost);
/// 2. the LP relaxation by the hull sweep (Sinha & Zoltners, 1979), whose
///    multiplier λ gives the Lagrangian lower bound L(λ) and the greedy plan
///    an upper bound;
/// 3. reduced-cost fixing: an option whose reduced cost c + λ·w − min_k(c_k +
///    λ·w_k) exceeds the gap (upper − lower bound) cannot be in a better plan,
///    so most layers keep a single option and only a small core stays free;
/// 4. dynamic programming over the core (after Pisinger, 1995, "A minimal
///    algorithm for the multiple-choice knapsack problem"): stage by stage,
///    layers whose surviving options span the most bytes first, lists of
///    undominated partial plans (bytes, cost), each pruned when its lower
///    bound — the best of the Lagrangian bounds of the open layers at a fan
///    of multipliers around λ, minus the multiplier times the bytes left —
///    reaches the upper bound; partial plans completed with the incumbent's
///    choices improve the upper bound. A first pass keeps only the 512 best
///    partial plans per stage (a beam) to find a near-optimal plan fast; the
///    fixing is redone with its tighter bound and the second pass is exact.
/// Returns the optimum with lower_bound equal to it and proven_optimal set.
/// With options.time_limit_s > 0 and the time spent, or when the open partial
/// plans would pass 2^23 (about 270 MB; only adversarial, subset-sum-like
/// problems come near), returns the best plan found with a certified lower
/// bound (the least bound of the partial plans still open, or the LP bound
/// during the beam pass). nodes counts the partial plans kept (0 when the LP
/// bound alone closes the gap). Throws Error for an infeasible budget (naming
/// the smallest reachable one) or pairwise terms.
/// A problem with a second budget (has_latency) goes to solve_two_budgets.
Solution solve_exact(const Problem& problem, const SolveOptions& options);

}  // namespace tailor::plan
