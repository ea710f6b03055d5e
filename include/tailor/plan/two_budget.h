// Plans under bytes and a second resource together (`--max-latency MS`,
// `--max-macs N`): the multiple-choice knapsack with two constraints,
//   minimise Σ_i c_i(x_i)  s.t.  Σ_i w_i(x_i) ≤ B,  Σ_i l_i(x_i) ≤ T.
// Latency model (docs/commands.md): a plan's predicted latency is the
// profile's latency_rest_ms (every op but the measured layers') plus Σ of
// its chosen candidates' latency_ms, each measured alone at 1 thread.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tailor/plan/plan.h"
#include "tailor/plan/problem.h"

namespace tailor::plan {

/// Adds the latency budget `max_latency_ms` (the whole model's, ms) to
/// `problem` (made from `profile` by make_problem, options in candidate
/// order): each option's latency is its candidate's latency_ms (0 for a layer
/// whose candidates have none: its time is in the rest), fixed_latency the
/// profile's latency_rest_ms. Throws Error naming problem.source when the
/// profile has no measured latencies, and ("--max-latency") for a budget that
/// is not finite and > 0.
void add_latency_budget(Problem& problem, const ModelProfile& profile, double max_latency_ms);

/// The analytic alternative: each option's latency is its candidate's macs
/// (per input row, as profile.json records them), the budget `max_macs` for
/// their sum over the planned layers. Throws Error ("--max-macs") unless > 0.
void add_macs_budget(Problem& problem, const ModelProfile& profile, int64_t max_macs);

/// add_latency_budget or add_macs_budget, whichever is given (neither: no
/// change). Throws Error ("--max-macs") when both are.
void add_second_budget(Problem& problem, const ModelProfile& profile,
                       std::optional<double> max_latency_ms, std::optional<int64_t> max_macs);

/// Σ_i latency of `choice` (fixed_latency not included).
double choice_latency(const Problem& problem, const Choice& choice);

/// The least second-budget amount (latency, fixed_latency included) any plan
/// within the byte budget reaches: solve_exact with the latencies as costs,
/// as solve_two_budgets' step (1). Needs problem.has_latency().
double least_latency(const Problem& problem, const SolveOptions& options);

/// The latency budget (ms) at which latency_calibrated_plan asks `solve` for
/// the byte-only optimum: no plan's latency reaches it.
inline constexpr double kUnboundedLatency = 1e300;

/// One measured round of latency_calibrated_plan (ms): the solver's latency
/// budget (fixed_latency included), the plan's predicted latency, the
/// original's and the plan's measured latencies, and the plan's on the
/// profile's clock (plan_ms / original_ms · the profile's whole-model latency).
struct LatencyRound {
  double target = 0, predicted = 0, original_ms = 0, plan_ms = 0, on_profile_clock = 0;
};

/// A plan held to `max_latency` (ms, the profile's clock) by measurement, and
/// the rounds that chose it.
struct CalibratedPlan {
  Plan plan;
  std::vector<LatencyRound> rounds;
};

/// --max-latency against measured latencies rather than the solver's model
/// alone (which sums each op timed by itself: on the detector it predicted
/// 29.9 ms for a plan that ran in 26.3). Round 1 plans at max(max_latency,
/// least_ms) with `solve` (a latency budget, ms, fixed_latency included) and
/// times the plan against the original with `measure` ({original ms, plan
/// ms}). It stops when the plan measures within max_latency and either within
/// 1% under it or with the objective of the byte-only optimum (`solve` at an
/// unbounded budget, kUnboundedLatency: a looser budget cannot lower it); otherwise the
/// next round's budget maps max_latency through the line from the original
/// (model_ms predicted and measured) to the last plan (predicted → measured),
/// never below least_ms; where the last plan predicted or measured no saving
/// (no line), least_ms. At most 4 rounds; it stops when the budget or the
/// plan (its choices) repeats, a repeated plan not measured again. Chosen: the
/// lowest objective among the plans measured within max_latency, or failing
/// those within max_latency·1.05. Throws Error naming `source`, the byte
/// budget, the fastest measured plan's latency (said to be the fastest plan
/// when the least_ms plan was measured) and every round's predicted →
/// measured ms when none is.
CalibratedPlan latency_calibrated_plan(
    double max_latency, double model_ms, double least_ms, const std::function<Plan(double)>& solve,
    const std::function<std::pair<double, double>(const Plan&)>& measure, const std::string& source,
    int64_t budget_bytes);

/// Solves the two-budget problem (problem.has_latency(); otherwise
/// solve_exact): (1) the least latency reachable within the byte budget, by
/// solve_exact with the latencies as costs — above the latency budget it is
/// an Error naming the smallest reachable latency at that byte budget; (2)
/// Lagrangian dual ascent on the latency constraint: L(μ) = min over byte-
/// feasible plans of Σ (c + μ·l) − μ·T, each inner problem solved exactly by
/// solve_exact (its certified lower bound used), μ by bisection on the
/// subgradient; every latency-feasible inner plan is an incumbent; (3)
/// reduced-cost fixing with the multipliers (λ of the inner LP, μ) — an
/// option whose reduced cost exceeds the gap cannot be in a better plan —
/// then depth-first branch and bound over the remaining options, each node
/// bounded by the best of the Lagrangian bounds at a fan of (λ, μ) multiples
/// and cut when it cannot fit either budget. Returns proven_optimal with
/// lower_bound = objective when the search completes; when it passes 2^24
/// nodes or options.time_limit_s, the best plan found with the dual bound
/// (certified). Among options of the same cost, the plan's layers then take
/// the one of least latency with no more bytes (ties under a weight-error
/// objective: int8 and int8-a8). Throws Error as described, and for pairwise
/// terms.
Solution solve_two_budgets(const Problem& problem, const SolveOptions& options);

}  // namespace tailor::plan
