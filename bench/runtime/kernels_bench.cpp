// CPU kernel throughput: the measured sgemm peak (OpenBLAS, large square, 1
// and 2 threads) and GFLOP/s of our conv paths on representative layers of
// the PP-OCRv4 recogniser (48×320 input) and detector (640×640), and of an
// ISNet-like dilated 3×3 conv. Counter "FLOPS" is 2·MACs per second; divide
// a conv's by the sgemm figure at the same thread count for its share of peak.
// "FLOPS_per_cpu" divides by the process CPU time instead of wall time: the
// throughput per busy core, which stays meaningful on a loaded machine where
// wall time includes waiting for a core. Threads are set per benchmark by
// set_num_threads (OpenMP; OpenBLAS serial inside the kernels' blocks) and,
// for the sgemm peak, openblas_set_num_threads.
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <ctime>

#include <string>
#include <vector>

#include "tailor/core/rng.h"
#include "tailor/linalg/blas.h"
#include "tailor/runtime/kernels/conv.h"
#include "tailor/runtime/kernels/pool.h"
#include "tailor/runtime/kernels/resize.h"

namespace {

using namespace tailor::runtime::kernels;

double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

void set_flop_counters(benchmark::State& state, double flops, double cpu_seconds) {
  state.counters["FLOPS"] =
      benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["FLOPS_per_cpu"] =
      benchmark::Counter(flops * static_cast<double>(state.iterations()) / cpu_seconds);
}

std::vector<float> random_values(int64_t n, uint64_t seed) {
  tailor::Rng rng(seed);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = static_cast<float>(rng.uniform(-1.0, 1.0));
  return v;
}

void BM_SgemmPeak(benchmark::State& state) {
  const int64_t n = state.range(0);
  // OpenBLAS's own threading (the kernels make it serial; the peak uses it).
  openblas_set_num_threads(static_cast<int>(state.range(1)));
  const auto a = random_values(n * n, 1), b = random_values(n * n, 2);
  std::vector<float> c(static_cast<size_t>(n * n));
  const double t0 = process_cpu_seconds();
  for (auto _ : state) {
    tailor::linalg::sgemm(false, false, n, n, n, 1.f, a.data(), n, b.data(), n, 0.f, c.data(), n);
    benchmark::DoNotOptimize(c.data());
  }
  set_flop_counters(state, 2.0 * n * n * n, process_cpu_seconds() - t0);
}
BENCHMARK(BM_SgemmPeak)->ArgsProduct({{1024}, {1, 2}})->ArgNames({"n", "threads"})->UseRealTime();

// One conv layer: {c_in, h, w, c_out, k, stride_h, stride_w, dil, groups}.
struct Layer {
  const char* name;
  int64_t c_in, h, w, c_out, k, sh, sw, dil, groups;
};

const Layer kLayers[] = {
    {"det_conv3x3_96to24_160", 96, 160, 160, 24, 3, 1, 1, 1, 1},  // im2col + GEMM, det's heaviest
    {"det_conv1x1_192_40", 192, 40, 40, 192, 1, 1, 1, 1, 1},      // pointwise GEMM
    {"det_conv1x1_16to32_320", 16, 320, 320, 32, 1, 1, 1, 1, 1},  // pointwise, tiny K
    {"det_dw5x5_192_40", 192, 40, 40, 192, 5, 1, 1, 1, 192},      // depthwise 5×5
    {"det_dw3x3_16_320", 16, 320, 320, 16, 3, 1, 1, 1, 16},       // depthwise 3×3
    {"det_conv3x3s2_3to16_640", 3, 640, 640, 16, 3, 2, 2, 1, 1},  // stem
    {"rec_conv1x1_240_12x80", 240, 12, 80, 240, 1, 1, 1, 1, 1},   // rec's heaviest
    {"rec_conv1x1_480_6x80", 480, 6, 80, 480, 1, 1, 1, 1, 1},
    {"rec_dw5x5_240_12x80", 240, 12, 80, 240, 5, 1, 1, 1, 240},
    {"rec_dw5x5s21_480_6x80", 480, 6, 80, 480, 5, 2, 1, 1, 480},
    {"rec_dw3x3_64_24x160", 64, 24, 160, 64, 3, 1, 1, 1, 64},
    {"isnet_conv3x3d2_32_128", 32, 128, 128, 32, 3, 1, 1, 2, 1},  // dilated RSU conv
};

void BM_Conv(benchmark::State& state) {
  const Layer& l = kLayers[state.range(0)];
  set_num_threads(static_cast<int>(state.range(1)));
  Conv2dParams p;
  p.c_in = l.c_in, p.h = l.h, p.w = l.w, p.c_out = l.c_out, p.kh = p.kw = l.k;
  p.stride_h = l.sh, p.stride_w = l.sw, p.dil_h = p.dil_w = l.dil, p.groups = l.groups;
  p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = l.dil * (l.k - 1) / 2;
  const auto x = random_values(p.c_in * p.h * p.w, 1);
  const auto w = random_values(p.c_out * (p.c_in / p.groups) * p.kh * p.kw, 2);
  const auto bias = random_values(p.c_out, 3);
  std::vector<float> y(static_cast<size_t>(p.c_out * p.out_h() * p.out_w()));
  std::vector<float> scratch(static_cast<size_t>(conv2d_scratch_size(p)));
  const double t0 = process_cpu_seconds();
  for (auto _ : state) {
    conv2d(p, x.data(), w.data(), bias.data(), y.data(), Activation::hard_swish(), scratch.data());
    benchmark::DoNotOptimize(y.data());
  }
  const double cpu = process_cpu_seconds() - t0;
  set_flop_counters(state,
                    2.0 * p.c_out * p.out_h() * p.out_w() * (p.c_in / p.groups) * p.kh * p.kw, cpu);
  state.SetLabel(l.name);
}
BENCHMARK(BM_Conv)
    ->ArgsProduct({benchmark::CreateDenseRange(0, std::size(kLayers) - 1, 1), {1, 2}})
    ->ArgNames({"layer", "threads"})
    ->UseRealTime();

// ISNet's decoder upsampling (bilinear, 64 channels, 128² → 256²) and its
// 2×2 ceil-mode max pooling (64 channels, 256² → 128²); GB/s of output.
void BM_ResizeLinear(benchmark::State& state) {
  set_num_threads(static_cast<int>(state.range(0)));
  ResizeParams p;
  p.c = 64, p.in_h = p.in_w = 128, p.out_h = p.out_w = 256;
  p.mode = ResizeMode::linear;
  p.transform = CoordinateTransform::half_pixel;
  const auto x = random_values(p.c * p.in_h * p.in_w, 1);
  std::vector<float> y(static_cast<size_t>(p.c * p.out_h * p.out_w));
  for (auto _ : state) {
    resize2d(p, x.data(), y.data());
    benchmark::DoNotOptimize(y.data());
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(y.size() * sizeof(float)));
}
BENCHMARK(BM_ResizeLinear)->Arg(1)->Arg(2)->ArgName("threads")->UseRealTime();

void BM_MaxPool2x2(benchmark::State& state) {
  set_num_threads(static_cast<int>(state.range(0)));
  Pool2dParams p;
  p.c = 64, p.h = p.w = 256, p.kh = p.kw = 2, p.stride_h = p.stride_w = 2, p.ceil_mode = true;
  const auto x = random_values(p.c * p.h * p.w, 1);
  std::vector<float> y(static_cast<size_t>(p.c * p.out_h() * p.out_w()));
  for (auto _ : state) {
    max_pool2d(p, x.data(), y.data());
    benchmark::DoNotOptimize(y.data());
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(y.size() * sizeof(float)));
}
BENCHMARK(BM_MaxPool2x2)->Arg(1)->Arg(2)->ArgName("threads")->UseRealTime();

}  // namespace
