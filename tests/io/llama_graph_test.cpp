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
using testing::logits_of;
using testing::rel_diff;
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

// --- GGUF built byte by byte (docs/gguf.md, version 3) ------------------------

template <class T>
void put(std::string& out, T v) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  out.append(b, sizeof(T));
}
void put_str(std::string& out, const std::string& s) {
  put<uint64_t>(out, s.size());
  out += s;
}

struct GgufTensor {
  std::string name;
  Shape shape;  // row-major [out, in]; ggml's ne is the reverse
  std::vector<float> values;
};

// A GGUF v3 file: general.architecture "llama", the llama.* hyper-parameters,
// tensors as F32 (type 0) or F16 (type 1), 32-byte aligned.
std::string build_gguf(const LlamaConfig& c, const std::vector<GgufTensor>& tensors, bool f16) {
  std::string o = "GGUF";
  put<uint32_t>(o, 3);
  put<uint64_t>(o, tensors.size());
  const std::vector<std::pair<std::string, uint32_t>> ints = {
      {"llama.embedding_length", c.dim},
      {"llama.feed_forward_length", c.hidden_dim},
      {"llama.block_count", c.n_layers},
      {"llama.attention.head_count", c.n_heads},
      {"llama.attention.head_count_kv", c.n_kv_heads},
      {"llama.context_length", c.seq_len},
      {"llama.rope.dimension_count", c.head_dim()}};
  put<uint64_t>(o, 1 + ints.size() + 2);
  put_str(o, "general.architecture");
  put<uint32_t>(o, 8);  // string
  put_str(o, "llama");
  for (const auto& [key, v] : ints) {
    put_str(o, key);
    put<uint32_t>(o, 4);  // uint32
    put<uint32_t>(o, v);
  }
  for (const auto& [key, v] :
       {std::pair<std::string, float>{"llama.attention.layer_norm_rms_epsilon", c.rms_norm_eps},
        {"llama.rope.freq_base", c.rope_theta}}) {
    put_str(o, key);
    put<uint32_t>(o, 6);  // float32
    put<float>(o, v);
  }
  std::string data;
  for (const GgufTensor& t : tensors) {
    put_str(o, t.name);
    put<uint32_t>(o, static_cast<uint32_t>(t.shape.size()));
    for (auto it = t.shape.rbegin(); it != t.shape.rend(); ++it) put<uint64_t>(o, *it);
    put<uint32_t>(o, f16 ? 1 : 0);
    put<uint64_t>(o, data.size());
    for (float v : t.values) {
      if (f16)
        put<uint16_t>(data, f32_to_f16(v));
      else
        put<float>(data, v);
    }
    while (data.size() % 32) data += '\0';
  }
  while (o.size() % 32) o += '\0';
  return o + data;
}

// llama.cpp's convert_hf_to_gguf.py LlamaModel.permute on the rows of an HF
// q/k weight [heads·hd, in]: reshape(heads, 2, hd/2, in).swapaxes(1, 2), i.e.
// the row of (head h, half a, index j) moves to (h, j, a): rotate-half order
// back to interleaved pairs.
std::vector<float> llama_cpp_permute(const std::vector<float>& w, int64_t heads, int64_t in) {
  const int64_t rows = static_cast<int64_t>(w.size()) / in, hd = rows / heads;
  std::vector<float> out(w.size());
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t a = 0; a < 2; ++a)
      for (int64_t j = 0; j < hd / 2; ++j)
        std::copy_n(w.begin() + (h * hd + a * (hd / 2) + j) * in, in,
                    out.begin() + (h * hd + 2 * j + a) * in);
  return out;
}

