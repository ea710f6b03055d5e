// The decision record's JSON boundary: decisions.json ↔ TuneRecord.
#include "tailor/tune/record.h"

#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "tailor/core/error.h"
#include "tailor/core/json.h"
#include "tailor/io/atomic_file.h"

namespace tailor::tune {

namespace {

using json = nlohmann::json;

const json& at(const json& j, const char* name) {
  if (!j.is_object() || !j.contains(name))
    throw Error("decision record", std::string("missing field \"") + name + "\"");
  return j.at(name);
}

template <class T>
struct IsVector : std::false_type {};
template <class U>
struct IsVector<std::vector<U>> : std::true_type {};
template <class T>
struct IsStringMap : std::false_type {};
template <class U>
struct IsStringMap<std::map<std::string, U>> : std::true_type {};

// nlohmann's get<int> truncates 1.7 to 1 and wraps 4294967297 to 1: an
// integer field (or an element of one) holding a fraction, any other
// non-integer, or an integer outside its type (a negative count) is refused.
template <class T>
void require_integers(const json& v, const char* name) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    using Limits = std::numeric_limits<T>;
    const bool fits = v.is_number_unsigned()
                          ? v.get<uint64_t>() <= static_cast<uint64_t>(Limits::max())
                          : v.is_number_integer() && std::is_signed_v<T> &&  // a negative integer
                                v.get<int64_t>() >= static_cast<int64_t>(Limits::min());
    if (!fits)
      throw Error("decision record", std::string("field \"") + name + "\": expected an integer " +
                                         (std::is_signed_v<T> ? "" : ">= 0 ") + "in range, got " +
                                         v.dump());
  } else if constexpr (IsVector<T>::value) {
    if (v.is_array())
      for (const json& e : v) require_integers<typename T::value_type>(e, name);
  } else if constexpr (IsStringMap<T>::value) {
    if (v.is_object())
      for (const auto& e : v.items()) require_integers<typename T::mapped_type>(e.value(), name);
  }
}

template <class T>
T field(const json& j, const char* name) {
  try {
    require_integers<T>(at(j, name), name);
    return at(j, name).get<T>();
  } catch (const json::exception& e) {
    throw Error("decision record", std::string("field \"") + name + "\": " + e.what());
  }
}

json optional_number(const std::optional<double>& v) {
  return v ? json(*v) : json();
}

}  // namespace

double MeasuredConfiguration::latency_ms(const std::string& statistic) const {
  return statistic == "min" ? min_ms : median_ms;
}

void to_json(json& j, const MeasuredConfiguration& m) {
  json check = {{"ok", m.ok},
                {"max_rel_error", std::isfinite(m.max_rel_error) ? json(m.max_rel_error) : json()}};
  if (!m.ok) check["error"] = m.error;
  j = {{"config", m.config},       {"key", m.key},
       {"check", check},           {"times_ms", m.times_ms},
       {"median_ms", m.median_ms}, {"min_ms", m.min_ms},
       {"mad_ms", m.mad_ms},       {"peak_bytes", m.peak_bytes},
       {"cost_s", m.cost_s}};
}

void from_json(const json& j, MeasuredConfiguration& m) {
  m.config = field<Configuration>(j, "config");
  m.key = field<std::string>(j, "key");
  const json& check = at(j, "check");
  m.ok = field<bool>(check, "ok");
  const json& e = at(check, "max_rel_error");
  m.max_rel_error = e.is_null() ? std::numeric_limits<double>::quiet_NaN() : e.get<double>();
  m.error = m.ok ? "" : field<std::string>(check, "error");
  m.times_ms = field<std::vector<double>>(j, "times_ms");
  m.median_ms = field<double>(j, "median_ms");
  m.min_ms = field<double>(j, "min_ms");
  m.mad_ms = field<double>(j, "mad_ms");
  m.peak_bytes = field<int64_t>(j, "peak_bytes");
  m.cost_s = field<double>(j, "cost_s");
}

