#include "tailor/io/llama2c.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "io/analysed.h"
#include "tailor/core/error.h"
#include "tailor/io/atomic_file.h"
#include "tailor/io/load_model.h"
#include "tailor/io/safetensors.h"
#include "test_util.h"

namespace tailor {
namespace {

using testing::fixture_path;
using testing::run_cli;
using testing::TempDir;
using testing::write_bytes;

const std::string kStories = fixture_path("stories260K.bin");
const std::string kTok = fixture_path("tok512.bin");

// Float indices (after the 28-byte header) of the arrays of stories260K.bin,
// worked out by hand from llama2.c's layout for dim 64, hidden 172, 5 layers,
// 8 heads of size 8, 4 kv heads (kv_dim 32), vocab 512:
//   embedding 512·64 = 32768            at 0
//   attention norms 5·64 = 320          at 32768
//   wq 5·64·64 = 20480                  at 33088
//   wk 5·32·64 = 10240                  at 53568
//   wv 5·32·64 = 10240                  at 63808
//   wo 5·64·64 = 20480                  at 74048
//   FFN norms 5·64 = 320                at 94528
//   w1 5·172·64 = 55040                 at 94848
//   w2 5·64·172 = 55040                 at 149888
//   w3 5·172·64 = 55040                 at 204928
//   final norm 64                       at 259968 (ends at 260032 = the parameter count)
//   RoPE tables 2·512·4 = 4096          at 260032 (ends at 264128: 28 + 4·264128 = 1056540 bytes)
constexpr long kWq = 33088, kWk = 53568, kWv = 63808, kW2 = 149888, kFinalNorm = 259968;

// `count` floats at float index `index` of the fixture, read with plain stdio.
std::vector<float> raw_floats(long index, size_t count) {
  std::vector<float> v(count);
  FILE* f = std::fopen(kStories.c_str(), "rb");
  EXPECT_NE(f, nullptr);
  if (!f) return v;
  std::fseek(f, 28 + 4 * index, SEEK_SET);
  EXPECT_EQ(std::fread(v.data(), 4, count, f), count);
  std::fclose(f);
  return v;
}

using testing::expect_error_naming;

TEST(Llama2c, ReadsStories260KConfig) {
  LlamaConfig c;
  const testing::Analysed m = testing::analysed(read_llama2c(kStories, &c));
  EXPECT_EQ(m.format, "llama2c");
  EXPECT_EQ(c.dim, 64);
  EXPECT_EQ(c.hidden_dim, 172);
  EXPECT_EQ(c.n_layers, 5);
  EXPECT_EQ(c.n_heads, 8);
  EXPECT_EQ(c.n_kv_heads, 4);
  EXPECT_EQ(c.vocab_size, 512);
  EXPECT_EQ(c.seq_len, 512);
  EXPECT_TRUE(c.shared_classifier);
  EXPECT_EQ(c.head_dim(), 8);
  EXPECT_EQ(m.metadata.at("architecture"), "llama");
  EXPECT_EQ(m.metadata.at("dim"), "64");
  EXPECT_EQ(m.metadata.at("n_kv_heads"), "4");
  EXPECT_EQ(m.metadata.at("vocab_size"), "512");
  EXPECT_EQ(m.metadata.at("shared_classifier"), "true");
}

TEST(Llama2c, ExposesHfNamedWeightsInLayerOrder) {
  const testing::Analysed m = testing::analysed(read_llama2c(kStories));
  // 1 embedding + 5 layers × (2 norms + 7 projections) + final norm; tied, so no lm_head.
  ASSERT_EQ(m.weights.size(), 47u);
  EXPECT_EQ(m.find("lm_head.weight"), nullptr);
  const char* per_layer[9] = {"input_layernorm",  "self_attn.q_proj", "self_attn.k_proj",
                              "self_attn.v_proj", "self_attn.o_proj", "post_attention_layernorm",
                              "mlp.gate_proj",    "mlp.down_proj",    "mlp.up_proj"};
  EXPECT_EQ(m.weights[0].name, "model.embed_tokens.weight");
  for (int l = 0; l < 5; ++l)
    for (int k = 0; k < 9; ++k)
      EXPECT_EQ(m.weights[1 + 9 * l + k].name,
                "model.layers." + std::to_string(l) + "." + per_layer[k] + ".weight");
  EXPECT_EQ(m.weights[46].name, "model.norm.weight");

  int matrices = 0, norms = 0;
  int64_t total = 0;
  for (const graph::WeightView& w : m.weights) {
    EXPECT_EQ(w.tensor.dtype(), DType::f32);
    EXPECT_TRUE(w.tensor.is_mapped()) << w.name;  // zero-copy
    total += w.tensor.numel();
    if (w.tensor.rank() == 2) {
      ++matrices;
      EXPECT_EQ(w.layout, WeightLayout::out_in);
    } else {
      ++norms;
      EXPECT_EQ(w.layout, WeightLayout::none);
    }
  }
  EXPECT_EQ(matrices, 1 + 5 * 7);
  EXPECT_EQ(norms, 11);
  // 512·64 + 5·(64·64·2 + 32·64·2 + 172·64·3 + 64·2) + 64
  //   = 32768 + 5·(8192 + 4096 + 33024 + 128) + 64 = 32768 + 227200 + 64 = 260032.
  EXPECT_EQ(total, 260032);

  EXPECT_EQ(m.find("model.embed_tokens.weight")->tensor.shape(), (Shape{512, 64}));
  EXPECT_EQ(m.find("model.layers.0.self_attn.q_proj.weight")->tensor.shape(), (Shape{64, 64}));
  EXPECT_EQ(m.find("model.layers.0.self_attn.k_proj.weight")->tensor.shape(), (Shape{32, 64}));
  EXPECT_EQ(m.find("model.layers.0.self_attn.v_proj.weight")->tensor.shape(), (Shape{32, 64}));
  EXPECT_EQ(m.find("model.layers.4.mlp.gate_proj.weight")->tensor.shape(), (Shape{172, 64}));
  EXPECT_EQ(m.find("model.layers.4.mlp.down_proj.weight")->tensor.shape(), (Shape{64, 172}));
  EXPECT_EQ(m.find("model.layers.4.mlp.up_proj.weight")->tensor.shape(), (Shape{172, 64}));
}

TEST(Llama2c, ValuesMatchTheRawFile) {
  const testing::Analysed m = testing::analysed(read_llama2c(kStories));
  auto value = [&](const std::string& name, size_t i) {
    return m.find(name)->tensor.to_f32_vector().at(i);
  };
  // embedding [3][5]
  EXPECT_EQ(value("model.embed_tokens.weight", 3 * 64 + 5), raw_floats(3 * 64 + 5, 1)[0]);
  // layer 2 wq, whole matrix
  EXPECT_EQ(m.find("model.layers.2.self_attn.q_proj.weight")->tensor.to_f32_vector(),
            raw_floats(kWq + 2 * 4096, 4096));
  // layer 2 wk [7][11]
  EXPECT_EQ(value("model.layers.2.self_attn.k_proj.weight", 7 * 64 + 11),
            raw_floats(kWk + 2 * 2048 + 7 * 64 + 11, 1)[0]);
  // layer 4 wv, whole
  EXPECT_EQ(m.find("model.layers.4.self_attn.v_proj.weight")->tensor.to_f32_vector(),
            raw_floats(kWv + 4 * 2048, 2048));
  // layer 4 w2 [10][100]
  EXPECT_EQ(value("model.layers.4.mlp.down_proj.weight", 10 * 172 + 100),
            raw_floats(kW2 + 4 * 11008 + 10 * 172 + 100, 1)[0]);
  EXPECT_EQ(m.find("model.norm.weight")->tensor.to_f32_vector(), raw_floats(kFinalNorm, 64));
}

// A small checkpoint: dim 8, hidden 12, 2 layers, 2 heads (size 4), 1 kv head,
// vocab 10, seq 4. Floats: embedding 80, norms 16, wq 128, wk 64, wv 64,
// wo 128, norms 16, w1 192, w2 192, w3 192, final norm 8, RoPE 2·4·2 = 16:
// 1096 floats; a separate classifier adds 80. Float i holds the value i.
std::string small_checkpoint(int32_t vocab, size_t floats,
                             std::vector<int32_t> header = {8, 12, 2, 2, 1, 0, 4}) {
  header[5] = vocab;
  std::string bytes(28 + 4 * floats, '\0');
  std::memcpy(bytes.data(), header.data(), 28);
  for (size_t i = 0; i < floats; ++i) {
    const float f = static_cast<float>(i);
    std::memcpy(bytes.data() + 28 + 4 * i, &f, 4);
  }
  return bytes;
}

TEST(Llama2c, SeparateClassifierComesAfterTheRopeTables) {
  TempDir dir;
  const std::string path = dir.file("sep.bin");
  write_bytes(path, small_checkpoint(-10, 1176));
  LlamaConfig c;
  const testing::Analysed m = testing::analysed(read_llama2c(path, &c));
  EXPECT_FALSE(c.shared_classifier);
  EXPECT_EQ(c.vocab_size, 10);
  ASSERT_EQ(m.weights.size(), 1u + 2 * 9 + 1 + 1);
  const graph::WeightView& head = m.weights.back();
  EXPECT_EQ(head.name, "lm_head.weight");
  EXPECT_EQ(head.tensor.shape(), (Shape{10, 8}));
  const std::vector<float> v = head.tensor.to_f32_vector();
  EXPECT_EQ(v.front(), 1096.0f);
  EXPECT_EQ(v.back(), 1175.0f);
  // Layer 1's wk starts after the embedding, norms, wq and layer 0's wk:
  // 80 + 16 + 128 + 32 = 256.
  EXPECT_EQ(m.find("model.layers.1.self_attn.k_proj.weight")->tensor.to_f32_vector().front(),
            256.0f);
  EXPECT_EQ(m.find("model.norm.weight")->tensor.to_f32_vector().front(), 1072.0f);

  write_bytes(path, small_checkpoint(10, 1096));
  const testing::Analysed shared = testing::analysed(read_llama2c(path));
  EXPECT_EQ(shared.find("lm_head.weight"), nullptr);
  EXPECT_EQ(shared.weights.size(), 20u);
}

TEST(Llama2c, RejectsSizeDisagreeingWithHeader) {
  TempDir dir;
  const std::string path = dir.file("bad.bin");
  write_bytes(path, small_checkpoint(10, 1095));  // truncated
  expect_error_naming([&] { read_llama2c(path); }, path, "expected 4412 bytes");
  write_bytes(path, small_checkpoint(10, 1097));  // one float too many
  expect_error_naming([&] { read_llama2c(path); }, path, "found 4416");
  write_bytes(path, small_checkpoint(-10, 1096));  // classifier missing
  expect_error_naming([&] { read_llama2c(path); }, path, "expected 4732 bytes");
  const std::string fixture = read_file(kStories);
  write_bytes(path, fixture.substr(0, fixture.size() - 1));
  expect_error_naming([&] { read_llama2c(path); }, path, "found 1056539");
  write_bytes(path, fixture + std::string(4, '\0'));
  expect_error_naming([&] { read_llama2c(path); }, path, "expected 1056540 bytes");
  write_bytes(path, fixture.substr(0, 27));
  expect_error_naming([&] { read_llama2c(path); }, path, "28-byte");
}

TEST(Llama2c, RejectsInconsistentHeaders) {
  TempDir dir;
  const std::string path = dir.file("bad.bin");
  auto with_header = [&](std::vector<int32_t> h) {
    write_bytes(path, small_checkpoint(h[5], 1096, h));
  };
  with_header({8, 12, 0, 2, 1, 10, 4});
  expect_error_naming([&] { read_llama2c(path); }, path, "n_layers is 0");
  with_header({8, 12, 2, 2, -1, 10, 4});
  expect_error_naming([&] { read_llama2c(path); }, path, "n_kv_heads is -1");
  with_header({8, 12, 2, 2, 1, 0, 4});
  expect_error_naming([&] { read_llama2c(path); }, path, "vocab_size is 0");
  with_header({8, 12, 2, 2, 1, INT32_MIN, 4});
  expect_error_naming([&] { read_llama2c(path); }, path, "vocab_size is -2147483648");
  with_header({8, 12, 2, 3, 1, 10, 4});
  expect_error_naming([&] { read_llama2c(path); }, path, "not divisible by n_heads 3");
  with_header({8, 12, 2, 2, 3, 10, 4});
  expect_error_naming([&] { read_llama2c(path); }, path, "not divisible by n_kv_heads 3");
  with_header({6, 12, 2, 2, 1, 10, 4});
  expect_error_naming([&] { read_llama2c(path); }, path, "head size 3");
  // Huge fields: the expected size is computed without overflow and refused.
  with_header({1 << 30, 1 << 30, 1 << 30, 2, 1, 1 << 30, 1 << 30});
  expect_error_naming([&] { read_llama2c(path); }, path, "overflow");
  with_header({1 << 20, 1 << 20, 4, 2, 1, 1 << 20, 16});
  expect_error_naming([&] { read_llama2c(path); }, path, "expected");
}

// --- Tokenizer ---------------------------------------------------------------

TEST(Llama2cTokenizer, LoadsTok512) {
  const Llama2cTokenizer t = Llama2cTokenizer::load(kTok, 512);
  ASSERT_EQ(t.vocab.size(), 512u);
  ASSERT_EQ(t.scores.size(), 512u);
  EXPECT_EQ(t.max_token_length, 7);
  EXPECT_EQ(t.vocab[0], "<unk>");
  EXPECT_EQ(t.vocab[3], "<0x00>");
  EXPECT_EQ(t.vocab[258], "<0xFF>");
}

TEST(Llama2cTokenizer, EncodesAndDecodesOnceUponATime) {
  const Llama2cTokenizer t = Llama2cTokenizer::load(kTok, 512);
  const std::vector<int32_t> ids = t.encode("Once upon a time", true, false);
  // Worked out with a separate script following run.c's encode on tok512.bin:
  // BOS, " Once", " upon", " a", " time".
  EXPECT_EQ(ids, (std::vector<int32_t>{1, 403, 407, 261, 378}));
  EXPECT_EQ(t.vocab[403], " Once");
  std::string text;
  for (size_t i = 1; i < ids.size(); ++i) text += t.decode(ids[i - 1], ids[i]);
  EXPECT_EQ(text, "Once upon a time");  // the space after BOS is stripped

  EXPECT_EQ(t.encode("", true, true), (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(t.encode("", false, false), std::vector<int32_t>{});
  const std::vector<int32_t> with_eos = t.encode("Once upon a time", false, true);
  EXPECT_EQ(with_eos, (std::vector<int32_t>{403, 407, 261, 378, 2}));
}

TEST(Llama2cTokenizer, FallsBackToBytes) {
  const Llama2cTokenizer t = Llama2cTokenizer::load(kTok, 512);
  // U+1F600 (F0 9F 98 80) is not in the 512-token vocabulary: one token per
  // byte, 3 + byte. The dummy-prefix space stays alone (" <0xF0>" is no token).
  for (const std::string& v : t.vocab) ASSERT_NE(v, "\xF0\x9F\x98\x80");
  const std::vector<int32_t> ids = t.encode("\xF0\x9F\x98\x80", false, false);
  ASSERT_EQ(ids.size(), 5u);
  EXPECT_EQ(t.vocab[ids[0]], " ");
  EXPECT_EQ(ids[1], 3 + 0xF0);
  EXPECT_EQ(ids[2], 3 + 0x9F);
  EXPECT_EQ(ids[3], 3 + 0x98);
  EXPECT_EQ(ids[4], 3 + 0x80);
  std::string bytes;
  for (size_t i = 1; i < ids.size(); ++i) bytes += t.decode(ids[i - 1], ids[i]);
  EXPECT_EQ(bytes, "\xF0\x9F\x98\x80");
  EXPECT_EQ(t.decode(1, 3 + 'A'), "A");
  EXPECT_THROW(t.decode(0, 512), Error);
  EXPECT_THROW(t.decode(0, -1), Error);
}

TEST(Llama2cTokenizer, RejectsBadFiles) {
  TempDir dir;
  const std::string path = dir.file("tok.bin");
  const std::string good = read_file(kTok);
  // Any prefix cut inside the 512 tokens fails.
  for (size_t n : {size_t{0}, size_t{3}, size_t{4}, size_t{11}, good.size() / 2, good.size() - 1}) {
    write_bytes(path, good.substr(0, n));
    expect_error_naming([&] { Llama2cTokenizer::load(path, 512); }, path, "truncated");
  }
  // A negative length, and a length past the end, in token 0.
  std::string bad = good;
  const int32_t neg = -5;
  std::memcpy(bad.data() + 8, &neg, 4);
  write_bytes(path, bad);
  expect_error_naming([&] { Llama2cTokenizer::load(path, 512); }, path, "negative length -5");
  const int32_t huge = 1 << 30;
  std::memcpy(bad.data() + 8, &huge, 4);
  write_bytes(path, bad);
  expect_error_naming([&] { Llama2cTokenizer::load(path, 512); }, path, "exceeds");
  // More tokens than the file holds, and a nonsensical vocabulary size.
  write_bytes(path, good);
  expect_error_naming([&] { Llama2cTokenizer::load(path, 1 << 30); }, path, "truncated");
  expect_error_naming([&] { Llama2cTokenizer::load(path, 0); }, path, "must be positive");
  // A tokenizer for another (larger) vocabulary: tok512.bin read as 256 tokens
  // leaves the other 256 unread; it was accepted and decoded wrong pieces.
  expect_error_naming([&] { Llama2cTokenizer::load(path, 256); }, path, "larger vocabulary");
  write_bytes(path, good + std::string(1, '\0'));
  expect_error_naming([&] { Llama2cTokenizer::load(path, 512); }, path, "1 bytes follow");
  expect_error_naming([&] { Llama2cTokenizer::load(dir.file("none.bin"), 512); },
                      dir.file("none.bin"), "cannot open");
}

// --- Conversion to a Hugging Face folder ------------------------------------
// These read model.safetensors back with read_safetensors (the project's
// reader: rank-2 float tensors out_in, __metadata__ kept).

TEST(Llama2cConvert, WritesConfigJson) {
  TempDir dir;
  const std::string out = dir.file("hf");
  convert_llama2c_to_hf(kStories, out);
  const auto config = nlohmann::json::parse(read_file(out + "/config.json"));
  EXPECT_EQ(config["architectures"], nlohmann::json::array({"LlamaForCausalLM"}));
  EXPECT_EQ(config["model_type"], "llama");
  EXPECT_EQ(config["hidden_size"], 64);
  EXPECT_EQ(config["intermediate_size"], 172);
  EXPECT_EQ(config["num_hidden_layers"], 5);
  EXPECT_EQ(config["num_attention_heads"], 8);
  EXPECT_EQ(config["num_key_value_heads"], 4);
  EXPECT_EQ(config["vocab_size"], 512);
  EXPECT_EQ(config["max_position_embeddings"], 512);
  EXPECT_DOUBLE_EQ(config["rms_norm_eps"].get<double>(), 1e-5);
  EXPECT_DOUBLE_EQ(config["rope_theta"].get<double>(), 10000.0);
  EXPECT_EQ(config["tie_word_embeddings"], true);
  EXPECT_EQ(config["hidden_act"], "silu");
  EXPECT_EQ(config["torch_dtype"], "float32");
  EXPECT_EQ(config["bos_token_id"], 1);
  EXPECT_EQ(config["eos_token_id"], 2);
}

TEST(Llama2cConvert, PermutesQueryAndKeyRowsToRotateHalf) {
  TempDir dir;
  const std::string out = dir.file("hf");
  convert_llama2c_to_hf(kStories, out);
  const testing::Analysed st = testing::analysed(read_safetensors(out + "/model.safetensors"));
  EXPECT_EQ(st.weights.size(), 47u);  // tied: no lm_head.weight
  EXPECT_EQ(st.find("lm_head.weight"), nullptr);
  EXPECT_EQ(st.metadata.at("format"), "pt");
  EXPECT_EQ(st.metadata.at("source"), "llama2.c");
  for (const graph::WeightView& w : st.weights) EXPECT_EQ(w.tensor.dtype(), DType::f32) << w.name;

  // Layer 3's wq [64, 64] from the raw file: head h (size 8) rows h·8 .. h·8+7
  // hold the pairs (0,1) (2,3) (4,5) (6,7). In HF order the first of each pair
  // goes to the first half of the head and the second to the second half:
  // new row h·8 + j = old row h·8 + 2j, new row h·8 + 4 + j = old row h·8 + 2j + 1.
  const std::vector<float> wq = raw_floats(kWq + 3 * 4096, 4096);
  const graph::WeightView* q = st.find("model.layers.3.self_attn.q_proj.weight");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->tensor.shape(), (Shape{64, 64}));
  const std::vector<float> hq = q->tensor.to_f32_vector();
  for (int h = 0; h < 8; ++h)
    for (int j = 0; j < 4; ++j)
      for (int c = 0; c < 64; ++c) {
        ASSERT_EQ(hq[(h * 8 + j) * 64 + c], wq[(h * 8 + 2 * j) * 64 + c]);
        ASSERT_EQ(hq[(h * 8 + 4 + j) * 64 + c], wq[(h * 8 + 2 * j + 1) * 64 + c]);
      }
  // Spelled out for head 1: new rows 8..15 are old rows 8, 10, 12, 14, 9, 11, 13, 15.
  const int old_rows[8] = {8, 10, 12, 14, 9, 11, 13, 15};
  for (int r = 0; r < 8; ++r) EXPECT_EQ(hq[(8 + r) * 64 + 17], wq[old_rows[r] * 64 + 17]);

  // Layer 3's wk [32, 64]: 4 kv heads of size 8, same rule.
  const std::vector<float> wk = raw_floats(kWk + 3 * 2048, 2048);
  const std::vector<float> hk =
      st.find("model.layers.3.self_attn.k_proj.weight")->tensor.to_f32_vector();
  ASSERT_EQ(hk.size(), 2048u);
  for (int h = 0; h < 4; ++h)
    for (int j = 0; j < 4; ++j)
      for (int c = 0; c < 64; ++c) {
        ASSERT_EQ(hk[(h * 8 + j) * 64 + c], wk[(h * 8 + 2 * j) * 64 + c]);
        ASSERT_EQ(hk[(h * 8 + 4 + j) * 64 + c], wk[(h * 8 + 2 * j + 1) * 64 + c]);
      }

  // Everything else is copied unchanged.
  EXPECT_EQ(st.find("model.layers.3.self_attn.v_proj.weight")->tensor.to_f32_vector(),
            raw_floats(kWv + 3 * 2048, 2048));
  EXPECT_EQ(st.find("model.norm.weight")->tensor.to_f32_vector(), raw_floats(kFinalNorm, 64));
  EXPECT_EQ(st.find("model.embed_tokens.weight")->tensor.to_f32_vector(), raw_floats(0, 32768));
  EXPECT_EQ(st.find("model.layers.3.self_attn.q_proj.weight")->layout, WeightLayout::out_in);
}

TEST(Llama2cConvert, SeparateClassifierIsWritten) {
  TempDir dir;
  const std::string ckpt = dir.file("sep.bin");
  write_bytes(ckpt, small_checkpoint(-10, 1176));
  convert_llama2c_to_hf(ckpt, dir.file("hf"));
  const auto config = nlohmann::json::parse(read_file(dir.file("hf/config.json")));
  EXPECT_EQ(config["tie_word_embeddings"], false);
  EXPECT_EQ(config["vocab_size"], 10);
  const testing::Analysed st =
      testing::analysed(read_safetensors(dir.file("hf/model.safetensors")));
  ASSERT_NE(st.find("lm_head.weight"), nullptr);
  EXPECT_EQ(st.find("lm_head.weight")->tensor.to_f32_vector().front(), 1096.0f);
  // q_proj of layer 0 holds floats 96..159 as [8, 8]; head 0 rows 0..3 come
  // from old rows 0, 2, 1, 3 (head size 4): the second new row is old row 2.
  const std::vector<float> q =
      st.find("model.layers.0.self_attn.q_proj.weight")->tensor.to_f32_vector();
  EXPECT_EQ(q[0 * 8], 96.0f + 0 * 8);
  EXPECT_EQ(q[1 * 8], 96.0f + 2 * 8);
  EXPECT_EQ(q[2 * 8], 96.0f + 1 * 8);
  EXPECT_EQ(q[3 * 8], 96.0f + 3 * 8);
}

TEST(Llama2cConvert, BadCheckpointWritesNothing) {
  TempDir dir;
  const std::string ckpt = dir.file("bad.bin");
  write_bytes(ckpt, small_checkpoint(10, 1000));
  expect_error_naming([&] { convert_llama2c_to_hf(ckpt, dir.file("hf")); }, ckpt, "expected");
  EXPECT_FALSE(std::filesystem::exists(dir.file("hf")));
}

// --- CLI ---------------------------------------------------------------------

TEST(Llama2cCli, InspectJson) {
  const auto r = run_cli("inspect " + kStories + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j["format"], "llama2c");
  EXPECT_EQ(j["totals"]["numel"], 260032);
  EXPECT_EQ(j["totals"]["tensors"], 47);   // 1 + 5 × 9 + final norm
  EXPECT_EQ(j["totals"]["matrices"], 36);  // 5 layers × 7 projections + the embedding
  EXPECT_EQ(j["tensors"].size(), 47u);
  EXPECT_EQ(j["tensors"][2]["name"], "model.layers.0.self_attn.q_proj.weight");
  EXPECT_EQ(j["tensors"][2]["out_in"], nlohmann::json::array({64, 64}));
}

TEST(Llama2cCli, Convert) {
  TempDir dir;
  const auto r = run_cli("convert " + kStories + " -o " + dir.file("hf"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(std::filesystem::exists(dir.file("hf/config.json")));
  EXPECT_TRUE(std::filesystem::exists(dir.file("hf/model.safetensors")));
  const auto bad = run_cli("convert " + dir.file("missing.bin") + " -o " + dir.file("x"));
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("missing.bin"), std::string::npos) << bad.output;
}

}  // namespace
}  // namespace tailor

namespace tailor {
namespace {

TEST(Llama2cConvert, FailureLeavesNoHalfConvertedFolder) {
  testing::TempDir dir;
  const std::string out = dir.file("hf");
  // config.json cannot be written (a folder stands there): nothing may be left.
  std::filesystem::create_directories(out + "/config.json");
  testing::expect_error_naming(
      [&] { convert_llama2c_to_hf(testing::fixture_path("stories260K.bin"), out); },
      out + "/config.json", "is a folder");
  EXPECT_FALSE(std::filesystem::exists(out + "/model.safetensors"));
  size_t entries = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
    (void)e;
    ++entries;
  }
  EXPECT_EQ(entries, 1u);  // only hf/, no staging folder
}

}  // namespace
}  // namespace tailor