// The stories260K weights under llama.cpp's names. With `hf_folder` they are
// read from the `tailor convert` copy and q/k go through llama_cpp_permute,
// as llama.cpp's converter does; otherwise they come from the llama2.c file,
// whose rows already pair (2i, 2i+1). `round16` rounds every value to f16;
// `separate_output` adds output.weight (a copy of the embedding) so the
// classifier is untied.
std::vector<GgufTensor> stories_as_gguf(bool round16, bool separate_output,
                                        const std::string& hf_folder = "") {
  const graph::Model f = load_model(hf_folder.empty() ? kStories : hf_folder);
  auto get = [&](const std::string& hf, const std::string& gg) {
    const auto it = f.graph.initializers.find(hf);
    EXPECT_NE(it, f.graph.initializers.end()) << hf;
    const Tensor& w = it->second;
    std::vector<float> v = w.to_f32_vector();
    if (!hf_folder.empty() && hf.find("q_proj") != std::string::npos)
      v = llama_cpp_permute(v, 8, 64);
    if (!hf_folder.empty() && hf.find("k_proj") != std::string::npos)
      v = llama_cpp_permute(v, 4, 64);
    if (round16)
      for (float& x : v) x = round_to_f16(x);
    return GgufTensor{gg, w.shape(), std::move(v)};
  };
  std::vector<GgufTensor> t;
  t.push_back(get("model.embed_tokens.weight", "token_embd.weight"));
  const char* hf[9] = {"input_layernorm",  "self_attn.q_proj", "self_attn.k_proj",
                       "self_attn.v_proj", "self_attn.o_proj", "post_attention_layernorm",
                       "mlp.gate_proj",    "mlp.down_proj",    "mlp.up_proj"};
  const char* gg[9] = {"attn_norm", "attn_q",   "attn_k",   "attn_v", "attn_output",
                       "ffn_norm",  "ffn_gate", "ffn_down", "ffn_up"};
  for (int i = 0; i < 5; ++i)
    for (int k = 0; k < 9; ++k)
      t.push_back(get("model.layers." + std::to_string(i) + "." + hf[k] + ".weight",
                      "blk." + std::to_string(i) + "." + gg[k] + ".weight"));
  t.push_back(get("model.norm.weight", "output_norm.weight"));
  if (separate_output) t.push_back(get("model.embed_tokens.weight", "output.weight"));
  return t;
}

TEST(LlamaGraph, GgufF32GivesTheSameLogits) {
  TempDir dir;
  const LlamaConfig c = stories_config();
  const std::string path = dir.file("stories.gguf");
  write_bytes(path, build_gguf(c, stories_as_gguf(false, false), false));
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
  write_bytes(via_hf, build_gguf(c, stories_as_gguf(false, false, hf), false));
  EXPECT_LE(rel_diff(la, logits_of(load_llama_graph(via_hf), kTokens)), 1e-6);
}

TEST(LlamaGraph, GgufF16MatchesF32OfTheRoundedValues) {
  TempDir dir;
  const LlamaConfig c = stories_config();
  const std::string f32 = dir.file("r.gguf"), f16 = dir.file("h.gguf");
  write_bytes(f32, build_gguf(c, stories_as_gguf(true, false), false));
  write_bytes(f16, build_gguf(c, stories_as_gguf(true, true), true));
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
  std::vector<GgufTensor> t = stories_as_gguf(false, false);
  t.erase(t.begin() + 3);  // blk.0.attn_k.weight
  const std::string gg = dir.file("broken.gguf");
  write_bytes(gg, build_gguf(c, t, false));
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

// A context of 2^31 − 1 built RoPE tables of 2^31 · head_dim floats eagerly
// (64 GiB each for stories260K): out of memory, or the machine swapping.
TEST(LlamaGraph, AContextTooLargeForTheRopeTablesIsAOneLineError) {
  TempDir dir;
  LlamaConfig c = stories_config();
  c.seq_len = 2147483647;
  const std::string gg = dir.file("huge.gguf");
  write_bytes(gg, build_gguf(c, stories_as_gguf(false, false), false));
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
  write_bytes(gg, build_gguf(c, stories_as_gguf(false, false), false));
  EXPECT_NO_THROW(load_llama_graph(gg));
}

}  // namespace
}  // namespace tailor
