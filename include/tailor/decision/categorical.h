// Categorical decisions and their relaxations, shared by the plan solvers and
// the tuner (DESIGN.md, "Differentiable compilation"): a decision space of
// named categoricals with one logit per choice, the softmax, its
// vector-Jacobian product, and Gumbel-softmax sampling with the
// straight-through estimator.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "tailor/core/rng.h"

namespace tailor::decision {

/// One categorical decision: a name and how many choices it has (≥ 1).
struct Categorical {
  std::string name;
  size_t choices = 0;
};

/// A list of categorical decisions whose logits are stored in one flat
/// vector: decision d owns the entries [offset(d), offset(d) + choices(d)),
/// one logit per choice, decisions in the order they were added.
class Space {
 public:
  Space() = default;
  /// Throws Error("decision space", ...) when a decision has no choice.
  explicit Space(std::vector<Categorical> decisions);
  /// Appends a decision with `choices` choices (≥ 1; else Error("decision space", ...)).
  void add(std::string name, size_t choices);

  /// Number of decisions.
  size_t size() const { return decisions_.size(); }
  const Categorical& operator[](size_t d) const { return decisions_.at(d); }
  const std::vector<Categorical>& decisions() const { return decisions_; }
  /// Index of decision d's first logit in the flat vector.
  size_t offset(size_t d) const { return offsets_.at(d); }
  size_t choices(size_t d) const { return decisions_.at(d).choices; }
  /// Σ_d choices(d): the length of a logit vector of this space.
  size_t logit_count() const { return offsets_.back(); }
  /// A logit vector of this space with every entry `value`.
  std::vector<double> logits(double value = 0) const;
  /// Decision d's entries of a flat vector of this space (logits, gradients,
  /// probabilities). Throws Error("decision space", ...) when `flat` has the
  /// wrong length.
  std::span<double> slice(std::span<double> flat, size_t d) const;
  std::span<const double> slice(std::span<const double> flat, size_t d) const;
  /// The most likely choice of every decision (first index on ties).
  std::vector<int> argmax(std::span<const double> logits) const;

 private:
  void check_length(size_t n) const;
  std::vector<Categorical> decisions_;
  std::vector<size_t> offsets_{0};
};

/// Index of the largest entry (the first on ties); v must not be empty.
size_t argmax(std::span<const double> v);

/// p = softmax(z): p_j = exp(z_j − max z) / Σ_k exp(z_k − max z) (shifted by
/// the maximum so no exponent overflows). z and p have the same length ≥ 1
/// (Error("softmax", ...) otherwise); p may alias z.
void softmax(std::span<const double> z, std::span<double> p);
std::vector<double> softmax(std::span<const double> z);

/// Σ_j p_j·a_j, summed in index order; p and a of the same length.
double expectation(std::span<const double> p, std::span<const double> a);

/// The vector-Jacobian product of the softmax: with p = softmax(z) and
/// E = Σ_j p_j·a_j, ∂E/∂z_k = p_k·(a_k − E), since ∂p_j/∂z_k = p_j(δ_jk − p_k)
/// (the Jacobian diag(p) − p·pᵀ is symmetric). Writes it into `grad` (same
/// length as p and a) and returns E.
double softmax_backward(std::span<const double> p, std::span<const double> a,
                        std::span<double> grad);

/// One Gumbel-softmax draw of a categorical with logits θ.
struct GumbelSample {
  /// y = softmax((θ + g)/τ), the relaxed sample (sums to 1).
  std::vector<double> soft;
  /// argmax_j (θ_j + g_j): the hard sample, distributed as softmax(θ)
  /// (the Gumbel-max trick).
  size_t hard = 0;
};

/// Draws g_j = −log(−log u_j), u_j uniform in (0, 1) (Rng::gumbel, j in
/// index order) and returns the relaxed and hard samples at temperature τ
/// (Jang, Gu & Poole, 2017, "Categorical Reparameterization with
/// Gumbel-Softmax"; Maddison, Mnih & Teh, 2017, "The Concrete
/// Distribution"). Throws Error("gumbel_softmax", ...) unless τ > 0 and θ is
/// not empty.
GumbelSample gumbel_softmax(std::span<const double> logits, double temperature, Rng& rng);

/// The straight-through estimator (Bengio, Léonard & Courville, 2013; Jang et
/// al., 2017, §2.2): the forward value is a[hard], the backward pass
/// differentiates the relaxed Σ_j y_j·a_j through y = softmax((θ + g)/τ), so
/// ∂/∂θ_k = y_k·(a_k − Σ_j y_j·a_j)/τ, written into `grad` (length of θ).
/// Returns the forward value a[hard].
double straight_through(const GumbelSample& sample, std::span<const double> a, double temperature,
                        std::span<double> grad);

}  // namespace tailor::decision
