// The cost-model trainer across graphs and the warm-start evaluation.
#include "tailor/tune/train.h"

#include "tailor/tune/tune.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <set>

#include "tailor/core/error.h"
#include "tailor/core/rng.h"
#include "tailor/linalg/threads.h"
#include "tailor/runtime/pass_options.h"

namespace tailor::tune {

namespace {

using json = nlohmann::json;

std::optional<double> rho(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() < 3) return std::nullopt;
  return spearman(a, b);
}

}  // namespace

GraphBench::GraphBench(const graph::Model& model, std::string name,
                       const std::map<std::string, std::vector<int64_t>>& input_shapes,
                       uint64_t seed, int threads, const HarnessOptions& harness)
    : name_(std::move(name)), machine_(MachineInfo::detect()) {
  const int t = threads > 0 ? threads : linalg::threads();
  HarnessOptions h = harness;
  h.reference_threads = t;
  harness_ = std::make_unique<Harness>(model, input_shapes, seed, h);
  shapes_ = observe_shapes(model, harness_->inputs());
  const graph::PassOptions popt = runtime::default_pass_options();
  SpaceOptions so;
  so.max_threads = t;
  space_ = std::make_unique<DecisionSpace>(build_space(model, shapes_, popt, so));
  applier_ = std::make_unique<Applier>(model, *space_, popt);
  const std::string stat = h.statistic;
  oracle_ = [this, stat](const Configuration& c) -> std::optional<double> {
    const std::string k = DecisionSpace::key(c);
    auto it = by_key_.find(k);
    if (it == by_key_.end()) {
      measured_.push_back(measure_configuration(*harness_, *applier_, c));
      it = by_key_.emplace(k, measured_.size() - 1).first;
    }
    const MeasuredConfiguration& m = measured_[it->second];
    if (!m.ok) return std::nullopt;
    return m.latency_ms(stat);
  };
  features_ = [this](const Configuration& c) {
    const AppliedConfiguration a = applier_->apply(c);
    return graph_features(a.model, a.threads, shapes_, machine_);
  };
}

GraphSamples GraphBench::samples() const {
  GraphSamples s;
  s.name = name_;
  for (const MeasuredConfiguration& m : measured_) {
    if (!m.ok) continue;
    const double lat = *oracle_(m.config);
    if (!(lat > 0)) continue;
    s.keys.push_back(m.key);
    s.features.push_back(features_(m.config));
    s.latency_ms.push_back(lat);
  }
  return s;
}

void sample_configurations(GraphBench& bench, int count, uint64_t seed) {
  const DecisionSpace& space = bench.space();
  const size_t D = space.decisions.size();
  const int total = static_cast<int>(std::min<double>(count, space.points()));
  Rng rng(seed);
  std::set<std::string> seen;
  auto eval = [&](const Configuration& c) {
    if (seen.insert(DecisionSpace::key(c)).second) bench.oracle()(c);
  };
  const Configuration def = space.default_configuration();
  eval(def);
  for (int tries = 0; static_cast<int>(seen.size()) < total && tries < 1000 * total; ++tries) {
    Configuration c = def;
    if (seen.size() % 2 == 1) {
      for (size_t d = 0; d < D; ++d)
        c[d] = static_cast<int>(rng.below(space.decisions[d].choices.size()));
    } else {
      const int changes = 1 + static_cast<int>(rng.below(3));
      for (int i = 0; i < changes; ++i) {
        const size_t d = rng.below(D);
        c[d] = static_cast<int>(rng.below(space.decisions[d].choices.size()));
      }
    }
    eval(c);
  }
}

