// A plan applied to a llama decoder graph (io/llama_graph.h) by compress's
// two rewrites, checked on stories260K: the standard-ONNX form (what
// model.onnx holds) against the CompressedLinear form and the decoded
// weights, file sizes by the stored codes, and onnxruntime against tailor's
// executor on the model.onnx compress writes.
#include <gtest/gtest.h>

#include <filesystem>
#include <iostream>
#include <map>

#include "llm/stories.h"
#include "ort/ort_runner.h"
#include "tailor/compress/compress.h"
#include "tailor/compress/rewrite.h"
#include "tailor/core/error.h"
#include "tailor/io/llama_graph.h"
#include "tailor/io/onnx.h"
#include "tailor/llm/llama.h"
#include "tailor/runtime/executor.h"
#include "test_util.h"

namespace tailor {
namespace {

using compress::EncodedLayer;
using compress::LayerRewrite;
using testing::encode_labels;
using testing::ids_tensor;
using testing::kStoriesTokens;
using testing::logits_of;
using testing::rel_diff;
using testing::TempDir;

const std::string kStories = testing::stories_path();
const std::vector<int32_t>& kTokens = kStoriesTokens;

/// A mixed plan over stories260K's linears: every scheme family that has a
/// standard-ONNX form, the tied embedding/classifier int8 (read by both the
/// Gather and the classifier Gemm).
std::map<std::string, std::string> mixed_plan(const graph::Model& m) {
  const std::vector<std::string> names = llm::linear_weights(m);
  const std::vector<std::string> labels = {"int8",    "int4",     "lowrank-r16", "int3",
                                           "ternary", "int4-g32", "dense"};
  std::map<std::string, std::string> plan;
  for (size_t i = 0; i + 1 < names.size(); ++i)
    plan[names[i]] = labels[(i + i / 7) % labels.size()];
  plan[names.back()] = "int8";
  return plan;
}

double max_abs(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double m = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i)
    m = std::max(m, std::fabs(static_cast<double>(a[i]) - b[i]));
  return m;
}

/// The inputs of a first step: the ids and empty pasts.
std::map<std::string, Tensor> first_step(const graph::Model& m, const std::vector<int32_t>& t) {
  std::map<std::string, Tensor> in = llm::empty_pasts(m);
  in["input_ids"] = ids_tensor(t);
  return in;
}

/// onnxruntime's feeds.
std::vector<std::pair<std::string, Tensor>> pairs(const std::map<std::string, Tensor>& in) {
  return {in.begin(), in.end()};
}

TEST(LlamaRewrite, StandardFormMatchesTheCompressedLinearForm) {
  const graph::Model m = load_llama_graph(kStories);
  const std::vector<EncodedLayer> layers = encode_labels(m, mixed_plan(m));
  std::vector<LayerRewrite> log;
  const graph::Model g = compress::rewrite_standard(m, layers, &log);
  ASSERT_EQ(log.size(), layers.size());
  std::map<std::string, std::string> form;
  for (const LayerRewrite& r : log) form[r.layer] = r.form;
  EXPECT_EQ(form["model.layers.0.self_attn.v_proj.weight"], "MatMul·Gemm");  // lowrank-r16
  EXPECT_EQ(form["model.embed_tokens.weight"], "Cast·Mul (int8 codes)");
  EXPECT_EQ(form["model.layers.0.self_attn.k_proj.weight"], "Cast·Mul (4-bit codes packed)");
  for (const graph::Node& n : g.graph.nodes) EXPECT_TRUE(n.domain.empty()) << n.op_type;
  // The dequantized weight feeds both the Gather and the classifier; nothing dense remains.
  EXPECT_EQ(g.graph.initializers.count("model.embed_tokens.weight"), 0u);

  const std::vector<float> got = logits_of(g, kTokens);
  EXPECT_LE(rel_diff(logits_of(compress::rewrite_tailor(m, layers), kTokens), got), 1e-5);
  EXPECT_LE(rel_diff(logits_of(testing::with_decoded(m, layers), kTokens), got), 1e-5);
  // And it is not the dense model's output (the plan changes the logits).
  EXPECT_GT(rel_diff(logits_of(m, kTokens), got), 1e-3);
}

TEST(LlamaRewrite, LowRankTiedEmbeddingIsOneWeightForGatherAndClassifier) {
  const graph::Model m = load_llama_graph(kStories);
  const auto layers = encode_labels(m, {{"model.embed_tokens.weight", "lowrank-r32"}});
  std::vector<LayerRewrite> log;
  const graph::Model g = compress::rewrite_standard(m, layers, &log);
  ASSERT_EQ(log.size(), 1u);
  EXPECT_EQ(log[0].form, "MatMul(A, B) as the weight");
  EXPECT_EQ(log[0].file_bytes, 4 * 32 * (512 + 64));
  EXPECT_LE(rel_diff(logits_of(testing::with_decoded(m, layers), kTokens), logits_of(g, kTokens)),
            1e-5);
}

TEST(LlamaRewrite, CompressedFileIsSmallerByTheStoredCodes) {
  TempDir dir;
  const graph::Model m = load_llama_graph(kStories);
  std::map<std::string, std::string> all_int8;
  for (const std::string& n : llm::linear_weights(m)) all_int8[n] = "int8";
  graph::write_onnx(m, dir.file("dense.onnx"));
  graph::write_onnx(compress::rewrite_standard(m, encode_labels(m, all_int8)),
                    dir.file("int8.onnx"));
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

TEST(LlamaRewrite, MisshapenLayerIsRefused) {
  const graph::Model m = load_llama_graph(kStories);
  EncodedLayer bad = encode_labels(m, {{"model.layers.0.mlp.up_proj.weight", "int8"}})[0];
  bad.name = "model.layers.0.self_attn.q_proj.weight";
  testing::expect_error_naming([&] { compress::rewrite_standard(m, {bad}); }, bad.name,
                               "[172, 64]");
  testing::expect_error_naming([&] { compress::rewrite_tailor(m, {bad}); }, bad.name, "[172, 64]");
}

TEST(LlamaRewrite, OnnxRuntimeAgreesWithTailorOnDenseAndCompressedGraphs) {
  if (auto why = testing::ort_unavailable(); !why.empty()) GTEST_SKIP() << why;
  TempDir dir;
  const graph::Model dense = load_llama_graph(kStories);
  const graph::Model comp =
      compress::rewrite_standard(dense, encode_labels(dense, mixed_plan(dense)));
  graph::write_onnx(dense, dir.file("dense.onnx"));
  graph::write_onnx(comp, dir.file("comp.onnx"));
  for (const auto& [file, model] :
       {std::pair{"dense.onnx", &dense}, std::pair{"comp.onnx", &comp}}) {
    const auto ort = testing::run_ort(dir.file(file), pairs(first_step(*model, kTokens)));
    ASSERT_EQ(ort.count("logits"), 1u) << file;
    const std::vector<float> y = logits_of(*model, kTokens);
    ASSERT_EQ(ort.at("logits").numel(), static_cast<int64_t>(y.size())) << file;
    EXPECT_LE(max_abs(ort.at("logits").to_f32_vector(), y), 1e-4) << file;
  }
  // A second step fed onnxruntime's presents as pasts: the cache semantics agree.
  const auto step1 =
      testing::run_ort(dir.file("dense.onnx"), pairs(first_step(dense, {1, 403, 407})));
  std::map<std::string, Tensor> in{{"input_ids", ids_tensor({261, 378})}};
  for (const auto& c : llm::decoder_signature(dense).cache) in[c.past] = step1.at(c.present);
  const auto step2 = testing::run_ort(dir.file("dense.onnx"), pairs(in));
  const std::vector<float> whole = logits_of(dense, {1, 403, 407, 261, 378});
  EXPECT_LE(max_abs(std::vector<float>(whole.end() - 2 * 512, whole.end()),
                    step2.at("logits").to_f32_vector()),
            1e-4);
}

// The done-when check of issue 12: the model.onnx compress writes for
// stories260K, run by onnxruntime and by tailor's executor, same logits
// (1e-4 relative to the largest).
TEST(LlamaRewrite, OnnxRuntimeAgreesOnTheModelOnnxCompressWrites) {
  if (auto why = testing::ort_unavailable(); !why.empty()) GTEST_SKIP() << why;
  TempDir dir;
  compress::CompressOptions o;
  o.model = kStories;
  o.budget = "40%";
  o.out_dir = dir.file("out");
  o.cache = false;
  o.kld_sequences = 2;
  o.kld_length = 16;
  o.report = false;
  compress::compress_model(o);
  const graph::Model written = graph::import_onnx(dir.file("out/model.onnx"));
  const auto ort =
      testing::run_ort(dir.file("out/model.onnx"), pairs(first_step(written, kTokens)));
  runtime::Executor ex(written);
  const Tensor y = ex.run(first_step(written, kTokens)).at("logits");
  ASSERT_EQ(ort.at("logits").shape(), y.shape());
  EXPECT_LE(rel_diff(ort.at("logits").to_f32_vector(), y.to_f32_vector()), 1e-4);
}

}  // namespace
}  // namespace tailor
