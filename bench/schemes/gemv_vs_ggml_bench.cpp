// Batch-1 GEMV (LLM decode) on a 4096×14336 weight, tailor's packed kernels
// against ggml's q8_0 / q4_0 mat-vec and the machine's streaming-read
// bandwidth, each at 1 and 2 threads, in one run.
//
//   TAILOR_GGML_DIR=/tmp/ggml/build/src build/gemv_vs_ggml_bench \
//       --benchmark_enable_random_interleaving=true --benchmark_repetitions=5 \
//       --benchmark_report_aggregates_only=true
//
// TAILOR_GGML_DIR names a folder holding a ggml build's libggml-base.so and
// libggml-cpu.so (a shared build of github.com/ggml-org/ggml, never part of
// tailor); without it only tailor and the bandwidth are timed. ggml is
// reached through dlopen and its public C API (ggml.h, ggml-cpu.h): a
// context, one ggml_mul_mat of the quantized weight by an f32 vector (ggml
// quantizes the vector to its q8 block format inside, as in decode) and
// ggml_graph_compute_with_ctx with n_threads.
//
// Shapes: W [out, in] = [4096, 14336] (a down projection) and [14336, 4096]
// (up/gate); ggml's tensor is ne0 = in, ne1 = out. Counters: weight_GB/s =
// stored weight bytes per second (each GEMV reads every byte once); read_GB/s
// of BM_StreamRead = bytes summed per second. BM_GemvKernel times the batch-1
// kernels themselves on random codes (int8 per channel, int4 per channel and
// in groups of 32), the AVX2 and AVX-512 versions side by side (the registry
// runs the latter where the CPU has AVX-512F/BW/VL).
#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <omp.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "bench_inputs.h"
#include "tailor/core/dtype.h"
#include "tailor/schemes/kernels.h"

