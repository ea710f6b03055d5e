// tailor compress --gguf on stories260K: model.gguf read back by tailor
// equals its plan (types, shapes, decoded weights equal to the encodings the
// profile measured); an independent numpy GGUF reader
// (tests/compress/gguf_reference.py) decodes every tensor to the same values;
// llama-quantize's tensor type file of the plan; bad input.
#include "tailor/compress/gguf_out.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include "llm/stories.h"
#include "tailor/compress/compress.h"
#include "tailor/core/error.h"
#include "tailor/core/text.h"
#include "tailor/io/atomic_file.h"
#include "tailor/io/gguf.h"
#include "tailor/io/llama2c.h"
#include "tailor/io/llama_graph.h"
#include "tailor/io/load_model.h"
#include "tailor/io/npy.h"
#include "tailor/llm/llama.h"
#include "tailor/runtime/executor.h"
#include "tailor/schemes/ggml_blocks.h"
#include "tailor/schemes/registry.h"
#include "test_util.h"

namespace tailor {
namespace {
namespace fs = std::filesystem;
using testing::TempDir;

/// The smallest budget the GGUF schemes reach on stories260K is 11.2 bpw
/// over its linears (the FFN down projections have rows of 172, not whole
/// blocks of 32, so they stay F32); 12bpw mixes q8_0 and q4_0.
compress::CompressOptions gguf_options(const TempDir& dir) {
  compress::CompressOptions o;
  o.model = testing::fixture_path("stories260K.bin");
  o.budget = "12bpw";
  o.objective = "numel";
  o.out_dir = dir.file("out");
  o.cache = false;
  o.gguf = true;
  o.kld_sequences = 2;
  o.kld_length = 16;
  return o;
}

std::vector<float> values(const Tensor& t) {
  return t.to(DType::f32).to_f32_vector();
}

/// One compress --gguf run shared by the tests of this suite (seconds).
class GgufOut : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir;
    result_ = new compress::CompressResult(compress::compress_model(gguf_options(*dir_)));
  }
  static void TearDownTestSuite() {
    delete result_;
    delete dir_;
  }
  static std::string gguf() { return dir_->file("out/model.gguf"); }
  static std::string dir_path() { return dir_->file(""); }
  static std::string onnx() { return dir_->file("out/model.onnx"); }
  static const compress::CompressResult& result() { return *result_; }
  /// The ggml label of a checkpoint tensor under the plan ("dense" when not planned).
  static std::string label_of(const std::string& name) {
    for (const auto& c : result_->plan.choices)
      if (c.layer == name) return c.label;
    return "dense";
  }

 private:
  static inline TempDir* dir_ = nullptr;
  static inline compress::CompressResult* result_ = nullptr;
};

TEST_F(GgufOut, PlanMixesBlockFormatsAndNotesRowsThatDoNotFit) {
  std::map<std::string, int> used;
  for (const auto& c : result().plan.choices) used[c.label]++;
  EXPECT_GT(used["q8_0"], 0);
  EXPECT_GT(used["q4_0"], 0);
  int noted = 0;
  for (const auto& l : result().profile.layers) {
    if (l.shape_out_in[1] % 32 == 0) {
      EXPECT_TRUE(l.notes.empty()) << l.name;
      continue;
    }
    ++noted;
    ASSERT_EQ(l.notes.size(), 1u) << l.name;
    EXPECT_EQ(l.notes[0], "q8_0, q4_0: row length 172 is not a multiple of ggml's block of 32");
    ASSERT_EQ(l.candidates.size(), 1u) << l.name;
    EXPECT_EQ(l.candidates[0].label, "dense");
  }
  EXPECT_EQ(noted, 5);  // the FFN down projection [64, 172] of each of the 5 layers
  EXPECT_EQ(result().file_bytes.at("model.gguf"), static_cast<int64_t>(fs::file_size(gguf())));
  // model.onnx's q8_0 / q4_0 forms (int8 or int4 codes, f16 scales per 32) run
  // as tailor's compressed ops with the standard graph's outputs.
  EXPECT_LE(result().standard_vs_tailor_max_rel, 1e-5);
}

