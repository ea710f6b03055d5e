// The gradient method and the baselines.
#include "tailor/tune/search.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <span>

#include "tailor/core/error.h"
#include "tailor/core/rng.h"
#include "tailor/decision/categorical.h"
#include "tailor/decision/optim.h"

namespace tailor::tune {

namespace {

// Records evaluations of one method, never measuring a configuration twice.
struct Recorder {
  Recorder(const Oracle& o, std::string method) : oracle(o) { result.method = std::move(method); }
  const Oracle& oracle;
  SearchResult result;
  std::map<std::string, std::optional<double>> seen;  // key → latency, nullopt: check failed
  std::optional<double> eval(const Configuration& c) {
    auto lat = oracle(c);
    result.evaluations.push_back({c, lat});
    seen[DecisionSpace::key(c)] = lat;
    return lat;
  }
  bool has(const Configuration& c) const { return seen.count(DecisionSpace::key(c)) > 0; }
  // c's latency (nullopt: its check failed) if measured, else nullopt.
  std::optional<std::optional<double>> lookup(const Configuration& c) const {
    const auto it = seen.find(DecisionSpace::key(c));
    if (it == seen.end()) return std::nullopt;
    return it->second;
  }
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
  // 64-bit: 100 · budget overflowed int from budget 21,474,837 on.
  const int64_t max_tries = int64_t{100} * budget;
  for (int64_t tries = 0; r.count() < budget && tries < max_tries; ++tries) {
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
  // One categorical per decision; the default choice starts at the prior.
  decision::Space cats;
  for (const auto& d : space.decisions) cats.add(d.name, d.choices.size());
  std::vector<double> logits = cats.logits(0);
  for (size_t d = 0; d < D; ++d)
    logits[cats.offset(d) + static_cast<size_t>(def[d])] = options.prior;
  decision::AdamOptions adam_options;
  adam_options.learning_rate = options.logit_lr;
  decision::Adam adam(cats.logit_count(), adam_options);
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
    std::vector<double> table(cats.logit_count());
    for (size_t d = 0; d < D; ++d)
      for (size_t c = 0; c < cats.choices(d); ++c) {
        Configuration v = center;
        v[d] = static_cast<int>(c);
        table[cats.offset(d) + c] = model.predict(feat(v));
      }
    // Adam on the expected cost Σ_d Σ_c p_dc·table_dc under p_d = softmax(logits_d)
    // (exact when the model is additive over decisions, as it is in each
    // one-hot fusion, conv-block and thread choice); pass decisions, not
    // additive in the model, take the Gumbel-softmax straight-through estimate.
    std::vector<double> grad(cats.logit_count()), p(cats.logit_count());
    for (int s = 0; s < options.inner_steps; ++s) {
      for (size_t d = 0; d < D; ++d) {
        const auto th = cats.slice(std::span<const double>(logits), d);
        const auto a = cats.slice(std::span<const double>(table), d);
        const auto g = cats.slice(std::span<double>(grad), d);
        if (space.decisions[d].kind == "pass") {
          decision::straight_through(decision::gumbel_softmax(th, options.tau, rng), a, options.tau,
                                     g);
        } else {
          const auto pd = cats.slice(std::span<double>(p), d);
          decision::softmax(th, pd);
          decision::softmax_backward(pd, a, g);
        }
      }
      adam.step(logits, grad);
    }
    Configuration cand = cats.argmax(logits);
    // Measured already: sample the distribution (Gumbel-max), then mutate.
    for (int tries = 0; r.has(cand) && tries < 50; ++tries)
      for (size_t d = 0; d < D; ++d)
        cand[d] = static_cast<int>(
            decision::gumbel_softmax(cats.slice(std::span<const double>(logits), d), 1.0, rng)
                .hard);
    for (int tries = 0; r.has(cand) && tries < 200; ++tries) {
      cand = center;
      const size_t d = rng.below(D);
      cand[d] = static_cast<int>(rng.below(space.decisions[d].choices.size()));
    }
    if (r.has(cand)) break;  // nothing new nearby: the space is exhausted here
    // A move whose check fails (an approximate choice past the tolerance)
    // is bisected (adaptive group testing): its changes are tried on the
    // center in seeded halves, each half that passes kept as the base the
    // next half is tried on, each failing half split again down to single
    // changes. Every failure pushes its changes' logits down; the changes
    // kept get that back, so the blame stays with the choices that failed.
    std::vector<size_t> move;
    for (size_t d = 0; d < D; ++d)
      if (cand[d] != center[d]) move.push_back(d);
    // Parts of the move still to try on the base, last tried first.
    std::vector<std::vector<size_t>> untried{move};
    std::map<size_t, double> pushed;  // logit → how far this move's failures pushed it
    Configuration base = center;
    while (!untried.empty() && r.count() < budget) {
      std::vector<size_t> part = std::move(untried.back());
      untried.pop_back();
      Configuration c = base;
      for (size_t d : part) c[d] = cand[d];
      // (a configuration measured before is looked up, not measured again)
      const auto known = r.lookup(c);
      if (known ? known->has_value() : eval(c).has_value()) {
        base = c;
        continue;
      }
      for (size_t d : part) {
        const size_t l = cats.offset(d) + static_cast<size_t>(cand[d]);
        logits[l] -= 2.0;
        pushed[l] += 2.0;
      }
      if (part.size() == 1) continue;
      for (size_t i = part.size() - 1; i > 0; --i) std::swap(part[i], part[rng.below(i + 1)]);
      const auto mid = part.begin() + static_cast<std::ptrdiff_t>(part.size() / 2);
      untried.emplace_back(mid, part.end());
      untried.emplace_back(part.begin(), mid);  // tried first
    }
    for (size_t d = 0; d < D; ++d)
      if (base[d] != center[d])
        if (auto it = pushed.find(cats.offset(d) + static_cast<size_t>(base[d]));
            it != pushed.end())
          logits[it->first] += it->second;
  }
  return r.done();
}

}  // namespace tailor::tune
