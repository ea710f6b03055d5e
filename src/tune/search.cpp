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

// The logit a struck choice is held at: never the argmax, never drawn.
constexpr double kStruck = -1e9;

// search_gradient's model of the check error of approximate choices: each
// one's error alone on the default (δ over the default's e₀), summed, times
// κ, the largest ratio of measured to summed error seen so far.
class ErrorModel {
 public:
  // Screens every approximate choice when `screen` is given and the default
  // (measured as `def_measured`) passed its check; otherwise predicts nothing.
  ErrorModel(const DecisionSpace& space, const decision::Space& cats, const Configuration& def,
             const ErrorScreen* screen, std::optional<std::optional<double>> def_measured)
      : cats_(cats), delta_(cats.logit_count(), 0.0), struck_(cats.logit_count(), 0) {
    if (!screen || !def_measured || !def_measured->has_value()) return;
    screen_ = screen;
    e0_ = error(def);
    if (!(e0_ <= screen_->tolerance)) {
      screen_ = nullptr;
      return;
    }
    for (size_t d = 0; d < space.decisions.size(); ++d) {
      if (!is_approximate(space.decisions[d])) continue;
      for (size_t c = 0; c < cats.choices(d); ++c) {
        if (static_cast<int>(c) == def[d]) continue;
        Configuration v = def;
        v[d] = static_cast<int>(c);
        const double e = error(v);
        const size_t l = cats.offset(d) + c;
        struck_[l] = !(e <= screen_->tolerance);
        delta_[l] = std::isfinite(e) ? std::max(0.0, e - e0_) : 0.0;
      }
    }
  }
  bool struck(size_t logit) const { return struck_[logit] != 0; }
  // κ raised to c's ratio of measured to summed error (c was checked).
  void observe(const Configuration& c) {
    if (!screen_) return;
    const double s = summed(c);
    const double e = error(c);
    if (s > 0 && std::isfinite(e)) kappa_ = std::max(kappa_, (e - e0_) / s);
  }
  // Whether `c`'s error predicted from `from`'s (a configuration checked
  // before), e(from) + κ·(Σ δ(c) − Σ δ(from)), exceeds the tolerance.
  bool predicts_failure(const Configuration& c, const Configuration& from) const {
    return screen_ && error(from) + kappa_ * (summed(c) - summed(from)) > screen_->tolerance;
  }
  // Drops `cand`'s approximate changes against `center` (checked before),
  // least predicted gain (table: the model's one-choice costs around center)
  // per unit of added δ first, until its predicted error is within the tolerance.
  void fit(Configuration& cand, const Configuration& center,
           const std::vector<double>& table) const {
    if (!screen_) return;
    std::vector<std::pair<double, size_t>> changes;  // (gain per δ, decision)
    for (size_t d = 0; d < cand.size(); ++d) {
      if (cand[d] == center[d]) continue;
      const size_t to = logit(d, cand[d]), from = logit(d, center[d]);
      const double added = delta_[to] - delta_[from];
      if (added > 0) changes.emplace_back((table[from] - table[to]) / added, d);
    }
    std::stable_sort(changes.begin(), changes.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    for (const auto& [ratio, d] : changes) {
      if (!predicts_failure(cand, center)) break;
      cand[d] = center[d];
    }
  }

 private:
  size_t logit(size_t d, int choice) const { return cats_.offset(d) + static_cast<size_t>(choice); }
  double summed(const Configuration& c) const {
    double s = 0;
    for (size_t d = 0; d < c.size(); ++d) s += delta_[logit(d, c[d])];
    return s;
  }
  double error(const Configuration& c) const {
    const double e = screen_->check(c);
    return std::isnan(e) ? INFINITY : e;
  }
  const decision::Space& cats_;
  const ErrorScreen* screen_ = nullptr;
  std::vector<double> delta_;  // per logit: its choice's error alone less e₀ (0 off the screen)
  std::vector<char> struck_;   // per logit: its choice alone fails the check
  double e0_ = 0;
  double kappa_ = 1;
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
                             const GradientOptions& options, const ErrorScreen* screen) {
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
  // (no screen when the budget ends with the default: no move would use it)
  ErrorModel errors(space, cats, def, options.screen && budget > 1 ? screen : nullptr,
                    r.lookup(def));
  auto hold_struck = [&] {
    for (size_t l = 0; l < logits.size(); ++l)
      if (errors.struck(l)) logits[l] = kStruck;
  };
  hold_struck();
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
      hold_struck();
    }
    Configuration cand = cats.argmax(logits);
    errors.fit(cand, center, table);
    // Measured already: sample the distribution (Gumbel-max), then mutate.
    for (int tries = 0; r.has(cand) && tries < 50; ++tries) {
      for (size_t d = 0; d < D; ++d)
        cand[d] = static_cast<int>(
            decision::gumbel_softmax(cats.slice(std::span<const double>(logits), d), 1.0, rng)
                .hard);
      errors.fit(cand, center, table);
    }
    for (int tries = 0; r.has(cand) && tries < 200; ++tries) {
      cand = center;
      const size_t d = rng.below(D);
      cand[d] = static_cast<int>(rng.below(space.decisions[d].choices.size()));
      if (errors.struck(cats.offset(d) + static_cast<size_t>(cand[d])) ||
          errors.predicts_failure(cand, center))
        cand = center;
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
    const int measured_before = r.count();
    while (!untried.empty() && r.count() < budget) {
      std::vector<size_t> part = std::move(untried.back());
      untried.pop_back();
      Configuration c = base;
      for (size_t d : part) c[d] = cand[d];
      // (a configuration measured before is looked up, and one the error
      // model predicts past the tolerance is not measured: it counts as failed)
      const auto known = r.lookup(c);
      bool passed = false;
      if (known) {
        passed = known->has_value();
      } else if (!errors.predicts_failure(c, base)) {
        passed = eval(c).has_value();
        errors.observe(c);
      }
      if (passed) {
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
    // Nothing measured (every part predicted past the tolerance, which a
    // trimmed move never is): the same move would come again.
    if (r.count() == measured_before) break;
  }
  return r.done();
}

}  // namespace tailor::tune
