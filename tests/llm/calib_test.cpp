// Activation statistics of a llama model (llm/calib.h) on stories260K,
// against values derived by hand from the weights.
#include "tailor/llm/calib.h"

#include <gtest/gtest.h>

#include <cmath>

#include "tailor/core/error.h"
#include "tailor/io/safetensors.h"
#include "test_util.h"

namespace tailor::llm {
namespace {

const std::string kStories = testing::fixture_path("stories260K.bin");

// Input of layer 0's q/k/v projections for the first token: RMSNorm of the
// token's embedding row, x_j = e_j / sqrt(mean(e²) + eps) · g_j (llama2.c
// run.c rmsnorm), computed here in double from the raw weights.
std::vector<double> first_layer_input(const LlamaModel& m, int32_t token) {
  const auto e = m.embedding(token);
  const auto& g = m.layers()[0].attn_norm;
  double ss = 0;
  for (float v : e) ss += static_cast<double>(v) * v;
  const double inv = 1.0 / std::sqrt(ss / static_cast<double>(e.size()) +
                                     static_cast<double>(m.config().rms_norm_eps));
  std::vector<double> x(e.size());
  for (size_t j = 0; j < e.size(); ++j) x[j] = e[j] * inv * g[j];
  return x;
}

TEST(LlamaCalib, OneTokenMeanSquareIsNormedEmbeddingSquared) {
  const LlamaModel m = LlamaModel::load(kStories);
  const auto stats = collect_input_stats(m, {{1}});
  const std::vector<double> x = first_layer_input(m, 1);
  ASSERT_EQ(stats.size(), m.linear_names().size());
  for (const char* name :
       {"model.layers.0.self_attn.q_proj.weight", "model.layers.0.self_attn.k_proj.weight",
        "model.layers.0.self_attn.v_proj.weight"}) {
    ASSERT_TRUE(stats.count(name)) << name;
    const std::vector<float>& d = stats.at(name);
    ASSERT_EQ(d.size(), x.size());
    for (size_t j = 0; j < x.size(); ++j)
      EXPECT_NEAR(d[j], x[j] * x[j], 1e-5 * (x[j] * x[j]) + 1e-7) << name << " channel " << j;
  }
  // Every Linear got a vector of its input length.
  for (const std::string& name : m.linear_names())
    EXPECT_EQ(static_cast<int64_t>(stats.at(name).size()), m.linear(name).in()) << name;
}

TEST(LlamaCalib, MeanOverTokensOfSeveralSequences) {
  const LlamaModel m = LlamaModel::load(kStories);
  // Two one-token sequences (each at position 0): the mean of both tokens' x².
  const auto stats = collect_input_stats(m, {{1}, {7}});
  const auto a = first_layer_input(m, 1), b = first_layer_input(m, 7);
  const auto& d = stats.at("model.layers.0.self_attn.q_proj.weight");
  for (size_t j = 0; j < a.size(); ++j) {
    const double want = 0.5 * (a[j] * a[j] + b[j] * b[j]);
    EXPECT_NEAR(d[j], want, 1e-5 * want + 1e-7) << j;
  }
  // The wrapper leaves the model's output alone: logits equal the original's.
  LlamaModel wrapped = m;
  wrapped.wrap_linear(
      "model.layers.0.self_attn.q_proj.weight",
      std::make_shared<RecordingLinear>(m.linear_ptr("model.layers.0.self_attn.q_proj.weight")));
  const std::vector<int32_t> seq = {1, 403, 407};
  LlamaSession s1(m), s2(wrapped);
  EXPECT_EQ(s1.forward(seq), s2.forward(seq));
  EXPECT_THROW(collect_input_stats(m, {}), Error);
  EXPECT_THROW(wrapped.wrap_linear("model.layers.0.self_attn.q_proj.weight",
                                   m.linear_ptr("model.layers.0.mlp.down_proj.weight")),
               Error);
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
