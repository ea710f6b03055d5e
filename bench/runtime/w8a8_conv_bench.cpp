// W8A8 against f32 on 3×3 pad-1 stride-1 convolutions, one thread, the same
// data: the detector's 96→24 head convs at 160² and 80². Paths (Args
// {c_in, c_out, plane, path}), each as its op runs it, weights packed once:
//   0  f32: kernels::conv2d on pack_conv2d_weights (the Conv op's dense
//      path: Winograd F(4×4, 3×3) where conv2d's rule picks it)
//   1  int8 weight-only: the active qb_conv (CompressedConv on int8 codes)
//   2  W8A8: the active q8q8_conv (activation quantization included)
//   3  W8A8: q8_q8_conv_ref (the scalar reference; small planes only)
// Time is the process CPU time per iteration ("cpu_us"); GMACs_per_cpu
// counts the direct convolution's multiply-adds (c_out·c_in·9 per output
// pixel) whatever the path does. The machine being shared, compare paths
// of one shape within one run (--benchmark_enable_random_interleaving).
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

void BM_W8A8Conv3x3(benchmark::State& state) {
  tailor::linalg::set_threads(1);
  const int64_t c_in = state.range(0), c_out = state.range(1), plane = state.range(2);
  const int64_t path = state.range(3);
  Conv2dParams p;
  p.c_in = c_in, p.c_out = c_out, p.h = p.w = plane, p.kh = p.kw = 3;
  p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = 1;
  const int64_t k = c_in * 9, pix = p.out_h() * p.out_w();
  // Post-activation-like inputs (hard-swish outputs lie in [−0.375, ∞)).
  const auto x = random_values(c_in * plane * plane, 1, -0.375, 3.0);
  const auto w = random_values(c_out * k, 2, -0.1, 0.1);
  const auto bias = random_values(c_out, 3, -0.1, 0.1);
  std::vector<float> y(static_cast<size_t>(c_out * pix));
  const KernelTable& t = active_kernels();
  const auto enc = tailor::schemes::parse_scheme(path == 1 ? "int8" : "int8-a8")
                       .encode(tailor::Tensor::from_f32({c_out, k}, w));
  const PackedConvWeights dense = pack_conv2d_weights(p, w.data());
  QbConvParams qb;
  Q8Q8ConvParams q8;
  std::vector<uint8_t> packed;
  const Q8Q8ConvPackFn pack = path == 3 ? q8_q8_conv_pack_ref : t.q8q8_conv_pack;
  const Q8Q8ConvFn w8a8 = path == 3 ? q8_q8_conv_ref : t.q8q8_conv;
  if (path == 1) {
    qb.w = tailor::schemes::packed_view(*enc)->args;
    qb.bits = 8;
    qb.conv = p;
  } else if (path >= 2) {
    const auto view = tailor::schemes::w8a8_view(*enc);
    packed.resize(static_cast<size_t>(pack(view->args, 3, 3, nullptr)));
    pack(view->args, 3, 3, packed.data());
    q8.conv = p, q8.packed = packed.data();
  }
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
  state.counters["GMACs_per_cpu"] =
      1e-9 * static_cast<double>(c_out * k * pix) * static_cast<double>(state.iterations()) / cpu;
}
BENCHMARK(BM_W8A8Conv3x3)
    ->ArgsProduct({{96}, {24}, {160, 80}, {0, 1, 2}})
    ->ArgsProduct({{24}, {24}, {160}, {0, 1, 2}})
    ->ArgsProduct({{96}, {24}, {20}, {0, 2, 3}})
    ->ArgNames({"c_in", "c_out", "plane", "path"})
    ->UseRealTime();

}  // namespace
