// The llama forward pass as standard ONNX (compress/llama_onnx.h), checked on
// stories260K against independent implementations: the numpy float64 forward
// pass of tests/llm/reference_logits.py, the llm module's own forward pass
// (dense, and with compressed Linears run by Encoded::matmul), and onnxruntime.
#include "tailor/compress/llama_onnx.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <map>

#include "ort/ort_runner.h"
#include "tailor/core/error.h"
#include "tailor/io/llama2c.h"
#include "tailor/io/npy.h"
#include "tailor/io/onnx.h"
#include "tailor/runtime/executor.h"
#include "tailor/schemes/registry.h"
#include "test_util.h"

namespace tailor {
namespace {

using compress::EncodedLayer;
using compress::LayerRewrite;
using compress::llama_to_onnx;
using testing::fixture_path;
using testing::TempDir;

const std::string kStories = fixture_path("stories260K.bin");
// The token sequence of tests/llm/reference_logits.py (stories260K_logits.npy).
const std::vector<int32_t> kTokens = {1, 403, 407, 261, 378, 11, 300, 7, 88, 500, 2, 261, 42, 299};

Tensor ids_tensor(const std::vector<int32_t>& tokens) {
  Tensor t = Tensor::zeros(DType::i64, {1, static_cast<int64_t>(tokens.size())});
  std::copy(tokens.begin(), tokens.end(), t.mutable_data<int64_t>());
  return t;
}

std::vector<float> llm_logits(const llm::LlamaModel& m, const std::vector<int32_t>& tokens) {
  llm::LlamaSession s(m);
  return s.forward(tokens);
}

Tensor run_tailor(const graph::Model& g, const std::vector<int32_t>& tokens) {
  runtime::Executor ex(g);
  return ex.run({{"input_ids", ids_tensor(tokens)}}).at("logits");
}

// max |a − b| / max |a|.
double rel_diff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    num = std::max(num, std::fabs(static_cast<double>(a[i]) - b[i]));
    den = std::max(den, std::fabs(static_cast<double>(a[i])));
  }
  return num / den;
}

double max_abs(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double m = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i)
    m = std::max(m, std::fabs(static_cast<double>(a[i]) - b[i]));
  return m;
}

/// A mixed plan over stories260K's linears: every scheme family that has a
/// standard-ONNX form, the tied embedding/classifier int8 (read by both the
/// Gather and the classifier Gemm).
std::map<std::string, std::string> mixed_plan(const llm::LlamaModel& m) {
  const std::vector<std::string> names = m.linear_names();
  const std::vector<std::string> labels = {"int8",    "int4",     "lowrank-r16", "int3",
                                           "ternary", "int4-g32", "dense"};
  std::map<std::string, std::string> plan;
  for (size_t i = 0; i + 1 < names.size(); ++i)
    plan[names[i]] = labels[(i + i / 7) % labels.size()];
  plan[names.back()] = "int8";
  return plan;
}

/// The encoded layers of `plan` (dense entries left out, as encode_plan does)
/// and the llm model with the same Encoded weights replaced.
std::vector<EncodedLayer> encode(const llm::LlamaModel& m,
                                 const std::map<std::string, std::string>& plan,
                                 llm::LlamaModel& compressed) {
  std::vector<EncodedLayer> layers;
  for (const auto& [name, label] : plan) {
    if (label == "dense") continue;
    EncodedLayer e;
    e.name = name;
    e.encoded = schemes::parse_scheme(label).encode(m.dense_weight(name));
    compressed.replace_linear(name, e.encoded);
    layers.push_back(std::move(e));
  }
  return layers;
}

TEST(LlamaOnnx, DenseExportMatchesTheNumpyAndLlmForwardPasses) {
  const llm::LlamaModel m = llm::LlamaModel::load(kStories);
  const graph::Model g = llama_to_onnx(m);
  EXPECT_EQ(g.opset, 17);
  ASSERT_EQ(g.graph.inputs, std::vector<std::string>{"input_ids"});
  ASSERT_EQ(g.graph.outputs, std::vector<std::string>{"logits"});
  for (const graph::Node& n : g.graph.nodes) EXPECT_TRUE(n.domain.empty()) << n.op_type;
  const Tensor y = run_tailor(g, kTokens);
  ASSERT_EQ(y.shape(), (Shape{1, 14, 512}));
  // tests/llm/reference_logits.py: float64 numpy, Meta's complex-number RoPE.
  const Tensor ref = read_npy(fixture_path("llm/stories260K_logits.npy"));
  EXPECT_LE(rel_diff(ref.to_f32_vector(), y.to_f32_vector()), 1e-5);
  EXPECT_LE(rel_diff(llm_logits(m, kTokens), y.to_f32_vector()), 1e-5);
  // A prefix is the same computation on fewer positions (causal mask, RoPE tables sliced).
  const std::vector<int32_t> head(kTokens.begin(), kTokens.begin() + 5);
  EXPECT_LE(rel_diff(llm_logits(m, head), run_tailor(g, head).to_f32_vector()), 1e-5);
}

