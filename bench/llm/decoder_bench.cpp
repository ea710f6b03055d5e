// Decoding speed of stories260K run by the executor as a decoder graph with a
// KV cache (llm::Decoder), dense and with compressed projections
// (CompressedLinear nodes), and the cost of one KL comparison.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "tailor/compress/rewrite.h"
#include "tailor/io/llama_graph.h"
#include "tailor/io/load_model.h"
#include "tailor/llm/kld.h"
#include "tailor/llm/llama.h"

namespace {

const std::string kStories = std::string(TAILOR_FIXTURES_DIR) + "/stories260K.bin";

// stories260K with every attention and FFN projection encoded by `label`
// ("dense" keeps them), rewritten as compress does for tailor's runtime.
tailor::graph::Model model_with(const std::string& label) {
  const tailor::graph::Model file = tailor::load_model(kStories);
  const tailor::LlamaCheckpoint ck = tailor::llama_checkpoint(file);
  tailor::graph::Model g = tailor::llama_graph(ck.weights, ck.config, ck.pairing, kStories);
  if (label == "dense") return g;
  tailor::plan::Plan plan;
  const std::vector<std::string> names = tailor::llm::linear_weights(g);
  for (size_t i = 0; i + 1 < names.size(); ++i) plan.choices.push_back({names[i], label});
  return tailor::compress::rewrite_tailor(g, tailor::compress::encode_plan(file, plan, {}, 1));
}

// One token at a time after BOS, 128 positions (KV cache growing).
void BM_Stories260KDecode128(benchmark::State& state, const std::string& label) {
  tailor::llm::Decoder d(model_with(label));
  for (auto _ : state) {
    d.reset();
    int32_t token = 1;
    for (int i = 0; i < 128; ++i) {
      const std::vector<float> logits = d.forward({&token, 1});
      token = static_cast<int32_t>(i % 500) + 3;
      benchmark::DoNotOptimize(logits.data());
    }
  }
  state.SetItemsProcessed(state.iterations() * 128);  // tokens
}
BENCHMARK_CAPTURE(BM_Stories260KDecode128, dense, std::string("dense"))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Stories260KDecode128, int8, std::string("int8"))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Stories260KDecode128, int4, std::string("int4"))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Stories260KDecode128, int4_g32, std::string("int4-g32"))
    ->Unit(benchmark::kMillisecond);

// compare_models at its defaults (16 sequences × 128 tokens) against int4.
void BM_Stories260KCompareInt4(benchmark::State& state) {
  const tailor::graph::Model a = model_with("dense"), b = model_with("int4");
  for (auto _ : state) {
    const tailor::llm::CompareResult r = tailor::llm::compare_models(a, b, {});
    benchmark::DoNotOptimize(r.mean_kl);
  }
}
BENCHMARK(BM_Stories260KCompareInt4)->Unit(benchmark::kMillisecond);

}  // namespace
