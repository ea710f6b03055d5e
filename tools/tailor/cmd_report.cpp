// tailor report: report.html (plots) and report.json for a plan of a profile.
#include <fmt/format.h>

#include <filesystem>
#include <iostream>

#include "commands.h"
#include "format.h"
#include "tailor/core/error.h"
#include "tailor/linalg/threads.h"
#include "tailor/plan/budget.h"
#include "tailor/plan/plan.h"
#include "tailor/plan/sweep.h"
#include "tailor/report/report.h"

namespace tailor::cli {
namespace {

struct ReportArgs {
  std::string profile;
  std::string plan;
  std::string budget;
  std::string solver = "exact";
  std::string objective = "numel";
  uint64_t seed = 0;
  std::string verify;
  double time_limit = 30;
  int threads = 0;
  std::string output;
};

void run_report(const ReportArgs& a) {
  const ModelProfile profile = read_profile(a.profile);
  plan::Plan chosen;
  std::string plan_source = a.plan;
  if (!a.plan.empty()) {
    chosen = plan::read_plan(a.plan);
    plan::check_plan_numbers(profile, chosen, a.plan);
  } else {
    if (a.budget.empty())
      throw Error("tailor report", "give --plan plan.json, or --budget to plan here");
    const int64_t bytes = plan::budget_bytes(plan::parse_budget(a.budget), profile);
    const plan::Objective objective = plan::parse_objective(a.objective);
    const plan::Problem problem = plan::make_problem(profile, objective, bytes, a.profile);
    plan::check_feasible(problem);
    plan::SolveOptions options;
    options.seed = a.seed;
    options.time_limit_s = a.time_limit;
    options.threads = a.threads;
    chosen = plan::solve_plans(profile, problem, {a.solver}, options, objective).front();
    plan_source = a.profile;
  }
  std::optional<report::Verification> verification;
  if (!a.verify.empty()) verification = report::read_verification(a.verify);
  plan::StudyOptions options;
  options.time_limit_s = a.time_limit;
  options.threads = a.threads;
  const plan::PlanStudy study = plan::study_plan(profile, chosen, plan_source, options);
  const report::Report r =
      report::make_report(profile, chosen, plan_source, study, std::move(verification));
  report::write_report(a.output, r);
  const std::filesystem::path dir(a.output);
  std::cout << fmt::format(
      "{}: {} plan, {} of {} bytes ({:.1f}% of dense), objective {:.6g}\nwrote {} and {}\n",
      printable(profile.model), chosen.solver, with_commas(chosen.total_bytes),
      with_commas(r.dense_bytes),
      r.dense_bytes > 0 ? 100.0 * double(chosen.total_bytes) / double(r.dense_bytes) : 0.0,
      chosen.objective_value, printable((dir / "report.html").string()),
      printable((dir / "report.json").string()));
}

}  // namespace

void add_report(CLI::App& app) {
  auto* cmd =
      app.add_subcommand("report",
                         "Write report.html (plots) and report.json for a plan: error vs. budget, "
                         "per-layer map, bytes, solver comparison, verification");
  static ReportArgs args;
  cmd->add_option("PROFILE", args.profile, "profile.json written by `tailor profile`")->required();
  auto* plan_opt = cmd->add_option("--plan", args.plan,
                                   "plan.json written by `tailor plan -o` (its budget, "
                                   "objective and seed are the report's)");
  cmd->add_option("--budget,-b", args.budget, "Without --plan: plan here under this budget")
      ->excludes(plan_opt);
  std::vector<std::string> solvers = plan::solver_names();
  cmd->add_option("--solver,-s", args.solver, "Without --plan: the solver (default exact)")
      ->check(CLI::IsMember(solvers))
      ->excludes(plan_opt);
  cmd->add_option("--objective", args.objective,
                  "Without --plan: numel (default), sum or "
                  "activation")
      ->check(CLI::IsMember({"numel", "sum", "activation"}))
      ->excludes(plan_opt);
  cmd->add_option("--seed", args.seed, "Without --plan: seed of the search solvers (default 0)")
      ->excludes(plan_opt)
      ->check(kUnsigned);
  cmd->add_option("--verify", args.verify,
                  "verify.json with measured output errors (schema in docs/formats.md)");
  cmd->add_option("--time-limit", args.time_limit, "Seconds per solver run (default 30)")
      ->check(kFiniteNonNegative);
  cmd->add_option("--threads", args.threads, "Worker threads (default 0: all cores)")
      ->check(kThreadCount);
  cmd->add_option("-o,--output", args.output, "Folder for report.html and report.json")->required();
  cmd->callback([] {
    linalg::set_threads(args.threads);
    run_report(args);
  });
}

}  // namespace tailor::cli
