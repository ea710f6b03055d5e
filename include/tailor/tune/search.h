// Search over a DecisionSpace: the gradient method (DESIGN.md, "Differentiable
// compilation") and the baselines it is compared with under the same number
// of measurements (default, random search, greedy coordinate descent,
// exhaustive enumeration of small spaces).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "tailor/tune/cost_model.h"
#include "tailor/tune/space.h"

namespace tailor::tune {

/// Measures a configuration: its latency in milliseconds, or nullopt when the
/// candidate failed its check (it is then never timed; it still counts as one
/// of the method's measurements).
using Oracle = std::function<std::optional<double>(const Configuration&)>;
/// The check error of a configuration (HarnessOptions::error's metric over
/// the tolerance's scale; +inf when a pass or kernel fails), never timed: a
/// configuration measured before is looked up, not run again.
using CheckFn = std::function<double(const Configuration&)>;

/// What the gradient method screens approximate choices with: the check and
/// the tolerance a configuration's check error must not exceed.
struct ErrorScreen {
  CheckFn check;
  double tolerance = 0;
};

/// The cost model's terms for a configuration (graph_features of the graph it
/// produces).
using FeatureFn = std::function<std::vector<double>(const Configuration&)>;

/// One configuration a method evaluated, in order.
struct Evaluation {
  Configuration config;
  std::optional<double> latency_ms;
};

/// The evaluations of one method and its best (lowest latency) configuration.
struct SearchResult {
  std::string method;
  std::vector<Evaluation> evaluations;
  /// Index into evaluations of the best checked configuration; -1 when none passed.
  int best = -1;
};

/// Index of the lowest latency in `evals` (first on ties), -1 when none.
int best_index(const std::vector<Evaluation>& evals);

/// The default configuration, measured once.
SearchResult search_default(const DecisionSpace& space, const Oracle& oracle);
/// The default first, then budget − 1 configurations drawn uniformly (Rng(seed)).
SearchResult search_random(const DecisionSpace& space, const Oracle& oracle, int budget,
                           uint64_t seed);
/// Greedy coordinate descent from the default: decisions in order (cycling),
/// each alternative choice measured, kept when faster than the best so far.
SearchResult search_greedy(const DecisionSpace& space, const Oracle& oracle, int budget);
/// Every configuration (space.points() ≤ 512, else Error).
SearchResult search_exhaustive(const DecisionSpace& space, const Oracle& oracle);

/// Settings of the gradient method.
struct GradientOptions {
  /// Adam steps on the logits per measurement.
  int inner_steps = 25;
  double logit_lr = 0.3;
  /// Adam steps refitting the cost model after each measurement.
  int fit_iterations = 300;
  double fit_lr = 0.05;
  /// Gumbel-softmax temperature for the pass decisions (not additive in the model).
  double tau = 1.0;
  /// Initial logit of each decision's default choice (others 0).
  double prior = 1.0;
  /// Weight of the pull of each refit towards the initial coefficients
  /// (CostModel::fit's anchor_weight; 0: none), so a warm start learned on
  /// other graphs is not overwritten by the first one or two measurements.
  double anchor = 0.0;
  /// Screen the approximate choices (every non-default choice of a
  /// "kernel_variant" or "fold_scales" decision) before searching, when search_gradient is
  /// given an ErrorScreen: see search_gradient. Records made before the
  /// screen read false, so they replay as they were made.
  bool screen = true;
};

/// The gradient method: measure the default; then, per step, refit the cost
/// model on every measurement so far, compute each decision's one-choice
/// variants' model costs table_dc around the current best configuration, take
/// decision::Adam steps on the logits (one decision::Space categorical per
/// decision) along the gradient of the expected cost Σ_d Σ_c p_dc·table_dc,
/// p_d = softmax(logits_d) — exact (decision::softmax_backward) for fusion,
/// conv-block and thread decisions, where the model is additive; the
/// Gumbel-softmax straight-through estimate (decision::straight_through) for
/// passes — and measure the argmax configuration — or, when that one was
/// measured already, a Gumbel-max sample of the distribution (seeded). A
/// candidate that fails its check (an approximate choice such as a W8A8
/// kernel variant passes the tolerance on some layers, not on all at once)
/// is bisected, as in adaptive group testing: its changes are tried on the
/// center in seeded halves, a half that passes becomes the base the next
/// half is tried on, a half that fails is split again down to single
/// changes (a half measured before is looked up, not measured again). Each
/// failure pushes its changed choices' logits down by 2; the changes kept
/// get that back. While no configuration has passed its check
/// (a default the check rejects), it measures uniform draws. `model` is
/// refitted in place (its initial θ warm-starts the first fit).
///
/// With `screen` (and options.screen, and a budget past the default), once
/// the default has passed its check, every approximate choice (W8A8 kernel
/// variants, the rounded scale fold) is checked alone on the default (one
/// untimed run each; not counted in `budget`): δ = its check error less the
/// default's e₀. A choice whose error alone exceeds the tolerance is struck
/// (its logit held at −1e9, never proposed). Errors are predicted
/// additively from a configuration checked before: ê(c) = e(from) +
/// κ·(Σ δ(c) − Σ δ(from)), Σ δ over the approximate choices (the detector's
/// 48 W8A8 convs: Σ δ 0.0229, all at once 0.023), κ starting at 1 and raised
/// to the largest ratio (e − e₀)/Σ δ any of the method's measurements showed.
/// A move predicted past the tolerance from the center drops the
/// approximate changes of least predicted gain per unit of δ (the model's
/// one-choice cost table against the center) until it fits: a greedy
/// knapsack, as in the planner, of latency against output error. A part of
/// a bisected move predicted past it from the base is not measured; it
/// counts as failed and is split.
SearchResult search_gradient(const DecisionSpace& space, const Oracle& oracle,
                             const FeatureFn& features, int budget, uint64_t seed, CostModel& model,
                             const GradientOptions& options = {},
                             const ErrorScreen* screen = nullptr);

}  // namespace tailor::tune