namespace {

using tailor::Tensor;
using tailor::schemes::Encoded;

const std::vector<float>& values(int64_t n, uint64_t seed) {
  return tailor::bench::normal_values(n, seed, 0.02);
}

void set_gbs(benchmark::State& state, double bytes) {
  state.counters["weight_GB/s"] =
      benchmark::Counter(bytes / 1e9, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_TailorGemv(benchmark::State& state, std::string label) {
  const int64_t out = state.range(0), in = state.range(1);
  const Encoded& e = tailor::bench::encoded_weight(label, out, in, 0.02);
  const Tensor x = Tensor::from_f32({1, in}, values(in, 2));
  tailor::bench::set_threads(state, 2);
  for (auto _ : state) {
    Tensor y = e.matmul(x);
    benchmark::DoNotOptimize(y.raw());
  }
  set_gbs(state, static_cast<double>(e.bytes()));
  state.SetLabel(std::to_string(e.bytes()) + " B");
}

// One batch-1 GEMV kernel on random int8 / int4 codes [out, in] with f16
// scales in groups of `group` (0: per channel).
void BM_GemvKernel(benchmark::State& state, tailor::schemes::kernels::PackedGemmFn fn, int bits,
                   int64_t group) {
  const int64_t out = state.range(0), in = state.range(1);
  const int64_t g = group == 0 ? in : group, groups = (in + g - 1) / g;
  static std::vector<uint8_t> codes;
  static std::vector<uint16_t> scales;
  codes.resize(static_cast<size_t>(out * in * bits / 8));
  tailor::Rng rng(3);
  for (uint8_t& b : codes) b = static_cast<uint8_t>(rng.next_u64());
  scales.assign(static_cast<size_t>(out * groups), tailor::f32_to_f16(0.01f));
  std::vector<float> y(static_cast<size_t>(out));
  const tailor::schemes::kernels::PackedGemmArgs a{
      codes.data(), codes.size(), scales.data(), out, in, g, values(in, 2).data(), 1, y.data()};
  tailor::bench::set_threads(state, 2);
  for (auto _ : state) {
    fn(a);
    benchmark::DoNotOptimize(y.data());
  }
  set_gbs(state, static_cast<double>(codes.size() + 2 * scales.size()));
}

void BM_StreamRead(benchmark::State& state) {
  tailor::bench::set_threads(state, 0);
  tailor::bench::stream_read(state);
}

// The part of ggml's public C API the bench calls, resolved with dlsym.
struct GgmlInitParams {
  size_t mem_size;
  void* mem_buffer;
  bool no_alloc;
};
struct Ggml {
  void* (*init)(GgmlInitParams) = nullptr;
  void (*free)(void*) = nullptr;
  void* (*new_tensor_2d)(void*, int, int64_t, int64_t) = nullptr;
  void* (*mul_mat)(void*, void*, void*) = nullptr;
  void* (*new_graph)(void*) = nullptr;
  void (*build_forward_expand)(void*, void*) = nullptr;
  int (*compute)(void*, void*, int) = nullptr;
  void* (*get_data)(const void*) = nullptr;
  size_t (*row_size)(int, int64_t) = nullptr;
  size_t (*quantize_chunk)(int, const float*, void*, int64_t, int64_t, int64_t,
                           const float*) = nullptr;
  void (*cpu_init)() = nullptr;
};
constexpr int kGgmlF32 = 0, kGgmlQ4_0 = 2, kGgmlQ8_0 = 8;  // enum ggml_type

const Ggml* ggml() {
  static const std::unique_ptr<Ggml> g = []() -> std::unique_ptr<Ggml> {
    const char* dir = std::getenv("TAILOR_GGML_DIR");
    if (!dir || !*dir) return nullptr;
    const std::string d = dir;
    void* base = dlopen((d + "/libggml-base.so").c_str(), RTLD_NOW | RTLD_GLOBAL);
    void* cpu = base ? dlopen((d + "/libggml-cpu.so").c_str(), RTLD_NOW | RTLD_GLOBAL) : nullptr;
    if (!base || !cpu) {
      std::fprintf(stderr, "TAILOR_GGML_DIR=%s: %s\n", dir, dlerror());
      return nullptr;
    }
    auto g = std::make_unique<Ggml>();
    bool ok = true;
    auto sym = [&](auto& fn, void* lib, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
      if (!fn) {
        std::fprintf(stderr, "ggml: no symbol %s\n", name);
        ok = false;
      }
    };
    sym(g->init, base, "ggml_init");
    sym(g->free, base, "ggml_free");
    sym(g->new_tensor_2d, base, "ggml_new_tensor_2d");
    sym(g->mul_mat, base, "ggml_mul_mat");
    sym(g->new_graph, base, "ggml_new_graph");
    sym(g->build_forward_expand, base, "ggml_build_forward_expand");
    sym(g->get_data, base, "ggml_get_data");
    sym(g->row_size, base, "ggml_row_size");
    sym(g->quantize_chunk, base, "ggml_quantize_chunk");
    sym(g->compute, cpu, "ggml_graph_compute_with_ctx");
    sym(g->cpu_init, cpu, "ggml_cpu_init");
    if (!ok) return nullptr;
    g->cpu_init();
    return g;
  }();
  return g.get();
}

void BM_GgmlGemv(benchmark::State& state, int type) {
  const Ggml* g = ggml();
  const int64_t out = state.range(0), in = state.range(1);
  const int threads = static_cast<int>(state.range(2));
  const size_t wbytes = g->row_size(type, in) * static_cast<size_t>(out);
  GgmlInitParams p{
      wbytes + g->row_size(kGgmlF32, in) + g->row_size(kGgmlF32, out) + (size_t{64} << 20), nullptr,
      false};
  void* ctx = g->init(p);
  void* w = g->new_tensor_2d(ctx, type, in, out);
  void* x = g->new_tensor_2d(ctx, kGgmlF32, in, 1);
  g->quantize_chunk(type, values(out * in, 1).data(), g->get_data(w), 0, out, in, nullptr);
  std::copy_n(values(in, 2).data(), in, static_cast<float*>(g->get_data(x)));
  void* y = g->mul_mat(ctx, w, x);
  void* graph = g->new_graph(ctx);
  g->build_forward_expand(graph, y);
  for (auto _ : state) {
    g->compute(ctx, graph, threads);
    benchmark::DoNotOptimize(g->get_data(y));
  }
  set_gbs(state, static_cast<double>(wbytes));
  state.SetLabel(std::to_string(wbytes) + " B");
  g->free(ctx);
}

const bool registered = [] {
  const std::vector<std::vector<int64_t>> shapes{{4096, 14336}, {14336, 4096}};
  auto args = [&](benchmark::internal::Benchmark* b) {
    tailor::bench::shapes_by_threads(b, shapes, {1, 2}, {"out", "in", "threads"});
    b->Unit(benchmark::kMillisecond)->UseRealTime();
  };
  for (const char* label : {"int8", "int4", "int4-g32", "int8-a8"})
    args(benchmark::RegisterBenchmark(("BM_TailorGemv/" + std::string(label)).c_str(),
                                      BM_TailorGemv, std::string(label)));
#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
  namespace k = tailor::schemes::kernels;
  struct Kernel {
    const char* name;
    k::PackedGemmFn fn;
    int bits;
    int64_t group;
  };
  std::vector<Kernel> kernels{{"q8_avx2", k::q8_f32_gemv_avx2, 8, 0},
                              {"q4_avx2", k::q4_f32_gemv_avx2, 4, 0},
                              {"q4g32_avx2", k::q4_f32_gemv_avx2, 4, 32}};
  const tailor::CpuFeatures& f = tailor::cpu_features();
  if (f.avx512f && f.avx512bw && f.avx512vl)
    kernels.insert(kernels.end(), {{"q8_avx512", k::q8_f32_gemv_avx512, 8, 0},
                                   {"q4_avx512", k::q4_f32_gemv_avx512, 4, 0},
                                   {"q4g32_avx512", k::q4_f32_gemv_avx512, 4, 32}});
  for (const Kernel& kn : kernels)
    args(benchmark::RegisterBenchmark(("BM_GemvKernel/" + std::string(kn.name)).c_str(),
                                      BM_GemvKernel, kn.fn, kn.bits, kn.group));
#endif
  if (ggml()) {
    args(benchmark::RegisterBenchmark("BM_GgmlGemv/q8_0", BM_GgmlGemv, kGgmlQ8_0));
    args(benchmark::RegisterBenchmark("BM_GgmlGemv/q4_0", BM_GgmlGemv, kGgmlQ4_0));
  }
  benchmark::RegisterBenchmark("BM_StreamRead", BM_StreamRead)
      ->ArgName("threads")
      ->Arg(1)
      ->Arg(2)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
  return true;
}();

}  // namespace
