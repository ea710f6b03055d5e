// Every planning solver on four families of problems (tests/plan/random_problems.h),
// three seeds each:
//   0  synthetic 70B-class model, 2,000 layers × 16 candidates, the seven
//      transformer shapes (synthetic_model), 4.5 bits per weight;
//   1  the same with every layer of its own random shape;
//   2  2,000 layers × 16 options, bytes and costs uniform and unrelated
//      (random_problem), budget 30% of the way from fewest to most bytes;
//   3  the same with 200 layers.
// Counters: nodes (each solver's unit of work, docs/commands.md), gap_pct (the plan's
// objective above the proven optimum, percent), proven (exact only).
#include <benchmark/benchmark.h>

#include <map>

#include "plan/random_problems.h"
#include "tailor/plan/cem.h"
#include "tailor/plan/dado.h"
#include "tailor/plan/exact.h"
#include "tailor/plan/greedy.h"
#include "tailor/plan/gumbel.h"

namespace tailor::plan {
namespace {

constexpr int kLayers = 2000;

/// The problem for (seed, family) and its proven optimum, made once.
struct Instance {
  Problem problem;
  double optimum = 0;
};

const char* const kFamilies[] = {"transformer shapes", "distinct shapes", "uniform 2000x16",
                                 "uniform 200x16"};

const Instance& instance(int seed, int family) {
  static std::map<std::pair<int, int>, Instance> cache;
  auto it = cache.find({seed, family});
  if (it == cache.end()) {
    Rng rng(static_cast<uint64_t>(seed));
    Instance inst{
        family < 2 ? fixtures::synthetic_model(rng, kLayers, family == 1)
                   : fixtures::random_problem(rng, family == 2 ? kLayers : 200, 16, 0.3, 1000000),
        0};
    inst.optimum = solve_exact(inst.problem, {}).objective;
    it = cache.emplace(std::make_pair(seed, family), std::move(inst)).first;
  }
  return it->second;
}

template <typename Solve>
void run(benchmark::State& state, Solve&& solve) {
  const Instance& inst =
      instance(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)));
  SolveOptions options;
  options.threads = 1;
  Solution s;
  for (auto _ : state) {
    s = solve(inst.problem, options);
    benchmark::DoNotOptimize(s.objective);
  }
  state.counters["nodes"] = static_cast<double>(s.nodes);
  state.counters["gap_pct"] = 100 * (s.objective - inst.optimum) / inst.optimum;
  state.counters["proven"] = s.proven_optimal;
  state.SetLabel(kFamilies[state.range(1)]);
}

void BM_Exact(benchmark::State& state) {
  run(state, [](const Problem& p, const SolveOptions& o) { return solve_exact(p, o); });
}
void BM_Greedy(benchmark::State& state) {
  run(state, [](const Problem& p, const SolveOptions& o) { return solve_greedy(p, o); });
}
void BM_Cem(benchmark::State& state) {
  run(state, [](const Problem& p, const SolveOptions& o) { return solve_cem(p, o); });
}
void BM_Dado(benchmark::State& state) {
  run(state, [](const Problem& p, const SolveOptions& o) { return solve_dado(p, o); });
}
void BM_Gumbel(benchmark::State& state) {
  run(state, [](const Problem& p, const SolveOptions& o) { return solve_gumbel(p, o); });
}

// Args: {seed, family}.
void instances(benchmark::internal::Benchmark* b) {
  for (int family = 0; family < 4; ++family)
    for (int seed : {0, 1, 2}) b->Args({seed, family});
  b->Unit(benchmark::kMillisecond);
}

BENCHMARK(BM_Exact)->Apply(instances);
BENCHMARK(BM_Greedy)->Apply(instances);
BENCHMARK(BM_Gumbel)->Apply(instances)->Iterations(1);
BENCHMARK(BM_Dado)->Apply(instances)->Iterations(1);
BENCHMARK(BM_Cem)->Apply(instances)->Iterations(1);

}  // namespace
}  // namespace tailor::plan
