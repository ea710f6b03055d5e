// Gradient search on a relaxation of the per-layer choices.
#pragma once

#include "tailor/plan/problem.h"

namespace tailor::plan {

/// Settings of solve_gumbel.
struct GumbelOptions {
  /// How the relaxed choice is formed.
  enum class Mode {
    /// p_i = softmax(θ_i): exact gradients of the expected objective and the
    /// expected bytes (both linear in p for an additive objective).
    expected,
    /// Gumbel-softmax with the straight-through estimator (Jang, Gu & Poole,
    /// 2017; Maddison et al., 2017; Bengio et al., 2013;
    /// decision::gumbel_softmax, decision::straight_through): the forward pass takes the hard
    /// sample
    /// argmax(θ_i + g), g = −log(−log u), u uniform in (0, 1); the backward pass
    /// differentiates softmax((θ_i + g)/temperature).
    sampled,
  };
  Mode mode = Mode::expected;
  /// Adam steps (fewer when SolveOptions::time_limit_s runs out).
  int iterations = 400;
  /// Adam learning rate on the logits (Kingma & Ba, 2015; β1 0.9, β2 0.999).
  double learning_rate = 0.1;
  /// Dual ascent step on the multiplier per unit of relative budget excess.
  double dual_step = 0.5;
  /// Gumbel-softmax temperature (sampled mode).
  double temperature = 1.0;
  /// The logits are rounded, repaired and scored every this many steps.
  int round_every = 10;
};

/// Minimises the Lagrangian E[objective] + λ·(E[bytes]/budget − 1) over
/// per-layer logits θ_i (one categorical decision per layer, one logit per
/// option, starting at 0) with decision::Adam, costs and bytes normalized per
/// layer; λ starts at 0 and follows decision::DualAscent. Every
/// `round_every` steps and at the end the logits are rounded (argmax per layer)
/// and repaired to the budget (downgrades, then upgrades that fit); the best
/// plan seen is returned. Deterministic for a seed (the sampled mode draws
/// from tailor::Rng; single-threaded). lower_bound is the LP bound; nodes
/// counts gradient steps. Throws Error for an infeasible budget or pairwise
/// terms.
Solution solve_gumbel(const Problem& problem, const SolveOptions& options,
                      const GumbelOptions& gumbel = {});

}  // namespace tailor::plan
