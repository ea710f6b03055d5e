// The gradient method and the baselines.
#include "tailor/tune/search.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "tailor/core/error.h"

namespace tailor::tune {

namespace {

std::vector<double> softmax(const std::vector<double>& z) {
  const double mx = *std::max_element(z.begin(), z.end());
  std::vector<double> p(z.size());
  double s = 0;
  for (size_t i = 0; i < z.size(); ++i) s += p[i] = std::exp(z[i] - mx);
  for (double& v : p) v /= s;
  return p;
}

int argmax(const std::vector<double>& v) {
  return static_cast<int>(std::max_element(v.begin(), v.end()) - v.begin());
}

// Records evaluations of one method, never measuring a configuration twice.
struct Recorder {
  Recorder(const Oracle& o, std::string method) : oracle(o) { result.method = std::move(method); }
  const Oracle& oracle;
  SearchResult result;
  std::set<std::string> seen;
  std::optional<double> eval(const Configuration& c) {
    auto lat = oracle(c);
    result.evaluations.push_back({c, lat});
    seen.insert(DecisionSpace::key(c));
    return lat;
  }
  bool has(const Configuration& c) const { return seen.count(DecisionSpace::key(c)) > 0; }
  int count() const { return static_cast<int>(result.evaluations.size()); }
  SearchResult done() {
    result.best = best_index(result.evaluations);
    return std::move(result);
  }
};

}  // namespace

int best_index(const std::vector<Evaluation>& evals) {
  int best = -1;
  for (size_t i = 0; i < evals.size(); ++i)
    if (evals[i].latency_ms &&
        (best < 0 || *evals[i].latency_ms < *evals[static_cast<size_t>(best)].latency_ms))
      best = static_cast<int>(i);
  return best;
}

SearchResult search_default(const DecisionSpace& space, const Oracle& oracle) {
  Recorder r(oracle, "default");
  r.eval(space.default_configuration());
  return r.done();
}

SearchResult search_random(const DecisionSpace& space, const Oracle& oracle, int budget,
                           uint64_t seed) {
  Recorder r(oracle, "random");
  Rng rng(seed);
  r.eval(space.default_configuration());
  for (int tries = 0; r.count() < budget && tries < 100 * budget; ++tries) {
    Configuration c;
    for (const auto& d : space.decisions)
      c.push_back(static_cast<int>(rng.below(d.choices.size())));
    if (!r.has(c)) r.eval(c);
  }
  return r.done();
}

SearchResult search_greedy(const DecisionSpace& space, const Oracle& oracle, int budget) {
  Recorder r(oracle, "greedy");
  Configuration cur = space.default_configuration();
  std::optional<double> cur_lat = r.eval(cur);
  bool improved = true;
  while (r.count() < budget && improved) {
    improved = false;
    for (size_t d = 0; d < space.decisions.size() && r.count() < budget; ++d) {
      for (int c = 0; c < static_cast<int>(space.decisions[d].choices.size()) && r.count() < budget;
           ++c) {
        if (c == cur[d]) continue;
        Configuration cand = cur;
        cand[d] = c;
        if (r.has(cand)) continue;
        auto lat = r.eval(cand);
        if (lat && (!cur_lat || *lat < *cur_lat)) cur = cand, cur_lat = lat, improved = true;
      }
    }
  }
  return r.done();
}

SearchResult search_exhaustive(const DecisionSpace& space, const Oracle& oracle) {
  Recorder r(oracle, "exhaustive");
  for (const auto& c : space.enumerate(512)) r.eval(c);
  return r.done();
}

double expected_cost(const std::vector<std::vector<double>>& logits,
                     const std::vector<std::vector<double>>& table,
                     std::vector<std::vector<double>>* grad) {
  if (logits.size() != table.size())
    throw Error("expected_cost", "logits and table differ in size");
  double e = 0;
  if (grad) grad->assign(logits.size(), {});
  for (size_t d = 0; d < logits.size(); ++d) {
    if (logits[d].size() != table[d].size() || logits[d].empty())
      throw Error("expected_cost", "decision " + std::to_string(d) + " has mismatched choices");
    const auto p = softmax(logits[d]);
    double ed = 0;
    for (size_t c = 0; c < p.size(); ++c) ed += p[c] * table[d][c];
    e += ed;
    if (grad) {
      (*grad)[d].resize(p.size());
      for (size_t c = 0; c < p.size(); ++c) (*grad)[d][c] = p[c] * (table[d][c] - ed);
    }
  }
  return e;
}

int gumbel_straight_through(const std::vector<double>& logits, const std::vector<double>& table,
                            double tau, Rng& rng, std::vector<double>& grad, double* cost) {
  if (!(tau > 0)) throw Error("gumbel_straight_through", "tau must be > 0");
  std::vector<double> z(logits.size());
  for (size_t c = 0; c < z.size(); ++c) z[c] = (logits[c] + rng.gumbel()) / tau;
  const auto y = softmax(z);
  const int hard = argmax(y);
  double soft = 0;
  for (size_t c = 0; c < y.size(); ++c) soft += y[c] * table[c];
  grad.resize(logits.size(), 0.0);
  for (size_t c = 0; c < y.size(); ++c) grad[c] += y[c] * (table[c] - soft) / tau;
  if (cost) *cost = table[static_cast<size_t>(hard)];
  return hard;
}

SearchResult search_gradient(const DecisionSpace& space, const Oracle& oracle,
                             const FeatureFn& features, int budget, uint64_t seed, CostModel& model,
                             const GradientOptions& options) {
  Recorder r(oracle, "gradient");
  Rng rng(seed);
  const size_t D = space.decisions.size();
  std::map<std::string, std::vector<double>> fcache;
  auto feat = [&](const Configuration& c) -> const std::vector<double>& {
    const std::string k = DecisionSpace::key(c);
    auto it = fcache.find(k);
    if (it == fcache.end()) it = fcache.emplace(k, features(c)).first;
    return it->second;
  };
  std::vector<std::vector<double>> X;
  std::vector<double> y;
  auto eval = [&](const Configuration& c) {
    auto lat = r.eval(c);
    if (lat && *lat > 0) X.push_back(feat(c)), y.push_back(*lat);
    return lat;
  };
  const Configuration def = space.default_configuration();
  std::vector<std::vector<double>> logits(D), m1(D), m2(D);
  for (size_t d = 0; d < D; ++d) {
    logits[d].assign(space.decisions[d].choices.size(), 0.0);
    logits[d][static_cast<size_t>(def[d])] = options.prior;
    m1[d].assign(logits[d].size(), 0.0);
    m2[d].assign(logits[d].size(), 0.0);
  }
  int adam_t = 0;
  const std::vector<double> theta0 = model.theta();
  if (budget > 0) eval(def);
  while (r.count() < budget) {
    if (!y.empty())
      model.fit(X, y, options.fit_iterations, options.fit_lr, options.anchor, &theta0);
    const int bi = best_index(r.result.evaluations);
    if (bi < 0) {
      // Nothing has passed its check yet (the default failed): the model has
      // nothing to fit and the neighbourhood of a failing configuration tells
      // nothing, so explore with a uniform draw until a candidate passes.
      Configuration c(D);
      for (int tries = 0; tries == 0 || (r.has(c) && tries < 200); ++tries)
        for (size_t d = 0; d < D; ++d)
          c[d] = static_cast<int>(rng.below(space.decisions[d].choices.size()));
      if (r.has(c)) break;
      eval(c);
      continue;
    }
    const Configuration center = r.result.evaluations[static_cast<size_t>(bi)].config;
    // The model's cost of every one-decision variant of the center.
    std::vector<std::vector<double>> table(D);
    for (size_t d = 0; d < D; ++d) {
      table[d].resize(logits[d].size());
      for (size_t c = 0; c < table[d].size(); ++c) {
        Configuration v = center;
        v[d] = static_cast<int>(c);
        table[d][c] = model.predict(feat(v));
      }
    }
    for (int s = 0; s < options.inner_steps; ++s) {
      std::vector<std::vector<double>> grad;
      expected_cost(logits, table, &grad);
      for (size_t d = 0; d < D; ++d)
        if (space.decisions[d].kind == "pass") {
          std::vector<double> g(logits[d].size(), 0.0);
          gumbel_straight_through(logits[d], table[d], options.tau, rng, g, nullptr);
          grad[d] = g;
        }
      ++adam_t;
      for (size_t d = 0; d < D; ++d)
        for (size_t c = 0; c < logits[d].size(); ++c) {
          const double g = grad[d][c];
          m1[d][c] = 0.9 * m1[d][c] + 0.1 * g;
          m2[d][c] = 0.999 * m2[d][c] + 0.001 * g * g;
          const double mh = m1[d][c] / (1 - std::pow(0.9, adam_t));
          const double vh = m2[d][c] / (1 - std::pow(0.999, adam_t));
          logits[d][c] -= options.logit_lr * mh / (std::sqrt(vh) + 1e-8);
        }
    }
    Configuration cand(D);
    for (size_t d = 0; d < D; ++d) cand[d] = argmax(logits[d]);
    // Measured already: sample the distribution (Gumbel-max), then mutate.
    for (int tries = 0; r.has(cand) && tries < 50; ++tries)
      for (size_t d = 0; d < D; ++d) {
        std::vector<double> z = logits[d];
        for (double& v : z) v += rng.gumbel();
        cand[d] = argmax(z);
      }
    for (int tries = 0; r.has(cand) && tries < 200; ++tries) {
      cand = center;
      const size_t d = rng.below(D);
      cand[d] = static_cast<int>(rng.below(space.decisions[d].choices.size()));
    }
    if (r.has(cand)) break;  // nothing new nearby: the space is exhausted here
    if (!eval(cand)) {
      for (size_t d = 0; d < D; ++d)
        if (cand[d] != center[d]) logits[d][static_cast<size_t>(cand[d])] -= 2.0;
    }
  }
  return r.done();
}

}  // namespace tailor::tune
