// The allocation problem every solver solves: choose one option per layer,
// minimise the summed cost, keep the summed bytes within a budget
// (DESIGN.md, "Planning"). A multiple-choice knapsack, optionally with
// pairwise costs between adjacent layers.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "tailor/profile/model_profile.h"

namespace tailor::plan {

/// What a plan minimises (`--objective`).
enum class Objective {
  /// Σ_i (numel_i / Σ_k numel_k)·rel_error_i²: parameter-weighted mean
  /// squared relative error (the default).
  numel,
  /// Σ_i rel_error_i (the rlx-opscope seed's objective).
  sum,
  /// As numel, with the activation-aware errors of a calibrated profile.
  activation,
  /// Σ_i D(i, c_i): the predicted output damage, from the measured
  /// output_damage of every candidate (DESIGN.md, "Output damage").
  output,
};

/// "numel", "sum", "activation", "output".
const char* objective_name(Objective objective);
/// Inverse of objective_name. Throws Error (source "--objective") for any other text.
Objective parse_objective(const std::string& name);

/// One choice for one layer, in solver terms.
struct Option {
  int64_t bytes = 0;  ///< bytes the layer takes with this option, ≥ 0
  double cost = 0;    ///< the option's contribution to the objective
  /// The option's use of the second resource (plan/two_budget.h): measured
  /// milliseconds under --max-latency, MACs under --max-macs; 0 otherwise.
  double latency = 0;
};

/// A budgeted choice problem. Layer i takes exactly one of layers[i]; the
/// objective is Σ_i cost + Σ_i pairwise[i][a·K_{i+1} + b] (when pairwise terms
/// are present), the constraint Σ_i bytes ≤ budget.
struct Problem {
  /// What the problem came from (the profile path), for error messages.
  std::string source;
  /// Options per layer; every layer has at least one.
  std::vector<std::vector<Option>> layers;
  /// Bytes available to the planned layers: the total budget minus fixed_bytes
  /// (negative when the fixed bytes alone exceed the budget).
  int64_t budget = 0;
  /// Bytes of what is not planned; reported totals and errors add them.
  int64_t fixed_bytes = 0;
  /// Optional costs between adjacent layers (a chain, the simplest junction
  /// tree): empty, or n−1 row-major tables, pairwise[i] of K_i × K_{i+1}
  /// entries, pairwise[i][a·K_{i+1} + b] added when layer i takes a and layer
  /// i+1 takes b. Only the dado and cem solvers accept them.
  std::vector<std::vector<double>> pairwise;
  /// Second budget (plan/two_budget.h): Σ_i latency ≤ latency_budget, the
  /// total minus fixed_latency; +∞ when there is none.
  double latency_budget = std::numeric_limits<double>::infinity();
  /// The second resource's use by what is not planned (latency_rest_ms; 0 for MACs).
  double fixed_latency = 0;
  /// Its unit in messages: "ms" or "MACs".
  std::string latency_unit;

  /// True when the objective is a plain sum of per-layer costs.
  bool additive() const { return pairwise.empty(); }
  /// True when a second budget binds the plan.
  bool has_latency() const { return latency_budget < std::numeric_limits<double>::infinity(); }
};

/// One option index per layer, as solvers return it.
using Choice = std::vector<int>;

/// A solver's answer.
struct Solution {
  Choice choice;
  /// The objective of `choice`.
  double objective = 0;
  /// Bytes of the planned layers under `choice` (fixed bytes not included).
  int64_t bytes = 0;
  /// A certified lower bound on the optimum (the LP/Lagrangian bound, or for
  /// exact the bound it proved); NaN when none is known (pairwise terms).
  double lower_bound = std::numeric_limits<double>::quiet_NaN();
  /// True when `objective` is proven optimal (up to a relative 1e-12).
  bool proven_optimal = false;
  /// Work done, in the solver's own unit (docs/commands.md, `tailor plan`): search
  /// states for exact, hull segments for greedy, plans sampled for cem and
  /// dado, gradient steps for gumbel.
  int64_t nodes = 0;
  /// Wall-clock seconds the solver took.
  double seconds = 0;
};

/// Settings every solver takes.
struct SolveOptions {
  /// Seed of every random draw (tailor::Rng); the same seed gives the same plan.
  uint64_t seed = 0;
  /// Wall-clock limit in seconds; 0 for none. exact returns its best plan and
  /// certified bound when it runs out; the search heuristics stop early.
  double time_limit_s = 0;
  /// Worker threads (0: all cores). The plan does not depend on it.
  int threads = 1;
};

/// Builds the problem of planning `profile` under a total budget of
/// `budget_bytes` (fixed bytes included) for `objective`. `source` names the
/// profile in errors. Throws Error naming `source` when objective is
/// activation (output) and some candidate has no rel_error_activation (output_damage),
/// and when the fixed bytes plus the largest candidate of every layer overflow
/// int64 (so that no solver's byte sum of one option per layer can).
Problem make_problem(const ModelProfile& profile, Objective objective, int64_t budget_bytes,
                     const std::string& source);

/// The objective of `choice` (pairwise terms included). Throws Error on a
/// choice of the wrong length or an option index out of range.
double evaluate(const Problem& problem, const Choice& choice);

/// Bytes of the planned layers under `choice`; Error naming problem.source
/// when the sum overflows int64.
int64_t choice_bytes(const Problem& problem, const Choice& choice);

/// Σ_i min_j bytes: the fewest bytes the planned layers can take.
int64_t min_bytes(const Problem& problem);

/// Throws Error naming problem.source and the smallest reachable total budget
/// (fixed bytes + min_bytes) when no choice fits the budget.
void check_feasible(const Problem& problem);

/// Throws Error naming `solver` when the problem has pairwise terms.
void require_additive(const Problem& problem, const std::string& solver);

}  // namespace tailor::plan
