// A llama checkpoint as a decoder graph (io/llama_graph.h), run by tailor's
// executor, checked on stories260K against the float64 numpy forward pass of
// tests/llm/reference_logits.py, across the checkpoint formats (llama2.c, HF
// folder, GGUF F32/F16) and the RoPE pairings.
#include "tailor/io/llama_graph.h"

#include <gtest/gtest.h>

#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "io/gguf_bytes.h"
#include "llm/stories.h"
#include "tailor/core/dtype.h"
#include "tailor/core/error.h"
#include "tailor/io/atomic_file.h"
#include "tailor/io/load_model.h"
#include "tailor/io/npy.h"
#include "tailor/io/onnx.h"
#include "tailor/io/safetensors.h"
#include "test_util.h"

namespace tailor {
namespace {

using testing::expect_error_naming;
using testing::fixture_path;
using testing::kStoriesTokens;
using testing::llama_gguf_bytes;
using testing::logits_of;
using testing::rel_diff;
using testing::stories_as_gguf;
using testing::TempDir;
using testing::write_bytes;

const std::string kStories = testing::stories_path();
const std::vector<int32_t>& kTokens = kStoriesTokens;

LlamaConfig stories_config() {
  return read_llama_checkpoint(kStories).config;
}

TEST(LlamaGraph, LogitsMatchAnIndependentNumpyForwardPass) {
  // tests/llm/reference_logits.py: float64 numpy, Meta's complex-number RoPE.
  const Tensor ref = read_npy(fixture_path("llm/stories260K_logits.npy"));
  ASSERT_EQ(ref.shape(), (Shape{static_cast<int64_t>(kTokens.size()), 512}));
  const graph::Model g = load_llama_graph(kStories);
  EXPECT_LE(rel_diff(ref.to_f32_vector(), logits_of(g, kTokens)), 1e-5);
  // A prefix is the same computation on fewer positions (causal mask, RoPE tables sliced).
  const std::vector<int32_t> head(kTokens.begin(), kTokens.begin() + 5);
  const std::vector<float> r = ref.to_f32_vector();
  EXPECT_LE(rel_diff(std::vector<float>(r.begin(), r.begin() + 5 * 512), logits_of(g, head)), 1e-5);
}

TEST(LlamaGraph, IsAStandardDecoderGraphWithAKvCache) {
  const graph::Model g = load_llama_graph(kStories);
  EXPECT_EQ(g.opset, 17);
  for (const graph::Node& n : g.graph.nodes) EXPECT_TRUE(n.domain.empty()) << n.op_type;
  // input_ids, then a key and a value past per layer (5 layers); logits, then the presents.
  ASSERT_EQ(g.graph.inputs.size(), 11u);
  ASSERT_EQ(g.graph.outputs.size(), 11u);
  EXPECT_EQ(g.graph.inputs[0], "input_ids");
  EXPECT_EQ(g.graph.inputs[1], "past_key_values.0.key");
  EXPECT_EQ(g.graph.inputs[10], "past_key_values.4.value");
  EXPECT_EQ(g.graph.outputs[0], "logits");
  EXPECT_EQ(g.graph.outputs[3], "present.1.key");
  EXPECT_EQ(g.graph.type_of("past_key_values.2.value")->to_string(), "f32[1, 4, past_sequence, 8]");
  EXPECT_EQ(g.graph.type_of("present.2.value")->to_string(), "f32[1, 4, total_sequence, 8]");
  EXPECT_EQ(g.graph.type_of("logits")->to_string(), "f32[1, sequence, 512]");
  EXPECT_EQ(g.graph.type_of("input_ids")->to_string(), "i64[1, sequence]");
  // Weights under their names in the file: 260,032 f32 (fixture README: the
  // tied embedding once); the builder's constants under "llama.": cos and sin
  // [512, 1, 8], the 8×8 rotation, eps, 1/√hd, −inf and 0 of the mask.
  int64_t weights = 0, constants = 0;
  for (const auto& [name, t] : g.graph.initializers) {
    if (t.dtype() != DType::f32) continue;
    (name.rfind(kLlamaConstantPrefix, 0) == 0 ? constants : weights) += t.numel();
  }
  EXPECT_EQ(weights, 260032);
  EXPECT_EQ(constants, 2 * 512 * 8 + 8 * 8 + 4);
  EXPECT_EQ(g.graph.initializers.count("model.embed_tokens.weight"), 1u);
  EXPECT_EQ(g.graph.initializers.count("model.layers.4.mlp.down_proj.weight"), 1u);
  EXPECT_EQ(g.graph.initializers.count("model.norm.weight"), 1u);
  // The llama2.c weights are views of the mapped file, not copies.
  const LlamaCheckpoint ck = read_llama_checkpoint(kStories);
  EXPECT_EQ(ck.pairing, RopePairing::interleaved);
  EXPECT_EQ(ck.config.n_kv_heads, 4);  // grouped: 8 query heads share 4 KV heads
  const graph::Model again = llama_graph(ck.weights, ck.config, ck.pairing);
  EXPECT_EQ(again.graph.initializers.at("model.layers.0.self_attn.q_proj.weight").data<float>(),
            ck.weights.at("model.layers.0.self_attn.q_proj.weight").data<float>());
}

TEST(LlamaGraph, WrittenFileRoundTrips) {
  TempDir dir;
  const graph::Model g = load_llama_graph(kStories);
  graph::write_onnx(g, dir.file("m.onnx"));
  const graph::Model back = graph::import_onnx(dir.file("m.onnx"));
  EXPECT_EQ(back.graph.inputs, g.graph.inputs);
  EXPECT_EQ(back.graph.outputs, g.graph.outputs);
  EXPECT_LE(rel_diff(logits_of(g, kTokens), logits_of(back, kTokens)), 1e-6);
}

TEST(LlamaGraph, ConvertedHfFolderGivesTheSameLogits) {
  TempDir dir;
  const std::string hf = dir.file("hf");
  convert_llama2c_to_hf(kStories, hf);
  const LlamaCheckpoint b = read_llama_checkpoint(hf);
  EXPECT_EQ(b.pairing, RopePairing::rotate_half);
  EXPECT_EQ(b.config.rms_norm_eps, 1e-5f);
  EXPECT_TRUE(b.config.shared_classifier);
  const std::vector<float> la = logits_of(load_llama_graph(kStories), kTokens);
  EXPECT_LE(rel_diff(la, logits_of(load_llama_graph(hf), kTokens)), 1e-5);
  // The pairing matters: the HF rows read with llama2.c's pairing disagree.
  const graph::Model wrong = llama_graph(b.weights, b.config, RopePairing::interleaved);
  EXPECT_GT(rel_diff(la, logits_of(wrong, kTokens)), 1e-3);
}

TEST(LlamaGraph, GgufF32GivesTheSameLogits) {
  TempDir dir;
  const LlamaConfig c = stories_config();
  const std::string path = dir.file("stories.gguf");
  write_bytes(path, llama_gguf_bytes(c, stories_as_gguf(false, false), false));
  const LlamaCheckpoint ck = read_llama_checkpoint(path);
  EXPECT_EQ(ck.config.n_kv_heads, 4);
  EXPECT_EQ(ck.config.vocab_size, 512);
  EXPECT_TRUE(ck.config.shared_classifier);
  const graph::Model g = load_llama_graph(path);
  EXPECT_EQ(llm::linear_weights(g).front(), "blk.0.attn_q.weight");
  const std::vector<float> la = logits_of(load_llama_graph(kStories), kTokens);
  EXPECT_LE(rel_diff(la, logits_of(g, kTokens)), 1e-6);
  // HF → GGUF as llama.cpp converts it (q/k permuted back): the same model.
  const std::string hf = dir.file("hf"), via_hf = dir.file("via_hf.gguf");
  convert_llama2c_to_hf(kStories, hf);
  write_bytes(via_hf, llama_gguf_bytes(c, stories_as_gguf(false, false, hf), false));
  EXPECT_LE(rel_diff(la, logits_of(load_llama_graph(via_hf), kTokens)), 1e-6);
}

TEST(LlamaGraph, GgufF16MatchesF32OfTheRoundedValues) {
  TempDir dir;
  const LlamaConfig c = stories_config();
  const std::string f32 = dir.file("r.gguf"), f16 = dir.file("h.gguf");
  write_bytes(f32, llama_gguf_bytes(c, stories_as_gguf(true, false), false));
  write_bytes(f16, llama_gguf_bytes(c, stories_as_gguf(true, true), true));
  const graph::Model a = load_llama_graph(f32), b = load_llama_graph(f16);
  EXPECT_FALSE(read_llama_checkpoint(f16).config.shared_classifier);
  EXPECT_EQ(llm::linear_weights(b).back(), "output.weight");
  // Half precision widened to f32 initializers.
  EXPECT_EQ(b.graph.initializers.at("blk.0.ffn_up.weight").dtype(), DType::f32);
  EXPECT_LE(rel_diff(logits_of(a, kTokens), logits_of(b, kTokens)), 1e-6);
  // f16 rounding moves the logits, but only a little.
  const double d = rel_diff(logits_of(load_llama_graph(kStories), kTokens), logits_of(b, kTokens));
  EXPECT_GT(d, 0.0);
  EXPECT_LT(d, 1e-2);
}

TEST(LlamaGraph, RejectsBadInput) {
  TempDir dir;
  // A safetensors file without config.json beside it.
  const std::string st = dir.file("model.safetensors");
  write_safetensors(st, {{"x", Tensor::zeros(DType::f32, {2, 2})}});
  expect_error_naming([&] { load_llama_graph(st); }, dir.file("config.json"), "cannot open");
  // A GGUF llama missing a tensor.
  const LlamaConfig c = stories_config();
  std::vector<testing::LlamaTensor> t = stories_as_gguf(false, false);
  t.erase(t.begin() + 3);  // blk.0.attn_k.weight
  const std::string gg = dir.file("broken.gguf");
  write_bytes(gg, llama_gguf_bytes(c, t, false));
  expect_error_naming([&] { load_llama_graph(gg); }, gg, "'blk.0.attn_k.weight' is missing");
  // A HF config for another architecture.
  const std::string hf = dir.file("hf");
  convert_llama2c_to_hf(kStories, hf);
  write_bytes(hf + "/config.json", R"({"model_type": "gpt2"})");
  expect_error_naming([&] { load_llama_graph(hf); }, hf + "/config.json", "expected 'llama'");
  // A misshapen weight and an inconsistent configuration.
  LlamaCheckpoint ck = read_llama_checkpoint(kStories);
  std::map<std::string, Tensor> w = ck.weights;
  w["model.layers.0.self_attn.k_proj.weight"] = Tensor::zeros(DType::f32, {64, 64});
  expect_error_naming([&] { llama_graph(w, ck.config, ck.pairing, "ck"); }, "ck",
                      "expected [32, 64]");
  LlamaConfig odd = ck.config;
  odd.n_kv_heads = 3;
  expect_error_naming([&] { llama_graph(ck.weights, odd, ck.pairing, "ck"); }, "ck",
                      "not divisible by n_kv_heads 3");
}

// A config declaring fewer layers than the file holds ran on the first ones
// without a word; more declared than held named a missing tensor.
TEST(LlamaGraph, ALayerCountOtherThanTheFilesIsAOneLineError) {
  TempDir dir;
  const std::string hf = dir.file("hf");
  convert_llama2c_to_hf(kStories, hf);
  auto config = nlohmann::json::parse(read_file(hf + "/config.json"));
  for (int declared : {3, 7}) {
    config["num_hidden_layers"] = declared;
    write_bytes(hf + "/config.json", config.dump());
    expect_error_naming([&] { load_llama_graph(hf); }, hf + "/config.json",
                        "num_hidden_layers declares " + std::to_string(declared) + " layers but " +
                            hf + "/model.safetensors holds 5 (model.layers.0 … model.layers.4)");
  }
  const std::string gg = dir.file("three.gguf");
  write_bytes(gg, llama_gguf_bytes(stories_config(), stories_as_gguf(false, false), false, 3));
  expect_error_naming([&] { load_llama_graph(gg); }, gg,
                      "llama.block_count declares 3 layers but the file holds 5 (blk.0 … blk.4)");
}

// A context of 2^31 − 1 built RoPE tables of 2^31 · head_dim floats eagerly
// (64 GiB each for stories260K): out of memory, or the machine swapping.
TEST(LlamaGraph, AContextTooLargeForTheRopeTablesIsAOneLineError) {
  TempDir dir;
  LlamaConfig c = stories_config();
  c.seq_len = 2147483647;
  const std::string gg = dir.file("huge.gguf");
  write_bytes(gg, llama_gguf_bytes(c, stories_as_gguf(false, false), false));
  expect_error_naming([&] { load_llama_graph(gg); }, gg,
                      "context length 2147483647 is too large: its RoPE tables would hold "
                      "2147483647 × 8 elements each, more than 134217728 (a context of at most "
                      "16777216 at head_dim 8)");
  const std::string hf = dir.file("hf");
  convert_llama2c_to_hf(kStories, hf);
  auto config = nlohmann::json::parse(read_file(hf + "/config.json"));
  config["max_position_embeddings"] = 2147483647;
  write_bytes(hf + "/config.json", config.dump());
  expect_error_naming([&] { load_llama_graph(hf); }, hf, "context length 2147483647 is too large");
  // A large context within the limit still loads.
  c.seq_len = 1 << 20;
  write_bytes(gg, llama_gguf_bytes(c, stories_as_gguf(false, false), false));
  EXPECT_NO_THROW(load_llama_graph(gg));
}

}  // namespace
}  // namespace tailor
