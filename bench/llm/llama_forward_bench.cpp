// Decoding speed of the llama forward pass on stories260K with dense and
// compressed projections, and the cost of one KL comparison.
#include <benchmark/benchmark.h>

#include <map>
#include <string>
#include <vector>

#include "tailor/llm/kld.h"
#include "tailor/llm/llama.h"

namespace {

using tailor::llm::LlamaModel;

const std::string kStories = std::string(TAILOR_FIXTURES_DIR) + "/stories260K.bin";

// stories260K with every attention and FFN projection encoded by `label`
// ("dense" keeps them).
LlamaModel model_with(const std::string& label) {
  LlamaModel m = LlamaModel::load(kStories);
  std::map<std::string, std::string> labels;
  const std::vector<std::string> names = m.linear_names();
  for (size_t i = 0; i + 1 < names.size(); ++i) labels[names[i]] = label;
  tailor::llm::apply_schemes(m, labels);
  return m;
}

// One token at a time after BOS, 128 positions (KV cache growing).
void BM_Stories260KDecode128(benchmark::State& state, const std::string& label) {
  const LlamaModel m = model_with(label);
  for (auto _ : state) {
    tailor::llm::LlamaSession s(m);
    int32_t token = 1;
    for (int i = 0; i < 128; ++i) {
      const std::vector<float> logits = s.forward({&token, 1});
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

// compare_models at its defaults (16 sequences × 128 tokens) against int4.
void BM_Stories260KCompareInt4(benchmark::State& state) {
  const LlamaModel a = LlamaModel::load(kStories);
  const LlamaModel b = model_with("int4");
  for (auto _ : state) {
    const tailor::llm::CompareResult r = tailor::llm::compare_models(a, b, {});
    benchmark::DoNotOptimize(r.mean_kl);
  }
}
BENCHMARK(BM_Stories260KCompareInt4)->Unit(benchmark::kMillisecond);

}  // namespace
