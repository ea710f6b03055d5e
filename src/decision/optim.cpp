// Adam (Kingma & Ba, 2015) and projected dual ascent.
#include "tailor/decision/optim.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "tailor/core/error.h"

namespace tailor::decision {

Adam::Adam(size_t n, const AdamOptions& options) : options_(options), m_(n, 0.0), v_(n, 0.0) {}

void Adam::step(std::span<double> params, std::span<const double> grad) {
  if (params.size() != m_.size() || grad.size() != m_.size())
    throw Error("adam", "expected " + std::to_string(m_.size()) +
                            " parameters and gradients, got " + std::to_string(params.size()) +
                            " and " + std::to_string(grad.size()));
  ++t_;
  const double b1 = options_.beta1, b2 = options_.beta2;
  const double c1 = 1 - std::pow(b1, t_), c2 = 1 - std::pow(b2, t_);
  for (size_t j = 0; j < params.size(); ++j) {
    const double g = grad[j];
    m_[j] = b1 * m_[j] + (1 - b1) * g;
    v_[j] = b2 * v_[j] + (1 - b2) * g * g;
    const double mh = m_[j] / c1, vh = v_[j] / c2;
    params[j] -= options_.learning_rate * mh / (std::sqrt(vh) + options_.epsilon);
  }
}

DualAscent::DualAscent(double step, double initial) : step_(step), lambda_(initial) {
  if (!(step >= 0)) throw Error("dual ascent", "step must be >= 0");
  if (!(initial >= 0)) throw Error("dual ascent", "the multiplier must start at >= 0");
}

double DualAscent::update(double violation) {
  lambda_ = std::max(0.0, lambda_ + step_ * violation);
  return lambda_;
}

}  // namespace tailor::decision