TrainResult train_cost_model(const std::vector<GraphSamples>& graphs, const TrainOptions& options) {
  const size_t F = feature_names().size();
  size_t total = 0;
  for (const auto& g : graphs) {
    if (g.features.size() != g.latency_ms.size())
      throw Error("train", "graph '" + g.name + "': features and latencies differ in count");
    for (const auto& f : g.features)
      if (f.size() != F)
        throw Error("train", "graph '" + g.name + "': a sample has " + std::to_string(f.size()) +
                                 " terms, the cost model " + std::to_string(F));
    total += g.features.size();
  }
  if (total == 0) throw Error("train", "no measured samples (every candidate failed its check?)");
  if (!(options.held_out >= 0 && options.held_out < 1))
    throw Error("train", "held_out must be in [0, 1)");

  // Split each graph's samples (seeded shuffle; the last ones held out).
  Rng rng(options.seed);
  std::vector<std::vector<double>> X, Xall;
  std::vector<double> y, yall;
  std::vector<std::vector<size_t>> held(graphs.size());
  TrainResult r;
  for (size_t g = 0; g < graphs.size(); ++g) {
    const size_t n = graphs[g].features.size();
    std::vector<size_t> idx(n);
    std::iota(idx.begin(), idx.end(), 0);
    for (size_t i = n; i > 1; --i) std::swap(idx[i - 1], idx[rng.below(i)]);
    size_t h = static_cast<size_t>(std::ceil(options.held_out * static_cast<double>(n)));
    if (n >= 6) h = std::max<size_t>(h, 3);
    if (options.held_out == 0) h = 0;
    held[g].assign(idx.end() - static_cast<std::ptrdiff_t>(h), idx.end());
    for (size_t i = 0; i + h < n; ++i)
      X.push_back(graphs[g].features[idx[i]]), y.push_back(graphs[g].latency_ms[idx[i]]);
    for (size_t i = 0; i < n; ++i)
      Xall.push_back(graphs[g].features[i]), yall.push_back(graphs[g].latency_ms[i]);
    r.graphs.push_back({graphs[g].name, static_cast<int>(n - h), static_cast<int>(h), {}});
  }
  if (!X.empty()) {
    CostModel split(F, options.initial);
    split.fit(X, y, options.iterations, options.lr);
    std::vector<double> pp, pm, per;
    for (size_t g = 0; g < graphs.size(); ++g) {
      std::vector<double> p, m;
      for (size_t i : held[g]) {
        p.push_back(split.predict(graphs[g].features[i]));
        m.push_back(graphs[g].latency_ms[i]);
      }
      pp.insert(pp.end(), p.begin(), p.end());
      pm.insert(pm.end(), m.begin(), m.end());
      r.graphs[g].spearman = rho(p, m);
      if (r.graphs[g].spearman) per.push_back(*r.graphs[g].spearman);
    }
    r.spearman_pooled = rho(pp, pm);
    if (!per.empty())
      r.spearman_mean_per_graph =
          std::accumulate(per.begin(), per.end(), 0.0) / static_cast<double>(per.size());
  }
  r.model = CostModel(F, options.initial);
  r.loss = r.model.fit(Xall, yall, options.iterations, options.lr);
  return r;
}

nlohmann::json train_result_json(const TrainResult& r) {
  json j = r.model.to_json(feature_names());
  json on = json::array();
  for (const auto& g : r.graphs)
    on.push_back({{"name", g.name},
                  {"train", g.train},
                  {"held_out", g.held_out},
                  {"spearman_held_out", g.spearman ? json(*g.spearman) : json()}});
  j["trained_on"] = on;
  j["spearman_pooled"] = r.spearman_pooled ? json(*r.spearman_pooled) : json();
  j["spearman_mean_per_graph"] =
      r.spearman_mean_per_graph ? json(*r.spearman_mean_per_graph) : json();
  j["loss"] = r.loss;
  return j;
}

std::vector<WarmStartPoint> warm_start_curve(GraphBench& bench, const GraphSamples& pool,
                                             const CostModel& initial, const std::vector<int>& ks,
                                             uint64_t seed, const GradientOptions& options) {
  std::vector<WarmStartPoint> out;
  for (int k : ks) {
    WarmStartPoint p;
    p.k = k;
    CostModel model = initial;
    std::set<std::string> used;
    if (k > 0) {
      const SearchResult sr =
          search_gradient(bench.space(), bench.oracle(), bench.features(), k, seed, model, options);
      std::vector<std::vector<double>> X;
      std::vector<double> y;
      for (const auto& e : sr.evaluations) {
        used.insert(DecisionSpace::key(e.config));
        if (e.latency_ms && *e.latency_ms > 0) {
          X.push_back(bench.features()(e.config));
          y.push_back(*e.latency_ms);
          if (p.best_ms == 0 || *e.latency_ms < p.best_ms) p.best_ms = *e.latency_ms;
        }
      }
      if (!y.empty())
        model.fit(X, y, options.fit_iterations, options.fit_lr, options.anchor, &initial.theta());
    }
    std::vector<double> pred, meas;
    for (size_t i = 0; i < pool.keys.size(); ++i)
      if (!used.count(pool.keys[i])) {
        pred.push_back(model.predict(pool.features[i]));
        meas.push_back(pool.latency_ms[i]);
      }
    p.held_out = static_cast<int>(pred.size());
    p.spearman = rho(pred, meas);
    out.push_back(p);
  }
  return out;
}

}  // namespace tailor::tune
