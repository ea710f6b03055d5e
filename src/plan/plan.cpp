#include "tailor/plan/plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <type_traits>

#include "tailor/core/checked.h"
#include "tailor/core/error.h"
#include "tailor/core/json.h"
#include "tailor/io/atomic_file.h"
#include "tailor/plan/cem.h"
#include "tailor/plan/dado.h"
#include "tailor/plan/exact.h"
#include "tailor/plan/greedy.h"
#include "tailor/plan/gumbel.h"
#include "tailor/plan/two_budget.h"

namespace tailor::plan {

const std::vector<std::string>& solver_names() {
  static const std::vector<std::string> names{"exact", "greedy", "cem", "dado", "gumbel"};
  return names;
}

Solution solve(const std::string& name, const Problem& problem, const SolveOptions& options) {
  if (problem.has_latency() && name != "exact")
    throw Error(
        "--solver",
        "only exact plans under two budgets (--max-latency, --max-macs); got \"" + name + "\"");
  if (name == "exact") return solve_exact(problem, options);
  if (name == "greedy") return solve_greedy(problem, options);
  if (name == "cem") return solve_cem(problem, options);
  if (name == "dado") return solve_dado(problem, options);
  if (name == "gumbel") return solve_gumbel(problem, options);
  throw Error("--solver", "unknown solver \"" + name +
                              "\" (expected exact, greedy, cem, dado or gumbel" +
                              "; `tailor plan` also takes all)");
}

Plan make_plan(const ModelProfile& profile, const Problem& problem, const Solution& solution,
               const std::string& solver, Objective objective, uint64_t seed) {
  Plan plan;
  plan.model = profile.model;
  plan.budget_bytes = problem.budget + problem.fixed_bytes;
  plan.fixed_bytes = problem.fixed_bytes;
  plan.total_bytes =
      checked_add(problem.fixed_bytes, solution.bytes, problem.source, "the plan's byte total");
  plan.solver = solver;
  plan.objective = objective_name(objective);
  plan.seed = seed;
  plan.objective_value = solution.objective;
  plan.lower_bound = solution.lower_bound;
  plan.gap = solution.objective - solution.lower_bound;
  plan.proven_optimal = solution.proven_optimal;
  if (problem.has_latency()) {
    plan.latency_unit = problem.latency_unit;
    plan.max_latency = problem.latency_budget + problem.fixed_latency;
    plan.predicted_latency = problem.fixed_latency + choice_latency(problem, solution.choice);
  }
  plan.seconds = solution.seconds;
  plan.nodes = solution.nodes;
  for (size_t i = 0; i < profile.layers.size(); ++i) {
    const Candidate& c = profile.layers[i].candidates[solution.choice[i]];
    plan.choices.push_back({profile.layers[i].name, c.label, c.rel_error, c.bytes});
  }
  return plan;
}

std::vector<Plan> solve_plans(const ModelProfile& profile, const Problem& problem,
                              const std::vector<std::string>& solvers, const SolveOptions& options,
                              Objective objective) {
  std::vector<Plan> plans;
  for (const std::string& name : solvers)
    plans.push_back(
        make_plan(profile, problem, solve(name, problem, options), name, objective, options.seed));
  return plans;
}

// plan.json holds no wall-clock time (Plan::seconds goes to the log and the
// report): the same inputs give the same bytes.
std::string plan_to_json(const Plan& plan) {
  using OJson = nlohmann::ordered_json;
  auto number = [](double v) { return std::isfinite(v) ? OJson(v) : OJson(nullptr); };
  OJson choices = OJson::array();
  for (const PlanChoice& c : plan.choices)
    choices.push_back(
        {{"layer", c.layer}, {"label", c.label}, {"rel_error", c.rel_error}, {"bytes", c.bytes}});
  OJson out = {{"model", plan.model},
               {"budget_bytes", plan.budget_bytes},
               {"fixed_bytes", plan.fixed_bytes},
               {"total_bytes", plan.total_bytes},
               {"solver", plan.solver},
               {"objective", plan.objective},
               {"seed", plan.seed},
               {"objective_value", number(plan.objective_value)},
               {"lower_bound", number(plan.lower_bound)},
               {"gap", number(plan.gap)},
               {"proven_optimal", plan.proven_optimal},
               {"nodes", plan.nodes},
               {"choices", std::move(choices)}};
  if (!plan.latency_unit.empty()) {
    out["latency_unit"] = plan.latency_unit;
    out["max_latency"] = number(plan.max_latency);
    out["predicted_latency"] = number(plan.predicted_latency);
  }
  return out.dump(2) + "\n";
}

void write_plan(const std::string& path, const Plan& plan) {
  write_file_atomic(path, plan_to_json(plan));
}

namespace {

template <typename T>
T get(const nlohmann::json& j, const char* key, const std::string& path, const std::string& where) {
  const auto it = j.find(key);
  if (it == j.end()) throw Error(path, where + "missing field \"" + key + "\"");
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>)  // get<> truncates 1.5 to 1
    if (!it->is_number_integer())
      throw Error(path, where + "field \"" + key + "\" must be an integer: " + it->dump());
  if constexpr (std::is_unsigned_v<T> && !std::is_same_v<T, bool>)  // -1 read as 2^64 - 1
    if (!it->is_number_unsigned())
      throw Error(path, where + "field \"" + key + "\" must be an integer >= 0: " + it->dump());
  try {
    return it->get<T>();
  } catch (const nlohmann::json::exception&) {
    throw Error(path, where + "field \"" + key + "\" has the wrong type: " + it->dump());
  }
}

double bound(const nlohmann::json& j, const char* key, const std::string& path) {
  if (j.contains(key) && j[key].is_null()) return std::nan("");
  return get<double>(j, key, path, "");
}

}  // namespace

