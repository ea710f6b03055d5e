// tailor plan: chooses one candidate per profiled layer under a budget.
#include <fmt/format.h>

#include <cmath>
#include <iostream>

#include "commands.h"
#include "format.h"
#include "tailor/compress/gguf_out.h"
#include "tailor/linalg/threads.h"
#include "tailor/plan/budget.h"
#include "tailor/plan/plan.h"
#include "tailor/plan/two_budget.h"
#include "tailor/profile/model_profile.h"

namespace tailor::cli {
namespace {

struct PlanArgs {
  std::string profile;
  std::string budget;
  std::string solver = "exact";
  std::string objective = "numel";
  uint64_t seed = 0;
  double time_limit = 0;
  int threads = 0;
  std::string output;
  std::string llama_tensor_types;
  std::optional<double> max_latency;
  std::optional<int64_t> max_macs;
};

std::string percent_of(int64_t part, int64_t whole) {
  return whole > 0 ? fmt::format("{:.1f}%", 100.0 * static_cast<double>(part) / whole) : "-";
}

std::string gap_text(const plan::Plan& p) {
  if (p.proven_optimal) return "0 (proven optimal)";
  if (!std::isfinite(p.lower_bound)) return "unknown";
  return fmt::format("{:.6g} ({} of the objective)", p.gap,
                     p.objective_value > 0 ? fmt::format("{:.4f}%", 100 * p.gap / p.objective_value)
                                           : std::string("-"));
}

void print_plan(const plan::Plan& p) {
  size_t name_w = 5, label_w = 5;
  for (const auto& c : p.choices) {
    name_w = std::max(name_w, c.layer.size());
    label_w = std::max(label_w, c.label.size());
  }
  name_w = std::min<size_t>(name_w, 60);
  std::cout << fmt::format("{:<{}}  {:<{}}  {:>10}  {:>15}\n", "layer", name_w, "label", label_w,
                           "rel_error", "bytes");
  for (const auto& c : p.choices)
    std::cout << fmt::format("{:<{}}  {:<{}}  {:>10.6f}  {:>15}\n", printable(c.layer), name_w,
                             c.label, label_w, c.rel_error, with_commas(c.bytes));
  std::cout << fmt::format(
      "\ntotal {} of {} bytes ({}), fixed {} included\nobjective {:.6g}, lower bound {:.6g}, gap "
      "{}\n{:.3f} s, {} nodes\n",
      with_commas(p.total_bytes), with_commas(p.budget_bytes),
      percent_of(p.total_bytes, p.budget_bytes), with_commas(p.fixed_bytes), p.objective_value,
      p.lower_bound, gap_text(p), p.seconds, with_commas(p.nodes));
  if (!p.latency_unit.empty())
    std::cout << fmt::format("predicted {} {:.6g} of the budget {:.6g}\n",
                             p.latency_unit == "ms" ? "latency (ms, 1 thread)" : "MACs",
                             p.predicted_latency, p.max_latency);
}

// `--solver all`: every solver on the same problem, one row each, gaps to
// exact's plan.
void print_table(const std::vector<plan::Plan>& plans) {
  const plan::Plan& exact = plans.front();
  std::cout << fmt::format("{:<8}  {:>13}  {:>15}  {:>14}  {:>9}  {:>12}\n", "solver", "objective",
                           "bytes", "gap to exact", "seconds", "nodes");
  for (const plan::Plan& p : plans) {
    const double d = p.objective_value - exact.objective_value;
    std::string gap = exact.objective_value > 0
                          ? fmt::format("{:+.4f}%", 100 * d / exact.objective_value)
                          : fmt::format("{:+.3g}", d);
    if (&p == &exact) gap = exact.proven_optimal ? "0 (optimal)" : "0 (best found)";
    std::cout << fmt::format("{:<8}  {:>13.6g}  {:>15}  {:>14}  {:>9.3f}  {:>12}\n", p.solver,
                             p.objective_value, with_commas(p.total_bytes), gap, p.seconds,
                             with_commas(p.nodes));
  }
  if (!exact.proven_optimal)
    std::cout << fmt::format("\nexact stopped at the time limit: optimum ≥ {:.6g} (certified)\n",
                             exact.lower_bound);
}

void run_plan(const PlanArgs& a) {
  const ModelProfile profile = read_profile(a.profile);
  const plan::Budget budget = plan::parse_budget(a.budget);
  const int64_t budget_bytes = plan::budget_bytes(budget, profile);
  const plan::Objective objective = plan::parse_objective(a.objective);
  plan::Problem problem = plan::make_problem(profile, objective, budget_bytes, a.profile);
  plan::add_second_budget(problem, profile, a.max_latency, a.max_macs);
  plan::SolveOptions options;
  options.seed = a.seed;
  options.time_limit_s = a.time_limit;
  options.threads = a.threads;
  plan::check_feasible(problem);

  std::cout << fmt::format(
      "{}: model {}, {} layers to plan\nbudget {} = {} bytes ({} of the dense model; fixed {} + "
      "{} for the planned layers)\nobjective {}, seed {}\n\n",
      a.profile, profile.model, profile.layers.size(), a.budget, with_commas(budget_bytes),
      percent_of(budget_bytes, profile.dense_bytes), with_commas(profile.fixed_bytes),
      with_commas(problem.budget), a.objective, a.seed);
  const std::vector<std::string> solvers =
      a.solver == "all" ? plan::solver_names() : std::vector<std::string>{a.solver};
  const std::vector<plan::Plan> plans =
      plan::solve_plans(profile, problem, solvers, options, objective);
  // The type file is checked whole and written first, so a plan it cannot
  // hold leaves no plan.json behind.
  if (!a.llama_tensor_types.empty())
    compress::write_llama_tensor_types(a.llama_tensor_types, plans.front());
  if (a.solver == "all")
    print_table(plans);
  else
    print_plan(plans.front());
  if (!a.output.empty()) {
    plan::write_plan(a.output, plans.front());
    std::cout << fmt::format("\nwrote {} ({} plan)\n", a.output, plans.front().solver);
  }
  if (!a.llama_tensor_types.empty())
    std::cout << fmt::format("wrote {} (llama-quantize --tensor-type-file)\n",
                             a.llama_tensor_types);
}

}  // namespace

void add_plan(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "plan",
      "Choose one candidate per profiled layer under a budget (proven optimal or searched)");
  static PlanArgs args;
  cmd->add_option("PROFILE", args.profile, "profile.json written by `tailor profile`")->required();
  cmd->add_option("--budget,-b", args.budget,
                  "Budget for the whole model: 25% (of dense f32), 4.5bpw, 300MB, 1.5GiB, bytes")
      ->required();
  std::vector<std::string> solvers = plan::solver_names();
  solvers.push_back("all");
  cmd->add_option("--solver,-s", args.solver, "exact (default), greedy, cem, dado, gumbel or all")
      ->check(CLI::IsMember(solvers));
  cmd->add_option("--objective", args.objective, "numel (default), sum or activation")
      ->check(CLI::IsMember({"numel", "sum", "activation"}));
  cmd->add_option("--seed", args.seed, "Seed of the search solvers (default 0)")->check(kUnsigned);
  cmd->add_option("--time-limit", args.time_limit,
                  "Seconds per solver (0: none); exact then reports its certified gap")
      ->check(kFiniteNonNegative);
  cmd->add_option("--threads", args.threads, "Worker threads (default 0: all cores)")
      ->check(kThreadCount);
  cmd->add_option("-o,--output", args.output,
                  "Write plan.json (schema in docs/formats.md; with --solver all, exact's plan)");
  cmd->add_option("--max-latency", args.max_latency,
                  "Also a latency budget, ms at 1 thread: the profile's latency_rest_ms + the "
                  "chosen candidates' latency_ms (profile --latency); exact solver only");
  cmd->add_option("--max-macs", args.max_macs,
                  "Also a budget of Σ chosen candidates' macs (per input row); exact solver only");
  cmd->add_option("--llama-tensor-types", args.llama_tensor_types,
                  "Write llama-quantize's --tensor-type-file of the plan (schemes dense, q8_0, "
                  "q4_0; llama tensor names)");
  cmd->callback([] {
    linalg::set_threads(args.threads);
    run_plan(args);
  });
}

}  // namespace tailor::cli
