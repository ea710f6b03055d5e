// Planning a profile over many budgets: the error-vs-budget sweep (exact
// optima at evenly spaced budgets) and the comparison of every solver at a
// chosen plan's budget — what `tailor report` and `tailor compress --report`
// present.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tailor/plan/plan.h"
#include "tailor/plan/problem.h"
#include "tailor/profile/model_profile.h"

namespace tailor::plan {

/// One point of an error-vs-budget sweep: the exact solver's optimum under a
/// total budget.
struct SweepPoint {
  /// Total budget (fixed bytes included) and the bytes the optimum takes
  /// (fixed bytes included), in bytes.
  int64_t budget_bytes = 0;
  int64_t total_bytes = 0;
  /// The optimal objective (the problem's objective units) and whether it is
  /// proven (false: the time limit was hit and objective is the best found).
  double objective = 0;
  bool proven_optimal = false;
};

/// `k` evenly spaced total budgets from `lo` to `hi`, both included:
/// lo + ⌊i/(k − 1)·(hi − lo)⌋ for i < k − 1, then exactly hi (k = 1: hi
/// alone); repeated values (a range narrower than k) appear once. Throws
/// Error("sweep", ...) for k < 1 or hi < lo.
std::vector<int64_t> spaced_budgets(int64_t lo, int64_t hi, int k);

/// Solves `problem` exactly (solve_exact with `options`) under each total
/// budget of `budgets` (fixed bytes included: the problem's budget becomes
/// budget − problem.fixed_bytes), in order. Throws what solve_exact throws:
/// Error naming problem.source when a budget is infeasible, or the problem
/// has pairwise terms.
std::vector<SweepPoint> sweep_budgets(const Problem& problem, const std::vector<int64_t>& budgets,
                                      const SolveOptions& options);

/// For each layer of `profile` in order, the index of the candidate `plan`
/// chose. Throws Error naming `source` when the plan is not one of this
/// profile (another layer count, order or name, or a label the layer was not
/// profiled with).
std::vector<int> find_candidates(const ModelProfile& profile, const Plan& plan,
                                 const std::string& source);

/// find_candidates, and a plan.json's numbers against `profile`: each
/// choice's "bytes" and "rel_error" those of its candidate, "fixed_bytes" the
/// profile's. For a plan read from a file (`tailor report --plan`), whose
/// totals the report prints. Throws Error naming `source` at the first
/// mismatch.
void check_plan_numbers(const ModelProfile& profile, const Plan& plan, const std::string& source);

/// Settings of study_plan.
struct StudyOptions {
  /// Points of the error-vs-budget sweep (≥ 2).
  int curve_points = 10;
  /// Wall-clock limit per solver run, seconds (0: none).
  double time_limit_s = 30;
  /// Worker threads of the solvers (0: all cores).
  int threads = 0;
};

/// What the planner computes about a chosen plan for the report.
struct PlanStudy {
  /// Exact optima at StudyOptions::curve_points evenly spaced total budgets
  /// from the smallest feasible (fixed bytes + every layer's smallest
  /// candidate) to the dense bytes (spaced_budgets, sweep_budgets).
  std::vector<SweepPoint> curve;
  /// Every solver (solver_names order, exact first) at the plan's budget,
  /// objective and seed (solve_plans).
  std::vector<Plan> solvers;
};

/// The sweep and the solver comparison of `plan` (made from `profile`), the
/// solvers run with the plan's seed and `options`' time limit and threads.
/// Throws Error("report", ...) for curve_points < 2; Error naming `source`
/// when the plan does not match the profile (find_candidates) or names an
/// unknown objective; and what the solvers throw.
PlanStudy study_plan(const ModelProfile& profile, const Plan& plan, const std::string& source,
                     const StudyOptions& options);

}  // namespace tailor::plan