Plan read_plan(const std::string& path) {
  nlohmann::json j;
  try {
    j = parse_json_unique_keys(read_file(path), path);
  } catch (const nlohmann::json::parse_error& e) {
    throw Error(path, std::string("not valid JSON: ") + e.what());
  }
  if (!j.is_object()) throw Error(path, "expected a JSON object");
  Plan p;
  p.model = get<std::string>(j, "model", path, "");
  p.budget_bytes = get<int64_t>(j, "budget_bytes", path, "");
  p.fixed_bytes = j.contains("fixed_bytes") ? get<int64_t>(j, "fixed_bytes", path, "") : 0;
  p.total_bytes = get<int64_t>(j, "total_bytes", path, "");
  p.solver = get<std::string>(j, "solver", path, "");
  p.objective = get<std::string>(j, "objective", path, "");
  if (j.contains("seed") && !j["seed"].is_number_unsigned())
    throw Error(path, "\"seed\" must be an integer in [0, 2^64), found " + j["seed"].dump());
  p.seed = j.contains("seed") ? get<uint64_t>(j, "seed", path, "") : 0;
  p.objective_value = bound(j, "objective_value", path);
  p.lower_bound = bound(j, "lower_bound", path);
  p.gap = j.contains("gap") ? bound(j, "gap", path) : p.objective_value - p.lower_bound;
  p.proven_optimal = j.contains("proven_optimal") && get<bool>(j, "proven_optimal", path, "");
  p.seconds = j.contains("seconds") ? get<double>(j, "seconds", path, "") : 0;
  p.nodes = j.contains("nodes") ? get<int64_t>(j, "nodes", path, "") : 0;
  if (j.contains("latency_unit")) {
    p.latency_unit = get<std::string>(j, "latency_unit", path, "");
    p.max_latency = bound(j, "max_latency", path);
    p.predicted_latency = bound(j, "predicted_latency", path);
  }
  const auto& choices = get<nlohmann::json>(j, "choices", path, "");
  if (!choices.is_array()) throw Error(path, "\"choices\" must be an array");
  for (size_t i = 0; i < choices.size(); ++i) {
    const std::string where = "choices[" + std::to_string(i) + "]: ";
    if (!choices[i].is_object()) throw Error(path, where + "expected a JSON object");
    PlanChoice c{get<std::string>(choices[i], "layer", path, where),
                 get<std::string>(choices[i], "label", path, where),
                 get<double>(choices[i], "rel_error", path, where),
                 get<int64_t>(choices[i], "bytes", path, where)};
    if (c.layer.empty()) throw Error(path, where + "empty \"layer\"");
    if (!(std::isfinite(c.rel_error) && c.rel_error >= 0))
      throw Error(path, where + "\"rel_error\" must be finite and ≥ 0, found " +
                            choices[i]["rel_error"].dump());
    if (c.bytes < 0) throw Error(path, where + "\"bytes\" must be ≥ 0");
    p.choices.push_back(std::move(c));
  }
  for (const auto& [key, v] : {std::pair{"budget_bytes", p.budget_bytes},
                               {"fixed_bytes", p.fixed_bytes},
                               {"total_bytes", p.total_bytes}})
    if (v < 0) throw Error(path, std::string("\"") + key + "\" must be ≥ 0");
  int64_t sum = p.fixed_bytes;
  for (const PlanChoice& c : p.choices)
    sum = checked_add(sum, c.bytes, path, "fixed_bytes plus the choices' bytes");
  if (sum != p.total_bytes)
    throw Error(path, fmt::format("\"total_bytes\" is {}, but fixed_bytes plus the choices' bytes "
                                  "is {}",
                                  p.total_bytes, sum));
  const auto& names = solver_names();
  if (std::find(names.begin(), names.end(), p.solver) == names.end() &&
      p.solver.rfind("uniform ", 0) != 0)
    throw Error(path, "\"solver\" \"" + p.solver +
                          "\" is none of exact, greedy, cem, dado, gumbel or \"uniform LABEL\"");
  return p;
}

}  // namespace tailor::plan
