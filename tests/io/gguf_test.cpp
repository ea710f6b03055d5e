#include "tailor/io/gguf.h"

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "io/analysed.h"
#include "io/gguf_bytes.h"
#include "tailor/core/dtype.h"
#include "tailor/core/error.h"
#include "tailor/io/load_model.h"
#include "test_util.h"

namespace tailor {
namespace {

using testing::TempDir;
using testing::write_bytes;

using testing::f32_bytes;
using testing::GgufSpec;
using testing::kv_bool;
using testing::kv_f32;
using testing::kv_i32_array;
using testing::kv_nested_array;
using testing::kv_string;
using testing::kv_string_array;
using testing::kv_u32;
using testing::put;
using testing::put_str;
using testing::u16_bytes;

// The valid reference file: five kinds of metadata, an F32 [2, 3] matrix, an
// F16 vector and a BF16 [2, 2] matrix, each at a 32-aligned offset, the last
// ending the file.
GgufSpec valid_spec() {
  GgufSpec s;
  s.kvs = {kv_string("general.name", "tiny"), kv_u32("tiny.count", 7),
           kv_f32("tiny.scale", 0.5f),        kv_i32_array("tiny.list", {1, 2, 3}),
           kv_bool("tiny.flag", true),        kv_string_array("tokenizer.tokens", {"a", "bc"})};
  s.tensors = {
      {"w", {3, 2}, 0, 0, f32_bytes({1, 2, 3, 4, 5, 6})},
      {"h", {4}, 1, 32, u16_bytes({f32_to_f16(0.5f), f32_to_f16(-2.0f), f32_to_f16(1024.0f), 0})},
      {"b",
       {2, 2},
       30,
       64,
       u16_bytes({f32_to_bf16(1.5f), f32_to_bf16(-3.0f), f32_to_bf16(0.25f), f32_to_bf16(8.0f)})}};
  return s;
}

testing::Analysed read_bytes(const TempDir& dir, const std::string& bytes,
                             const std::string& name) {
  const std::string path = dir.file(name);
  write_bytes(path, bytes);
  return testing::analysed(read_gguf(path));
}

// Reads `bytes` expecting an Error whose what() is one line naming the file
// and containing `needle`.
void expect_error(const std::string& bytes, const std::string& needle) {
  TempDir dir;
  const std::string path = dir.file("bad.gguf");
  write_bytes(path, bytes);
  testing::expect_error_naming([&] { read_gguf(path); }, path, needle);
}

TEST(Gguf, ReadsV3MetadataAndTensors) {
  TempDir dir;
  const testing::Analysed m = read_bytes(dir, valid_spec().build(), "ok.gguf");
  EXPECT_EQ(m.format, "gguf");
  EXPECT_EQ(m.metadata.at("general.name"), "tiny");
  EXPECT_EQ(m.metadata.at("tiny.count"), "7");
  EXPECT_EQ(m.metadata.at("tiny.scale"), "0.5");
  EXPECT_EQ(m.metadata.at("tiny.list"), "[array of 3]");
  EXPECT_EQ(m.metadata.at("tiny.flag"), "true");
  EXPECT_EQ(m.metadata.at("tokenizer.tokens"), "[array of 2]");
  ASSERT_EQ(m.weights.size(), 3u);

  // ne = [3, 2] is a row-major [2, 3] matrix: row r holds data[3r .. 3r+2].
  const graph::WeightView& w = m.weights[0];
  EXPECT_EQ(w.name, "w");
  EXPECT_EQ(w.tensor.dtype(), DType::f32);
  EXPECT_EQ(w.tensor.shape(), (Shape{2, 3}));
  EXPECT_EQ(w.layout, WeightLayout::out_in);
  EXPECT_EQ(w.out_in_shape(), (Shape{2, 3}));
  EXPECT_TRUE(w.tensor.is_mapped());  // zero-copy view of the file
  EXPECT_EQ(w.tensor.to_f32_vector(), (std::vector<float>{1, 2, 3, 4, 5, 6}));

  const graph::WeightView& h = m.weights[1];
  EXPECT_EQ(h.tensor.dtype(), DType::f16);
  EXPECT_EQ(h.tensor.shape(), (Shape{4}));
  EXPECT_EQ(h.layout, WeightLayout::none);
  EXPECT_EQ(h.tensor.to_f32_vector(), (std::vector<float>{0.5f, -2.0f, 1024.0f, 0.0f}));

  const graph::WeightView& b = m.weights[2];
  EXPECT_EQ(b.tensor.dtype(), DType::bf16);
  EXPECT_EQ(b.tensor.shape(), (Shape{2, 2}));
  EXPECT_EQ(b.tensor.to_f32_vector(), (std::vector<float>{1.5f, -3.0f, 0.25f, 8.0f}));
}

TEST(Gguf, ReadsV2AndThroughLoadModel) {
  GgufSpec s = valid_spec();
  s.version = 2;
  TempDir dir;
  const std::string path = dir.file("v2.gguf");
  write_bytes(path, s.build());
  const testing::Analysed m = testing::analysed(load_model(path));
  EXPECT_EQ(m.format, "gguf");
  ASSERT_EQ(m.weights.size(), 3u);
  EXPECT_EQ(m.weights[0].tensor.to_f32_vector(), (std::vector<float>{1, 2, 3, 4, 5, 6}));
}

TEST(Gguf, RankThreeTensorShapeIsReversed) {
  GgufSpec s;
  std::vector<float> v(24);
  for (int i = 0; i < 24; ++i) v[i] = static_cast<float>(i);
  s.tensors = {{"t", {4, 3, 2}, 0, 0, f32_bytes(v)}};
  TempDir dir;
  const testing::Analysed m = read_bytes(dir, s.build(), "r3.gguf");
  EXPECT_EQ(m.weights[0].tensor.shape(), (Shape{2, 3, 4}));
  EXPECT_EQ(m.weights[0].out_in_shape(), (Shape{2, 12}));
  EXPECT_EQ(m.weights[0].tensor.to_f32_vector(), v);
}

// Q8_0 and Q4_0 (ggml-common.h's block_q8_0 / block_q4_0) decoded by hand:
// x = code · d, with d the block's f16 scale; Q4_0 byte t holds code t in its
// low nibble and code t + 16 in its high one, stored as code + 8.
TEST(Gguf, ReadsQ8_0AndQ4_0DecodedToF32) {
  std::string q8 = u16_bytes({f32_to_f16(0.5f)}), q4 = u16_bytes({f32_to_f16(0.25f)});
  std::vector<float> want8, want4(32);
  for (int j = 0; j < 32; ++j) {
    const int code = j * 8 - 128;  // -128 … 120
    q8 += static_cast<char>(static_cast<int8_t>(code));
    want8.push_back(0.5f * static_cast<float>(code));
  }
  for (int t = 0; t < 16; ++t) {
    const int lo = t, hi = 15 - t;  // stored codes 0 … 15
    q4 += static_cast<char>(lo | hi << 4);
    want4[t] = 0.25f * static_cast<float>(lo - 8);
    want4[t + 16] = 0.25f * static_cast<float>(hi - 8);
  }
  GgufSpec s;
  s.tensors = {{"a", {32, 1}, 8, 0, q8}, {"b", {32, 1}, 2, 64, q4}};
  TempDir dir;
  const testing::Analysed m = read_bytes(dir, s.build(), "q.gguf");
  ASSERT_EQ(m.weights.size(), 2u);
  EXPECT_EQ(m.weights[0].tensor.dtype(), DType::f32);
  EXPECT_EQ(m.weights[0].tensor.shape(), (Shape{1, 32}));
  EXPECT_EQ(m.weights[0].tensor.to_f32_vector(), want8);
  EXPECT_EQ(m.weights[1].tensor.to_f32_vector(), want4);
  // As stored: the blocks, and the packed codes the kernels run.
  const std::vector<GgufTensor> stored = read_gguf_tensors(dir.file("q.gguf"));
  EXPECT_EQ(stored[0].data.nbytes(), 34u);
  EXPECT_EQ(stored[1].data.nbytes(), 18u);
  EXPECT_EQ(ggml_tensor_encoded(stored[0])->label(), "q8_0");
  EXPECT_EQ(ggml_tensor_encoded(stored[1])->decode().to_f32_vector(), want4);
}

TEST(Gguf, HonoursGeneralAlignment) {
  // The key's value decides where the data section starts: pick a name length
  // for which the default (32) would put it elsewhere than 64 does.
  for (std::string name : {"a", "ab", "abc", "abcd", "abcde", "abcdef", "abcdefg", "abcdefgh"}) {
    GgufSpec s;
    s.kvs = {kv_u32("general.alignment", 64)};
    s.tensors = {{name, {3}, 0, 0, f32_bytes({1, 2, 3})}, {"b", {2}, 0, 64, f32_bytes({4, 5})}};
    s.alignment = 1;
    size_t infos_end = 0;
    s.build(&infos_end);
    if ((infos_end + 31) / 32 * 32 == (infos_end + 63) / 64 * 64) continue;
    s.alignment = 64;
    size_t start = 0;
    const std::string bytes = s.build(&start);
    ASSERT_EQ(start % 64, 0u);
    TempDir dir;
    const testing::Analysed m = read_bytes(dir, bytes, "a64.gguf");
    EXPECT_EQ(m.metadata.at("general.alignment"), "64");
    EXPECT_EQ(m.weights[0].tensor.offset(), start);
    EXPECT_EQ(m.weights[1].tensor.offset(), start + 64);
    EXPECT_EQ(m.weights[0].tensor.to_f32_vector(), (std::vector<float>{1, 2, 3}));
    EXPECT_EQ(m.weights[1].tensor.to_f32_vector(), (std::vector<float>{4, 5}));
    // An offset that is a multiple of 32 but not of 64 is refused.
    s.tensors[1].offset = 32;
    expect_error(s.build(), "not a multiple of the alignment 64");
    return;
  }
  FAIL() << "no name length separates the two alignments";
}

TEST(Gguf, MisalignedDataIsCopied) {
  // general.alignment 1: the data section starts right after the infos, here
  // at an offset that for some name lengths is not 4-aligned in the mapping.
  int copied = 0;
  for (std::string name : {"x", "xy", "xyz", "wxyz"}) {
    GgufSpec s;
    s.alignment = 1;
    s.kvs = {kv_u32("general.alignment", 1)};
    s.tensors = {{name, {2}, 0, 0, f32_bytes({7.5f, -1.0f})}};
    size_t start = 0;
    const std::string bytes = s.build(&start);
    TempDir dir;
    const testing::Analysed m = read_bytes(dir, bytes, "a1.gguf");
    EXPECT_EQ(m.weights[0].tensor.to_f32_vector(), (std::vector<float>{7.5f, -1.0f}));
    EXPECT_TRUE(m.weights[0].tensor.is_aligned());
    EXPECT_EQ(m.weights[0].tensor.is_mapped(), start % 4 == 0) << "data start " << start;
    copied += start % 4 != 0;
  }
  EXPECT_EQ(copied, 3);
}

TEST(Gguf, EmptyModelAndZeroSizedTensor) {
  GgufSpec s;
  s.tensors = {{"empty", {0, 4}, 0, 0, ""}};
  TempDir dir;
  const testing::Analysed m = read_bytes(dir, s.build(), "z.gguf");
  ASSERT_EQ(m.weights.size(), 1u);
  EXPECT_EQ(m.weights[0].tensor.shape(), (Shape{4, 0}));
  EXPECT_EQ(m.weights[0].tensor.numel(), 0);
}

TEST(Gguf, RejectsBadMagicAndVersions) {
  std::string bytes = valid_spec().build();
  bytes[3] = 'X';
  expect_error(bytes, "magic");
  expect_error("GG", "magic");
  expect_error("", "magic");
  GgufSpec v1 = valid_spec();
  v1.version = 1;
  expect_error(v1.build(), "unsupported GGUF version 1");
  GgufSpec v4 = valid_spec();
  v4.version = 4;
  expect_error(v4.build(), "unsupported GGUF version 4");
  GgufSpec be = valid_spec();
  be.version = 0x03000000;
  expect_error(be.build(), "big-endian");
}

TEST(Gguf, RejectsCountsThatCannotFit) {
  GgufSpec s = valid_spec();
  s.tensor_count = int64_t{1} << 40;
  expect_error(s.build(), "tensor count 1099511627776");
  s = valid_spec();
  s.kv_count = 3'000'000'000;
  expect_error(s.build(), "key/value count 3000000000");
  // An array claiming 2^40 elements.
  s = valid_spec();
  std::string huge;
  put_str(huge, "big");
  put<uint32_t>(huge, 9);
  put<uint32_t>(huge, 4);
  put<uint64_t>(huge, uint64_t{1} << 40);
  s.kvs.push_back(huge);
  expect_error(s.build(), "cannot fit");
}

TEST(Gguf, RejectsStringsPastTheEnd) {
  GgufSpec s = valid_spec();
  std::string kv;
  put_str(kv, "general.name");
  put<uint32_t>(kv, 8);
  put<uint64_t>(kv, uint64_t{1} << 50);  // value length far past the end
  s.kvs = {kv};
  expect_error(s.build(), "string value length 1125899906842624");
  s = valid_spec();
  s.tensors[0].name = "w";
  std::string bytes = s.build();
  // The first tensor name length sits right after the metadata.
  size_t pos = 24;
  for (const std::string& k : s.kvs) pos += k.size();
  const uint64_t bad = 1'000'000;
  std::memcpy(bytes.data() + pos, &bad, 8);
  expect_error(bytes, "tensor name length 1000000");
}

TEST(Gguf, RejectsBadValuesAndKeys) {
  GgufSpec s = valid_spec();
  std::string kv;
  put_str(kv, "odd");
  put<uint32_t>(kv, 13);
  put<uint32_t>(kv, 0);
  s.kvs.push_back(kv);
  expect_error(s.build(), "unknown value type 13");

  s = valid_spec();
  s.kvs.push_back(kv_u32("tiny.count", 8));
  expect_error(s.build(), "duplicate metadata key 'tiny.count'");

  s = valid_spec();
  s.kvs.push_back(kv_u32("general.alignment", 24));
  expect_error(s.build(), "not a power of two");
  s = valid_spec();
  s.kvs.push_back(kv_f32("general.alignment", 32.0f));
  expect_error(s.build(), "general.alignment must be a uint32");

  s = valid_spec();
  s.kvs.push_back(kv_nested_array("deep.ok", 8));
  TempDir dir;
  EXPECT_EQ(read_bytes(dir, s.build(), "n.gguf").metadata.at("deep.ok"), "[array of 1]");
  s = valid_spec();
  s.kvs.push_back(kv_nested_array("deep.bad", 9));
  expect_error(s.build(), "nested deeper");
}

TEST(Gguf, RejectsBadTensorInfos) {
  GgufSpec s = valid_spec();
  s.tensors[1].ne = {1, 1, 1, 1, 4};
  expect_error(s.build(), "tensor 'h' has 5 dimensions (at most 4)");

  s = valid_spec();
  s.tensors[0].type = 12;
  expect_error(s.build(), "tensor 'w' has unsupported GGUF type Q4_K");
  expect_error(s.build(), "(of the quantized types only Q8_0 and Q4_0 are read)");
  s.tensors[0].type = 8;  // 'w' has rows of 3
  expect_error(s.build(), "tensor 'w' of type Q8_0 has rows of 3 elements, not whole blocks of 32");
  s.tensors[0].type = 26;
  expect_error(s.build(), "unsupported GGUF type I32");
  s.tensors[0].type = 1000;
  expect_error(s.build(), "unsupported GGUF type 1000");

  s = valid_spec();
  s.tensors[0].ne = {uint64_t{1} << 62, 16};
  expect_error(s.build(), "overflows");
}

TEST(Gguf, RejectsBadOffsets) {
  GgufSpec s = valid_spec();
  std::string bytes = s.build();
  s.tensors[2].offset = 4096;  // past the end; keep the data where it was
  std::string shifted = s.build();
  shifted.resize(bytes.size());
  expect_error(shifted, "tensor 'b' data");
  expect_error(shifted, "past the end of the file");

  s = valid_spec();
  s.tensors[1].offset = 0;  // on top of 'w'
  expect_error(s.build(), "overlap");

  s = valid_spec();
  s.tensors[1].offset = 36;  // not a multiple of 32
  expect_error(s.build(), "tensor 'h' offset 36 is not a multiple of the alignment 32");

  s = valid_spec();
  s.tensors[1].name = "w";
  expect_error(s.build(), "duplicate tensor name 'w'");
}

TEST(Gguf, EveryTruncationThrows) {
  const std::string bytes = valid_spec().build();
  TempDir dir;
  const std::string path = dir.file("cut.gguf");
  for (size_t n = 0; n < bytes.size(); ++n) {
    write_bytes(path, bytes.substr(0, n));
    try {
      read_gguf(path);
      ADD_FAILURE() << "prefix of " << n << " bytes was accepted";
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(path), std::string::npos) << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
  }
}

TEST(Gguf, ErrorNamesUnreadableFile) {
  try {
    read_gguf("/nonexistent/model.gguf");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/model.gguf"), std::string::npos);
  }
}

}  // namespace
}  // namespace tailor

namespace tailor {
namespace {

TEST(Gguf, CliRefusesQuantizedTensorWithExitCode2) {
  TempDir dir;
  GgufSpec s = valid_spec();
  s.tensors[0].type = 12;  // Q4_K
  const std::string path = dir.file("q4k.gguf");
  write_bytes(path, s.build());
  const auto r = testing::run_cli("inspect " + path);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find(path), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("Q4_K"), std::string::npos) << r.output;
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
}

}  // namespace
}  // namespace tailor