void to_json(json& j, const TuneRecord& r) {
  json decisions = json::array();
  for (const auto& x : r.space.decisions)
    decisions.push_back({{"name", x.name},
                         {"kind", x.kind},
                         {"choices", x.choices},
                         {"default", x.default_choice}});
  json methods = json::array();
  for (const MethodTrials& m : r.methods) {
    json trials = json::array();
    for (const Trial& t : m.trials) trials.push_back({{"measured", t.measured}, {"key", t.key}});
    methods.push_back({{"name", m.name}, {"trials", trials}, {"best_key", m.best_key}});
  }
  json table = json::array();
  for (const MethodRow& row : r.table)
    table.push_back({{"method", row.method},
                     {"best_ms", row.best_ms},
                     {"speedup", row.speedup},
                     {"measurements", row.measurements},
                     {"tuning_s", row.tuning_s},
                     {"peak_bytes", row.peak_bytes}});
  json value_shapes = json::object();
  for (const auto& [k, v] : r.value_shapes) value_shapes[k] = v;
  json input_shapes = json::object();
  for (const auto& [k, v] : r.input_shapes) input_shapes[k] = v;
  json chosen_decisions = json::object();
  for (const auto& [k, v] : r.chosen.decisions) chosen_decisions[k] = v;
  const HarnessOptions& h = r.harness;
  const GradientOptions& g = r.gradient;
  j = {{"format", "tailor.tune/1"},
       {"model", r.model},
       {"model_nodes", r.model_nodes},
       {"seed", r.seed},
       {"measurements", r.measurements},
       {"threads", r.threads},
       {"input_shapes", input_shapes},
       {"value_shapes", value_shapes},
       {"harness",
        {{"warmup", h.warmup},
         {"repeats", h.repeats},
         {"tolerance", h.tolerance},
         {"check_inputs", h.check_inputs},
         {"statistic", h.statistic},
         {"clock", h.clock},
         {"error", h.error},
         {"paired_rounds", r.paired_rounds},
         {"paired_top", r.paired_top}}},
       {"gradient",
        {{"inner_steps", g.inner_steps},
         {"logit_lr", g.logit_lr},
         {"fit_iterations", g.fit_iterations},
         {"fit_lr", g.fit_lr},
         {"tau", g.tau},
         {"prior", g.prior},
         {"anchor", g.anchor},
         {"screen", g.screen}}},
       {"space", {{"points", r.space.points()}, {"decisions", decisions}}},
       {"measured", r.measured},
       {"screened", r.screened},
       {"methods", methods},
       {"cost_model",
        {{"initial", r.cost_model.initial.to_json(feature_names())},
         {"fitted", r.cost_model.fitted.to_json(feature_names())},
         {"held_out", r.cost_model.held_out},
         {"spearman_held_out", optional_number(r.cost_model.spearman_held_out)}}},
       {"paired",
        {{"pool", r.paired.pool},
         {"configs", r.paired.configs},
         {"rounds", r.paired.rounds},
         {"latency_ms", r.paired.latency_ms}}},
       {"table", table},
       {"chosen",
        {{"config", r.chosen.config},
         {"key", r.chosen.key},
         {"latency_ms", r.chosen.latency_ms},
         {"decisions", chosen_decisions}}}};
}

