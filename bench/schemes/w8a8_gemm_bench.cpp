// W8A8 (int8-a8: int8 weights × int8 activations quantized per row at run
// time) against OpenBLAS sgemm and tailor's int8 × f32 kernel on the PP-OCRv4
// recogniser's 1×1 convolutions at a 48×320 input: Y [pix, out] = X [pix, in]·Wᵀ,
// the shapes CompressedConv hands its scheme after im2row. Each at 1 and 2
// OpenMP threads (OpenBLAS's own threads follow omp_set_num_threads when it
// is built for OpenMP; otherwise OPENBLAS_NUM_THREADS sets them).
//
//   build/w8a8_gemm_bench --benchmark_enable_random_interleaving=true \
//       --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
//
// Counter GFLOP/s = 2·pix·out·in per second (W8A8 includes quantizing X).
#include <benchmark/benchmark.h>
#include <omp.h>

#include <string>
#include <vector>

#include "bench_inputs.h"
#include "tailor/linalg/blas.h"

namespace {

using tailor::Tensor;
using tailor::schemes::Encoded;

const std::vector<float>& values(int64_t n, uint64_t seed) {
  return tailor::bench::normal_values(n, seed, 1.0);
}

void set_gflops(benchmark::State& state, int64_t pix, int64_t out, int64_t in) {
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * pix * out * in / 1e9, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_Scheme(benchmark::State& state, std::string label) {
  const int64_t pix = state.range(0), out = state.range(1), in = state.range(2);
  tailor::bench::set_threads(state, 3);
  const Encoded& e = tailor::bench::encoded_weight(label, out, in, 1.0);
  const Tensor x = Tensor::from_f32({pix, in}, values(pix * in, 2));
  for (auto _ : state) {
    Tensor y = e.matmul(x);
    benchmark::DoNotOptimize(y.raw());
  }
  set_gflops(state, pix, out, in);
}

void BM_OpenblasSgemm(benchmark::State& state) {
  const int64_t pix = state.range(0), out = state.range(1), in = state.range(2);
  tailor::bench::set_threads(state, 3);
  const std::vector<float>& w = values(out * in, 1);
  const std::vector<float>& x = values(pix * in, 2);
  std::vector<float> y(static_cast<size_t>(pix * out));
  for (auto _ : state) {
    tailor::linalg::sgemm(false, true, pix, out, in, 1.0f, x.data(), in, w.data(), in, 0.0f,
                          y.data(), out);
    benchmark::DoNotOptimize(y.data());
  }
  set_gflops(state, pix, out, in);
}

const bool registered = [] {
  // {pix, out, in}: p2o.Conv.4, 6, 8, 10, 12, 14, 24, 28, 30.
  const std::vector<std::vector<int64_t>> shapes{
      {3840, 64, 32},  {3840, 64, 64},  {1920, 128, 64}, {1920, 128, 128}, {960, 240, 128},
      {960, 240, 240}, {480, 480, 240}, {480, 480, 480}, {240, 480, 480}};
  auto args = [&](benchmark::internal::Benchmark* b) {
    tailor::bench::shapes_by_threads(b, shapes, {1, 2}, {"pix", "out", "in", "threads"});
    b->Unit(benchmark::kMicrosecond)->UseRealTime();
  };
  args(benchmark::RegisterBenchmark("BM_Scheme/int8-a8", BM_Scheme, std::string("int8-a8")));
  args(benchmark::RegisterBenchmark("BM_Scheme/int8", BM_Scheme, std::string("int8")));
  args(benchmark::RegisterBenchmark("BM_OpenblasSgemm", BM_OpenblasSgemm));
  return true;
}();

}  // namespace
