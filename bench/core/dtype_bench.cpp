// Throughput of the weight conversions every reader leans on: f16 and bf16 to
// f32, and f32 to f16 (bytes of output per second).
#include <benchmark/benchmark.h>

#include <vector>

#include "tailor/core/dtype.h"
#include "tailor/core/rng.h"

namespace {

void BM_F16ToF32(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  std::vector<uint16_t> src(n);
  tailor::Rng rng(1);
  for (auto& h : src) h = tailor::f32_to_f16(static_cast<float>(rng.normal()));
  std::vector<float> dst(n);
  for (auto _ : state) {
    tailor::convert_elements(src.data(), tailor::DType::f16, dst.data(), tailor::DType::f32, n);
    benchmark::DoNotOptimize(dst.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * n * 4));
}
BENCHMARK(BM_F16ToF32)->Arg(1 << 20);

void BM_BF16ToF32(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  std::vector<uint16_t> src(n, 0x3f80);
  std::vector<float> dst(n);
  for (auto _ : state) {
    tailor::convert_elements(src.data(), tailor::DType::bf16, dst.data(), tailor::DType::f32, n);
    benchmark::DoNotOptimize(dst.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * n * 4));
}
BENCHMARK(BM_BF16ToF32)->Arg(1 << 20);

void BM_F32ToF16(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  std::vector<float> src(n);
  tailor::Rng rng(2);
  for (auto& x : src) x = static_cast<float>(rng.normal());
  std::vector<uint16_t> dst(n);
  for (auto _ : state) {
    tailor::convert_elements(src.data(), tailor::DType::f32, dst.data(), tailor::DType::f16, n);
    benchmark::DoNotOptimize(dst.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * n * 2));
}
BENCHMARK(BM_F32ToF16)->Arg(1 << 20);

}  // namespace
