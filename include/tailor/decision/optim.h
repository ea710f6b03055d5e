// The optimisers of the decision layer: Adam on unconstrained parameters
// (logits, cost-model coefficients) and dual ascent on the Lagrange
// multiplier of a budget constraint.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

namespace tailor::decision {

/// Settings of Adam (Kingma & Ba, 2015, "Adam: A Method for Stochastic
/// Optimization", Algorithm 1; the paper's defaults but the learning rate).
struct AdamOptions {
  /// Step size α.
  double learning_rate = 0.001;
  /// Decay of the first and second moment estimates.
  double beta1 = 0.9;
  double beta2 = 0.999;
  /// Added to √v̂ in the denominator.
  double epsilon = 1e-8;
};

/// Adam with bias correction over a fixed number of parameters. Step t
/// (counting from 1), for each parameter with gradient g:
///   m ← β1·m + (1 − β1)·g,   v ← β2·v + (1 − β2)·g²,
///   m̂ = m/(1 − β1ᵗ),         v̂ = v/(1 − β2ᵗ),
///   θ ← θ − α·m̂/(√v̂ + ε).
/// Each parameter's update uses only its own moments, so parameters may be
/// stepped together or in any order with the same result.
class Adam {
 public:
  /// `n` parameters, moments starting at 0.
  explicit Adam(size_t n = 0, const AdamOptions& options = {});
  /// One step on `params` (length n) along `grad` (length n, the gradient of
  /// the loss being minimised). Throws Error("adam", ...) on a length mismatch.
  void step(std::span<double> params, std::span<const double> grad);
  /// Steps taken so far (t of the last step).
  int steps() const { return t_; }
  size_t size() const { return m_.size(); }
  const AdamOptions& options() const { return options_; }

 private:
  AdamOptions options_;
  std::vector<double> m_, v_;
  int t_ = 0;
};

/// Projected dual ascent on the multiplier λ ≥ 0 of a constraint c(x) ≤ 0
/// (Boyd & Vandenberghe, 2004, "Convex Optimization", §5.5 / the dual
/// (sub)gradient method): after each primal step, λ ← max(0, λ + η·c(x)),
/// so λ grows while the constraint is violated and shrinks to 0 when it is
/// slack. For a budget, c(x) = used/budget − 1 (relative excess).
class DualAscent {
 public:
  /// `step` η ≥ 0 (0 keeps λ fixed), λ starting at `initial` ≥ 0; Error("dual ascent",
  /// ...) otherwise.
  explicit DualAscent(double step, double initial = 0);
  /// Applies one update with violation c(x) and returns the new λ.
  double update(double violation);
  double lambda() const { return lambda_; }

 private:
  double step_;
  double lambda_;
};

}  // namespace tailor::decision
