// tune_model: every method under one budget, paired re-measurement, the record.
#include "tailor/tune/tune.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <set>

#include <fmt/format.h>

#include "tailor/core/error.h"
#include "tailor/linalg/threads.h"
#include "tailor/runtime/pass_options.h"
#include "tailor/tune/cost_model.h"

namespace tailor::tune {

namespace {

// The gradient screen's reading of a check: its error, +inf when the check
// failed without an error past `tolerance` (a pass refused: no error
// measured, recorded as null).
double check_error(const MeasuredConfiguration& m, double tolerance) {
  const double e = m.max_rel_error;
  return !m.ok && !(e > tolerance) ? INFINITY : e;
}

SpaceOptions space_options(int threads) {
  SpaceOptions o;
  o.max_threads = threads;
  return o;
}

// What every run of the methods needs, for tuning and for replay alike.
struct MethodsOutput {
  std::vector<SearchResult> results;
  CostModel fitted;
};

MethodsOutput run_methods(const DecisionSpace& space, const Oracle& oracle,
                          const FeatureFn& features, int budget, uint64_t seed,
                          const CostModel& initial, const GradientOptions& gopt,
                          const ErrorScreen& screen) {
  MethodsOutput out;
  out.results.push_back(search_default(space, oracle));
  out.results.push_back(search_random(space, oracle, budget, seed));
  out.results.push_back(search_greedy(space, oracle, budget));
  out.fitted = initial;
  out.results.push_back(
      search_gradient(space, oracle, features, budget, seed + 1, out.fitted, gopt, &screen));
  if (space.points() <= 512) out.results.push_back(search_exhaustive(space, oracle));
  return out;
}

// Each method's `top` best checked configurations (by first measurement),
// deduplicated, in method order: the paired re-measurement's pool.
std::vector<Configuration> paired_pool(const std::vector<SearchResult>& results, int top) {
  std::vector<Configuration> pool;
  std::set<std::string> keys;
  for (const auto& r : results) {
    std::vector<const Evaluation*> ok;
    for (const auto& e : r.evaluations)
      if (e.latency_ms) ok.push_back(&e);
    std::stable_sort(ok.begin(), ok.end(),
                     [](auto* a, auto* b) { return *a->latency_ms < *b->latency_ms; });
    for (int i = 0; i < top && i < static_cast<int>(ok.size()); ++i)
      if (keys.insert(DecisionSpace::key(ok[static_cast<size_t>(i)]->config)).second)
        pool.push_back(ok[static_cast<size_t>(i)]->config);
  }
  return pool;
}

// Per candidate, the statistic ("median" or "min") over the rounds.
std::vector<double> paired_medians(const std::vector<std::vector<double>>& rounds, size_t n,
                                   const std::string& statistic) {
  std::vector<double> med;
  for (size_t i = 0; i < n; ++i) {
    std::vector<double> t;
    for (const auto& r : rounds) t.push_back(r.at(i));
    med.push_back(statistic == "min" ? *std::min_element(t.begin(), t.end()) : median(t));
  }
  return med;
}

size_t argmin(const std::vector<double>& v) {
  return static_cast<size_t>(std::min_element(v.begin(), v.end()) - v.begin());
}

}  // namespace

size_t pick_winner(const std::vector<Configuration>& pool, const std::vector<double>& medians,
                   const std::vector<std::vector<double>>& rounds, const Configuration& fallback) {
  const auto it = std::find(pool.begin(), pool.end(), fallback);
  if (it == pool.end()) return argmin(medians);
  const auto base = static_cast<size_t>(it - pool.begin());
  // Tested: the candidates whose paired statistic is below the default's.
  size_t tested = 0;
  for (size_t i = 0; i < pool.size(); ++i) tested += i != base && medians[i] < medians[base];
  const double alpha = kReplaceDefaultAlpha / static_cast<double>(std::max<size_t>(1, tested));
  size_t win = base;
  for (size_t i = 0; i < pool.size(); ++i)
    if (i != base && medians[i] < medians[base] && (win == base || medians[i] < medians[win]) &&
        sign_test_p_value(rounds, i, base) <= alpha)
      win = i;
  return win;
}

MeasuredConfiguration measure_configuration(const Harness& harness, Applier& applier,
                                            const Configuration& c, bool timed) {
  Measurement m;
  const auto t0 = std::chrono::steady_clock::now();
  try {
    const AppliedConfiguration a = applier.apply(c);
    m = timed ? harness.measure(a) : harness.check(a);
  } catch (const std::exception& e) {  // a pass refused: the candidate fails its check
    m.ok = false;
    m.max_rel_error = INFINITY;  // recorded as null
    m.error = e.what();
    m.cost_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  MeasuredConfiguration out;
  static_cast<Measurement&>(out) = std::move(m);
  out.config = c;
  out.key = DecisionSpace::key(c);
  if (!std::isfinite(out.max_rel_error))
    out.max_rel_error = std::numeric_limits<double>::quiet_NaN();
  if (out.ok) out.error.clear();
  return out;
}

TuneRecord tune_model(const graph::Model& model, const TuneOptions& options) {
  if (options.measurements < 1) throw Error("--measurements", "must be >= 1");
  if (options.paired_rounds < 1 || options.paired_top < 1)
    throw Error("tune", "paired_rounds and paired_top must be >= 1");
  const int threads = options.threads > 0 ? options.threads : linalg::threads();
  if (options.harness.clock == "cpu" && threads != 1)
    throw Error("--clock", "cpu time is a latency only for one thread; give --threads 1");
  HarnessOptions hopt = options.harness;
  hopt.reference_threads = threads;
  const Harness harness = options.inputs.empty()
                              ? Harness(model, options.input_shapes, options.seed, hopt)
                              : Harness(model, {options.inputs}, hopt);
  const ValueShapes shapes = observe_shapes(model, harness.inputs());
  const graph::PassOptions popt = runtime::default_pass_options();
  const DecisionSpace space = build_space(model, shapes, popt, space_options(threads));
  Applier applier(model, space, popt);
  const MachineInfo machine = MachineInfo::detect();

  TuneRecord rec;
  std::map<std::string, size_t> by_key;
  auto measure = [&](const Configuration& c) -> size_t {
    const std::string k = DecisionSpace::key(c);
    if (auto it = by_key.find(k); it != by_key.end()) return it->second;
    rec.measured.push_back(measure_configuration(harness, applier, c));
    by_key[k] = rec.measured.size() - 1;
    return rec.measured.size() - 1;
  };
  const Oracle oracle = [&](const Configuration& c) -> std::optional<double> {
    const MeasuredConfiguration& m = rec.measured[measure(c)];
    if (!m.ok) return std::nullopt;
    return m.latency_ms(hopt.statistic);
  };
  // The gradient method's screen: check errors, looked up where measured;
  // a configuration only screened is checked, never timed, and recorded
  // apart (TuneRecord::screened).
  std::map<std::string, size_t> screened_by_key;
  const CheckFn check = [&](const Configuration& c) -> double {
    const std::string k = DecisionSpace::key(c);
    if (auto it = by_key.find(k); it != by_key.end())
      return check_error(rec.measured[it->second], hopt.tolerance);
    auto it = screened_by_key.find(k);
    if (it == screened_by_key.end()) {
      rec.screened.push_back(measure_configuration(harness, applier, c, false));
      it = screened_by_key.emplace(k, rec.screened.size() - 1).first;
    }
    return check_error(rec.screened[it->second], hopt.tolerance);
  };
  const ErrorScreen screen{check, hopt.tolerance};
  const FeatureFn features = [&](const Configuration& c) {
    const AppliedConfiguration a = applier.apply(c);
    return graph_features(a.model, a.threads, shapes, machine);
  };
  const CostModel initial = options.cost_model ? *options.cost_model : measured_start();
  if (initial.size() != feature_names().size())
    throw Error("cost model", "has " + std::to_string(initial.size()) + " terms, expected " +
                                  std::to_string(feature_names().size()));

  MethodsOutput mo = run_methods(space, oracle, features, options.measurements, options.seed,
                                 initial, options.gradient, screen);

  // Rank correlation of the fitted model on configurations the gradient
  // method never measured (it never fitted on them).
  std::set<std::string> grad_keys;
  for (const auto& r : mo.results)
    if (r.method == "gradient")
      for (const auto& e : r.evaluations) grad_keys.insert(DecisionSpace::key(e.config));
  std::vector<double> pred, meas;
  for (const MeasuredConfiguration& m : rec.measured)
    if (m.ok && !grad_keys.count(m.key)) {
      pred.push_back(mo.fitted.predict(features(m.config)));
      meas.push_back(m.latency_ms(hopt.statistic));
    }

  // Paired re-measurement of each method's best candidates.
  const std::vector<Configuration> pool = paired_pool(mo.results, options.paired_top);
  if (pool.empty()) {
    const auto d = by_key.find(DecisionSpace::key(space.default_configuration()));
    throw Error("tune", "no configuration passed its check" +
                            (d == by_key.end()
                                 ? std::string()
                                 : " (the default's: " + rec.measured[d->second].error + ")"));
  }
  std::vector<AppliedConfiguration> applied;
  for (const auto& c : pool) applied.push_back(applier.apply(c));
  const auto rounds = harness.paired(applied, options.paired_rounds);
  const std::vector<double> pmed = paired_medians(rounds, pool.size(), hopt.statistic);
  std::map<std::string, double> pooled;
  std::vector<std::string> pool_keys;
  for (size_t i = 0; i < pool.size(); ++i)
    pooled[DecisionSpace::key(pool[i])] = pmed[i], pool_keys.push_back(DecisionSpace::key(pool[i]));
  const size_t win = pick_winner(pool, pmed, rounds, space.default_configuration());
  const double default_ms = pooled.count(DecisionSpace::key(space.default_configuration()))
                                ? pooled[DecisionSpace::key(space.default_configuration())]
                                : 0.0;

  for (const auto& r : mo.results) {
    MethodTrials trials{r.method, {}, {}};
    MethodRow row{r.method};
    for (const auto& e : r.evaluations) {
      const std::string key = DecisionSpace::key(e.config);
      const size_t idx = by_key.at(key);
      trials.trials.push_back({idx, key});
      row.tuning_s += rec.measured[idx].cost_s;
      if (auto it = pooled.find(key); it != pooled.end())
        if (row.best_ms == 0 || it->second < row.best_ms) {
          row.best_ms = it->second;
          trials.best_key = it->first;
          row.peak_bytes = rec.measured[idx].peak_bytes;
        }
    }
    if (r.method == "gradient")  // its screen's checks, not counted as measurements
      for (const MeasuredConfiguration& m : rec.screened) row.tuning_s += m.cost_s;
    row.measurements = static_cast<int>(r.evaluations.size());
    row.speedup = row.best_ms > 0 && default_ms > 0 ? default_ms / row.best_ms : 0.0;
    rec.methods.push_back(std::move(trials));
    rec.table.push_back(row);
  }
  rec.model = options.model_path;
  rec.model_nodes = model.graph.nodes.size();
  rec.seed = options.seed;
  rec.measurements = options.measurements;
  rec.threads = threads;
  rec.input_shapes = options.input_shapes;
  for (const auto& [name, t] : options.inputs) rec.input_shapes[name] = t.shape();
  rec.value_shapes = shapes;
  rec.harness = hopt;
  rec.paired_rounds = options.paired_rounds;
  rec.paired_top = options.paired_top;
  rec.gradient = options.gradient;
  rec.space = space;
  rec.cost_model = {initial, mo.fitted, pred.size(),
                    pred.size() >= 3 ? std::optional<double>(spearman(pred, meas)) : std::nullopt};
  rec.paired = {pool_keys, pool, rounds, pmed};
  const Configuration& chosen = pool.at(win);
  rec.chosen = {chosen, DecisionSpace::key(chosen), pmed[win], space.named_choices(chosen)};
  return rec;
}

std::vector<SearchCurve> search_curves(const TuneRecord& record) {
  std::vector<SearchCurve> out;
  for (const MethodTrials& m : record.methods) {
    SearchCurve c{m.name, {}};
    double best = 0;
    for (const Trial& t : m.trials) {
      const MeasuredConfiguration& mc = record.measured.at(t.measured);
      if (mc.ok) {
        const double ms = mc.latency_ms(record.harness.statistic);
        if (ms > 0 && (best == 0 || ms < best)) best = ms;
      }
      c.best_ms.push_back(best);
    }
    out.push_back(std::move(c));
  }
  return out;
}

int measurements_to_reach(const SearchCurve& curve, double target_ms, double fraction) {
  if (!(fraction > 0 && fraction <= 1) || !(target_ms > 0))
    throw Error("tune", "measurements_to_reach needs 0 < fraction <= 1 and a positive target");
  for (size_t i = 0; i < curve.best_ms.size(); ++i)
    if (curve.best_ms[i] > 0 && target_ms / curve.best_ms[i] >= fraction)
      return static_cast<int>(i) + 1;
  return -1;
}

double sign_test_p_value(const std::vector<std::vector<double>>& rounds, size_t candidate,
                         size_t baseline) {
  int n = 0, k = 0;
  for (const auto& r : rounds) {
    if (r.at(candidate) == r.at(baseline)) continue;
    ++n;
    if (r.at(candidate) < r.at(baseline)) ++k;
  }
  // P(X ≥ k) = Σ_{j ≥ k} C(n, j) / 2^n.
  double p = 0, c = 1;  // c = C(n, j)
  for (int j = 0; j <= n; ++j) {
    if (j >= k) p += c;
    c = c * (n - j) / (j + 1);
  }
  return p / std::ldexp(1.0, n);
}

namespace {

/// The decision space of `model` as tune builds it for `record`, checked to be
/// the record's, decision by decision (name, kind, choices, default): a
/// record is applied only through choices derived here, never parsed from
/// the file. Throws Error(who, ...) at the first difference: the node
/// count, an input_shapes entry that is not a model input or contradicts
/// value_shapes, then the decisions.
DecisionSpace model_space(const graph::Model& model, const TuneRecord& record,
                          const std::string& who) {
  if (record.threads < 1) throw Error(who, "the record's threads must be >= 1");
  if (record.model_nodes != model.graph.nodes.size())
    throw Error(who, "the record was made for a model with " + std::to_string(record.model_nodes) +
                         " nodes, this one has " + std::to_string(model.graph.nodes.size()));
  // The shapes the record was measured at: inputs of this model, as the
  // observed value shapes have them.
  const auto& inputs = model.graph.inputs;
  for (const auto& [name, dims] : record.input_shapes) {
    if (std::find(inputs.begin(), inputs.end(), name) == inputs.end())
      throw Error(who, "the record's input_shapes name '" + name + "', not an input of the model");
    const auto seen = record.value_shapes.find(name);
    if (seen != record.value_shapes.end() && seen->second != dims)
      throw Error(who, "the record's input_shapes and value_shapes give input '" + name +
                           "' different shapes");
  }
  const DecisionSpace space = build_space(
      model, record.value_shapes, runtime::default_pass_options(), space_options(record.threads));
  const DecisionSpace& recorded = record.space;
  if (space.decisions.size() != recorded.decisions.size()) {
    // Name one decision the two do not share: another model, or a record
    // made by a tailor whose passes offered other decisions.
    std::string odd;
    for (const Decision& d : space.decisions)
      if (odd.empty() && recorded.find(d.name) < 0)
        odd = "; the model has '" + d.name + "', the record does not";
    for (const Decision& d : recorded.decisions)
      if (odd.empty() && space.find(d.name) < 0)
        odd = "; the record has '" + d.name + "', the model does not";
    throw Error(who, fmt::format("the model's decision space ({} decisions) differs from the "
                                 "record's ({}){} (another model, or a record of another tailor "
                                 "version: tune it again)",
                                 space.decisions.size(), recorded.decisions.size(), odd));
  }
  for (size_t i = 0; i < space.decisions.size(); ++i) {
    const Decision &a = space.decisions[i], &b = recorded.decisions[i];
    if (a.name != b.name || a.kind != b.kind || a.choices != b.choices ||
        a.default_choice != b.default_choice)
      throw Error(who, "decision '" + b.name + "' differs from the model's");
  }
  space.validate(record.chosen.config);
  return space;
}

}  // namespace

Configuration replay(const graph::Model& model, const TuneRecord& record) {
  const DecisionSpace space = model_space(model, record, "replay");
  const ValueShapes& shapes = record.value_shapes;
  const graph::PassOptions popt = runtime::default_pass_options();
  const std::string& statistic = record.harness.statistic;
  std::map<std::string, const MeasuredConfiguration*> by_key;
  for (const MeasuredConfiguration& m : record.measured) by_key[m.key] = &m;
  const Oracle oracle = [&](const Configuration& c) -> std::optional<double> {
    auto it = by_key.find(DecisionSpace::key(c));
    if (it == by_key.end())
      throw Error("replay", "the record has no measurement of configuration " +
                                DecisionSpace::key(c) +
                                " (another seed, model or tailor version?)");
    if (!it->second->ok) return std::nullopt;
    return it->second->latency_ms(statistic);
  };
  std::map<std::string, double> checked;  // key → check error, measured or screened
  for (const auto* list : {&record.screened, &record.measured})
    for (const MeasuredConfiguration& m : *list)
      checked[m.key] = check_error(m, record.harness.tolerance);
  const CheckFn check = [&](const Configuration& c) -> double {
    auto it = checked.find(DecisionSpace::key(c));
    if (it == checked.end())
      throw Error("replay", "the record has no check (measured or screened) of configuration " +
                                DecisionSpace::key(c) +
                                " (another seed, model or tailor version?)");
    return it->second;
  };
  const ErrorScreen screen{check, record.harness.tolerance};
  Applier applier(model, space, popt);
  const MachineInfo machine = MachineInfo::detect();
  const FeatureFn features = [&](const Configuration& c) {
    const AppliedConfiguration a = applier.apply(c);
    return graph_features(a.model, a.threads, shapes, machine);
  };
  const MethodsOutput mo = run_methods(space, oracle, features, record.measurements, record.seed,
                                       record.cost_model.initial, record.gradient, screen);
  const std::vector<Configuration> pool = paired_pool(mo.results, record.paired_top);
  if (record.paired.configs != pool)
    throw Error("replay", "the re-derived paired pool differs from the record's");
  return pool.at(pick_winner(pool, paired_medians(record.paired.rounds, pool.size(), statistic),
                             record.paired.rounds, space.default_configuration()));
}

AppliedConfiguration apply_record(const graph::Model& model, const TuneRecord& record) {
  const DecisionSpace space =
      model_space(model, record, "tuning");  // the Applier keeps a reference
  Applier applier(model, space, runtime::default_pass_options());
  return applier.apply(record.chosen.config);
}

}  // namespace tailor::tune