TEST(LlamaOnnx, RotateHalfPairingOfAnHfFolderGivesTheSameLogits) {
  TempDir dir;
  convert_llama2c_to_hf(kStories, dir.file("hf"));
  const llm::LlamaModel hf = llm::LlamaModel::load(dir.file("hf"));
  ASSERT_EQ(hf.rope_pairing(), llm::RopePairing::rotate_half);
  const Tensor ref = read_npy(fixture_path("llm/stories260K_logits.npy"));
  EXPECT_LE(rel_diff(ref.to_f32_vector(), run_tailor(llama_to_onnx(hf), kTokens).to_f32_vector()),
            1e-5);
}

TEST(LlamaOnnx, WrittenFileRoundTripsAndHoldsEveryWeightOnce) {
  TempDir dir;
  const llm::LlamaModel m = llm::LlamaModel::load(kStories);
  graph::write_onnx(llama_to_onnx(m), dir.file("m.onnx"));
  const graph::Model back = graph::import_onnx(dir.file("m.onnx"));
  EXPECT_LE(rel_diff(llm_logits(m, kTokens), run_tailor(back, kTokens).to_f32_vector()), 1e-5);
  // Weights: 260,032 f32 (fixture README: the tied embedding once); constants:
  // cos and sin [512, 1, 8], the 8×8 rotation, eps, 1/√hd, −inf and 0 of the mask.
  int64_t floats = 0;
  for (const auto& [name, t] : back.graph.initializers)
    if (t.dtype() == DType::f32) floats += t.numel();
  EXPECT_EQ(floats, 260032 + 2 * 512 * 8 + 8 * 8 + 4);
  EXPECT_EQ(back.graph.initializers.count("model.embed_tokens.weight"), 1u);
}

TEST(LlamaOnnx, CompressedExportMatchesTheCompressedLlmForwardPass) {
  const llm::LlamaModel m = llm::LlamaModel::load(kStories);
  llm::LlamaModel c = m;
  const std::vector<EncodedLayer> layers = encode(m, mixed_plan(m), c);
  std::vector<LayerRewrite> log;
  const graph::Model g = llama_to_onnx(m, layers, &log);
  ASSERT_EQ(log.size(), layers.size());
  std::map<std::string, std::string> form;
  for (const LayerRewrite& r : log) form[r.layer] = r.form;
  EXPECT_EQ(form["model.layers.0.self_attn.v_proj.weight"], "MatMul·Gemm");  // lowrank-r16
  EXPECT_EQ(form["model.embed_tokens.weight"], "Cast·Mul (int8 codes)");
  EXPECT_EQ(form["model.layers.0.self_attn.k_proj.weight"], "Cast·Mul (4-bit codes, two per byte)");
  for (const graph::Node& n : g.graph.nodes) EXPECT_TRUE(n.domain.empty()) << n.op_type;
  // The dequantized weight feeds both the Gather and the classifier; nothing dense remains.
  EXPECT_EQ(g.graph.initializers.count("model.embed_tokens.weight"), 0u);

  const std::vector<float> want = llm_logits(c, kTokens);
  const std::vector<float> got = run_tailor(g, kTokens).to_f32_vector();
  EXPECT_LE(rel_diff(want, got), 1e-5);
  // And it is not the dense model's output (the plan changes the logits).
  EXPECT_GT(rel_diff(llm_logits(m, kTokens), got), 1e-3);
}

TEST(LlamaOnnx, LowRankTiedEmbeddingIsOneWeightForGatherAndClassifier) {
  const llm::LlamaModel m = llm::LlamaModel::load(kStories);
  llm::LlamaModel c = m;
  const std::vector<EncodedLayer> layers =
      encode(m, {{"model.embed_tokens.weight", "lowrank-r32"}}, c);
  std::vector<LayerRewrite> log;
  const graph::Model g = llama_to_onnx(m, layers, &log);
  ASSERT_EQ(log.size(), 1u);
  EXPECT_EQ(log[0].form, "MatMul(A, B) as the weight");
  EXPECT_EQ(log[0].file_bytes, 4 * 32 * (512 + 64));
  EXPECT_LE(rel_diff(llm_logits(c, kTokens), run_tailor(g, kTokens).to_f32_vector()), 1e-5);
}

