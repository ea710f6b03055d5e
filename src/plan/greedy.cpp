#include "tailor/plan/greedy.h"

#include <chrono>

#include "hull.h"

namespace tailor::plan {

Solution solve_greedy(const Problem& problem, const SolveOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  require_additive(problem, "greedy");
  check_feasible(problem);
  const std::vector<LayerFrontier> frontiers =
      build_frontiers(problem, resolve_threads(options.threads));
  const Sweep sweep = sweep_hulls(problem, frontiers);
  Solution s;
  s.choice = sweep.greedy;
  s.objective = evaluate(problem, s.choice);
  s.bytes = choice_bytes(problem, s.choice);
  s.lower_bound = lagrangian_bound(problem, sweep.lambda, nullptr);
  s.proven_optimal = !sweep.binding;
  s.nodes = sweep.segments;
  s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return s;
}

}  // namespace tailor::plan
