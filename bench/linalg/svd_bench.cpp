// Rank-64 randomized truncated SVD (Halko, Martinsson & Tropp 2011; q = 4,
// p = 10) against LAPACK's full sgesdd on 1024×1024, 4096×1024 and 4096×4096
// f32 matrices with the slowly decaying spectrum σ_i = 1/√(i+1), the hard case
// for sketching; its rank-64 optimum √(Σ_{i≥64} σ_i²) is known exactly.
//
// Counters: rel_err = ‖A − U₆₄·S₆₄·V₆₄ᵀ‖/‖A‖ of the method's rank-64 factors;
// gap_% = how far that error is above the Eckart–Young optimum;
// speedup = gesdd time / randomized time (same shape, this run). gesdd on
// 4096² runs once (it takes tens of seconds).
#include <benchmark/benchmark.h>

#include <chrono>
#include <cmath>
#include <map>
#include <utility>

#include "tailor/core/rng.h"
#include "tailor/linalg/blas.h"
#include "tailor/linalg/svd.h"

namespace {

using tailor::linalg::Matrix;
using tailor::linalg::Svd;

constexpr int64_t kRank = 64;

struct Problem {
  Matrix a;
  double norm = 0;     // ‖A‖_F
  double optimum = 0;  // √(Σ_{i≥64} σ_i²)
};

Matrix gaussian(int64_t m, int64_t n, uint64_t seed) {
  tailor::Rng rng(seed);
  Matrix g(m, n);
  for (int64_t i = 0; i < g.size(); ++i) g.data()[i] = static_cast<float>(rng.normal());
  return g;
}

const Problem& problem(int64_t m, int64_t n) {
  static std::map<std::pair<int64_t, int64_t>, Problem> cache;
  Problem& p = cache[{m, n}];
  if (p.a.size() == 0) {
    const int64_t k = std::min(m, n);
    Matrix u = tailor::linalg::orthonormalize(gaussian(m, k, 1));
    const Matrix v = tailor::linalg::orthonormalize(gaussian(n, k, 2));
    double total = 0, tail = 0;
    for (int64_t i = 0; i < k; ++i) {
      const double s = 1.0 / std::sqrt(i + 1.0);
      u.col(i) *= static_cast<float>(s);
      total += s * s;
      if (i >= kRank) tail += s * s;
    }
    p.a = tailor::linalg::matmul(u, v, false, true);
    p.norm = std::sqrt(total);
    p.optimum = std::sqrt(tail);
  }
  return p;
}

double rank64_error(const Matrix& a, const Svd& f) {
  Matrix us = f.u.leftCols(kRank);
  for (int64_t j = 0; j < kRank; ++j) us.col(j) *= f.s(j);
  Matrix d = a - tailor::linalg::matmul(us, f.vt.topRows(kRank));
  return d.cast<double>().norm();
}

std::map<std::pair<int64_t, int64_t>, double>& exact_seconds() {
  static std::map<std::pair<int64_t, int64_t>, double> t;
  return t;
}

void report(benchmark::State& state, const Problem& p, const Svd& f) {
  const double err = rank64_error(p.a, f);
  state.counters["rel_err"] = err / p.norm;
  state.counters["gap_%"] = 100.0 * (err / p.optimum - 1.0);
}

void BM_SvdExactGesdd(benchmark::State& state) {
  const int64_t m = state.range(0), n = state.range(1);
  const Problem& p = problem(m, n);
  Svd f;
  double seconds = 0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    f = tailor::linalg::svd_exact(p.a);
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  exact_seconds()[{m, n}] = seconds / static_cast<double>(state.iterations());
  report(state, p, f);
}

void BM_SvdRandomizedRank64(benchmark::State& state) {
  const int64_t m = state.range(0), n = state.range(1);
  const Problem& p = problem(m, n);
  Svd f;
  double seconds = 0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    f = tailor::linalg::svd_randomized(p.a, kRank);
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  report(state, p, f);
  const auto it = exact_seconds().find({m, n});
  if (it != exact_seconds().end())
    state.counters["speedup"] = it->second / (seconds / static_cast<double>(state.iterations()));
}

// gesdd first for each shape, so the randomized run can state the speedup.
BENCHMARK(BM_SvdExactGesdd)
    ->Args({1024, 1024})
    ->Iterations(3)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_SvdRandomizedRank64)->Args({1024, 1024})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_SvdExactGesdd)
    ->Args({4096, 1024})
    ->Iterations(2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_SvdRandomizedRank64)->Args({4096, 1024})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_SvdExactGesdd)
    ->Args({4096, 4096})
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_SvdRandomizedRank64)->Args({4096, 4096})->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