TEST_F(GgufOut, ReadBackEqualsPlan) {
  const graph::Model ck = read_llama2c(testing::fixture_path("stories260K.bin"));
  std::map<std::string, GgufTensor> file;
  for (GgufTensor& t : read_gguf_tensors(gguf())) file[t.name] = std::move(t);
  EXPECT_EQ(file.size(), ck.graph.initializers.size());  // no output.weight: tied
  for (const auto& [name, w] : ck.graph.initializers) {
    const std::string gname = llama_gguf_name(name);
    ASSERT_TRUE(file.count(gname)) << gname;
    const GgufTensor& t = file.at(gname);
    EXPECT_EQ(t.shape, w.shape()) << gname;
    const std::string label = label_of(name);
    ASSERT_EQ(t.type, *compress::ggml_type_of(label)) << gname;
    if (label == "dense") {
      const Tensor f = Tensor::view(t.data.storage(), t.data.offset(), DType::f32, t.shape);
      EXPECT_EQ(values(f), values(w)) << gname;
      continue;
    }
    const auto* raw = reinterpret_cast<const uint8_t*>(t.data.raw());
    const auto back = schemes::from_ggml_blocks(label, w.dim(0), w.dim(1), raw, t.data.nbytes());
    const auto measured = schemes::parse_scheme(label).encode(w);  // what the profile measured
    EXPECT_EQ(values(back->decode()), values(measured->decode())) << gname;
    for (const auto& c : result().plan.choices)
      if (c.layer == name) {
        EXPECT_EQ(static_cast<int64_t>(t.data.nbytes()), c.bytes) << gname;
        EXPECT_NEAR(schemes::rel_error(w, *back), c.rel_error, 1e-12) << gname;
      }
  }
}

