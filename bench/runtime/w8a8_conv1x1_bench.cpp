// W8A8 against f32 on 1×1 convolutions, one thread, the same data: does the
// integer arithmetic pay on the PP-OCRv4 recogniser's pointwise shapes? Paths
// (Args {c_in, c_out, pixels, path}), each as its op runs it, weights packed
// once:
//   0  f32: kernels::conv2d (the Conv op's dense path), hard-swish epilogue
//   1  int8 weight-only: the active qb_conv (CompressedConv on int8 codes)
//   2  W8A8: the active q8q8_conv1x1 (activation quantization included)
//   3  W8A8: q8_q8_conv1x1_8x16_avx2 (VPMADDUBSW, the kernel where a CPU has no VNNI)
// Time is the process CPU time per iteration ("cpu_us"), the machine being
// shared; compare paths of one shape within one run.
#include <benchmark/benchmark.h>

#include <vector>

#include "bench_util.h"
#include "tailor/linalg/threads.h"
#include "tailor/runtime/kernels/conv.h"
#include "tailor/runtime/kernels/registry.h"
#include "tailor/schemes/matmul_into.h"
#include "tailor/schemes/registry.h"

namespace {

using namespace tailor::runtime::kernels;

using tailor::bench::process_cpu_seconds;
using tailor::bench::random_values;

void BM_W8A8Conv1x1(benchmark::State& state) {
  tailor::linalg::set_threads(1);
  const int64_t c_in = state.range(0), c_out = state.range(1), pix = state.range(2);
  const int64_t path = state.range(3);
  Conv2dParams p;
  p.c_in = c_in, p.c_out = c_out, p.h = 1, p.w = pix;
  // Post-activation-like inputs (hard-swish outputs lie in [−0.375, ∞)).
  const auto x = random_values(c_in * pix, 1, -0.375, 3.0);
  const auto w = random_values(c_out * c_in, 2, -0.1, 0.1);
  const auto bias = random_values(c_out, 3, -0.1, 0.1);
  std::vector<float> y(static_cast<size_t>(c_out * pix));
  const KernelTable& t = active_kernels();
  const auto enc = tailor::schemes::parse_scheme(path == 1 ? "int8" : "int8-a8")
                       .encode(tailor::Tensor::from_f32({c_out, c_in}, w));
  const PackedConvWeights dense = pack_conv2d_weights(p, w.data());
  QbConvParams qb;
  Q8Q8Conv1x1Params q8;
  std::vector<uint8_t> packed;
  if (path == 1) {
    qb.w = tailor::schemes::packed_view(*enc)->args;
    qb.bits = 8;
    qb.conv = p;
  } else if (path >= 2) {
    const auto view = tailor::schemes::w8a8_view(*enc);
    packed.resize(static_cast<size_t>(t.q8q8_conv1x1_pack(view->args, nullptr)));
    t.q8q8_conv1x1_pack(view->args, packed.data());
    q8.n = 1, q8.c_in = c_in, q8.c_out = c_out, q8.pixels = pix, q8.packed = packed.data();
  }
  const Q8Q8Conv1x1Fn w8a8 = path == 3 ? q8_q8_conv1x1_8x16_avx2 : t.q8q8_conv1x1;
  const Activation act = Activation::hard_swish();
  const double t0 = process_cpu_seconds();
  for (auto _ : state) {
    if (path == 0)
      conv2d(p, x.data(), w.data(), bias.data(), y.data(), act, nullptr, &dense);
    else if (path == 1)
      t.qb_conv(qb, x.data(), bias.data(), y.data(), act);
    else
      w8a8(q8, x.data(), bias.data(), y.data(), act);
    benchmark::DoNotOptimize(y.data());
  }
  const double cpu = process_cpu_seconds() - t0;
  state.counters["cpu_us"] = 1e6 * cpu / static_cast<double>(state.iterations());
  state.counters["GMACs_per_cpu"] = 1e-9 * static_cast<double>(c_out * c_in * pix) *
                                    static_cast<double>(state.iterations()) / cpu;
}
BENCHMARK(BM_W8A8Conv1x1)
    ->ArgsProduct({{16}, {32}, {3840}, {0, 1, 2, 3}})
    ->ArgsProduct({{32, 48}, {48}, {6400}, {0, 2}})  // the detector's 160² layers, a quarter
    ->ArgsProduct({{96}, {96}, {1600}, {0, 2}})
    ->ArgsProduct({{16, 48}, {48}, {25600}, {0, 2}})  // whole 160²: planes 100 KiB apart
    ->ArgsProduct({{240}, {240}, {240, 960}, {0, 1, 2, 3}})
    ->ArgsProduct({{480}, {480}, {80, 240}, {0, 1, 2, 3}})
    ->ArgsProduct({{120}, {480}, {80}, {0, 1, 2, 3}})
    ->ArgNames({"c_in", "c_out", "pixels", "path"})
    ->UseRealTime();

}  // namespace
