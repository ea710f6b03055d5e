// CPU kernel throughput, mirroring src/runtime/kernels. BM_Kernel_<family>
// runs one kernel of the registry per instruction set (isa 0 = the scalar
// reference, 1 = the AVX2 table) on one thread and the same data, so the
// reference/optimised ratio of each family comes from one run. The operator
// benchmarks measure the default (active) kernels: the sgemm peak (OpenBLAS,
// large square, 1 and 2 threads) and GFLOP/s of the conv paths on
// representative layers of the PP-OCRv4 recogniser (48×320 input) and
// detector (640×640), and of an ISNet-like dilated 3×3 conv; BM_CompressedConv
// the same group-1 layers on int8 / int4 / int4-g32 codes. Counter "FLOPS" is 2·MACs per second;
// divide a conv's by the sgemm figure at the same thread count for its share of peak.
// "FLOPS_per_cpu" divides by the process CPU time instead of wall time: the
// throughput per busy core, which stays meaningful on a loaded machine where
// wall time includes waiting for a core. Threads are set per benchmark by
// linalg::set_threads (OpenMP; OpenBLAS serial inside the kernels' blocks) and,
// for the sgemm peak, openblas_set_num_threads.
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <string>
#include <vector>

#include "bench_util.h"
#include "tailor/core/cpu.h"
#include "tailor/linalg/blas.h"
#include "tailor/linalg/threads.h"
#include "tailor/runtime/kernels/conv.h"
#include "tailor/runtime/kernels/gemm.h"
#include "tailor/runtime/kernels/lstm.h"
#include "tailor/runtime/kernels/pool.h"
#include "tailor/runtime/kernels/registry.h"
#include "tailor/runtime/kernels/resize.h"
#include "tailor/schemes/matmul_into.h"
#include "tailor/schemes/registry.h"

