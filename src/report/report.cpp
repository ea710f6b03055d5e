// make_report (the planner's curve and solver comparison, per-layer rows),
// report.json and verify.json.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "tailor/core/error.h"
#include "tailor/io/atomic_file.h"
#include "tailor/report/report.h"

namespace tailor::report {
namespace {

using Json = nlohmann::json;
using OJson = nlohmann::ordered_json;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

OJson number(double v) {
  return std::isfinite(v) ? OJson(v) : OJson(nullptr);
}

/// The number `key` of `j`, finite and within [lo, hi]; NaN when absent or
/// null and not required.
double number_field(const Json& j, const char* key, const std::string& where,
                    const std::string& path, bool required, double lo = -HUGE_VAL,
                    double hi = HUGE_VAL) {
  if (!j.contains(key) || j[key].is_null()) {
    if (required) throw Error(path, where + "missing field \"" + key + "\"");
    return kNaN;
  }
  if (!j[key].is_number()) throw Error(path, where + "\"" + key + "\" must be a number");
  const double v = j[key].get<double>();
  if (!std::isfinite(v)) throw Error(path, where + "\"" + key + "\" must be finite");
  if (v < lo || v > hi) {
    const std::string range =
        std::isinf(hi) ? fmt::format("≥ {}", lo) : fmt::format("in [{}, {}]", lo, hi);
    throw Error(path, where + "\"" + key + "\" must be " + range + ", found " + j[key].dump());
  }
  return v;
}

std::string string_field(const Json& j, const char* key, const std::string& where,
                         const std::string& path) {
  if (!j.contains(key)) throw Error(path, where + "missing field \"" + key + "\"");
  if (!j[key].is_string()) throw Error(path, where + "\"" + key + "\" must be a string");
  return j[key].get<std::string>();
}

/// R of "lowrank-rR"; -1 for any other label (so those sort first).
int64_t lowrank_rank(const std::string& label) {
  static const std::string prefix = "lowrank-r";
  if (label.rfind(prefix, 0) != 0) return -1;
  try {
    return std::stoll(label.substr(prefix.size()));
  } catch (const std::exception&) {
    return -1;
  }
}

// `<figure>_low` and `<figure>_high`: both or neither, low ≤ high, and only
// beside the figure itself.
Interval interval_field(const Json& j, const std::string& figure, double value,
                        const std::string& path) {
  const std::string lo_key = figure + "_low", hi_key = figure + "_high";
  const Interval i{number_field(j, lo_key.c_str(), "", path, false, 0),
                   number_field(j, hi_key.c_str(), "", path, false, 0)};
  if (std::isnan(i.low) != std::isnan(i.high))
    throw Error(path, "\"" + lo_key + "\" and \"" + hi_key + "\" must be given together");
  if (std::isnan(i.low)) return i;
  if (std::isnan(value)) throw Error(path, "\"" + lo_key + "\" without \"" + figure + "\"");
  if (i.low > i.high)
    throw Error(path, fmt::format("\"{}\" {} exceeds \"{}\" {}", lo_key, i.low, hi_key, i.high));
  return i;
}

}  // namespace

Verification read_verification(const std::string& path) {
  Json j;
  try {
    j = Json::parse(read_file(path));
  } catch (const Json::exception& e) {  // parse_error, or out_of_range for 1e400
    throw Error(path, std::string("not valid JSON: ") + e.what());
  }
  if (!j.is_object()) throw Error(path, "expected a JSON object");
  Verification v;
  if (j.contains("inputs")) {
    if (!j["inputs"].is_number_integer() || j["inputs"].get<int64_t>() < 0)
      throw Error(path, "\"inputs\" must be an integer ≥ 0");
    v.inputs = j["inputs"].get<int64_t>();
  }
  if (!j.contains("outputs") || !j["outputs"].is_array())
    throw Error(path, "\"outputs\" must be an array");
  for (size_t i = 0; i < j["outputs"].size(); ++i) {
    const Json& o = j["outputs"][i];
    const std::string where = "outputs[" + std::to_string(i) + "]: ";
    if (!o.is_object()) throw Error(path, where + "expected a JSON object");
    v.outputs.push_back({string_field(o, "name", where, path),
                         number_field(o, "rel_error", where, path, true, 0),
                         number_field(o, "cosine", where, path, true, -1, 1)});
  }
  if (j.contains("metric") && !j["metric"].is_null()) {
    const Json& m = j["metric"];
    if (!m.is_object()) throw Error(path, "\"metric\" must be an object or null");
    v.metric = TaskMetric{string_field(m, "name", "metric: ", path),
                          number_field(m, "original", "metric: ", path, true),
                          number_field(m, "compressed", "metric: ", path, true)};
  }
  if (j.contains("saliency") && !j["saliency"].is_null()) {
    const Json& m = j["saliency"];
    if (!m.is_object()) throw Error(path, "\"saliency\" must be an object or null");
    SaliencyCheck sc;
    sc.output = string_field(m, "output", "saliency: ", path);
    sc.threshold = number_field(m, "threshold", "saliency: ", path, true);
    sc.mae = number_field(m, "mae", "saliency: ", path, true, 0);
    sc.iou = number_field(m, "iou", "saliency: ", path, true, 0, 1);
    if (!m.contains("inputs") || !m["inputs"].is_array())
      throw Error(path, "saliency: \"inputs\" must be an array");
    for (size_t i = 0; i < m["inputs"].size(); ++i) {
      const Json& e = m["inputs"][i];
      const std::string where = "saliency: inputs[" + std::to_string(i) + "]: ";
      if (!e.is_object()) throw Error(path, where + "expected a JSON object");
      sc.inputs.push_back({string_field(e, "input", where, path),
                           number_field(e, "mae", where, path, true, 0),
                           number_field(e, "iou", where, path, true, 0, 1)});
    }
    v.saliency = std::move(sc);
  }
  v.predicted_error = number_field(j, "predicted_error", "", path, false, 0);
  v.measured_error = number_field(j, "measured_error", "", path, false, 0);
  static const char* const kDamageFields[] = {"predicted_damage",       "measured_damage",
                                              "measured_damage_low",    "measured_damage_high",
                                              "calibration_damage",     "calibration_damage_low",
                                              "calibration_damage_high"};
  if (j.contains("damage_metric")) {
    v.damage_metric = string_field(j, "damage_metric", "", path);
    v.predicted_damage = number_field(j, "predicted_damage", "", path, false, 0);
    v.measured_damage = number_field(j, "measured_damage", "", path, false, 0);
    v.measured_interval = interval_field(j, "measured_damage", v.measured_damage, path);
    v.calibration_damage = number_field(j, "calibration_damage", "", path, false, 0);
    v.calibration_interval = interval_field(j, "calibration_damage", v.calibration_damage, path);
  } else {
    for (const char* key : kDamageFields)
      if (j.contains(key) && !j[key].is_null())
        throw Error(path, std::string("\"") + key + "\" needs \"damage_metric\" (its unit)");
  }
  return v;
}

Report make_report(const ModelProfile& profile, const plan::Plan& chosen,
                   const std::string& plan_source, const plan::PlanStudy& study,
                   std::optional<Verification> verification) {
  const std::vector<int> picked = plan::find_candidates(profile, chosen, plan_source);

  Report r;
  r.model = profile.model;
  r.dense_bytes = profile.dense_bytes;
  r.fixed_bytes = profile.fixed_bytes;
  r.plan = chosen;
  r.verification = std::move(verification);
  r.curve = study.curve;
  if (!study.solvers.empty()) {
    const double exact_objective = study.solvers.front().objective_value;
    for (const plan::Plan& p : study.solvers)
      r.solvers.push_back({p.solver, p.objective_value, p.total_bytes,
                           p.objective_value - exact_objective, p.seconds, p.nodes,
                           p.proven_optimal});
  }

  // Per-layer rows and the layer × scheme map.
  // Columns: labels in first-seen order, low-rank ones last by ascending rank.
  for (const LayerProfile& l : profile.layers)
    for (const Candidate& c : l.candidates)
      if (std::find(r.schemes.begin(), r.schemes.end(), c.label) == r.schemes.end())
        r.schemes.push_back(c.label);
  std::stable_sort(
      r.schemes.begin(), r.schemes.end(),
      [](const std::string& a, const std::string& b) { return lowrank_rank(a) < lowrank_rank(b); });
  std::map<std::string, size_t> column;
  for (size_t k = 0; k < r.schemes.size(); ++k) column[r.schemes[k]] = k;
  for (size_t i = 0; i < profile.layers.size(); ++i) {
    const LayerProfile& l = profile.layers[i];
    const Candidate& c = l.candidates[picked[i]];
    LayerRow row{l.name,
                 l.shape_out_in,
                 l.dense_bytes,
                 c.bytes,
                 c.label,
                 c.rel_error,
                 std::vector<double>(r.schemes.size(), kNaN)};
    for (const Candidate& k : l.candidates) row.scheme_errors[column.at(k.label)] = k.rel_error;
    r.layers.push_back(std::move(row));
  }
  return r;
}

std::string report_to_json(const Report& r) {
  auto percent = [&](int64_t bytes) {
    return r.dense_bytes > 0 ? OJson(100.0 * double(bytes) / double(r.dense_bytes))
                             : OJson(nullptr);
  };
  OJson curve = OJson::array();
  for (const CurvePoint& p : r.curve)
    curve.push_back({{"budget_bytes", p.budget_bytes},
                     {"budget_percent", percent(p.budget_bytes)},
                     {"total_bytes", p.total_bytes},
                     {"objective", number(p.objective)},
                     {"proven_optimal", p.proven_optimal}});
  OJson solvers = OJson::array();
  for (const SolverRow& s : r.solvers)
    solvers.push_back({{"solver", s.solver},
                       {"objective", number(s.objective)},
                       {"total_bytes", s.total_bytes},
                       {"gap_to_exact", number(s.gap_to_exact)},
                       {"seconds", s.seconds},
                       {"nodes", s.nodes},
                       {"proven_optimal", s.proven_optimal}});
  OJson layers = OJson::array();
  for (const LayerRow& l : r.layers) {
    OJson errors = OJson::object();
    for (size_t k = 0; k < r.schemes.size(); ++k)
      if (std::isfinite(l.scheme_errors[k])) errors[r.schemes[k]] = l.scheme_errors[k];
    layers.push_back({{"name", l.name},
                      {"shape_out_in", l.shape_out_in},
                      {"dense_bytes", l.dense_bytes},
                      {"bytes", l.bytes},
                      {"label", l.label},
                      {"rel_error", l.rel_error},
                      {"scheme_errors", std::move(errors)}});
  }
  OJson verification = nullptr;
  if (r.verification) {
    const Verification& v = *r.verification;
    OJson outputs = OJson::array();
    for (const OutputError& o : v.outputs)
      outputs.push_back(
          {{"name", o.name}, {"rel_error", number(o.rel_error)}, {"cosine", number(o.cosine)}});
    OJson metric = nullptr;
    if (v.metric)
      metric = {{"name", v.metric->name},
                {"original", number(v.metric->original)},
                {"compressed", number(v.metric->compressed)}};
    OJson saliency = nullptr;
    if (v.saliency) {
      OJson per = OJson::array();
      for (const MaskScore& m : v.saliency->inputs)
        per.push_back({{"input", m.input}, {"mae", number(m.mae)}, {"iou", number(m.iou)}});
      saliency = {{"output", v.saliency->output},
                  {"threshold", number(v.saliency->threshold)},
                  {"mae", number(v.saliency->mae)},
                  {"iou", number(v.saliency->iou)},
                  {"inputs", std::move(per)}};
    }
    verification = {{"inputs", v.inputs},
                    {"outputs", std::move(outputs)},
                    {"metric", std::move(metric)},
                    {"saliency", std::move(saliency)},
                    {"predicted_error", number(v.predicted_error)},
                    {"measured_error", number(v.measured_error)}};
    if (!v.damage_metric.empty()) {
      verification["damage_metric"] = v.damage_metric;
      verification["predicted_damage"] = number(v.predicted_damage);
      verification["measured_damage"] = number(v.measured_damage);
      verification["measured_damage_low"] = number(v.measured_interval.low);
      verification["measured_damage_high"] = number(v.measured_interval.high);
      verification["calibration_damage"] = number(v.calibration_damage);
      verification["calibration_damage_low"] = number(v.calibration_interval.low);
      verification["calibration_damage_high"] = number(v.calibration_interval.high);
    }
  }
  OJson measured = OJson::array();
  for (const MeasuredPlan& m : r.measured)
    measured.push_back({{"name", m.name},
                        {"bytes", m.bytes},
                        {"damage", number(m.damage)},
                        {"damage_low", number(m.interval.low)},
                        {"damage_high", number(m.interval.high)},
                        {"kept", m.kept},
                        {"in_sample", m.in_sample}});
  OJson out = {{"report_version", 1},
               {"model", r.model},
               {"dense_bytes", r.dense_bytes},
               {"fixed_bytes", r.fixed_bytes},
               {"total_bytes", r.plan.total_bytes},
               {"total_percent", percent(r.plan.total_bytes)},
               {"plan", OJson::parse(plan::plan_to_json(r.plan))},
               {"error_vs_budget", std::move(curve)},
               {"solvers", std::move(solvers)},
               {"schemes", r.schemes},
               {"layers", std::move(layers)},
               {"verification", std::move(verification)},
               {"measured_metric", r.measured_metric},
               {"measured_plans", std::move(measured)}};
  if (std::isfinite(r.latency_compressed_ms))
    out["measured_latency"] = {{"original_ms", number(r.latency_original_ms)},
                               {"compressed_ms", number(r.latency_compressed_ms)},
                               {"clock", "cpu time, 1 thread, interleaved medians"}};
  return out.dump(2, ' ', false, OJson::error_handler_t::replace) + "\n";
}

void write_report(const std::string& out_dir, const Report& report) {
  const std::string html = report_to_html(report);
  const std::string json = report_to_json(report);
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  if (ec) throw Error(out_dir, "cannot create the folder: " + ec.message());
  const std::filesystem::path dir(out_dir);
  write_file_atomic((dir / "report.json").string(), json);
  write_file_atomic((dir / "report.html").string(), html);
}

}  // namespace tailor::report
