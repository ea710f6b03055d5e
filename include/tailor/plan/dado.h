// DADO: decomposition-aware distributional optimization over per-layer choices.
#pragma once

#include "tailor/plan/problem.h"

namespace tailor::plan {

/// Settings of solve_dado.
struct DadoOptions {
  /// Plans sampled per epoch.
  int samples = 200;
  /// Epochs (fewer when SolveOptions::time_limit_s runs out).
  int epochs = 60;
  /// Inverse temperature of the value weights exp(beta·z), z the value
  /// standardized over the epoch's samples, per factor.
  double beta = 3.0;
  /// Weight of each factor's refit against its previous table (1: replace it).
  double rate = 0.5;
  /// Laplace pseudo-count per table row, spread evenly over its options.
  double laplace = 1.0;
  /// Step of the dual ascent on the budget's multiplier, per unit of relative
  /// budget excess of the samples' mean bytes.
  double dual_step = 1.0;
};

/// DADO (Bowden, Levine & Listgarten, "Leveraging Discrete Function
/// Decomposability for Scientific Design", ICLR 2026, arXiv 2511.03032) on the
/// Lagrangian f(x) = −(objective(x) + λ·bytes(x)), which keeps the objective's
/// decomposition: the search distribution is factorized over the junction tree
/// of f. Without pairwise terms every layer is its own factor, p(x) = Π p_i(x_i);
/// with pairwise terms between adjacent layers the tree is the chain rooted at
/// layer 0, p(x) = p_0(x_0)·Π p_i(x_i | x_{i−1}). Each epoch samples plans,
/// computes value functions from the leaves to the root on those samples
/// (V_i(x_i) = f_i(x_i) + mean over samples with that x_i of Q_{i+1}, with
/// Q_{i+1}(x_i, x_{i+1}) = f_{i,i+1}(x_i, x_{i+1}) + V_{i+1}(x_{i+1})), weights
/// each factor's sample by exp(beta·standardized Q), and refits each tabular
/// factor to its weighted samples by maximum likelihood (Laplace smoothed,
/// blended with `rate`). λ starts at the LP relaxation's multiplier of the
/// additive part and follows dual ascent on the samples' mean bytes. The best
/// feasible plan seen (samples, and each epoch's most probable plan repaired
/// to the budget) is returned, starting from the greedy plan. Sampling runs on
/// SolveOptions::threads workers with one random stream per plan, so the result
/// depends on the seed only. lower_bound is the LP bound (NaN with pairwise
/// terms); nodes counts plans sampled. Throws Error for an infeasible budget.
Solution solve_dado(const Problem& problem, const SolveOptions& options,
                    const DadoOptions& dado = {});

}  // namespace tailor::plan
