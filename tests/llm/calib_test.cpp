// Activation statistics of a llama model (llm/calib.h) on stories260K,
// against values derived by hand from the weights.
#include "tailor/llm/calib.h"

#include <gtest/gtest.h>

#include <cmath>

#include "tailor/core/error.h"
#include "tailor/io/llama_graph.h"
#include "tailor/io/safetensors.h"
#include "tailor/llm/llama.h"
#include "test_util.h"

namespace tailor::llm {
namespace {

const std::string kStories = testing::fixture_path("stories260K.bin");

// Input of layer 0's q/k/v projections for the first token: RMSNorm of the
// token's embedding row, x_j = e_j / sqrt(mean(e²) + eps) · g_j (llama2.c
// run.c rmsnorm), computed here in double from the checkpoint's raw weights.
std::vector<double> first_layer_input(const LlamaCheckpoint& ck, int32_t token) {
  const int64_t dim = ck.config.dim;
  const float* e = ck.weights.at("model.embed_tokens.weight").data<float>() + token * dim;
  const float* g = ck.weights.at("model.layers.0.input_layernorm.weight").data<float>();
  double ss = 0;
  for (int64_t j = 0; j < dim; ++j) ss += static_cast<double>(e[j]) * e[j];
  const double inv =
      1.0 / std::sqrt(ss / static_cast<double>(dim) + static_cast<double>(ck.config.rms_norm_eps));
  std::vector<double> x(static_cast<size_t>(dim));
  for (int64_t j = 0; j < dim; ++j) x[static_cast<size_t>(j)] = e[j] * inv * g[j];
  return x;
}

TEST(LlamaCalib, OneTokenMeanSquareIsNormedEmbeddingSquared) {
  const LlamaCheckpoint ck = read_llama_checkpoint(kStories);
  const graph::Model m = load_llama_graph(kStories);
  const auto stats = collect_input_stats(m, {{1}});
  const std::vector<double> x = first_layer_input(ck, 1);
  ASSERT_EQ(stats.size(), linear_weights(m).size());
  for (const char* name :
       {"model.layers.0.self_attn.q_proj.weight", "model.layers.0.self_attn.k_proj.weight",
        "model.layers.0.self_attn.v_proj.weight"}) {
    ASSERT_TRUE(stats.count(name)) << name;
    const std::vector<float>& d = stats.at(name);
    ASSERT_EQ(d.size(), x.size());
    for (size_t j = 0; j < x.size(); ++j)
      EXPECT_NEAR(d[j], x[j] * x[j], 1e-5 * (x[j] * x[j]) + 1e-7) << name << " channel " << j;
  }
  // Every linear weight got a vector of its input length ([out, in] weights).
  for (const std::string& name : linear_weights(m))
    EXPECT_EQ(static_cast<int64_t>(stats.at(name).size()), m.graph.initializers.at(name).dim(1))
        << name;
}

TEST(LlamaCalib, MeanOverTokensOfSeveralSequences) {
  const LlamaCheckpoint ck = read_llama_checkpoint(kStories);
  const graph::Model m = load_llama_graph(kStories);
  // Two one-token sequences (each at position 0): the mean of both tokens' x².
  const auto stats = collect_input_stats(m, {{1}, {7}});
  const auto a = first_layer_input(ck, 1), b = first_layer_input(ck, 7);
  const auto& d = stats.at("model.layers.0.self_attn.q_proj.weight");
  for (size_t j = 0; j < a.size(); ++j) {
    const double want = 0.5 * (a[j] * a[j] + b[j] * b[j]);
    EXPECT_NEAR(d[j], want, 1e-5 * want + 1e-7) << j;
  }
  // Exposing the activations as outputs leaves the logits alone.
  const std::vector<int32_t> seq = {1, 403, 407};
  Decoder plain(m), exposed(m, {linear_inputs(m).at("model.layers.0.self_attn.q_proj.weight")});
  EXPECT_EQ(plain.forward(seq), exposed.forward(seq));
  EXPECT_THROW(collect_input_stats(m, {}), Error);
  EXPECT_THROW(collect_input_stats(m, {{1}, {}}), Error);
}

TEST(LlamaCalib, WritesTheProfileCalibrationFormat) {
  testing::TempDir dir;
  write_calibration(dir.file("c.safetensors"), {{"a", {1.0f, 2.0f}}, {"b", {3.0f}}});
  const graph::Model f = read_safetensors(dir.file("c.safetensors"));
  ASSERT_EQ(f.graph.initializers.size(), 2u);
  ASSERT_EQ(f.graph.initializers.count("a"), 1u);
  const Tensor& a = f.graph.initializers.at("a");
  ASSERT_EQ(a.dtype(), DType::f32);
  ASSERT_EQ(a.numel(), 2);
  EXPECT_EQ(a.data<float>()[0], 1.0f);
  EXPECT_EQ(a.data<float>()[1], 2.0f);
  EXPECT_EQ(f.graph.initializers.at("b").data<float>()[0], 3.0f);
}

}  // namespace
}  // namespace tailor::llm
