#include "tailor/plan/problem.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "tailor/core/checked.h"
#include "tailor/core/error.h"
#include "tailor/core/text.h"

namespace tailor::plan {

const char* objective_name(Objective objective) {
  switch (objective) {
    case Objective::numel:
      return "numel";
    case Objective::sum:
      return "sum";
    case Objective::activation:
      return "activation";
    case Objective::output:
      return "output";
  }
  return "?";
}

Objective parse_objective(const std::string& name) {
  for (Objective o : {Objective::numel, Objective::sum, Objective::activation, Objective::output})
    if (name == objective_name(o)) return o;
  throw Error("--objective",
              "unknown objective \"" + name + "\" (expected output, numel, sum or activation)");
}

Problem make_problem(const ModelProfile& profile, Objective objective, int64_t budget_bytes,
                     const std::string& source) {
  Problem p;
  p.source = source;
  p.fixed_bytes = profile.fixed_bytes;
  p.budget = budget_bytes - profile.fixed_bytes;
  long double total_numel = 0;
  for (const LayerProfile& l : profile.layers) total_numel += static_cast<long double>(l.numel);
  // Fixed bytes plus the largest candidate of every layer must fit in int64:
  // then every byte sum of one option per layer does, in every solver.
  int64_t most = profile.fixed_bytes;
  for (const LayerProfile& l : profile.layers) {
    int64_t largest = 0;
    for (const Candidate& c : l.candidates) largest = std::max(largest, c.bytes);
    most = checked_add(most, largest, source,
                       fmt::format("the byte total up to layer \"{}\" (largest candidate {} bytes)",
                                   l.name, with_commas(largest)));
  }
  double worst_total = 0;  // the largest cost of every layer, summed
  for (const LayerProfile& l : profile.layers) {
    const double weight =
        total_numel > 0 ? static_cast<double>(static_cast<long double>(l.numel) / total_numel) : 0;
    std::vector<Option> options;
    options.reserve(l.candidates.size());
    for (const Candidate& c : l.candidates) {
      double cost = 0;
      switch (objective) {
        case Objective::numel:
          cost = weight * c.rel_error * c.rel_error;
          break;
        case Objective::sum:
          cost = c.rel_error;
          break;
        case Objective::activation:
          if (!c.rel_error_activation)
            throw Error(source,
                        "objective activation needs \"rel_error_activation\" on every "
                        "candidate; layer \"" +
                            l.name + "\" candidate \"" + c.label +
                            "\" has none (profile the model with --calib)");
          cost = weight * *c.rel_error_activation * *c.rel_error_activation;
          break;
        case Objective::output:
          if (!c.output_damage)
            throw Error(source,
                        "objective output needs \"output_damage\" on every candidate; layer \"" +
                            l.name + "\" candidate \"" + c.label +
                            "\" has none (measure it with calibration inputs: tailor "
                            "compress, or another --objective)");
          cost = *c.output_damage;
          break;
      }
      // Finite inputs can still overflow (a rel_error of 1e160 squared): the
      // solvers sort and subtract costs, where inf − inf is NaN.
      if (!std::isfinite(cost))
        throw Error(source, fmt::format("layer \"{}\" candidate \"{}\": its {} objective term "
                                        "is not finite (rel_error {})",
                                        l.name, c.label, objective_name(objective), c.rel_error));
      options.push_back({c.bytes, cost});
    }
    double largest = 0;
    for (const Option& o : options) largest = std::max(largest, o.cost);
    worst_total += largest;
    if (!std::isfinite(worst_total))
      throw Error(source, fmt::format("the {} objective summed up to layer \"{}\" is not finite",
                                      objective_name(objective), l.name));
    p.layers.push_back(std::move(options));
  }
  return p;
}

namespace {
void check_choice(const Problem& problem, const Choice& choice) {
  if (choice.size() != problem.layers.size())
    throw Error(problem.source, fmt::format("a plan of {} layers for a problem of {}",
                                            choice.size(), problem.layers.size()));
  for (size_t i = 0; i < choice.size(); ++i)
    if (choice[i] < 0 || choice[i] >= static_cast<int>(problem.layers[i].size()))
      throw Error(problem.source, fmt::format("layer {}: option {} out of range [0, {})", i,
                                              choice[i], problem.layers[i].size()));
}

}  // namespace

double evaluate(const Problem& problem, const Choice& choice) {
  check_choice(problem, choice);
  double total = 0;
  for (size_t i = 0; i < choice.size(); ++i) total += problem.layers[i][choice[i]].cost;
  for (size_t i = 0; i < problem.pairwise.size(); ++i)
    total += problem.pairwise[i][choice[i] * problem.layers[i + 1].size() + choice[i + 1]];
  return total;
}

int64_t choice_bytes(const Problem& problem, const Choice& choice) {
  check_choice(problem, choice);
  int64_t total = 0;
  for (size_t i = 0; i < choice.size(); ++i)
    total = checked_add(total, problem.layers[i][choice[i]].bytes, problem.source,
                        "the byte total of a plan");
  return total;
}

int64_t min_bytes(const Problem& problem) {
  int64_t total = 0;
  for (const auto& options : problem.layers) {
    int64_t m = options.front().bytes;
    for (const Option& o : options) m = std::min(m, o.bytes);
    total = checked_add(total, m, problem.source, "the fewest bytes of the planned layers");
  }
  return total;
}

void check_feasible(const Problem& problem) {
  const int64_t need = min_bytes(problem);
  if (need <= problem.budget) return;
  const int64_t total_budget = problem.budget + problem.fixed_bytes;
  const int64_t reachable =
      checked_add(need, problem.fixed_bytes, problem.source, "the smallest reachable budget");
  const double r = static_cast<double>(reachable);
  const std::string human = r >= 1e9   ? fmt::format("{:.3f} GB", r / 1e9)
                            : r >= 1e6 ? fmt::format("{:.3f} MB", r / 1e6)
                                       : fmt::format("{:.3f} kB", r / 1e3);
  throw Error(
      problem.source,
      fmt::format("infeasible budget: {} bytes is below the smallest reachable budget "
                  "{} bytes ({}: fixed {} + {} for the smallest candidate of each of {} "
                  "layers)",
                  with_commas(total_budget), with_commas(reachable), human,
                  with_commas(problem.fixed_bytes), with_commas(need), problem.layers.size()));
}

void require_additive(const Problem& problem, const std::string& solver) {
  if (!problem.additive())
    throw Error(problem.source, "solver " + solver +
                                    " needs an additive objective; pairwise terms are "
                                    "supported by dado and cem");
}

}  // namespace tailor::plan