namespace {

void require(bool ok, const std::string& what) {
  if (!ok) throw Error("decision record", what);
}

bool finite_at_least(double v, double lo) {
  return std::isfinite(v) && v >= lo;
}

// What from_json read, checked against itself: the settings within what
// `tailor tune` accepts, every configuration valid in the space and named
// by its key, every index and table the size its counterpart says.
void check_record(const TuneRecord& r) {
  const HarnessOptions& h = r.harness;
  require(r.measurements >= 0, "\"measurements\" must be >= 0");
  require(r.threads >= 0 && r.threads <= 1024, "\"threads\" must be in 0..1024");
  require(h.warmup >= 0 && h.repeats >= 1 && h.check_inputs >= 1,
          "harness: \"warmup\" must be >= 0, \"repeats\" and \"check_inputs\" >= 1");
  require(finite_at_least(h.tolerance, 0), "harness: \"tolerance\" must be finite and >= 0");
  require(h.statistic == "median" || h.statistic == "min",
          "harness: \"statistic\" must be \"median\" or \"min\", got \"" + h.statistic + "\"");
  require(h.clock == "wall" || h.clock == "cpu",
          "harness: \"clock\" must be \"wall\" or \"cpu\", got \"" + h.clock + "\"");
  require(h.error == "max" || h.error == "mean",
          "harness: \"error\" must be \"max\" or \"mean\", got \"" + h.error + "\"");
  require(r.paired_rounds >= 1 && r.paired_top >= 1,
          "harness: \"paired_rounds\" and \"paired_top\" must be >= 1");
  const GradientOptions& g = r.gradient;
  require(g.inner_steps >= 1 && g.inner_steps <= 100000 && g.fit_iterations >= 0 &&
              g.fit_iterations <= 1000000,
          "gradient: \"inner_steps\" must be in 1..100000 and \"fit_iterations\" in 0..1000000");
  require(finite_at_least(g.logit_lr, 0) && finite_at_least(g.fit_lr, 0) && g.tau > 0 &&
              std::isfinite(g.tau) && finite_at_least(g.prior, 0) && finite_at_least(g.anchor, 0),
          "gradient: \"logit_lr\", \"fit_lr\", \"prior\" and \"anchor\" must be finite and "
          ">= 0, \"tau\" finite and > 0");
  for (const ValueShapes* shapes : {&r.input_shapes, &r.value_shapes})
    for (const auto& [name, dims] : *shapes)
      for (int64_t d : dims) require(d >= 0, "shape of '" + name + "' has a negative dimension");
  std::set<std::string> names;
  for (const Decision& d : r.space.decisions) {
    require(names.insert(d.name).second, "space: decision '" + d.name + "' appears twice");
    require(!d.choices.empty() && d.default_choice >= 0 &&
                d.default_choice < static_cast<int>(d.choices.size()),
            "space: decision '" + d.name + "' has no choices or a default outside them");
  }
  auto valid = [&](const Configuration& c, const std::string& where) {
    try {
      r.space.validate(c);
    } catch (const Error& e) {
      throw Error("decision record", where + ": " + e.message());
    }
  };
  for (size_t i = 0; i < r.measured.size(); ++i) {
    const MeasuredConfiguration& m = r.measured[i];
    const std::string where = "measured[" + std::to_string(i) + "]";
    valid(m.config, where);
    require(m.key == DecisionSpace::key(m.config), where + ": \"key\" is not its configuration's");
    require(m.ok != m.times_ms.empty(), where +
                                            ": \"times_ms\" must be empty exactly when the "
                                            "check failed");
    for (double t : m.times_ms) require(finite_at_least(t, 0), where + ": a time is not >= 0");
    require(finite_at_least(m.median_ms, 0) && finite_at_least(m.min_ms, 0) &&
                finite_at_least(m.mad_ms, 0) && finite_at_least(m.cost_s, 0) && m.peak_bytes >= 0,
            where + ": times, cost and peak bytes must be finite and >= 0");
  }
  // The gradient screen's checks: each one approximate choice on the
  // default, checked once, never timed, its check consistent with itself
  // and with a measurement of the same configuration.
  std::map<std::string, const MeasuredConfiguration*> measured_by_key;
  for (const MeasuredConfiguration& m : r.measured) measured_by_key[m.key] = &m;
  const Configuration def = r.space.default_configuration();
  std::set<std::string> screened_keys;
  for (size_t i = 0; i < r.screened.size(); ++i) {
    const MeasuredConfiguration& m = r.screened[i];
    const std::string where = "screened[" + std::to_string(i) + "]";
    valid(m.config, where);
    require(m.key == DecisionSpace::key(m.config), where + ": \"key\" is not its configuration's");
    require(screened_keys.insert(m.key).second,
            where + ": configuration " + m.key + " is screened twice");
    int changed = 0;
    bool approximate = true;
    for (size_t d = 0; d < m.config.size(); ++d)
      if (m.config[d] != def[d]) {
        ++changed;
        approximate = approximate && is_approximate(r.space.decisions[d]);
      }
    require(changed == 1 && approximate,
            where + ": a screened configuration is one approximate choice on the default");
    require(m.times_ms.empty() && m.median_ms == 0 && m.min_ms == 0 && m.mad_ms == 0 &&
                m.peak_bytes == 0,
            where + ": a screened configuration is never timed");
    require(finite_at_least(m.cost_s, 0), where + ": cost must be finite and >= 0");
    require(std::isnan(m.max_rel_error) || m.max_rel_error >= 0,
            where + ": \"max_rel_error\" must be >= 0 or null");
    require(!m.ok || m.max_rel_error <= h.tolerance,
            where + ": \"ok\" but \"max_rel_error\" is past the tolerance");
    if (const auto it = measured_by_key.find(m.key); it != measured_by_key.end()) {
      const MeasuredConfiguration& t = *it->second;
      require(t.ok == m.ok && (t.max_rel_error == m.max_rel_error ||
                               (std::isnan(t.max_rel_error) && std::isnan(m.max_rel_error))),
              where + ": its check differs from the measurement of the same configuration");
    }
  }
  for (const MethodTrials& m : r.methods)
    for (const Trial& t : m.trials)
      require(t.measured < r.measured.size() && r.measured[t.measured].key == t.key,
              "method '" + m.name + "': a trial names no measured configuration of its key");
  const PairedRecord& p = r.paired;
  const size_t n = p.configs.size();
  require(p.pool.size() == n && p.latency_ms.size() == n,
          "paired: \"pool\", \"configs\" and \"latency_ms\" must be the same length");
  for (size_t i = 0; i < n; ++i) {
    valid(p.configs[i], "paired.configs[" + std::to_string(i) + "]");
    require(
        p.pool[i] == DecisionSpace::key(p.configs[i]),
        "paired: pool[" + std::to_string(i) + "] is not configs[" + std::to_string(i) + "]'s key");
  }
  for (const auto& round : p.rounds)
    require(round.size() == n,
            "paired: a round of \"rounds\" does not hold one time per "
            "configuration");
  require(finite_at_least(r.chosen.latency_ms, 0),
          "chosen: \"latency_ms\" must be finite and >= 0");
  // The chosen key and decisions restate the configuration: an edit to one
  // alone would be applied by some readers and not others.
  valid(r.chosen.config, "chosen configuration");
  const std::string key = DecisionSpace::key(r.chosen.config);
  require(r.chosen.key == key, "chosen key \"" + r.chosen.key +
                                   "\" is not the chosen configuration's (\"" + key + "\")");
  const std::map<std::string, std::string> restated = r.space.named_choices(r.chosen.config);
  for (const auto& [name, choice] : restated) {
    const auto it = r.chosen.decisions.find(name);
    require(it != r.chosen.decisions.end() && it->second == choice,
            "chosen decision '" + name + "' is " +
                (it == r.chosen.decisions.end() ? "missing" : "\"" + it->second + "\"") +
                " where the chosen configuration says \"" + choice + "\"");
  }
  require(r.chosen.decisions.size() == restated.size(),
          "chosen decisions name a decision the space does not have");
}

}  // namespace

