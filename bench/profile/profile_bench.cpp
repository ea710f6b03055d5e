// Profiling throughput (layers per second): profile_layer on a synthetic
// 4096×4096 layer (Gaussian, σ = 0.02) and profile_model on the PP-OCRv4
// recogniser (models/, fetched by scripts/fetch-models.sh), each with the
// quantizers plus the low-rank family (DESIGN.md's catalog without tucker, tt
// and monarch, whose exact decompositions dominate on large layers), and the
// recogniser with the whole catalog.
#include <benchmark/benchmark.h>

#include <filesystem>
#include <string>
#include <vector>

#include "tailor/core/rng.h"
#include "tailor/io/load_model.h"
#include "tailor/profile/profiler.h"

namespace {

using tailor::ProfileOptions;

const std::vector<std::string> kFast = {"dense",  "int8",    "int4",       "int3",
                                        "int4-g", "ternary", "sparse-2:4", "lowrank"};

const tailor::graph::WeightView& synthetic(int64_t out, int64_t in) {
  static const tailor::graph::WeightView w = [&] {
    tailor::Rng rng(1);
    std::vector<float> v(static_cast<size_t>(out * in));
    for (float& x : v) x = static_cast<float>(0.02 * rng.normal());
    return tailor::graph::WeightView{"synthetic", tailor::Tensor::from_f32({out, in}, v),
                                     tailor::WeightLayout::out_in};
  }();
  return w;
}

void BM_ProfileLayer4096(benchmark::State& state) {
  const tailor::graph::WeightView& w = synthetic(4096, 4096);
  ProfileOptions o;
  o.schemes = kFast;
  for (auto _ : state) benchmark::DoNotOptimize(tailor::profile_layer(w, o));
  state.counters["layers/s"] = benchmark::Counter(1, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_ProfileLayer4096)->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();

void BM_ProfileRecogniser(benchmark::State& state, bool whole_catalog) {
  const std::string path = std::string(TAILOR_MODELS_DIR) + "/ch_PP-OCRv4_rec_infer.onnx";
  if (!std::filesystem::exists(path)) {
    state.SkipWithError("models/ch_PP-OCRv4_rec_infer.onnx absent: run scripts/fetch-models.sh");
    return;
  }
  const tailor::graph::Model model = tailor::load_model(path);
  ProfileOptions o;
  if (!whole_catalog) o.schemes = kFast;
  size_t layers = 0;
  for (auto _ : state) layers = tailor::profile_model(model, o).layers.size();
  state.counters["layers/s"] = benchmark::Counter(static_cast<double>(layers),
                                                  benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK_CAPTURE(BM_ProfileRecogniser, quantizers_and_lowrank, false)
    ->Unit(benchmark::kSecond)
    ->Iterations(1)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_ProfileRecogniser, whole_catalog, true)
    ->Unit(benchmark::kSecond)
    ->Iterations(1)
    ->UseRealTime();

}  // namespace
