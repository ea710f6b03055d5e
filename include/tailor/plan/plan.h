// A plan: one candidate per profiled layer, chosen by a named solver, and its
// JSON form (plan.json, schema in docs/formats.md).
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "tailor/plan/problem.h"
#include "tailor/profile/model_profile.h"

namespace tailor::plan {

/// The candidate chosen for one layer.
struct PlanChoice {
  std::string layer;
  std::string label;
  double rel_error = 0;
  int64_t bytes = 0;
};

/// A solved plan with its certificate and cost.
struct Plan {
  std::string model;
  /// Total budget in bytes (fixed bytes included).
  int64_t budget_bytes = 0;
  /// Bytes of what is not planned, included in total_bytes.
  int64_t fixed_bytes = 0;
  /// Bytes of the whole model under the plan: fixed bytes + chosen candidates.
  int64_t total_bytes = 0;
  std::string solver;
  std::string objective;
  uint64_t seed = 0;
  /// The objective of the plan.
  double objective_value = 0;
  /// Certified lower bound on the optimum (NaN when unknown).
  double lower_bound = 0;
  /// objective_value − lower_bound (absolute, in objective units).
  double gap = 0;
  bool proven_optimal = false;
  /// Solver wall-clock seconds: for the log and the report, never written to
  /// plan.json (artifacts are byte-reproducible).
  double seconds = 0;
  int64_t nodes = 0;
  /// Under a second budget (plan/two_budget.h): its unit ("ms" or "MACs"),
  /// the budget and the plan's predicted use (the rest's plus the chosen
  /// candidates'); unit empty and both NaN otherwise. plan.json's optional
  /// "latency_unit", "max_latency", "predicted_latency".
  std::string latency_unit;
  double max_latency = std::numeric_limits<double>::quiet_NaN();
  double predicted_latency = std::numeric_limits<double>::quiet_NaN();
  std::vector<PlanChoice> choices;
};

/// The solvers by name, in the order `--solver all` runs them:
/// exact, greedy, cem, dado, gumbel.
const std::vector<std::string>& solver_names();

/// Runs solver `name` (default settings of its options struct). Throws Error
/// (source "--solver") for an unknown name, and whatever the solver throws.
Solution solve(const std::string& name, const Problem& problem, const SolveOptions& options);

/// The plan of `solution` in terms of `profile`'s layers and labels.
/// `problem` must have been made from `profile`.
Plan make_plan(const ModelProfile& profile, const Problem& problem, const Solution& solution,
               const std::string& solver, Objective objective, uint64_t seed);

/// Runs each solver named in `solvers` on `problem` (made from `profile`) with
/// the same options, and returns their plans in that order: what `tailor plan
/// --solver all` tabulates and the report compares. Throws what solve throws.
std::vector<Plan> solve_plans(const ModelProfile& profile, const Problem& problem,
                              const std::vector<std::string>& solvers, const SolveOptions& options,
                              Objective objective);

/// plan.json text (2-space indented; NaN bounds written as null).
std::string plan_to_json(const Plan& plan);

/// Writes plan.json atomically. Throws Error naming `path` on I/O failure.
void write_plan(const std::string& path, const Plan& plan);

/// Reads a plan.json. Throws Error naming `path` for malformed JSON or a
/// missing or mistyped field.
Plan read_plan(const std::string& path);

}  // namespace tailor::plan
