// The error-vs-budget sweep and the solver comparison of a chosen plan.
#include "tailor/plan/sweep.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "tailor/core/error.h"
#include "tailor/plan/exact.h"

namespace tailor::plan {

std::vector<int64_t> spaced_budgets(int64_t lo, int64_t hi, int k) {
  check(k >= 1, "sweep", "at least one budget is needed, got " + std::to_string(k));
  check(
      hi >= lo, "sweep",
      "the largest budget " + std::to_string(hi) + " is below the smallest " + std::to_string(lo));
  std::vector<int64_t> out;
  for (int i = 0; i < k; ++i) {
    const double t = k == 1 ? 1.0 : double(i) / (k - 1);
    out.push_back(i == k - 1 ? hi : lo + static_cast<int64_t>(std::floor(t * double(hi - lo))));
  }
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<SweepPoint> sweep_budgets(const Problem& problem, const std::vector<int64_t>& budgets,
                                      const SolveOptions& options) {
  std::vector<SweepPoint> out;
  Problem p = problem;
  for (const int64_t budget : budgets) {
    p.budget = budget - problem.fixed_bytes;
    const Solution s = solve_exact(p, options);
    out.push_back({budget, problem.fixed_bytes + s.bytes, s.objective, s.proven_optimal});
  }
  return out;
}

std::vector<int> find_candidates(const ModelProfile& profile, const Plan& plan,
                                 const std::string& source) {
  check(plan.choices.size() == profile.layers.size(), source,
        "plan has " + std::to_string(plan.choices.size()) + " layers, the profile " +
            std::to_string(profile.layers.size()) + ": not a plan of this profile");
  std::vector<int> out;
  for (size_t i = 0; i < profile.layers.size(); ++i) {
    const LayerProfile& l = profile.layers[i];
    const PlanChoice& c = plan.choices[i];
    check(c.layer == l.name, source,
          "choice " + std::to_string(i) + " is layer \"" + c.layer + "\", the profile's is \"" +
              l.name + "\": not a plan of this profile");
    const auto it = std::find_if(l.candidates.begin(), l.candidates.end(),
                                 [&](const Candidate& k) { return k.label == c.label; });
    check(it != l.candidates.end(), source,
          "layer \"" + l.name + "\": label \"" + c.label + "\" is not in the profile");
    out.push_back(static_cast<int>(it - l.candidates.begin()));
  }
  return out;
}

void check_plan_numbers(const ModelProfile& profile, const Plan& plan, const std::string& source) {
  const std::vector<int> picked = find_candidates(profile, plan, source);
  check(plan.fixed_bytes == profile.fixed_bytes, source,
        fmt::format("\"fixed_bytes\" {} but the profile's are {}: not a plan of this profile",
                    plan.fixed_bytes, profile.fixed_bytes));
  for (size_t i = 0; i < picked.size(); ++i) {
    const Candidate& c = profile.layers[i].candidates[static_cast<size_t>(picked[i])];
    const PlanChoice& ch = plan.choices[i];
    check(ch.bytes == c.bytes && ch.rel_error == c.rel_error, source,
          fmt::format("layer \"{}\" {}: {} bytes at rel_error {} in the plan, {} at {} in the "
                      "profile",
                      ch.layer, ch.label, ch.bytes, ch.rel_error, c.bytes, c.rel_error));
  }
}

PlanStudy study_plan(const ModelProfile& profile, const Plan& chosen, const std::string& source,
                     const StudyOptions& options) {
  check(options.curve_points >= 2, "report", "curve_points must be ≥ 2");
  find_candidates(profile, chosen, source);
  Objective objective{};
  try {
    objective = parse_objective(chosen.objective);
  } catch (const Error& e) {  // parse_objective names the flag; here it is the file's field
    throw Error(source, "\"objective\": " + e.message());
  }
  SolveOptions solve_options;
  solve_options.seed = chosen.seed;
  solve_options.time_limit_s = options.time_limit_s;
  solve_options.threads = options.threads;

  PlanStudy study;
  // Error vs. budget: exact optima from the smallest feasible budget to dense.
  const Problem base = make_problem(profile, objective, profile.dense_bytes, source);
  const int64_t lo = profile.fixed_bytes + min_bytes(base);
  const int64_t hi = std::max(lo, profile.dense_bytes);
  study.curve = sweep_budgets(base, spaced_budgets(lo, hi, options.curve_points), solve_options);

  // Every solver at the chosen budget (what `tailor plan --solver all` runs).
  const Problem at_chosen = make_problem(profile, objective, chosen.budget_bytes, source);
  check_feasible(at_chosen);
  study.solvers = solve_plans(profile, at_chosen, solver_names(), solve_options, objective);
  return study;
}

}  // namespace tailor::plan