TEST(LlamaOnnx, CompressedFileIsSmallerByTheStoredCodes) {
  TempDir dir;
  const llm::LlamaModel m = llm::LlamaModel::load(kStories);
  std::map<std::string, std::string> all_int8;
  for (const std::string& n : m.linear_names()) all_int8[n] = "int8";
  llm::LlamaModel c = m;
  graph::write_onnx(llama_to_onnx(m), dir.file("dense.onnx"));
  graph::write_onnx(llama_to_onnx(m, encode(m, all_int8, c)), dir.file("int8.onnx"));
  std::map<DType, int64_t> bytes;
  for (const auto& [name, t] : graph::import_onnx(dir.file("int8.onnx")).graph.initializers)
    bytes[t.dtype()] += static_cast<int64_t>(t.nbytes());
  // Every weight of the 260,032 (fixture README) is one int8 code; one f16
  // scale per row: per layer q 64, k 32, v 32, o 64, gate 172, down 64, up 172
  // rows, and the 512 rows of the tied embedding.
  EXPECT_EQ(bytes[DType::i8], 260032 - 64 * 11);  // the 11 norm gains stay f32
  EXPECT_EQ(bytes[DType::f16], 2 * (5 * 600 + 512));
  // f32: the norms, eps, 1/√hd, −inf, 0, cos and sin [512, 1, 8], the 8×8 rotation.
  EXPECT_EQ(bytes[DType::f32], 4 * (64 * 11 + 4 + 2 * 512 * 8 + 8 * 8));
  const auto dense = static_cast<int64_t>(std::filesystem::file_size(dir.file("dense.onnx")));
  const auto int8 = static_cast<int64_t>(std::filesystem::file_size(dir.file("int8.onnx")));
  std::cout << "dense.onnx " << dense << " bytes, int8.onnx " << int8 << " bytes\n";
  // The file shrinks by the 3 bytes saved on each weight, less the scales and
  // the dequantizing nodes (under 2 kB per layer).
  EXPECT_LT(int8, dense - 3 * (260032 - 64 * 11) + 2 * (5 * 600 + 512) + 36 * 2000);
}

TEST(LlamaOnnx, CompressedModelIsRefused) {
  const llm::LlamaModel m = llm::LlamaModel::load(kStories);
  llm::LlamaModel c = m;
  encode(m, {{"model.layers.1.mlp.up_proj.weight", "int8"}}, c);
  testing::expect_error_naming([&] { llama_to_onnx(c); }, "model.layers.1.mlp.up_proj.weight",
                               "already compressed");
  EncodedLayer bad;
  bad.name = "model.layers.0.self_attn.q_proj.weight";
  bad.encoded =
      schemes::parse_scheme("int8").encode(m.dense_weight("model.layers.0.mlp.up_proj.weight"));
  testing::expect_error_naming([&] { llama_to_onnx(m, {bad}); }, bad.name, "[172, 64]");
  EncodedLayer missing = bad;
  missing.name = "model.layers.9.self_attn.q_proj.weight";
  testing::expect_error_naming([&] { llama_to_onnx(m, {missing}); }, missing.name,
                               "not a linear layer");
}

TEST(LlamaOnnx, OnnxRuntimeAgreesWithTailorOnDenseAndCompressedExports) {
  if (auto why = testing::ort_unavailable(); !why.empty()) GTEST_SKIP() << why;
  TempDir dir;
  const llm::LlamaModel m = llm::LlamaModel::load(kStories);
  llm::LlamaModel c = m;
  const graph::Model dense = llama_to_onnx(m);
  const graph::Model comp = llama_to_onnx(m, encode(m, mixed_plan(m), c));
  graph::write_onnx(dense, dir.file("dense.onnx"));
  graph::write_onnx(comp, dir.file("comp.onnx"));
  for (const auto& [file, model] :
       {std::pair{"dense.onnx", &dense}, std::pair{"comp.onnx", &comp}}) {
    const auto ort = testing::run_ort(dir.file(file), {{"input_ids", ids_tensor(kTokens)}});
    ASSERT_EQ(ort.count("logits"), 1u) << file;
    const Tensor y = run_tailor(*model, kTokens);
    ASSERT_EQ(ort.at("logits").shape(), y.shape()) << file;
    EXPECT_LE(max_abs(ort.at("logits").to_f32_vector(), y.to_f32_vector()), 1e-4) << file;
  }
}

TEST(LlamaOnnx, TailorRunTakesInt64TokenIds) {
  TempDir dir;
  const llm::LlamaModel m = llm::LlamaModel::load(kStories);
  graph::write_onnx(llama_to_onnx(m), dir.file("m.onnx"));
  write_npy(dir.file("ids.npy"), ids_tensor(kTokens));
  const auto r =
      testing::run_cli("run " + dir.file("m.onnx") + " --input input_ids=" + dir.file("ids.npy") +
                       " --output " + dir.file("out"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const Tensor y = read_npy(dir.file("out/logits.npy"));
  ASSERT_EQ(y.shape(), (Shape{1, 14, 512}));
  EXPECT_LE(rel_diff(llm_logits(m, kTokens), y.to_f32_vector()), 1e-5);
  // Ids of another dtype are refused with the input named.
  write_npy(dir.file("f.npy"), Tensor::from_f32({1, 2}, std::vector<float>{1, 2}));
  const auto bad =
      testing::run_cli("run " + dir.file("m.onnx") + " --input input_ids=" + dir.file("f.npy"));
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("input_ids"), std::string::npos) << bad.output;
}

}  // namespace
}  // namespace tailor
