// tune_model: every method under one budget, paired re-measurement, the record.
#include "tailor/tune/tune.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <set>

#include "tailor/core/error.h"
#include "tailor/io/atomic_file.h"
#include "tailor/runtime/kernels.h"
#include "tailor/runtime/pass_options.h"
#include "tailor/tune/cost_model.h"

namespace tailor::tune {

namespace {

using json = nlohmann::json;

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
                          const CostModel& initial, const GradientOptions& gopt) {
  MethodsOutput out;
  out.results.push_back(search_default(space, oracle));
  out.results.push_back(search_random(space, oracle, budget, seed));
  out.results.push_back(search_greedy(space, oracle, budget));
  out.fitted = initial;
  out.results.push_back(
      search_gradient(space, oracle, features, budget, seed + 1, out.fitted, gopt));
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

json space_json(const DecisionSpace& s) {
  json d = json::array();
  for (const auto& x : s.decisions)
    d.push_back({{"name", x.name},
                 {"kind", x.kind},
                 {"choices", x.choices},
                 {"default", x.default_choice}});
  return {{"points", s.points()}, {"decisions", d}};
}

json decisions_json(const DecisionSpace& s, const Configuration& c) {
  json o = json::object();
  for (size_t i = 0; i < c.size(); ++i)
    o[s.decisions[i].name] = s.decisions[i].choices[static_cast<size_t>(c[i])];
  return o;
}

template <class T>
T field(const json& j, const char* name) {
  if (!j.contains(name))
    throw Error("decision record", std::string("missing field \"") + name + "\"");
  return j.at(name).get<T>();
}

}  // namespace

json measure_configuration(const Harness& harness, Applier& applier, const Configuration& c) {
  Measurement m;
  const auto t0 = std::chrono::steady_clock::now();
  try {
    m = harness.measure(applier.apply(c));
  } catch (const std::exception& e) {  // a pass refused: the candidate fails its check
    m.ok = false;
    m.error = e.what();
    m.cost_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  json check = {{"ok", m.ok},
                {"max_rel_error", std::isfinite(m.max_rel_error) ? json(m.max_rel_error) : json()}};
  if (!m.ok) check["error"] = m.error;
  return {{"config", c},
          {"key", DecisionSpace::key(c)},
          {"check", check},
          {"times_ms", m.times_ms},
          {"median_ms", m.median_ms},
          {"min_ms", m.min_ms},
          {"mad_ms", m.mad_ms},
          {"peak_bytes", m.peak_bytes},
          {"cost_s", m.cost_s}};
}

nlohmann::json tune_model(const graph::Model& model, const TuneOptions& options) {
  if (options.measurements < 1) throw Error("--measurements", "must be >= 1");
  if (options.paired_rounds < 1 || options.paired_top < 1)
    throw Error("tune", "paired_rounds and paired_top must be >= 1");
  const int threads = options.threads > 0 ? options.threads : runtime::kernels::num_threads();
  if (options.harness.clock == "cpu" && threads != 1)
    throw Error("--clock", "cpu time is a latency only for one thread; give --threads 1");
  HarnessOptions hopt = options.harness;
  hopt.reference_threads = threads;
  Harness harness(model, options.input_shapes, options.seed, hopt);
  const ValueShapes shapes = observe_shapes(model, harness.inputs());
  const graph::PassOptions popt = runtime::default_pass_options();
  const DecisionSpace space = build_space(model, shapes, popt, space_options(threads));
  Applier applier(model, space, popt);
  const MachineInfo machine = MachineInfo::detect();

  json measured = json::array();
  std::map<std::string, size_t> by_key;
  auto measure = [&](const Configuration& c) -> size_t {
    const std::string k = DecisionSpace::key(c);
    if (auto it = by_key.find(k); it != by_key.end()) return it->second;
    measured.push_back(measure_configuration(harness, applier, c));
    by_key[k] = measured.size() - 1;
    return measured.size() - 1;
  };
  const Oracle oracle = [&](const Configuration& c) -> std::optional<double> {
    const json& m = measured[measure(c)];
    if (!m["check"]["ok"].get<bool>()) return std::nullopt;
    return m[hopt.statistic == "min" ? "min_ms" : "median_ms"].get<double>();
  };
  const FeatureFn features = [&](const Configuration& c) {
    const AppliedConfiguration a = applier.apply(c);
    return graph_features(a.model, a.threads, shapes, machine);
  };
  const CostModel initial = options.cost_model
                                ? CostModel::from_json(*options.cost_model, feature_names())
                                : CostModel(feature_names().size());

  MethodsOutput mo = run_methods(space, oracle, features, options.measurements, options.seed,
                                 initial, options.gradient);

  // Rank correlation of the fitted model on configurations the gradient
  // method never measured (it never fitted on them).
  std::set<std::string> grad_keys;
  for (const auto& r : mo.results)
    if (r.method == "gradient")
      for (const auto& e : r.evaluations) grad_keys.insert(DecisionSpace::key(e.config));
  std::vector<double> pred, meas;
  for (const auto& m : measured)
    if (m["check"]["ok"].get<bool>() && !grad_keys.count(m["key"].get<std::string>())) {
      pred.push_back(mo.fitted.predict(features(m["config"].get<Configuration>())));
      meas.push_back(m[hopt.statistic == "min" ? "min_ms" : "median_ms"].get<double>());
    }

  // Paired re-measurement of each method's best candidates.
  const std::vector<Configuration> pool = paired_pool(mo.results, options.paired_top);
  std::vector<AppliedConfiguration> applied;
  for (const auto& c : pool) applied.push_back(applier.apply(c));
  const auto rounds = harness.paired(applied, options.paired_rounds);
  const std::vector<double> pmed = paired_medians(rounds, pool.size(), hopt.statistic);
  std::map<std::string, double> pooled;
  json pool_keys = json::array();
  for (size_t i = 0; i < pool.size(); ++i)
    pooled[DecisionSpace::key(pool[i])] = pmed[i], pool_keys.push_back(DecisionSpace::key(pool[i]));
  const size_t win = argmin(pmed);
  const double default_ms = pooled.count(DecisionSpace::key(space.default_configuration()))
                                ? pooled[DecisionSpace::key(space.default_configuration())]
                                : 0.0;

  json methods = json::array(), table = json::array();
  for (const auto& r : mo.results) {
    json trials = json::array();
    MethodRow row{r.method};
    std::string best_key;
    for (const auto& e : r.evaluations) {
      const size_t idx = by_key.at(DecisionSpace::key(e.config));
      trials.push_back({{"measured", idx}, {"key", DecisionSpace::key(e.config)}});
      row.tuning_s += measured[idx]["cost_s"].get<double>();
      if (auto it = pooled.find(DecisionSpace::key(e.config)); it != pooled.end())
        if (row.best_ms == 0 || it->second < row.best_ms) {
          row.best_ms = it->second;
          best_key = it->first;
          row.peak_bytes = measured[idx]["peak_bytes"].get<int64_t>();
        }
    }
    row.measurements = static_cast<int>(r.evaluations.size());
    row.speedup = row.best_ms > 0 && default_ms > 0 ? default_ms / row.best_ms : 0.0;
    methods.push_back({{"name", r.method}, {"trials", trials}, {"best_key", best_key}});
    table.push_back({{"method", row.method},
                     {"best_ms", row.best_ms},
                     {"speedup", row.speedup},
                     {"measurements", row.measurements},
                     {"tuning_s", row.tuning_s},
                     {"peak_bytes", row.peak_bytes}});
  }
  json value_shapes = json::object();
  for (const auto& [k, v] : shapes) value_shapes[k] = v;
  json input_shapes = json::object();
  for (const auto& [k, v] : options.input_shapes) input_shapes[k] = v;
  const Configuration& chosen = pool.at(win);
  return {{"format", "tailor.tune/1"},
          {"model", options.model_path},
          {"model_nodes", model.graph.nodes.size()},
          {"seed", options.seed},
          {"measurements", options.measurements},
          {"threads", threads},
          {"input_shapes", input_shapes},
          {"value_shapes", value_shapes},
          {"harness",
           {{"warmup", hopt.warmup},
            {"repeats", hopt.repeats},
            {"tolerance", hopt.tolerance},
            {"check_inputs", hopt.check_inputs},
            {"statistic", hopt.statistic},
            {"clock", hopt.clock},
            {"paired_rounds", options.paired_rounds},
            {"paired_top", options.paired_top}}},
          {"gradient",
           {{"inner_steps", options.gradient.inner_steps},
            {"logit_lr", options.gradient.logit_lr},
            {"fit_iterations", options.gradient.fit_iterations},
            {"fit_lr", options.gradient.fit_lr},
            {"tau", options.gradient.tau},
            {"prior", options.gradient.prior},
            {"anchor", options.gradient.anchor}}},
          {"space", space_json(space)},
          {"measured", measured},
          {"methods", methods},
          {"cost_model",
           {{"initial", initial.to_json(feature_names())},
            {"fitted", mo.fitted.to_json(feature_names())},
            {"held_out", pred.size()},
            {"spearman_held_out", pred.size() >= 3 ? json(spearman(pred, meas)) : json()}}},
          {"paired",
           {{"pool", pool_keys}, {"configs", pool}, {"rounds", rounds}, {"latency_ms", pmed}}},
          {"table", table},
          {"chosen",
           {{"config", chosen},
            {"key", DecisionSpace::key(chosen)},
            {"latency_ms", pmed[win]},
            {"decisions", decisions_json(space, chosen)}}}};
}

std::vector<MethodRow> method_table(const nlohmann::json& record) {
  std::vector<MethodRow> rows;
  const json table = field<json>(record, "table");
  for (const auto& t : table)
    rows.push_back({t.at("method").get<std::string>(), t.at("best_ms").get<double>(),
                    t.at("speedup").get<double>(), t.at("measurements").get<int>(),
                    t.at("tuning_s").get<double>(), t.at("peak_bytes").get<int64_t>()});
  return rows;
}

DecisionSpace space_from_record(const nlohmann::json& record) {
  DecisionSpace s;
  const json decisions = field<json>(field<json>(record, "space"), "decisions");
  for (const auto& d : decisions)
    s.decisions.push_back({field<std::string>(d, "name"), field<std::string>(d, "kind"),
                           field<std::vector<std::string>>(d, "choices"),
                           field<int>(d, "default")});
  return s;
}

Configuration chosen_from_record(const nlohmann::json& record) {
  Configuration c = field<Configuration>(field<json>(record, "chosen"), "config");
  space_from_record(record).validate(c);
  return c;
}

Configuration replay(const graph::Model& model, const nlohmann::json& record) {
  ValueShapes shapes;
  const json recorded_shapes = field<json>(record, "value_shapes");
  for (const auto& [k, v] : recorded_shapes.items()) shapes[k] = v.get<std::vector<int64_t>>();
  const int threads = field<int>(record, "threads");
  const graph::PassOptions popt = runtime::default_pass_options();
  const DecisionSpace space = build_space(model, shapes, popt, space_options(threads));
  const DecisionSpace recorded = space_from_record(record);
  if (space.decisions.size() != recorded.decisions.size())
    throw Error("replay", "the model's decision space differs from the record's (another model?)");
  for (size_t i = 0; i < space.decisions.size(); ++i)
    if (space.decisions[i].name != recorded.decisions[i].name ||
        space.decisions[i].choices != recorded.decisions[i].choices)
      throw Error("replay",
                  "decision '" + recorded.decisions[i].name + "' differs from the model's");
  const std::string statistic = field<std::string>(field<json>(record, "harness"), "statistic");
  std::map<std::string, json> by_key;
  const json measured = field<json>(record, "measured");
  for (const auto& m : measured) by_key[field<std::string>(m, "key")] = m;
  const Oracle oracle = [&](const Configuration& c) -> std::optional<double> {
    auto it = by_key.find(DecisionSpace::key(c));
    if (it == by_key.end())
      throw Error("replay", "the record has no measurement of configuration " +
                                DecisionSpace::key(c) +
                                " (another seed, model or tailor version?)");
    if (!it->second.at("check").at("ok").get<bool>()) return std::nullopt;
    return it->second.at(statistic == "min" ? "min_ms" : "median_ms").get<double>();
  };
  Applier applier(model, space, popt);
  const MachineInfo machine = MachineInfo::detect();
  const FeatureFn features = [&](const Configuration& c) {
    const AppliedConfiguration a = applier.apply(c);
    return graph_features(a.model, a.threads, shapes, machine);
  };
  const json cm = field<json>(record, "cost_model");
  const CostModel initial = CostModel::from_json(field<json>(cm, "initial"), feature_names());
  const json h = field<json>(record, "harness");
  // The gradient method's settings as recorded (records before they were
  // recorded used the defaults).
  GradientOptions gopt;
  if (record.contains("gradient")) {
    const json& g = record.at("gradient");
    gopt.inner_steps = g.value("inner_steps", gopt.inner_steps);
    gopt.logit_lr = g.value("logit_lr", gopt.logit_lr);
    gopt.fit_iterations = g.value("fit_iterations", gopt.fit_iterations);
    gopt.fit_lr = g.value("fit_lr", gopt.fit_lr);
    gopt.tau = g.value("tau", gopt.tau);
    gopt.prior = g.value("prior", gopt.prior);
    gopt.anchor = g.value("anchor", gopt.anchor);
  }
  const MethodsOutput mo = run_methods(space, oracle, features, field<int>(record, "measurements"),
                                       field<uint64_t>(record, "seed"), initial, gopt);
  const std::vector<Configuration> pool = paired_pool(mo.results, field<int>(h, "paired_top"));
  const json paired = field<json>(record, "paired");
  if (field<std::vector<Configuration>>(paired, "configs") != pool)
    throw Error("replay", "the re-derived paired pool differs from the record's");
  const auto rounds = field<std::vector<std::vector<double>>>(paired, "rounds");
  return pool.at(argmin(paired_medians(rounds, pool.size(), statistic)));
}

AppliedConfiguration apply_record(const graph::Model& model, const nlohmann::json& record) {
  if (field<size_t>(record, "model_nodes") != model.graph.nodes.size())
    throw Error("tuning", "the record was made for a model with " +
                              std::to_string(field<size_t>(record, "model_nodes")) +
                              " nodes, this one has " + std::to_string(model.graph.nodes.size()));
  const DecisionSpace space = space_from_record(record);
  const Configuration c = chosen_from_record(record);
  Applier applier(model, space, runtime::default_pass_options());
  return applier.apply(c);
}

nlohmann::json read_record(const std::string& path) {
  try {
    json j = json::parse(read_file(path));
    if (!j.is_object() || j.value("format", "") != "tailor.tune/1")
      throw Error(path, "not a tailor tune decision record (format tailor.tune/1)");
    return j;
  } catch (const json::exception& e) {
    throw Error(path, std::string("bad JSON: ") + e.what());
  }
}

}  // namespace tailor::tune