TEST_F(GgufOut, NumpyDecoderAgrees) {
  if (std::system("/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "python3 with numpy not found: cross-check skipped";
  TempDir out;
  const std::string cmd = "/usr/bin/python3 " + std::string(TAILOR_SOURCE_DIR) +
                          "/tests/compress/gguf_reference.py " + gguf() + " " + out.file("");
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  const graph::Model ck = read_llama2c(testing::fixture_path("stories260K.bin"));
  std::map<std::string, std::string> types;
  {
    std::istringstream in(read_file(out.file("tensors.txt")));
    std::string name, type, dims;
    while (in >> name >> type >> dims) types[name] = type;
  }
  EXPECT_EQ(types.size(), ck.graph.initializers.size());
  int blocks = 0;
  for (const auto& [name, w] : ck.graph.initializers) {
    const std::string gname = llama_gguf_name(name), label = label_of(name);
    ASSERT_EQ(types[gname], ggml_type_name(*compress::ggml_type_of(label))) << gname;
    const std::vector<float> numpy = read_npy(out.file(gname + ".npy")).to_f32_vector();
    if (label == "dense") {
      EXPECT_EQ(numpy, values(w)) << gname;
    } else {
      ++blocks;
      EXPECT_EQ(numpy, values(schemes::parse_scheme(label).encode(w)->decode())) << gname;
    }
  }
  EXPECT_GT(blocks, 0);
  const std::string meta = read_file(out.file("metadata.txt"));
  for (const char* line :
       {"general.architecture = llama\n", "llama.block_count = 5\n",
        "llama.embedding_length = 64\n", "llama.feed_forward_length = 172\n",
        "llama.attention.head_count = 8\n", "llama.attention.head_count_kv = 4\n",
        "llama.rope.dimension_count = 8\n", "tokenizer.ggml.model = llama\n",
        "tokenizer.ggml.tokens = [array of 512] <unk> <s> </s>\n",
        "tokenizer.ggml.token_type = [array of 512] 2 3 3\n", "tokenizer.ggml.bos_token_id = 1\n"})
    EXPECT_NE(meta.find(line), std::string::npos) << line << meta;
}

/// Compressed-linear nodes of a decoder's compiled graph.
int64_t compressed_ops(llm::Decoder& d) {
  int64_t n = 0;
  for (const graph::Node& node : d.executor().model().graph.nodes)
    n += node.op_type.rfind("Compressed", 0) == 0;
  return n;
}

// model.gguf runs (`tailor run`, `tailor generate`) as model.onnx does: both
// are the llama decoder graph with each q8_0 / q4_0 linear in the same packed
// codes and f16 scales (the GGUF's blocks hold exactly the codes and scales
// model.onnx stores, ReadBackEqualsPlan), every other tensor the same f32
// values, and the same hyper-parameters (eps and theta exact in f32). The
// two graphs are the same operations on the same values, run by the same
// kernels, so the tolerance is zero: logits bit for bit, the same tokens.
TEST_F(GgufOut, RunAndGenerateOnModelGgufEqualModelOnnx) {
  const graph::Model g = load_runnable_model(gguf()), o = load_runnable_model(onnx());
  llm::Decoder dg(g), dn(o);
  // Every planned linear runs packed, not decoded to f32; but the tied
  // embedding, whose form Gather reads as well, is folded in both files.
  int64_t packed = 0;
  for (const auto& c : result().plan.choices)
    packed += c.label != "dense" && c.layer != "model.embed_tokens.weight";
  EXPECT_EQ(compressed_ops(dg), packed);
  EXPECT_EQ(compressed_ops(dn), packed);
  EXPECT_EQ(dg.forward(testing::kStoriesTokens), dn.forward(testing::kStoriesTokens));
  const std::vector<int32_t> prompt = {1, 403, 407};
  const std::vector<int32_t> a = llm::generate_greedy(dg, prompt, 40, 2);
  EXPECT_EQ(a, llm::generate_greedy(dn, prompt, 40, 2));
  EXPECT_EQ(a, llm::generate_greedy(load_llama_graph(gguf()), prompt, 40, 2));
  EXPECT_GE(a.size(), 10u);
}

// model.gguf carries the llama2.c tokenizer (tokenizer.ggml.*), so `tailor
// generate model.gguf` needs no tok512.bin beside it: the vocabulary read back
// equals the fixture's token for token (the control tokens in llama2.c's
// spelling, spaces back from U+2581), the scores bit for bit, and the text
// equals the run given the fixture's tokenizer explicitly.
TEST_F(GgufOut, GenerateReadsTheTokenizerTheFileHolds) {
  const Llama2cTokenizer want = Llama2cTokenizer::load(testing::fixture_path("tok512.bin"), 512);
  const std::optional<Llama2cTokenizer> got = read_gguf_tokenizer(gguf());
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->vocab, want.vocab);
  EXPECT_EQ(got->scores, want.scores);
  EXPECT_EQ(got->max_token_length, want.max_token_length);  // 7: the file's field is exact
  ASSERT_FALSE(fs::exists(dir_path() + "/out/tok512.bin"));
  const auto from_file = testing::run_cli("generate " + gguf() + " --tokens 24");
  ASSERT_EQ(from_file.exit_code, 0) << from_file.output;
  const auto given = testing::run_cli("generate " + gguf() + " --tokens 24 --tokenizer " +
                                      testing::fixture_path("tok512.bin"));
  ASSERT_EQ(given.exit_code, 0) << given.output;
  EXPECT_EQ(from_file.output, given.output);
  EXPECT_EQ(from_file.output.rfind("Once upon a time", 0), 0u) << from_file.output;
}

// `tailor inspect model.gguf` lists each tensor's ggml type and stored bytes.
TEST_F(GgufOut, InspectListsTheBlockTypes) {
  const auto r = testing::run_cli("inspect " + gguf());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  int blocks = 0;
  for (const auto& c : result().plan.choices) {
    const std::string name = llama_gguf_name(c.layer);
    const size_t at = r.output.find("\n" + name + " ");
    ASSERT_NE(at, std::string::npos) << name << r.output;
    const std::string line = r.output.substr(at + 1, r.output.find('\n', at + 1) - at - 1);
    const std::string type =
        c.label == "dense" ? "f32" : ggml_type_name(*compress::ggml_type_of(c.label));
    EXPECT_NE(line.find(" " + type + " "), std::string::npos) << line;
    EXPECT_NE(line.find(" " + with_commas(c.bytes)), std::string::npos) << line;
    blocks += c.label != "dense";
  }
  EXPECT_GT(blocks, 0);
}

TEST_F(GgufOut, TensorTypeFileOfThePlan) {
  TempDir dir;
  compress::write_llama_tensor_types(dir.file("types.txt"), result().plan);
  std::istringstream in(read_file(dir.file("types.txt")));
  std::string line;
  size_t n = 0;
  while (std::getline(in, line)) {
    const auto& c = result().plan.choices.at(n++);
    std::string type = c.label == "dense" ? "f32" : c.label;
    std::string name = llama_gguf_name(c.layer);
    std::string escaped;
    for (char ch : name) escaped += ch == '.' ? std::string("\\.") : std::string(1, ch);
    EXPECT_EQ(line, "^" + escaped + "$=" + type);
  }
  EXPECT_EQ(n, result().plan.choices.size());
  EXPECT_EQ(llama_gguf_name("model.layers.3.mlp.down_proj.weight"), "blk.3.ffn_down.weight");
  plan::Plan bad = result().plan;
  bad.choices.at(0).label = "int4-g64";
  testing::expect_error_naming(
      [&] { compress::write_llama_tensor_types(dir.file("bad.txt"), bad); },
      bad.choices.at(0).layer, "scheme 'int4-g64' has no ggml type");
  EXPECT_FALSE(fs::exists(dir.file("bad.txt")));
}

TEST(GgufOutBadInput, OneLineErrors) {
  TempDir dir;
  compress::CompressOptions o = gguf_options(dir);
  o.model = testing::model_path("ch_ppocr_mobile_v2.0_cls_infer.onnx");
  if (fs::exists(o.model))
    testing::expect_error_naming([&] { compress::compress_model(o); }, o.model,
                                 "--gguf: not a llama checkpoint (onnx)");
  o = gguf_options(dir);
  o.schemes = {"dense", "int4"};
  testing::expect_error_naming([&] { compress::compress_model(o); }, "--gguf",
                               "scheme 'int4' has no ggml type");
  // A checkpoint without its tokenizer beside it.
  fs::copy_file(testing::fixture_path("stories260K.bin"), dir.file("alone.bin"));
  o = gguf_options(dir);
  o.model = dir.file("alone.bin");
  testing::expect_error_naming([&] { compress::compress_model(o); }, dir.file("alone.bin"),
                               "no llama2.c tokenizer found beside the model");
  EXPECT_FALSE(fs::exists(dir.file("out")));
  // GGUF writer: a tensor whose bytes do not match its type and shape.
  GgufTensor t{"w", GgmlType::q4_0, {2, 32}, Tensor::zeros(DType::u8, {35})};
  testing::expect_error_naming([&] { write_gguf(dir.file("x.gguf"), {}, {t}); }, dir.file("x.gguf"),
                               "take 36");
  t.shape = {2, 20};
  testing::expect_error_naming([&] { write_gguf(dir.file("x.gguf"), {}, {t}); }, "w",
                               "not whole blocks of 32");
  EXPECT_FALSE(fs::exists(dir.file("x.gguf")));
  // GGUF tokenizers tailor cannot read: no scores, another model, a short
  // type array; none at all is nullopt, not an error.
  const std::vector<std::string> tokens{"<unk>", "<s>", "</s>"};
  const auto tokenizer_error = [&](std::vector<std::pair<std::string, GgufValue>> meta,
                                   const std::string& message) {
    write_gguf(dir.file("t.gguf"), meta, {});
    testing::expect_error_naming([&] { read_gguf_tokenizer(dir.file("t.gguf")); },
                                 dir.file("t.gguf"), message);
  };
  tokenizer_error({{"tokenizer.ggml.tokens", tokens}}, "tokenizer.ggml.scores is missing");
  tokenizer_error(
      {{"tokenizer.ggml.tokens", tokens}, {"tokenizer.ggml.scores", std::vector<float>{0.f, 0.f}}},
      "or of another length");
  tokenizer_error({{"tokenizer.ggml.model", std::string("gpt2")},
                   {"tokenizer.ggml.tokens", tokens},
                   {"tokenizer.ggml.scores", std::vector<float>{0.f, 0.f, 0.f}}},
                  "tokenizer.ggml.model is 'gpt2', not a llama");
  tokenizer_error({{"tokenizer.ggml.tokens", tokens},
                   {"tokenizer.ggml.scores", std::vector<float>{0.f, 0.f, 0.f}},
                   {"tokenizer.ggml.token_type", std::vector<int32_t>{2, 3}}},
                  "tokenizer.ggml.token_type is of another length");
  tokenizer_error({{"tokenizer.ggml.tokens", std::vector<int32_t>{1, 2}}},
                  "tokenizer.ggml.tokens is not an array of strings");
  write_gguf(dir.file("t.gguf"), {{"general.name", std::string("x")}}, {});
  EXPECT_FALSE(read_gguf_tokenizer(dir.file("t.gguf")).has_value());
}

}  // namespace
}  // namespace tailor
