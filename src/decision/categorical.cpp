// Decision spaces, softmax, Gumbel-softmax and the straight-through estimator.
#include "tailor/decision/categorical.h"

#include <algorithm>
#include <cmath>

#include "tailor/core/error.h"

namespace tailor::decision {

Space::Space(std::vector<Categorical> decisions) {
  for (Categorical& d : decisions) add(std::move(d.name), d.choices);
}

void Space::add(std::string name, size_t choices) {
  if (choices == 0) throw Error("decision space", "decision \"" + name + "\" has no choice");
  offsets_.push_back(offsets_.back() + choices);
  decisions_.push_back({std::move(name), choices});
}

std::vector<double> Space::logits(double value) const {
  return std::vector<double>(logit_count(), value);
}

void Space::check_length(size_t n) const {
  if (n != logit_count())
    throw Error("decision space", "expected " + std::to_string(logit_count()) +
                                      " entries (one per choice), got " + std::to_string(n));
}

std::span<double> Space::slice(std::span<double> flat, size_t d) const {
  check_length(flat.size());
  return flat.subspan(offset(d), choices(d));
}

std::span<const double> Space::slice(std::span<const double> flat, size_t d) const {
  check_length(flat.size());
  return flat.subspan(offset(d), choices(d));
}

std::vector<int> Space::argmax(std::span<const double> logits) const {
  std::vector<int> out(size());
  for (size_t d = 0; d < size(); ++d) out[d] = static_cast<int>(decision::argmax(slice(logits, d)));
  return out;
}

size_t argmax(std::span<const double> v) {
  if (v.empty()) throw Error("argmax", "empty vector");
  return static_cast<size_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

void softmax(std::span<const double> z, std::span<double> p) {
  if (z.empty() || z.size() != p.size())
    throw Error("softmax", "expected equal non-empty lengths, got " + std::to_string(z.size()) +
                               " and " + std::to_string(p.size()));
  const size_t k = z.size();
  double m = z[0];
  for (size_t j = 1; j < k; ++j) m = std::max(m, z[j]);
  double total = 0;
  for (size_t j = 0; j < k; ++j) total += p[j] = std::exp(z[j] - m);
  for (size_t j = 0; j < k; ++j) p[j] /= total;
}

std::vector<double> softmax(std::span<const double> z) {
  std::vector<double> p(z.size());
  softmax(z, p);
  return p;
}

double expectation(std::span<const double> p, std::span<const double> a) {
  if (p.size() != a.size()) throw Error("expectation", "probabilities and values differ in length");
  double e = 0;
  for (size_t j = 0; j < p.size(); ++j) e += p[j] * a[j];
  return e;
}

double softmax_backward(std::span<const double> p, std::span<const double> a,
                        std::span<double> grad) {
  if (grad.size() != p.size()) throw Error("softmax_backward", "gradient has the wrong length");
  const double e = expectation(p, a);
  for (size_t j = 0; j < p.size(); ++j) grad[j] = p[j] * (a[j] - e);
  return e;
}

GumbelSample gumbel_softmax(std::span<const double> logits, double temperature, Rng& rng) {
  if (!(temperature > 0)) throw Error("gumbel_softmax", "temperature must be > 0");
  if (logits.empty()) throw Error("gumbel_softmax", "no choice");
  std::vector<double> z(logits.size());
  for (size_t j = 0; j < z.size(); ++j) z[j] = (logits[j] + rng.gumbel()) / temperature;
  GumbelSample s;
  s.hard = argmax(z);
  s.soft = softmax(z);
  return s;
}

double straight_through(const GumbelSample& sample, std::span<const double> a, double temperature,
                        std::span<double> grad) {
  if (!(temperature > 0)) throw Error("straight_through", "temperature must be > 0");
  if (a.size() != sample.soft.size() || grad.size() != a.size())
    throw Error("straight_through", "values, sample and gradient differ in length");
  softmax_backward(sample.soft, a, grad);
  for (double& g : grad) g /= temperature;
  return a[sample.hard];
}

}  // namespace tailor::decision
