// Inputs the scheme benches share (scheme_matmul_bench, gemv_vs_ggml_bench,
// w8a8_gemm_bench): seeded normal values cached per (n, seed, stddev), a
// weight [out, in] encoded once per label and shape, shapes × thread counts
// as benchmark arguments, and the streaming read a weight-bound GEMV is
// measured against.
#pragma once

#include <benchmark/benchmark.h>
#include <omp.h>

#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "tailor/core/rng.h"
#include "tailor/schemes/registry.h"

namespace tailor::bench {

/// n values drawn from N(0, stddev²) with Rng(seed), made once per (n, seed, stddev).
inline const std::vector<float>& normal_values(int64_t n, uint64_t seed, double stddev) {
  static std::map<std::tuple<int64_t, uint64_t, double>, std::vector<float>> cache;
  auto& v = cache[{n, seed, stddev}];
  if (v.empty()) {
    Rng rng(seed);
    v.resize(static_cast<size_t>(n));
    for (float& x : v) x = static_cast<float>(stddev * rng.normal());
  }
  return v;
}

/// W [out, in] = normal_values(out·in, 1, stddev) encoded by scheme `label`, once.
inline const schemes::Encoded& encoded_weight(const std::string& label, int64_t out, int64_t in,
                                              double stddev) {
  static std::map<std::tuple<std::string, int64_t, int64_t, double>,
                  std::unique_ptr<schemes::Encoded>>
      cache;
  auto& e = cache[{label, out, in, stddev}];
  if (!e)
    e = schemes::parse_scheme(label).encode(
        Tensor::from_f32({out, in}, normal_values(out * in, 1, stddev)));
  return *e;
}

/// Every shape (its leading arguments) at every thread count (the last
/// argument), named `names` (the shape's names, then "threads").
inline void shapes_by_threads(benchmark::internal::Benchmark* b,
                              const std::vector<std::vector<int64_t>>& shapes,
                              const std::vector<int64_t>& threads,
                              const std::vector<std::string>& names) {
  for (const auto& s : shapes)
    for (int64_t t : threads) {
      std::vector<int64_t> args = s;
      args.push_back(t);
      b->Args(args);
    }
  b->ArgNames(names);
}

/// Sets OpenMP's team to the benchmark's argument `index` (a thread count).
inline void set_threads(const benchmark::State& state, int index) {
  omp_set_num_threads(static_cast<int>(state.range(index)));
}

/// Times a sum of 256 MiB of f32 (far beyond the caches) on the current
/// OpenMP team: the bandwidth a weight-bound GEMV can at best reach, as
/// counter read_GB/s.
inline void stream_read(benchmark::State& state) {
  const int64_t n = int64_t{64} << 20;  // floats
  static const std::vector<float> buf(static_cast<size_t>(n), 1.0f);
  for (auto _ : state) {
    float total = 0;
#pragma omp parallel for simd reduction(+ : total) schedule(static)
    for (int64_t i = 0; i < n; ++i) total += buf[static_cast<size_t>(i)];
    benchmark::DoNotOptimize(total);
  }
  state.counters["read_GB/s"] =
      benchmark::Counter(4.0 * n / 1e9, benchmark::Counter::kIsIterationInvariantRate);
}

}  // namespace tailor::bench
