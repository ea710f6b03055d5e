// Every scheme's matmul on a 4096×4096 weight at batch 1 (GEMV) and 64,
// against dense OpenBLAS sgemv/sgemm, with the machine's limits beside them:
// sgemm GFLOP/s and a streaming-read GB/s.
//
// Counters: weight_GB/s = stored bytes of the weight read per second (each
// matmul reads every stored byte once); GFLOP/s = 2·macs per second. Compare
// a scheme's time with BM_OpenblasSgemv / BM_OpenblasSgemm at the same batch.
// Encoding happens once per scheme, outside the timing (tucker's exact HOSVD
// of a 4096² unfolding takes a while).
#include <benchmark/benchmark.h>
#include <omp.h>

#include <string>
#include <vector>

#include "bench_inputs.h"
#include "tailor/linalg/blas.h"

namespace {

using tailor::Tensor;
using tailor::schemes::Encoded;

constexpr int64_t kN = 4096;

const std::vector<float>& values(int64_t n, uint64_t seed) {
  return tailor::bench::normal_values(n, seed, 0.02);
}

const Tensor& weight() {
  static const Tensor w = Tensor::from_f32({kN, kN}, values(kN * kN, 1));
  return w;
}

const Encoded& encoded(const std::string& label) {
  return tailor::bench::encoded_weight(label, kN, kN, 0.02);
}

void set_counters(benchmark::State& state, double bytes, double macs) {
  state.counters["weight_GB/s"] =
      benchmark::Counter(bytes / 1e9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["GFLOP/s"] =
      benchmark::Counter(2 * macs / 1e9, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_SchemeMatmul(benchmark::State& state, std::string label) {
  const int64_t batch = state.range(0);
  const Encoded& e = encoded(label);
  const Tensor x = Tensor::from_f32({batch, kN}, values(batch * kN, 2));
  for (auto _ : state) {
    Tensor y = e.matmul(x);
    benchmark::DoNotOptimize(y.raw());
  }
  set_counters(state, static_cast<double>(e.bytes()), static_cast<double>(e.macs(batch)));
  state.SetLabel(std::to_string(e.bytes()) + " B");
}

// The baselines the goals are stated against: OpenBLAS directly on f32 W.
void BM_OpenblasSgemv(benchmark::State& state) {
  const float* w = weight().data<float>();
  const std::vector<float>& x = values(kN, 2);
  std::vector<float> y(kN);
  for (auto _ : state) {
    tailor::linalg::sgemv(false, kN, kN, 1.0f, w, kN, x.data(), 0.0f, y.data());
    benchmark::DoNotOptimize(y.data());
  }
  set_counters(state, 4.0 * kN * kN, static_cast<double>(kN) * kN);
}
BENCHMARK(BM_OpenblasSgemv)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_OpenblasSgemm(benchmark::State& state) {
  const int64_t batch = state.range(0);
  const float* w = weight().data<float>();
  const std::vector<float>& x = values(batch * kN, 2);
  std::vector<float> y(static_cast<size_t>(batch * kN));
  for (auto _ : state) {
    tailor::linalg::sgemm(false, true, batch, kN, kN, 1.0f, x.data(), kN, w, kN, 0.0f, y.data(),
                          kN);
    benchmark::DoNotOptimize(y.data());
  }
  set_counters(state, 4.0 * kN * kN, static_cast<double>(batch) * kN * kN);
}
BENCHMARK(BM_OpenblasSgemm)->Arg(64)->Unit(benchmark::kMillisecond)->UseRealTime();

// Machine limit 1: sgemm throughput on a large square problem.
void BM_LimitSgemm(benchmark::State& state) {
  const int64_t n = state.range(0);
  const std::vector<float>& a = values(n * n, 3);
  const std::vector<float>& b = values(n * n, 4);
  std::vector<float> c(static_cast<size_t>(n * n));
  for (auto _ : state) {
    tailor::linalg::sgemm(false, false, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
    benchmark::DoNotOptimize(c.data());
  }
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * n * n * n / 1e9, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_LimitSgemm)->Arg(2048)->Unit(benchmark::kMillisecond)->UseRealTime();

// Machine limit 2: streaming read of 256 MiB (vectorized sum, OpenMP threads), far
// beyond the caches: the bandwidth a weight-bound GEMV can at best reach.
void BM_LimitStreamRead(benchmark::State& state) {
  tailor::bench::stream_read(state);
}
BENCHMARK(BM_LimitStreamRead)->Unit(benchmark::kMillisecond)->UseRealTime();

const bool registered = [] {
  for (const char* label :
       {"dense", "int8", "int4", "int3", "int4-g32", "int4-g64", "int4-g128", "ternary",
        "sparse-2:4", "lowrank-r64", "lowrank-r256", "monarch", "tucker", "tt"})
    benchmark::RegisterBenchmark(("BM_SchemeMatmul/" + std::string(label)).c_str(), BM_SchemeMatmul,
                                 std::string(label))
        ->Arg(1)
        ->Arg(64)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
  return true;
}();

}  // namespace
