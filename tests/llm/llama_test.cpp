#include "tailor/llm/llama.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tailor/core/dtype.h"
#include "tailor/core/error.h"
#include "tailor/io/llama2c.h"
#include "tailor/io/load_model.h"
#include "tailor/io/npy.h"
#include "tailor/io/safetensors.h"
#include "tailor/schemes/registry.h"
#include "test_util.h"

namespace tailor::llm {
namespace {

using testing::expect_error_naming;
using testing::fixture_path;
using testing::run_cli;
using testing::TempDir;
using testing::write_bytes;

const std::string kStories = fixture_path("stories260K.bin");
const std::string kTok = fixture_path("tok512.bin");
// tests/fixtures/README.md, "Known behaviour".
const std::string kContinuation =
    ", there was a little girl named Lily. She loved to play outside in the park. One day, she "
    "saw a big, red ball.";

// A fixed token sequence: BOS + "Once upon a time" and the greedy continuation's
// first tokens would do, but any in-vocabulary tokens test the arithmetic.
const std::vector<int32_t> kTokens = {1, 403, 407, 261, 378, 11, 300, 7, 88, 500, 2, 261, 42, 299};

std::vector<float> logits_of(const LlamaModel& m, const std::vector<int32_t>& tokens) {
  LlamaSession s(m);
  return s.forward(tokens);
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

TEST(Llama, Stories260KGreedyContinuesAsTheFixtureReadmeSays) {
  const LlamaModel m = LlamaModel::load(kStories);
  EXPECT_EQ(m.config().n_kv_heads, 4);  // grouped: 8 query heads share 4 KV heads
  EXPECT_EQ(m.rope_pairing(), RopePairing::interleaved);
  const Llama2cTokenizer tok = Llama2cTokenizer::load(kTok, 512);
  const std::vector<int32_t> prompt = tok.encode("Once upon a time", true, false);
  ASSERT_EQ(prompt, (std::vector<int32_t>{1, 403, 407, 261, 378}));
  const std::vector<int32_t> out = generate_greedy(m, prompt, 48, 2);
  std::string text;
  int32_t prev = prompt.back();
  for (int32_t t : out) {
    text += tok.decode(prev, t);
    prev = t;
  }
  EXPECT_EQ(text.substr(0, kContinuation.size()), kContinuation) << text;
}

TEST(Llama, LogitsMatchAnIndependentNumpyForwardPass) {
  // tests/llm/reference_logits.py: float64 numpy, Meta's complex-number RoPE.
  const Tensor ref = read_npy(fixture_path("llm/stories260K_logits.npy"));
  ASSERT_EQ(ref.shape(), (Shape{static_cast<int64_t>(kTokens.size()), 512}));
  EXPECT_LE(rel_diff(ref.to_f32_vector(), logits_of(LlamaModel::load(kStories), kTokens)), 1e-5);
}

TEST(Llama, BytesCountEveryWeight) {
  const LlamaModel m = LlamaModel::load(kStories);
  // 260,032 f32 parameters (fixture README), the RoPE tables not counted.
  EXPECT_EQ(m.bytes(), 4u * 260032u);
  EXPECT_EQ(m.linear_names().size(), 5u * 7u + 1u);
  EXPECT_EQ(m.linear_names().back(), "model.embed_tokens.weight");  // tied classifier
}

TEST(Llama, KvCacheGivesTheLogitsOfTheWholeSequence) {
  const LlamaModel m = LlamaModel::load(kStories);
  const std::vector<float> whole = logits_of(m, kTokens);
  LlamaSession s(m);
  std::vector<float> pieces = s.forward({kTokens.data(), 9});
  for (size_t i = 9; i < kTokens.size(); ++i) {
    const std::vector<float> one = s.forward({&kTokens[i], 1});
    pieces.insert(pieces.end(), one.begin(), one.end());
  }
  EXPECT_EQ(s.pos(), static_cast<int32_t>(kTokens.size()));
  EXPECT_LE(rel_diff(whole, pieces), 1e-5);
  s.reset();
  EXPECT_LE(rel_diff(s.forward({kTokens.data(), 1}),
                     std::vector<float>(whole.begin(), whole.begin() + 512)),
            1e-5);
}

TEST(Llama, ConvertedHfFolderGivesTheSameLogits) {
  TempDir dir;
  const std::string hf = dir.file("hf");
  convert_llama2c_to_hf(kStories, hf);
  const LlamaModel a = LlamaModel::load(kStories);
  const LlamaModel b = LlamaModel::load(hf);
  EXPECT_EQ(b.rope_pairing(), RopePairing::rotate_half);
  EXPECT_EQ(b.config().rms_norm_eps, 1e-5f);
  EXPECT_TRUE(b.config().shared_classifier);
  const std::vector<float> la = logits_of(a, kTokens);
  EXPECT_LE(rel_diff(la, logits_of(b, kTokens)), 1e-5);
  // The pairing matters: the HF rows read with llama2.c's pairing disagree.
  const LlamaModel wrong =
      LlamaModel::from_weights(load_model(hf), b.config(), RopePairing::interleaved);
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
    EXPECT_EQ(f.graph.initializers.count(hf), 1u) << hf;
    const Tensor& w = f.graph.initializers.at(hf);
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

TEST(Llama, GgufF32GivesTheSameLogits) {
  TempDir dir;
  const LlamaModel a = LlamaModel::load(kStories);
  const std::string path = dir.file("stories.gguf");
  write_bytes(path, build_gguf(a.config(), stories_as_gguf(false, false), false));
  const LlamaModel g = LlamaModel::load(path);
  EXPECT_EQ(g.config().n_kv_heads, 4);
  EXPECT_EQ(g.config().vocab_size, 512);
  EXPECT_TRUE(g.config().shared_classifier);
  EXPECT_EQ(g.linear_names().front(), "blk.0.attn_q.weight");
  EXPECT_LE(rel_diff(logits_of(a, kTokens), logits_of(g, kTokens)), 1e-6);
  // HF → GGUF as llama.cpp converts it (q/k permuted back): the same model.
  const std::string hf = dir.file("hf"), via_hf = dir.file("via_hf.gguf");
  convert_llama2c_to_hf(kStories, hf);
  write_bytes(via_hf, build_gguf(a.config(), stories_as_gguf(false, false, hf), false));
  EXPECT_LE(rel_diff(logits_of(a, kTokens), logits_of(LlamaModel::load(via_hf), kTokens)), 1e-6);
}

TEST(Llama, GgufF16MatchesF32OfTheRoundedValues) {
  TempDir dir;
  LlamaConfig c = LlamaModel::load(kStories).config();
  const std::string f32 = dir.file("r.gguf"), f16 = dir.file("h.gguf");
  write_bytes(f32, build_gguf(c, stories_as_gguf(true, false), false));
  write_bytes(f16, build_gguf(c, stories_as_gguf(true, true), true));
  const LlamaModel a = LlamaModel::load(f32), b = LlamaModel::load(f16);
  EXPECT_FALSE(b.config().shared_classifier);
  EXPECT_EQ(b.linear_names().back(), "output.weight");
  EXPECT_LE(rel_diff(logits_of(a, kTokens), logits_of(b, kTokens)), 1e-6);
  // f16 rounding moves the logits, but only a little.
  const double d = rel_diff(logits_of(LlamaModel::load(kStories), kTokens), logits_of(b, kTokens));
  EXPECT_GT(d, 0.0);
  EXPECT_LT(d, 1e-2);
}

TEST(Llama, CompressedLinearRunsTheEncodedWeight) {
  const LlamaModel original = LlamaModel::load(kStories);
  LlamaModel q = LlamaModel::load(kStories), ref = LlamaModel::load(kStories);
  const schemes::Scheme dense = schemes::parse_scheme("dense");
  const std::pair<std::string, std::string> replaced[] = {
      {"model.layers.0.self_attn.q_proj.weight", "int8"},
      {"model.layers.2.mlp.down_proj.weight", "int8"},
      {"model.layers.3.mlp.up_proj.weight", "lowrank-r16"},
      {"model.layers.4.self_attn.k_proj.weight", "int4"}};
  for (const auto& [name, label] : replaced) {
    std::shared_ptr<const schemes::Encoded> e =
        schemes::parse_scheme(label).encode(q.dense_weight(name));
    // The reference runs the decoded weight as a dense matrix.
    ref.replace_linear(name, dense.encode(e->decode()));
    q.replace_linear(name, e);
    EXPECT_EQ(q.linear(name).label(), label);
  }
  const std::vector<float> lq = logits_of(q, kTokens);
  EXPECT_LE(rel_diff(logits_of(ref, kTokens), lq), 1e-5);
  EXPECT_GT(rel_diff(logits_of(original, kTokens), lq), 1e-6);  // the replacement took effect
  // Stored bytes in place of 4 per weight: int8 codes + f16 scales; lowrank
  // 4·R·(out + in); int4 half a byte per weight + f16 scales.
  const uint64_t expected = 4u * 260032u - 4u * 4096u + (4096u + 2u * 64u) - 4u * 64u * 172u +
                            (64u * 172u + 2u * 64u) - 4u * 172u * 64u + 4u * 16u * (172u + 64u) -
                            4u * 32u * 64u + (32u * 64u / 2u + 2u * 32u);
  EXPECT_EQ(q.bytes(), expected);
}

TEST(Llama, TiedClassifierCanBeCompressed) {
  LlamaModel m = LlamaModel::load(kStories);
  const std::string name = "model.embed_tokens.weight";
  std::shared_ptr<const schemes::Encoded> e =
      schemes::parse_scheme("int8").encode(m.dense_weight(name));
  const Tensor decoded = e->decode();
  m.replace_linear(name, e);
  // The lookup reads the decoded rows.
  const std::span<const float> row = m.embedding(403);
  EXPECT_EQ(row[5], decoded.data<float>()[403 * 64 + 5]);
  EXPECT_EQ(m.bytes(), 4u * 260032u - 4u * 512u * 64u + (512u * 64u + 2u * 512u));
  EXPECT_EQ(logits_of(m, kTokens).size(), kTokens.size() * 512);
}

TEST(Llama, ApplySchemesEncodesByLabel) {
  LlamaModel m = LlamaModel::load(kStories);
  const LlamaModel before = m;  // a copy shares weights but not replacements
  apply_schemes(m, {{"model.layers.1.mlp.up_proj.weight", "int4"},
                    {"model.layers.1.self_attn.o_proj.weight", "lowrank-r8"},
                    {"model.layers.1.self_attn.v_proj.weight", "dense"}});
  EXPECT_EQ(m.linear("model.layers.1.mlp.up_proj.weight").label(), "int4");
  EXPECT_EQ(m.linear("model.layers.1.self_attn.o_proj.weight").label(), "lowrank-r8");
  EXPECT_EQ(m.linear("model.layers.1.self_attn.o_proj.weight").bytes(), 4u * 8u * (64u + 64u));
  EXPECT_EQ(m.linear("model.layers.1.self_attn.v_proj.weight").label(), "dense");
  EXPECT_EQ(before.linear("model.layers.1.mlp.up_proj.weight").label(), "dense");
  EXPECT_EQ(before.bytes(), 4u * 260032u);
  expect_error_naming(
      [&] {
        apply_schemes(m, {{"model.layers.1.mlp.up_proj.weight", "int8"}});
      },
      "model.layers.1.mlp.up_proj.weight", "already compressed");
  expect_error_naming(
      [&] {
        apply_schemes(m, {{"blk.0.attn_q.weight", "int8"}});
      },
      "blk.0.attn_q.weight", "not a linear layer");
  expect_error_naming(
      [&] {
        apply_schemes(m, {{"model.layers.0.mlp.up_proj.weight", "int9"}});
      },
      "model.layers.0.mlp.up_proj.weight", "int9");
}

TEST(Llama, RejectsBadInput) {
  LlamaModel m = LlamaModel::load(kStories);
  expect_error_naming(
      [&] {
        m.replace_linear("model.layers.0.self_attn.k_proj.weight",
                         schemes::parse_scheme("int8").encode(
                             m.dense_weight("model.layers.0.self_attn.q_proj.weight")));
      },
      "model.layers.0.self_attn.k_proj.weight", "expected [32, 64]");
  LlamaSession s(m);
  expect_error_naming(
      [&] {
        s.forward(std::vector<int32_t>{1, 512});
      },
      "llama", "outside the vocabulary");
  std::vector<int32_t> too_long(513, 1);
  expect_error_naming([&] { s.forward(too_long); }, "llama", "context length 512");
  expect_error_naming([&] { generate_greedy(m, {}, 3); }, "generate", "prompt is empty");

  TempDir dir;
  // A safetensors file without config.json beside it.
  const std::string st = dir.file("model.safetensors");
  write_safetensors(st, {{"x", Tensor::zeros(DType::f32, {2, 2})}});
  expect_error_naming([&] { LlamaModel::load(st); }, dir.file("config.json"), "cannot open");
  // A GGUF llama missing a tensor.
  std::vector<GgufTensor> t = stories_as_gguf(false, false);
  t.erase(t.begin() + 3);  // blk.0.attn_k.weight
  const std::string gg = dir.file("broken.gguf");
  write_bytes(gg, build_gguf(m.config(), t, false));
  expect_error_naming([&] { LlamaModel::load(gg); }, gg, "'blk.0.attn_k.weight' is missing");
  // A HF config for another architecture.
  const std::string hf = dir.file("hf");
  convert_llama2c_to_hf(kStories, hf);
  write_bytes(hf + "/config.json", R"({"model_type": "gpt2"})");
  expect_error_naming([&] { LlamaModel::load(hf); }, hf + "/config.json", "expected 'llama'");
}

TEST(LlamaCli, GenerateContinuesTheStory) {
  // The tokenizer is found beside the checkpoint (tok512.bin).
  const auto r = run_cli("generate '" + kStories + "' --tokens 40");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("Once upon a time" + kContinuation), std::string::npos) << r.output;
  TempDir dir;
  const auto bad = run_cli("generate '" + kStories + "' --tokenizer '" + dir.file("none") + "'");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.output.find(dir.file("none")), std::string::npos) << bad.output;
}

TEST(LlamaCli, KldReportsTheCompressedBytes) {
  const auto r = run_cli("kld '" + kStories + "' --scheme int8 --sequences 2 --length 16 --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json j = nlohmann::json::parse(r.output);
  // Per layer, int8 = out·in code bytes + 2·out scale bytes: q and o [64, 64],
  // k and v [32, 64], gate and up [172, 64], down [64, 172].
  const uint64_t per_layer_dense = 4 * (2 * 64 * 64 + 2 * 32 * 64 + 3 * 172 * 64);
  const uint64_t per_layer_int8 =
      2 * (4096 + 128) + 2 * (2048 + 64) + 2 * (11008 + 344) + (11008 + 128);
  EXPECT_EQ(j["bytes_original"].get<uint64_t>(), 4u * 260032u);
  EXPECT_EQ(j["bytes_compressed"].get<uint64_t>(),
            4u * 260032u - 5 * per_layer_dense + 5 * per_layer_int8);
  EXPECT_EQ(j["positions"].get<int64_t>(), 32);
  EXPECT_GT(j["mean_kl"].get<double>(), 0.0);
  EXPECT_LT(j["mean_kl"].get<double>(), 0.05);
  EXPECT_GT(j["top1_agreement"].get<double>(), 0.5);
  EXPECT_LE(j["top1_agreement"].get<double>(), 1.0);
  const auto none = run_cli("kld '" + kStories + "'");
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.output.find("--scheme or --plan"), std::string::npos) << none.output;
}

}  // namespace
}  // namespace tailor::llm
