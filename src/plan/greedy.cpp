#include "tailor/plan/greedy.h"

#include <chrono>

#include "hull.h"
#include "tailor/linalg/threads.h"

namespace tailor::plan {

Solution solve_greedy(const Problem& problem, const SolveOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  require_additive(problem, "greedy");
  check_feasible(problem);
  const std::vector<LayerFrontier> frontiers =
      build_frontiers(problem, linalg::resolve_threads(options.threads));
  const Sweep sweep = sweep_hulls(problem, frontiers);
  Solution s = heuristic_solution(problem, sweep.greedy, sweep.lambda, sweep.segments, start);
  s.proven_optimal = !sweep.binding;
  return s;
}

}  // namespace tailor::plan