void from_json(const json& j, TuneRecord& r) {
  r.model = field<std::string>(j, "model");
  r.model_nodes = field<size_t>(j, "model_nodes");
  r.seed = field<uint64_t>(j, "seed");
  r.measurements = field<int>(j, "measurements");
  r.threads = field<int>(j, "threads");
  r.input_shapes = field<std::map<std::string, std::vector<int64_t>>>(j, "input_shapes");
  r.value_shapes = field<ValueShapes>(j, "value_shapes");
  const json& h = at(j, "harness");
  r.harness.warmup = field<int>(h, "warmup");
  r.harness.repeats = field<int>(h, "repeats");
  r.harness.tolerance = field<double>(h, "tolerance");
  r.harness.check_inputs = field<int>(h, "check_inputs");
  r.harness.statistic = field<std::string>(h, "statistic");
  r.harness.clock = field<std::string>(h, "clock");
  // Records before the error metric was recorded checked the largest error.
  r.harness.error = h.contains("error") ? field<std::string>(h, "error") : std::string("max");
  r.paired_rounds = field<int>(h, "paired_rounds");
  r.paired_top = field<int>(h, "paired_top");
  // The gradient method's settings (records before they were recorded used the defaults).
  r.gradient = GradientOptions{};
  r.gradient.screen = false;  // records before the screen did not screen
  if (j.contains("gradient")) {
    const json& g = j.at("gradient");
    require(g.is_object(), "\"gradient\" must be an object");
    GradientOptions& o = r.gradient;
    auto take = [&](const char* name, auto& value) {
      if (g.contains(name)) value = field<std::remove_reference_t<decltype(value)>>(g, name);
    };
    take("inner_steps", o.inner_steps);
    take("logit_lr", o.logit_lr);
    take("fit_iterations", o.fit_iterations);
    take("fit_lr", o.fit_lr);
    take("tau", o.tau);
    take("prior", o.prior);
    take("anchor", o.anchor);
    take("screen", o.screen);
  }
  r.space = DecisionSpace{};
  for (const json& d : at(at(j, "space"), "decisions"))
    r.space.decisions.push_back({field<std::string>(d, "name"), field<std::string>(d, "kind"),
                                 field<std::vector<std::string>>(d, "choices"),
                                 field<int>(d, "default")});
  r.measured.clear();
  for (const json& m : at(j, "measured")) r.measured.push_back(m.get<MeasuredConfiguration>());
  r.screened.clear();
  if (j.contains("screened")) {
    require(at(j, "screened").is_array(), "\"screened\" must be an array");
    for (const json& m : at(j, "screened")) r.screened.push_back(m.get<MeasuredConfiguration>());
  }
  r.methods.clear();
  for (const json& m : at(j, "methods")) {
    MethodTrials t{field<std::string>(m, "name"), {}, field<std::string>(m, "best_key")};
    for (const json& e : at(m, "trials"))
      t.trials.push_back({field<size_t>(e, "measured"), field<std::string>(e, "key")});
    r.methods.push_back(std::move(t));
  }
  const json& cm = at(j, "cost_model");
  r.cost_model.initial = CostModel::from_json(at(cm, "initial"), feature_names());
  r.cost_model.fitted = CostModel::from_json(at(cm, "fitted"), feature_names());
  r.cost_model.held_out = field<size_t>(cm, "held_out");
  const json& rho = at(cm, "spearman_held_out");
  r.cost_model.spearman_held_out =
      rho.is_null() ? std::nullopt : std::optional<double>(rho.get<double>());
  const json& p = at(j, "paired");
  r.paired = {field<std::vector<std::string>>(p, "pool"),
              field<std::vector<Configuration>>(p, "configs"),
              field<std::vector<std::vector<double>>>(p, "rounds"),
              field<std::vector<double>>(p, "latency_ms")};
  r.table.clear();
  for (const json& t : at(j, "table"))
    r.table.push_back({field<std::string>(t, "method"), field<double>(t, "best_ms"),
                       field<double>(t, "speedup"), field<int>(t, "measurements"),
                       field<double>(t, "tuning_s"), field<int64_t>(t, "peak_bytes")});
  const json& c = at(j, "chosen");
  r.chosen = {field<Configuration>(c, "config"), field<std::string>(c, "key"),
              field<double>(c, "latency_ms"),
              field<std::map<std::string, std::string>>(c, "decisions")};
  check_record(r);
}

TuneRecord read_record(const std::string& path) {
  try {
    const json j = parse_json_unique_keys<json>(read_file(path), path);
    if (!j.is_object() || j.value("format", "") != "tailor.tune/1")
      throw Error(path, "not a tailor tune decision record (format tailor.tune/1)");
    return j.get<TuneRecord>();
  } catch (const json::exception& e) {
    throw Error(path, std::string("bad JSON: ") + e.what());
  } catch (const Error& e) {
    if (e.source() == path) throw;
    throw Error(path, (e.source().empty() ? "" : e.source() + ": ") + e.message());
  }
}

void write_record(const std::string& path, const TuneRecord& record) {
  write_file_atomic(path, json(record).dump(1));
}

}  // namespace tailor::tune