namespace {

using namespace tailor::runtime::kernels;

using tailor::bench::process_cpu_seconds;
using tailor::bench::random_values;

void set_flop_counters(benchmark::State& state, double flops, double cpu_seconds) {
  state.counters["FLOPS"] =
      benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["FLOPS_per_cpu"] =
      benchmark::Counter(flops * static_cast<double>(state.iterations()) / cpu_seconds);
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

// matmul y [m, n] = a [m, k] · b [k, n] (the recogniser's CTC head: 40 ×
// 120 · 120 × 6625; a decoder's prompt step), 1 thread: path 0 the table's
// gemm (OpenBLAS), 1 matmul itself (the 1×1-conv kernel, a as its weights,
// where KernelTable::matmul_conv1x1).
void BM_MatmulFewRows(benchmark::State& state) {
  const int64_t m = state.range(0), k = state.range(1), n = state.range(2);
  tailor::linalg::set_threads(1);
  const auto a = random_values(m * k, 1);
  const auto b = random_values(k * n, 2);
  std::vector<float> y(static_cast<size_t>(m * n));
  const int64_t as[] = {m, k}, bs[] = {k, n};
  const KernelTable& t = active_kernels();
  const double t0 = process_cpu_seconds();
  for (auto _ : state) {
    if (state.range(3) == 0) {
      t.gemm(false, false, m, n, k, 1.f, a.data(), k, b.data(), n, 0.f, y.data(), n);
    } else {
      matmul(a.data(), as, b.data(), bs, y.data());
    }
    benchmark::DoNotOptimize(y.data());
  }
  set_flop_counters(state, 2.0 * m * n * k, process_cpu_seconds() - t0);
}
BENCHMARK(BM_MatmulFewRows)
    ->ArgsProduct({{5, 16, 40, 64, 96, 160, 256, 512}, {120}, {6625}, {0, 1}})
    ->ArgsProduct({{5, 40, 64}, {64, 480}, {512, 2048}, {0, 1}})
    ->ArgNames({"m", "k", "n", "path"})
    ->UseRealTime();

// One conv layer: {c_in, h, w, c_out, k, stride_h, stride_w, dil, groups}.
struct Layer {
  const char* name;
  int64_t c_in, h, w, c_out, k, sh, sw, dil, groups;
};

const Layer kLayers[] = {
    {"det_conv3x3_96to24_160", 96, 160, 160, 24, 3, 1, 1, 1, 1},  // Winograd, det's 2 heaviest
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
    {"isnet_conv3x3_64_256", 64, 256, 256, 64, 3, 1, 1, 1, 1},    // RSU conv, large plane
    {"det_conv3x3_96to24_80", 96, 80, 80, 24, 3, 1, 1, 1, 1},     // Winograd, det's third
    {"det_dw5x5_192_20", 192, 20, 20, 192, 5, 1, 1, 1, 192},      // det at 320²: 20 columns
    {"det_dw5x5_384_10", 384, 10, 10, 384, 5, 1, 1, 1, 384},      // det at 320²: 10 columns
    {"det_conv3x3_96to24_10", 96, 10, 10, 24, 3, 1, 1, 1, 1},     // det at 320²: below Winograd
    {"det_conv3x3s2_3to16_320", 3, 320, 320, 16, 3, 2, 2, 1, 1},  // stem at 320²
    {"isnet_conv3x3s2_3to64_1024", 3, 1024, 1024, 64, 3, 2, 2, 1, 1},  // ISNet's stem
    {"isnet_side3x3_64to1_512", 64, 512, 512, 1, 3, 1, 1, 1, 1},       // ISNet's side1 output
    {"isnet_side3x3_512to1_32", 512, 32, 32, 1, 3, 1, 1, 1, 1},        // ISNet's side5 output
};

void BM_Conv(benchmark::State& state) {
  const Layer& l = kLayers[state.range(0)];
  tailor::linalg::set_threads(static_cast<int>(state.range(1)));
  Conv2dParams p;
  p.c_in = l.c_in, p.h = l.h, p.w = l.w, p.c_out = l.c_out, p.kh = p.kw = l.k;
  p.stride_h = l.sh, p.stride_w = l.sw, p.dil_h = p.dil_w = l.dil, p.groups = l.groups;
  p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = l.dil * (l.k - 1) / 2;
  const auto x = random_values(p.c_in * p.h * p.w, 1);
  const auto w = random_values(p.c_out * (p.c_in / p.groups) * p.kh * p.kw, 2);
  const auto bias = random_values(p.c_out, 3);
  std::vector<float> y(static_cast<size_t>(p.c_out * p.out_h() * p.out_w()));
  std::vector<float> scratch(static_cast<size_t>(conv2d_scratch_size(p)));
  // As the Conv op runs it: weights packed once, at load.
  const PackedConvWeights packed = pack_conv2d_weights(p, w.data());
  const double t0 = process_cpu_seconds();
  for (auto _ : state) {
    conv2d(p, x.data(), w.data(), bias.data(), y.data(), Activation::hard_swish(), scratch.data(),
           &packed);
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

// The group-1 layers above on packed-code weights, as ai.tailor CompressedConv
// runs them (active table's qb_conv: a panel of 6 rows decoded at a time, no
// im2row): scheme 0 int8, 1 int4, 2 int4-g32; compare with BM_Conv's figure
// for the same layer (dense f32 weights packed at load) at the same threads.
void BM_CompressedConv(benchmark::State& state) {
  const Layer& l = kLayers[state.range(0)];
  const char* const schemes[] = {"int8", "int4", "int4-g32"};
  tailor::linalg::set_threads(static_cast<int>(state.range(2)));
  QbConvParams p;
  Conv2dParams& c = p.conv;
  c.c_in = l.c_in, c.h = l.h, c.w = l.w, c.c_out = l.c_out, c.kh = c.kw = l.k;
  c.stride_h = l.sh, c.stride_w = l.sw, c.dil_h = c.dil_w = l.dil;
  c.pad_top = c.pad_left = c.pad_bottom = c.pad_right = l.dil * (l.k - 1) / 2;
  const int64_t k = c.c_in * c.kh * c.kw;
  const auto w = random_values(c.c_out * k, 2);
  const auto enc = tailor::schemes::parse_scheme(schemes[state.range(1)])
                       .encode(tailor::Tensor::from_f32({c.c_out, k}, w));
  const auto view = tailor::schemes::packed_view(*enc);
  p.w = view->args;
  p.bits = view->bits;
  const auto x = random_values(c.c_in * c.h * c.w, 1);
  const auto bias = random_values(c.c_out, 3);
  std::vector<float> y(static_cast<size_t>(c.c_out * c.out_h() * c.out_w()));
  const double t0 = process_cpu_seconds();
  for (auto _ : state) {
    active_kernels().qb_conv(p, x.data(), bias.data(), y.data(), Activation::hard_swish());
    benchmark::DoNotOptimize(y.data());
  }
  set_flop_counters(state, 2.0 * c.c_out * c.out_h() * c.out_w() * k, process_cpu_seconds() - t0);
  state.SetLabel(std::string(l.name) + " " + schemes[state.range(1)]);
}
BENCHMARK(BM_CompressedConv)
    ->ArgsProduct({{0, 1, 6, 7}, {0, 1, 2}, {1, 2}})
    ->ArgNames({"layer", "scheme", "threads"})
    ->UseRealTime();

// One 3×3 stride-1 conv of `p`, 1 thread, weights packed once: path 0 the
// implicit GEMM (conv_packed, gathering at the dilation), 1 Winograd
// F(4×4, 3×3) (conv_winograd; tiles on each phase's outputs when dilated).
// FLOPS counts the direct convolution's 2·MACs for both, so the ratio is the
// speed-up.
void run_conv3x3_path(benchmark::State& state, Conv2dParams p, bool winograd) {
  tailor::linalg::set_threads(1);
  p.kh = p.kw = 3;
  const auto x = random_values(p.c_in * p.h * p.w, 1);
  const auto w = random_values(p.c_out * p.c_in * 9, 2);
  const auto bias = random_values(p.c_out, 3);
  std::vector<float> y(static_cast<size_t>(p.c_out * p.out_h() * p.out_w()));
  const KernelTable& t = active_kernels();
  std::vector<float> packed(
      static_cast<size_t>(winograd ? f32_conv_winograd_f43_pack(p, w.data(), nullptr)
                                   : t.conv_pack(p, w.data(), nullptr)));
  if (winograd)
    f32_conv_winograd_f43_pack(p, w.data(), packed.data());
  else
    t.conv_pack(p, w.data(), packed.data());
  const F32ConvPackedFn fn = winograd ? t.conv_winograd : t.conv_packed;
  const double t0 = process_cpu_seconds();
  for (auto _ : state) {
    fn(p, x.data(), packed.data(), bias.data(), y.data(), Activation::relu());
    benchmark::DoNotOptimize(y.data());
  }
  set_flop_counters(state, 2.0 * p.c_out * p.out_h() * p.out_w() * p.c_in * 9,
                    process_cpu_seconds() - t0);
}

// The two paths on the plane sizes and channels of conv.cpp's winograd_pays
// rule, pad 1. Args: {c_in = c_out, plane, path}.
void BM_Conv3x3Path(benchmark::State& state) {
  Conv2dParams p;
  p.c_in = p.c_out = state.range(0);
  p.h = p.w = state.range(1);
  p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = 1;
  run_conv3x3_path(state, p, state.range(2) == 1);
}
BENCHMARK(BM_Conv3x3Path)
    ->ArgsProduct({{8, 16, 32, 64, 128, 256, 512}, {8, 16, 32, 80}, {0, 1}})
    ->ArgNames({"c", "plane", "path"})
    ->UseRealTime();

// The two paths of a dilated conv, pads = dilation (the output plane = the
// input plane). Args: {c_in = c_out, plane, dilation, path}: ISNet's RSU shapes.
void BM_Conv3x3Dilated(benchmark::State& state) {
  Conv2dParams p;
  p.c_in = p.c_out = state.range(0);
  p.h = p.w = state.range(1);
  p.dil_h = p.dil_w = state.range(2);
  p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = state.range(2);
  run_conv3x3_path(state, p, state.range(3) == 1);
}
BENCHMARK(BM_Conv3x3Dilated)
    ->ArgsProduct({{32, 128, 256}, {16, 32}, {2, 4, 8}, {0, 1}})
    ->ArgNames({"c", "plane", "dil", "path"})
    ->UseRealTime();

// ISNet's large 3×3 stride-1 convs (channels as in the model, planes a
// quarter or less of the model's so that an iteration stays short), pad 1,
// 1 thread, on Winograd F(4×4, 3×3) with the products on AVX2 (isa 0,
// f32_conv_winograd_f43_avx2) or AVX-512F (isa 1, f32_conv_winograd_f43_avx512;
// skipped without AVX-512F). FLOPS counts the direct convolution's 2·MACs.
// Args: {c_in, c_out, plane, isa}.
void BM_Conv3x3Isnet(benchmark::State& state) {
  if (state.range(3) == 1 && !tailor::cpu_features().avx512f) {
    state.SkipWithError("CPU lacks AVX-512F");
    return;
  }
  tailor::linalg::set_threads(1);
  Conv2dParams p;
  p.c_in = state.range(0), p.c_out = state.range(1), p.h = p.w = state.range(2);
  p.kh = p.kw = 3;
  p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = 1;
  const auto x = random_values(p.c_in * p.h * p.w, 1);
  const auto w = random_values(p.c_out * p.c_in * 9, 2);
  const auto bias = random_values(p.c_out, 3);
  std::vector<float> y(static_cast<size_t>(p.c_out * p.out_h() * p.out_w()));
  std::vector<float> packed(static_cast<size_t>(f32_conv_winograd_f43_pack(p, w.data(), nullptr)));
  f32_conv_winograd_f43_pack(p, w.data(), packed.data());
  const F32ConvPackedFn fn =
      state.range(3) == 1 ? f32_conv_winograd_f43_avx512 : f32_conv_winograd_f43_avx2;
  const double t0 = process_cpu_seconds();
  for (auto _ : state) {
    fn(p, x.data(), packed.data(), bias.data(), y.data(), Activation::relu());
    benchmark::DoNotOptimize(y.data());
  }
  set_flop_counters(state, 2.0 * p.c_out * p.out_h() * p.out_w() * p.c_in * 9,
                    process_cpu_seconds() - t0);
}
BENCHMARK(BM_Conv3x3Isnet)
    ->ArgsProduct({{64}, {64}, {256}, {0, 1}})
    ->ArgsProduct({{128}, {64}, {256}, {0, 1}})
    ->ArgsProduct({{256}, {128}, {128}, {0, 1}})
    ->ArgsProduct({{512}, {256}, {64}, {0, 1}})
    ->ArgsProduct({{1024}, {256}, {64}, {0, 1}})
    ->ArgsProduct({{512}, {512}, {32}, {0, 1}})
    ->ArgNames({"cin", "cout", "plane", "isa"})
    ->UseRealTime();

// The Winograd weight transform, 1 thread, which a compressed layer's packed
// 3×3 codes go through on every call (runtime/ops_compressed.cpp): impl 0
// f32_conv_winograd_f43_pack_ref (row by row), 1 f32_conv_winograd_f43_pack
// (blocks of 6 rows × 64 channels). Args: {c_in, c_out, impl}: ISNet's
// shapes. Bytes: the 36·⌈c_out/6⌉·6·c_in floats written.
void BM_WinogradPack(benchmark::State& state) {
  tailor::linalg::set_threads(1);
  Conv2dParams p;
  p.c_in = state.range(0), p.c_out = state.range(1), p.h = p.w = 16, p.kh = p.kw = 3;
  const auto w = random_values(p.c_out * p.c_in * 9, 2);
  std::vector<float> packed(static_cast<size_t>(f32_conv_winograd_f43_pack(p, w.data(), nullptr)));
  const auto fn = state.range(2) == 1 ? f32_conv_winograd_f43_pack : f32_conv_winograd_f43_pack_ref;
  for (auto _ : state) {
    fn(p, w.data(), packed.data());
    benchmark::DoNotOptimize(packed.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(packed.size() * sizeof(float)));
}
BENCHMARK(BM_WinogradPack)
    ->ArgsProduct({{64}, {64}, {0, 1}})
    ->ArgsProduct({{512}, {256}, {0, 1}})
    ->ArgsProduct({{1024}, {512}, {0, 1}})
    ->ArgNames({"cin", "cout", "impl"})
    ->Unit(benchmark::kMillisecond);

// The candidate paths of a 1×1 stride-1 conv, 1 thread: path 0 what conv2d
// runs (its rule: the gemm kernel on x as it is, in column blocks, OpenBLAS
// packing A on every call, then bias_act; or the conv1x1 kernel where the
// rule picks it, on weights packed at load as the Conv op does), 1 the
// packed-weight 6×16 kernel (conv_packed on weights packed once, the plane as
// one row), 2 the table's conv1x1 kernel on its weights packed once
// (f32_conv1x1_12x32_avx512 where the CPU has AVX-512F, else
// f32_conv1x1_6x16_avx2), 3 f32_conv1x1_6x16_avx2 (x in place, W in
// f32_conv_pack_6x16_avx2's panels packed once, epilogue on the tile). Args: {c_in, c_out, pixels,
// path}; the recogniser's and detector's pointwise shapes.
void BM_Conv1x1Path(benchmark::State& state) {
  tailor::linalg::set_threads(1);
  Conv2dParams p;
  p.c_in = state.range(0), p.c_out = state.range(1);
  p.h = 1, p.w = state.range(2);
  const auto x = random_values(p.c_in * p.w, 1);
  const auto w = random_values(p.c_out * p.c_in, 2);
  const auto bias = random_values(p.c_out, 3);
  std::vector<float> y(static_cast<size_t>(p.c_out * p.w));
  const KernelTable& t = active_kernels();
  std::vector<float> packed(static_cast<size_t>(t.conv_pack(p, w.data(), nullptr)));
  t.conv_pack(p, w.data(), packed.data());
  std::vector<float> packed1x1(static_cast<size_t>(t.conv1x1_pack(p, w.data(), nullptr)));
  t.conv1x1_pack(p, w.data(), packed1x1.data());
  const PackedConvWeights at_load = pack_conv2d_weights(p, w.data());
  std::vector<float> packed6(static_cast<size_t>(f32_conv_pack_6x16_avx2(p, w.data(), nullptr)));
  f32_conv_pack_6x16_avx2(p, w.data(), packed6.data());
  const double t0 = process_cpu_seconds();
  for (auto _ : state) {
    if (state.range(3) == 0) {
      conv2d(p, x.data(), w.data(), bias.data(), y.data(), Activation::hard_swish(), nullptr,
             &at_load);
    } else if (state.range(3) == 2) {
      t.conv1x1(p, x.data(), packed1x1.data(), bias.data(), y.data(), Activation::hard_swish());
    } else if (state.range(3) == 3) {
      f32_conv1x1_6x16_avx2(p, x.data(), packed6.data(), bias.data(), y.data(),
                            Activation::hard_swish());
    } else {
      t.conv_packed(p, x.data(), packed.data(), bias.data(), y.data(), Activation::hard_swish());
    }
    benchmark::DoNotOptimize(y.data());
  }
  set_flop_counters(state, 2.0 * p.c_out * p.w * p.c_in, process_cpu_seconds() - t0);
}
BENCHMARK(BM_Conv1x1Path)
    // The recogniser's pointwise convs (48×320 input).
    ->ArgsProduct({{16}, {32}, {3840}, {0, 1, 2, 3}})
    ->ArgsProduct({{32}, {64}, {3840}, {0, 1, 2, 3}})
    ->ArgsProduct({{64}, {64}, {3840}, {0, 1, 2, 3}})
    ->ArgsProduct({{64, 128}, {128}, {1920}, {0, 1, 2, 3}})
    ->ArgsProduct({{128}, {240}, {960}, {0, 1, 2, 3}})
    ->ArgsProduct({{240}, {240}, {240, 960}, {0, 1, 2, 3}})
    ->ArgsProduct({{240}, {480}, {480}, {0, 1, 2, 3}})
    ->ArgsProduct({{480}, {480}, {120, 240, 480}, {0, 1, 2, 3}})
    ->ArgsProduct({{64}, {128}, {960}, {0, 1, 2, 3}})
    ->ArgsProduct({{192}, {192}, {1600}, {0, 1, 2, 3}})
    // The detector's pointwise convs (c_in → c_out at H·W pixels).
    ->ArgsProduct({{16}, {32}, {102400}, {0, 1, 2, 3}})
    ->ArgsProduct({{32}, {48}, {25600}, {0, 1, 2, 3}})
    ->ArgsProduct({{48}, {12, 48}, {25600}, {0, 1, 2, 3}})
    ->ArgsProduct({{12}, {96}, {25600}, {0, 1, 2, 3}})
    ->ArgsProduct({{18, 48, 96}, {96}, {6400}, {0, 1, 2, 3}})
    ->ArgsProduct({{96}, {18}, {6400}, {0, 1, 2, 3}})
    ->ArgsProduct({{96}, {192}, {1600}, {0, 1, 2, 3}})
    ->ArgsProduct({{192}, {384}, {400}, {0, 1, 2, 3}})
    ->ArgsProduct({{384}, {360, 384}, {400}, {0, 1, 2, 3}})
    ->ArgNames({"c_in", "c_out", "pixels", "path"})
    ->UseRealTime();

// ISNet's decoder upsampling (bilinear, 64 channels, 128² → 256²) and its
// 2×2 ceil-mode max pooling (64 channels, 256² → 128²); GB/s of output.
void BM_ResizeLinear(benchmark::State& state) {
  tailor::linalg::set_threads(static_cast<int>(state.range(0)));
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
  tailor::linalg::set_threads(static_cast<int>(state.range(0)));
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

// The recogniser's AveragePool before its head (480 channels, 3×80 → 1×40,
// 3×2 windows, stride 3×2); GB/s of input read.
void BM_AveragePoolRec(benchmark::State& state) {
  tailor::linalg::set_threads(static_cast<int>(state.range(0)));
  Pool2dParams p;
  p.c = 480, p.h = 3, p.w = 80, p.kh = 3, p.kw = 2, p.stride_h = 3, p.stride_w = 2;
  const auto x = random_values(p.c * p.h * p.w, 1);
  std::vector<float> y(static_cast<size_t>(p.c * p.out_h() * p.out_w()));
  for (auto _ : state) {
    average_pool2d(p, x.data(), y.data());
    benchmark::DoNotOptimize(y.data());
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(x.size() * sizeof(float)));
}
BENCHMARK(BM_AveragePoolRec)->Arg(1)->Arg(2)->ArgName("threads")->UseRealTime();

// ---- Operators on the active kernels, 1 and 2 threads (also built against
// the code before the registry to compare: same API, same shapes).

void BM_Op_Matmul(benchmark::State& state) {
  tailor::linalg::set_threads(static_cast<int>(state.range(0)));
  const std::vector<int64_t> as = {256, 512}, bs = {512, 256};
  const auto a = random_values(256 * 512, 1), b = random_values(512 * 256, 2);
  std::vector<float> y(256 * 256);
  for (auto _ : state) {
    matmul(a.data(), as, b.data(), bs, y.data());
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["FLOPS"] =
      benchmark::Counter(2.0 * 256 * 512 * 256, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_Op_Matmul)->Arg(1)->Arg(2)->ArgName("threads")->UseRealTime();

// apply_activation over 256K floats: range(1) 0 = sigmoid, 1 = tanh, 2 = hard_swish.
void BM_Op_Activation(benchmark::State& state) {
  tailor::linalg::set_threads(static_cast<int>(state.range(0)));
  const Activation acts[] = {Activation::sigmoid(), Activation::tanh(), Activation::hard_swish()};
  const int64_t n = 1 << 18;
  const auto x = random_values(n, 1);
  std::vector<float> y(static_cast<size_t>(n));
  for (auto _ : state) {
    apply_activation(acts[state.range(1)], x.data(), y.data(), n);
    benchmark::DoNotOptimize(y.data());
  }
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_Op_Activation)
    ->ArgsProduct({{1, 2}, {0, 1, 2}})
    ->ArgNames({"threads", "act"})
    ->UseRealTime();

void BM_Op_Softmax(benchmark::State& state) {
  tailor::linalg::set_threads(static_cast<int>(state.range(0)));
  const int64_t rows = 256, axis = 1000;
  const auto x = random_values(rows * axis, 1);
  std::vector<float> y(x.size());
  for (auto _ : state) {
    softmax(x.data(), y.data(), rows, axis, 1);
    benchmark::DoNotOptimize(y.data());
  }
  state.SetItemsProcessed(state.iterations() * rows * axis);
}
BENCHMARK(BM_Op_Softmax)->Arg(1)->Arg(2)->ArgName("threads")->UseRealTime();

void BM_Op_BatchNorm(benchmark::State& state) {
  tailor::linalg::set_threads(static_cast<int>(state.range(0)));
  const int64_t c = 64, spatial = 6400;
  const auto x = random_values(c * spatial, 1), scale = random_values(c, 2);
  const auto bias = random_values(c, 3), mean = random_values(c, 4);
  std::vector<float> var(static_cast<size_t>(c), 1.5f), y(x.size());
  for (auto _ : state) {
    batch_norm(1, c, spatial, x.data(), scale.data(), bias.data(), mean.data(), var.data(), 1e-5f,
               y.data(), Activation::relu());
    benchmark::DoNotOptimize(y.data());
  }
  state.SetItemsProcessed(state.iterations() * c * spatial);
}
BENCHMARK(BM_Op_BatchNorm)->Arg(1)->Arg(2)->ArgName("threads")->UseRealTime();

// LSTM, 32 steps, batch 1, input 64, hidden 128, bidirectional.
void BM_Op_Lstm(benchmark::State& state) {
  tailor::linalg::set_threads(static_cast<int>(state.range(0)));
  LstmParams p;
  p.seq_len = 32, p.batch = 1, p.input_size = 64, p.hidden_size = 128;
  p.direction = LstmDirection::bidirectional;
  const int64_t h4 = 4 * p.hidden_size;
  const auto x = random_values(p.seq_len * p.input_size, 1);
  const auto w = random_values(2 * h4 * p.input_size, 2);
  const auto r = random_values(2 * h4 * p.hidden_size, 3), b = random_values(4 * h4, 4);
  std::vector<float> y(static_cast<size_t>(p.seq_len * 2 * p.hidden_size));
  for (auto _ : state) {
    lstm(p, x.data(), w.data(), r.data(), b.data(), nullptr, nullptr, y.data(), nullptr, nullptr);
    benchmark::DoNotOptimize(y.data());
  }
}
BENCHMARK(BM_Op_Lstm)->Arg(1)->Arg(2)->ArgName("threads")->UseRealTime();

// ConvTranspose 2×2 stride 2, 64 → 32 channels, 40² → 80² (a decoder upsampling).
void BM_Op_ConvTranspose(benchmark::State& state) {
  tailor::linalg::set_threads(static_cast<int>(state.range(0)));
  ConvTranspose2dParams p;
  p.c_in = 64, p.c_out = 32, p.h = p.w = 40, p.kh = p.kw = 2, p.stride_h = p.stride_w = 2;
  const auto x = random_values(p.c_in * p.h * p.w, 1);
  const auto w = random_values(p.c_in * p.c_out * 4, 2), bias = random_values(p.c_out, 3);
  std::vector<float> y(static_cast<size_t>(p.c_out * p.out_h() * p.out_w()));
  for (auto _ : state) {
    conv_transpose2d(p, x.data(), w.data(), bias.data(), y.data(), Activation::relu());
    benchmark::DoNotOptimize(y.data());
  }
}
BENCHMARK(BM_Op_ConvTranspose)->Arg(1)->Arg(2)->ArgName("threads")->UseRealTime();

// ---- One kernel per family, reference (isa 0) versus AVX2 (isa 1), 1 thread.

// The table of isa argument `arg` (skips the benchmark when not available).
const KernelTable* table_of(benchmark::State& state, int64_t arg) {
  const Isa isa = arg == 0 ? Isa::ref : Isa::avx2;
  if (!isa_available(isa)) {
    state.SkipWithError("instruction set not available");
    return nullptr;
  }
  tailor::linalg::set_threads(1);
  state.SetLabel(isa_name(isa));
  return &kernel_table(isa);
}

void BM_Kernel_Gemm(benchmark::State& state) {
  const KernelTable* t = table_of(state, state.range(0));
  if (!t) return;
  const int64_t n = 256;
  const auto a = random_values(n * n, 1), b = random_values(n * n, 2);
  std::vector<float> c(static_cast<size_t>(n * n));
  for (auto _ : state) {
    t->gemm(false, true, n, n, n, 1.f, a.data(), n, b.data(), n, 0.f, c.data(), n);
    benchmark::DoNotOptimize(c.data());
  }
  state.counters["FLOPS"] =
      benchmark::Counter(2.0 * n * n * n, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_Kernel_Gemm)->Arg(0)->Arg(1)->ArgName("isa")->UseRealTime();

// conv_gemm: 3×3 32→32 on 40×40, pads 1; conv_dw: 5×5 depthwise 64 on 40×40.
void conv_kernel_bench(benchmark::State& state, bool depthwise) {
  const KernelTable* t = table_of(state, state.range(0));
  if (!t) return;
  Conv2dParams p;
  p.c_in = p.c_out = depthwise ? 64 : 32;
  p.h = p.w = 40;
  p.kh = p.kw = depthwise ? 5 : 3;
  p.groups = depthwise ? 64 : 1;
  p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = p.kh / 2;
  const auto x = random_values(p.c_in * p.h * p.w, 1);
  const auto w = random_values(p.c_out * (p.c_in / p.groups) * p.kh * p.kw, 2);
  const auto bias = random_values(p.c_out, 3);
  std::vector<float> y(static_cast<size_t>(p.c_out * p.out_h() * p.out_w()));
  const F32ConvFn fn = depthwise ? t->conv_dw : t->conv_gemm;
  for (auto _ : state) {
    fn(p, x.data(), w.data(), bias.data(), y.data(), Activation::relu());
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["FLOPS"] =
      benchmark::Counter(2.0 * p.c_out * p.out_h() * p.out_w() * (p.c_in / p.groups) * p.kh * p.kw,
                         benchmark::Counter::kIsIterationInvariantRate);
}
void BM_Kernel_ConvGemm(benchmark::State& state) {
  conv_kernel_bench(state, false);
}
void BM_Kernel_ConvDw(benchmark::State& state) {
  conv_kernel_bench(state, true);
}
BENCHMARK(BM_Kernel_ConvGemm)->Arg(0)->Arg(1)->ArgName("isa")->UseRealTime();
BENCHMARK(BM_Kernel_ConvDw)->Arg(0)->Arg(1)->ArgName("isa")->UseRealTime();

// bias_act over 64K floats per activation kind (range(1): 0 relu, 1 sigmoid,
// 2 tanh, 3 hard_swish); exp over 64K floats.
void BM_Kernel_BiasAct(benchmark::State& state) {
  const KernelTable* t = table_of(state, state.range(0));
  if (!t) return;
  const Activation acts[] = {Activation::relu(), Activation::sigmoid(), Activation::tanh(),
                             Activation::hard_swish()};
  const Activation act = acts[state.range(1)];
  const int64_t n = 1 << 16;
  const auto x = random_values(n, 1);
  std::vector<float> y(static_cast<size_t>(n));
  for (auto _ : state) {
    t->bias_act(act, 0.25f, x.data(), y.data(), n);
    benchmark::DoNotOptimize(y.data());
  }
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_Kernel_BiasAct)
    ->ArgsProduct({{0, 1}, {0, 1, 2, 3}})
    ->ArgNames({"isa", "act"})
    ->UseRealTime();

void BM_Kernel_Exp(benchmark::State& state) {
  const KernelTable* t = table_of(state, state.range(0));
  if (!t) return;
  const int64_t n = 1 << 16;
  const auto x = random_values(n, 1);
  std::vector<float> y(static_cast<size_t>(n));
  for (auto _ : state) {
    t->exp(x.data(), y.data(), n);
    benchmark::DoNotOptimize(y.data());
  }
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_Kernel_Exp)->Arg(0)->Arg(1)->ArgName("isa")->UseRealTime();

// BatchNormalization + relu on [1, 64, 40·40]; softmax over 64 rows of 1000.
void BM_Kernel_BatchNorm(benchmark::State& state) {
  const KernelTable* t = table_of(state, state.range(0));
  if (!t) return;
  const int64_t c = 64, spatial = 1600;
  const auto x = random_values(c * spatial, 1), scale = random_values(c, 2);
  const auto bias = random_values(c, 3), mean = random_values(c, 4);
  std::vector<float> var(static_cast<size_t>(c), 1.5f), y(x.size());
  for (auto _ : state) {
    t->batch_norm(1, c, spatial, x.data(), scale.data(), bias.data(), mean.data(), var.data(),
                  1e-5f, y.data(), Activation::relu());
    benchmark::DoNotOptimize(y.data());
  }
  state.SetItemsProcessed(state.iterations() * c * spatial);
}
BENCHMARK(BM_Kernel_BatchNorm)->Arg(0)->Arg(1)->ArgName("isa")->UseRealTime();

void BM_Kernel_Softmax(benchmark::State& state) {
  const KernelTable* t = table_of(state, state.range(0));
  if (!t) return;
  const int64_t rows = 64, axis = 1000;
  const auto x = random_values(rows * axis, 1);
  std::vector<float> y(x.size());
  for (auto _ : state) {
    t->softmax(x.data(), y.data(), rows, axis, 1);
    benchmark::DoNotOptimize(y.data());
  }
  state.SetItemsProcessed(state.iterations() * rows * axis);
}
BENCHMARK(BM_Kernel_Softmax)->Arg(0)->Arg(1)->ArgName("isa")->UseRealTime();

// MaxPool on 32 channels of 128²: range(1) 0 = 2×2 stride 2 (vector path),
// 1 = 3×3 stride 2 pads 1.
void BM_Kernel_MaxPool(benchmark::State& state) {
  const KernelTable* t = table_of(state, state.range(0));
  if (!t) return;
  Pool2dParams p;
  p.c = 32, p.h = p.w = 128;
  p.kh = p.kw = state.range(1) == 0 ? 2 : 3;
  p.stride_h = p.stride_w = 2;
  if (state.range(1) == 1) p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = 1;
  const auto x = random_values(p.c * p.h * p.w, 1);
  std::vector<float> y(static_cast<size_t>(p.c * p.out_h() * p.out_w()));
  for (auto _ : state) {
    t->max_pool(p, x.data(), y.data());
    benchmark::DoNotOptimize(y.data());
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(y.size() * sizeof(float)));
}
BENCHMARK(BM_Kernel_MaxPool)
    ->ArgsProduct({{0, 1}, {0, 1}})
    ->ArgNames({"isa", "window"})
    ->UseRealTime();

// Resize 32 channels 64² → 128², range(1) 0 = nearest, 1 = linear (half_pixel).
void BM_Kernel_Resize(benchmark::State& state) {
  const KernelTable* t = table_of(state, state.range(0));
  if (!t) return;
  ResizeParams p;
  p.c = 32, p.in_h = p.in_w = 64, p.out_h = p.out_w = 128;
  p.mode = state.range(1) == 0 ? ResizeMode::nearest : ResizeMode::linear;
  const auto x = random_values(p.c * p.in_h * p.in_w, 1);
  std::vector<float> y(static_cast<size_t>(p.c * p.out_h * p.out_w));
  for (auto _ : state) {
    t->resize(p, x.data(), y.data());
    benchmark::DoNotOptimize(y.data());
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(y.size() * sizeof(float)));
}
BENCHMARK(BM_Kernel_Resize)
    ->ArgsProduct({{0, 1}, {0, 1}})
    ->ArgNames({"isa", "mode"})
    ->UseRealTime();

}  // namespace
