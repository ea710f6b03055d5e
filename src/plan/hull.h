// Per-layer frontiers and the Lagrangian sweep shared by the exact and greedy
// solvers: the Pareto set and the lower convex hull of each layer's
// (bytes, cost) points, the LP relaxation of the multiple-choice knapsack
// (Sinha & Zoltners, 1979) and the greedy integer plan it leads to.
#pragma once

#include <chrono>
#include <cstdint>
#include <vector>

#include "tailor/plan/problem.h"

namespace tailor::plan {

/// One layer's undominated options.
struct LayerFrontier {
  /// Option indices no other option beats on both bytes and cost: bytes
  /// strictly increasing, cost strictly decreasing (ties keep the lowest index).
  std::vector<int> pareto;
  /// The subset of `pareto` on the lower convex hull (slopes strictly
  /// increasing), from the fewest bytes to the lowest cost.
  std::vector<int> hull;
};

/// Frontiers of every layer, computed on `threads` workers.
std::vector<LayerFrontier> build_frontiers(const Problem& problem, int threads);

/// Result of sweeping hull segments in order of cost saved per byte.
struct Sweep {
  /// Greedy plan: every layer starts at its fewest-bytes option and takes hull
  /// upgrades in order of efficiency while they fit (never over budget).
  Choice greedy;
  /// Lagrange multiplier of the LP optimum: the cost saved per byte of the
  /// first upgrade that did not fit (0 when every upgrade fits).
  double lambda = 0;
  /// True when some upgrade did not fit (the budget binds).
  bool binding = false;
  /// Hull segments looked at.
  int64_t segments = 0;
};

/// Sweeps the hulls. Requires a feasible problem (check_feasible).
Sweep sweep_hulls(const Problem& problem, const std::vector<LayerFrontier>& frontiers);

/// The Lagrangian dual value L(λ) = Σ_i min_j (c_ij + λ·w_ij) − λ·budget: a
/// lower bound on the optimum for any λ ≥ 0, equal to the LP relaxation's
/// value at the sweep's λ. Also returns each layer's minimum in `minima`.
double lagrangian_bound(const Problem& problem, double lambda, std::vector<double>* minima);

/// The Solution a heuristic returns for `choice`: its objective and bytes, the
/// Lagrangian bound at `lambda` (NaN when the problem has pairwise terms),
/// `nodes`, and the wall-clock seconds since `start`.
Solution heuristic_solution(const Problem& problem, Choice choice, double lambda, int64_t nodes,
                            std::chrono::steady_clock::time_point start);

}  // namespace tailor::plan
