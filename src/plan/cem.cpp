#include "tailor/plan/cem.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>

#include "hull.h"
#include "parallel.h"
#include "repair.h"
#include "tailor/core/rng.h"
#include "tailor/linalg/threads.h"

namespace tailor::plan {
namespace {

using Clock = std::chrono::steady_clock;

/// One categorical per layer, stored as probabilities.
using Categoricals = std::vector<std::vector<double>>;

/// Fits each layer's categorical to `plans` with `laplace` pseudo-counts per
/// layer, blended into `dist` with weight `rate`.
void refit(Categoricals& dist, const std::vector<const Choice*>& plans, double laplace,
           double rate) {
  for (size_t i = 0; i < dist.size(); ++i) {
    std::vector<double>& p = dist[i];
    const double k = static_cast<double>(p.size());
    std::vector<double> counts(p.size(), laplace / k);
    for (const Choice* c : plans) counts[(*c)[i]] += 1;
    const double total = static_cast<double>(plans.size()) + laplace;
    for (size_t j = 0; j < p.size(); ++j) p[j] = (1 - rate) * p[j] + rate * counts[j] / total;
  }
}

int draw(const std::vector<double>& p, Rng& rng) {
  double u = rng.uniform(0, 1);
  for (size_t j = 0; j + 1 < p.size(); ++j) {
    u -= p[j];
    if (u < 0) return static_cast<int>(j);
  }
  return static_cast<int>(p.size()) - 1;
}

}  // namespace

Solution solve_cem(const Problem& problem, const SolveOptions& options, const CemOptions& cem) {
  const auto start = Clock::now();
  check_feasible(problem);
  const int threads = linalg::resolve_threads(options.threads);
  const Sweep sweep = sweep_hulls(problem, build_frontiers(problem, threads));
  Choice incumbent = sweep.greedy;
  repair(problem, incumbent);
  double best = evaluate(problem, incumbent);

  const size_t n = problem.layers.size();
  Categoricals dist(n);
  for (size_t i = 0; i < n; ++i) dist[i].assign(problem.layers[i].size(), 0.0);
  const int samples = std::max(cem.samples, 1);
  const size_t elite =
      std::clamp<size_t>(static_cast<size_t>(std::lround(cem.elite_fraction * samples)), 1,
                         static_cast<size_t>(samples) + 1);
  refit(dist, std::vector<const Choice*>(elite, &incumbent), cem.laplace, 1.0);
  const Rng base(options.seed);
  std::vector<Choice> plans(samples, Choice(n));
  std::vector<double> values(samples);
  int64_t nodes = 0;
  for (int it = 0; it < cem.iterations; ++it) {
    if (options.time_limit_s > 0 &&
        std::chrono::duration<double>(Clock::now() - start).count() > options.time_limit_s)
      break;
    parallel_for(samples, threads, [&](size_t begin, size_t end) {
      for (size_t s = begin; s < end; ++s) {
        Rng rng = base.split(static_cast<uint64_t>(it) * samples + s);
        for (size_t i = 0; i < n; ++i) plans[s][i] = draw(dist[i], rng);
        repair(problem, plans[s]);
        values[s] = evaluate(problem, plans[s]);
      }
    });
    nodes += samples;
    // Rank the population with the incumbent in it (index -1, first among equals).
    std::vector<int> order(samples + 1);
    std::iota(order.begin(), order.end(), -1);
    auto value = [&](int k) { return k < 0 ? best : values[k]; };
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return value(a) < value(b); });
    std::vector<const Choice*> elites;
    for (size_t e = 0; e < elite; ++e)
      elites.push_back(order[e] < 0 ? &incumbent : &plans[order[e]]);
    refit(dist, elites, cem.laplace, cem.rate);
    if (order[0] >= 0) {
      best = values[order[0]];
      incumbent = plans[order[0]];
    }
  }

  return heuristic_solution(problem, incumbent, sweep.lambda, nodes, start);
}

}  // namespace tailor::plan
