// The KV cache GroupQueryAttention grows in place (src/runtime/kv_cache.h),
// on stories260K through llm::Decoder: a step appends to the cache its past
// views without changing what earlier presents show, and a past that is no
// longer the cache's latest view (a branch) is copied, giving the logits of
// a fresh decode of that branch, bit for bit.
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "llm/stories.h"
#include "tailor/io/llama_graph.h"
#include "tailor/llm/llama.h"
#include "tailor/runtime/executor.h"

namespace tailor::llm {
namespace {

std::map<std::string, Tensor> presents_of(const Decoder& d) {
  std::map<std::string, Tensor> out;
  for (const auto& [name, t] : d.outputs())
    if (name.rfind("present.", 0) == 0) out[name] = t;
  return out;
}

TEST(KvCache, StepsAppendInPlaceAndBranchesCopy) {
  const graph::Model m = load_llama_graph(testing::stories_path());
  const std::vector<int32_t> first = {1, 403, 407}, second = {261}, other = {300};
  Decoder d(m);
  d.forward(first);
  const std::map<std::string, Tensor> after_first = presents_of(d);
  std::map<std::string, std::vector<float>> first_values;
  for (const auto& [name, t] : after_first) first_values[name] = t.to_f32_vector();
  d.forward(second);
  const std::map<std::string, Tensor> after_second = presents_of(d);
  for (const auto& [name, t] : after_second) {
    EXPECT_EQ(t.shape(), (Shape{1, 4, 4, 8})) << name;
    // Appended in place: the same buffer as the past it grew from …
    EXPECT_EQ(t.storage(), after_first.at(name).storage()) << name;
    // … whose view still shows the first three positions only, unchanged.
    EXPECT_EQ(after_first.at(name).to_f32_vector(), first_values.at(name)) << name;
  }
  std::map<std::string, std::vector<float>> second_values;
  for (const auto& [name, t] : after_second) second_values[name] = t.to_f32_vector();

  // A branch from the first step's presents (the cache has moved on): the
  // executor must copy them, and give what a fresh decode of that branch gives.
  std::map<std::string, Tensor> feeds;
  for (const auto& [name, t] : after_first) feeds["past_key_values." + name.substr(8)] = t;
  feeds["input_ids"] = testing::ids_tensor(other);
  const std::map<std::string, Tensor> branch = d.executor().run(feeds);
  Decoder fresh(m);
  fresh.forward(first);
  const std::vector<float> want = fresh.forward(other);
  EXPECT_EQ(branch.at("logits").to_f32_vector(), want);
  for (const auto& [name, t] : after_second) {
    EXPECT_NE(branch.at(name).storage(), t.storage()) << name;
    EXPECT_EQ(t.to_f32_vector(), second_values.at(name)) << name;  // untouched by the branch
    EXPECT_EQ(branch.at(name).to_f32_vector(), fresh.outputs().at(name).to_f32_vector()) << name;
  }
}

// CutRuns of the decoder's one executor on two threads at once, prompts of
// different lengths: each run's logits equal a serial run's, every time.
// GroupQueryAttention kept its queries, context and mask buffers in itself,
// resized per run: two threads wrote into each other's.
TEST(KvCache, ConcurrentRunsOfOneDecoderEqualSerialOnes) {
  const graph::Model m = load_llama_graph(testing::stories_path());
  Decoder d(m);
  const runtime::Executor& ex = d.executor();
  std::vector<std::map<std::string, Tensor>> feeds;
  std::vector<std::vector<float>> want;
  for (const size_t n : {3, 29, 7, 40, 12, 33}) {
    std::vector<int32_t> tokens(n);
    for (size_t i = 0; i < n; ++i) tokens[i] = static_cast<int32_t>(1 + (37 * i + n) % 500);
    std::map<std::string, Tensor> f = empty_pasts(m);
    f["input_ids"] = testing::ids_tensor(tokens);
    want.push_back(runtime::CutRun(ex, f).finish().at("logits").to_f32_vector());
    feeds.push_back(std::move(f));
  }
  std::atomic<int> mismatches{0};
  auto work = [&](size_t first) {
    for (int rep = 0; rep < 15; ++rep)
      for (size_t k = first; k < feeds.size(); k += 2)
        if (runtime::CutRun(ex, feeds[k]).finish().at("logits").to_f32_vector() != want[k])
          ++mismatches;
  };
  std::thread other(work, 1);
  work(0);
  other.join();
  EXPECT_EQ(mismatches.load(), 0);
}

}  // namespace
}  // namespace tailor::llm
