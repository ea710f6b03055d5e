#include "tailor/io/safetensors.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "io/analysed.h"
#include "tailor/core/error.h"
#include "tailor/io/atomic_file.h"
#include "test_util.h"

namespace tailor {
namespace {

using testing::TempDir;

// A file made of a header and a data buffer, assembled by hand.
std::string make_file(const std::string& header, const std::string& data) {
  std::string s(8, '\0');
  const uint64_t n = header.size();
  std::memcpy(s.data(), &n, 8);
  return s + header + data;
}

std::string floats(std::initializer_list<float> v) {
  std::string s(v.size() * 4, '\0');
  std::memcpy(s.data(), std::data(v), s.size());
  return s;
}

// The values safetensors_check.py expects (its expected()).
std::vector<NamedTensor> expected_tensors() {
  std::vector<float> a(15);
  for (int i = 0; i < 15; ++i) a[i] = i * 0.5f - 3.0f;
  Tensor b = Tensor::from_f32({4}, std::vector<float>{1.0f, -2.0f, 0.5f, 65504.0f}).to(DType::f16);
  Tensor c = Tensor::zeros(DType::i64, {2, 2});
  const int64_t cv[] = {1, -1, int64_t{1} << 40, 7};
  std::memcpy(c.mutable_raw(), cv, sizeof cv);
  Tensor d = Tensor::from_f32({3}, std::vector<float>{1.0f, -3.140625f, 0.5f}).to(DType::bf16);
  Tensor e = Tensor::zeros(DType::i8, {1, 3});
  const int8_t ev[] = {-128, 0, 127};
  std::memcpy(e.mutable_raw(), ev, 3);
  return {{"a", Tensor::from_f32({3, 5}, a)}, {"b", b}, {"c", c}, {"d", d}, {"e", e}};
}

const std::map<std::string, std::string> kMetadata{{"format", "pt"},
                                                   {"note", "written for a test"}};

std::string python() {
  // Debian's python3 carries python3-numpy (scripts/install-deps.sh).
  for (const char* p : {"/usr/bin/python3", "/usr/local/bin/python3"})
    if (std::filesystem::exists(p)) return p;
  return "";
}

int run_python(const std::string& mode, const std::string& file) {
  const std::string cmd =
      python() + " " + TAILOR_SOURCE_DIR + "/tests/io/safetensors_check.py " + mode + " " + file;
  return std::system(cmd.c_str());
}

TEST(Safetensors, RoundTripKeepsValuesMetadataAndLayout) {
  TempDir dir;
  const std::string p = dir.file("t.safetensors");
  auto ts = expected_tensors();
  ts.push_back({"conv", Tensor::zeros(DType::f32, {4, 2, 3, 3})});
  write_safetensors(p, ts, kMetadata);
  const testing::Analysed m = testing::analysed(read_safetensors(p));
  EXPECT_EQ(m.format, "safetensors");
  EXPECT_EQ(m.metadata, kMetadata);
  ASSERT_EQ(m.weights.size(), ts.size());
  for (const auto& t : ts) {
    const graph::WeightView* w = m.find(t.name);
    ASSERT_NE(w, nullptr) << t.name;
    EXPECT_EQ(w->tensor.dtype(), t.tensor.dtype());
    EXPECT_EQ(w->tensor.shape(), t.tensor.shape());
    ASSERT_EQ(w->tensor.nbytes(), t.tensor.nbytes());
    EXPECT_EQ(std::memcmp(w->tensor.raw(), t.tensor.raw(), t.tensor.nbytes()), 0) << t.name;
    EXPECT_TRUE(w->tensor.is_aligned()) << t.name;
  }
  EXPECT_EQ(m.find("a")->layout, WeightLayout::out_in);
  EXPECT_EQ(m.find("conv")->layout, WeightLayout::conv);
  EXPECT_EQ(m.find("conv")->out_in_shape(), (Shape{4, 18}));
  EXPECT_EQ(m.find("b")->layout, WeightLayout::none);
  EXPECT_EQ(m.find("c")->layout, WeightLayout::none);  // integer
  EXPECT_TRUE(m.find("a")->tensor.is_mapped());        // zero-copy
}

TEST(Safetensors, WritesTransposedViewsInLogicalOrder) {
  TempDir dir;
  const std::string p = dir.file("t.safetensors");
  Tensor t = Tensor::from_f32({2, 3}, std::vector<float>{1, 2, 3, 4, 5, 6}).transpose(0, 1);
  write_safetensors(p, {{"t", t}});
  const testing::Analysed m = testing::analysed(read_safetensors(p));
  EXPECT_EQ(m.weights.at(0).tensor.shape(), (Shape{3, 2}));
  EXPECT_EQ(m.weights.at(0).tensor.to_f32_vector(), (std::vector<float>{1, 4, 2, 5, 3, 6}));
}

TEST(Safetensors, FileWrittenByTailorReadsRightInAnIndependentReader) {
  if (python().empty()) GTEST_SKIP() << "python3 with numpy not found: cross-check skipped";
  TempDir dir;
  const std::string p = dir.file("t.safetensors");
  write_safetensors(p, expected_tensors(), kMetadata);
  EXPECT_EQ(run_python("read", p), 0);
}

TEST(Safetensors, FileWrittenByAnIndependentWriterReadsRight) {
  if (python().empty()) GTEST_SKIP() << "python3 with numpy not found: cross-check skipped";
  TempDir dir;
  const std::string p = dir.file("py.safetensors");
  ASSERT_EQ(run_python("write", p), 0);
  const testing::Analysed m = testing::analysed(read_safetensors(p));
  EXPECT_EQ(m.metadata, kMetadata);
  for (const auto& t : expected_tensors()) {
    const graph::WeightView* w = m.find(t.name);
    ASSERT_NE(w, nullptr) << t.name;
    EXPECT_EQ(w->tensor.shape(), t.tensor.shape());
    // The python writer packs without alignment: misaligned tensors are copied.
    EXPECT_TRUE(w->tensor.is_aligned());
    EXPECT_EQ(std::memcmp(w->tensor.contiguous().raw(), t.tensor.raw(), t.tensor.nbytes()), 0)
        << t.name;
  }
}

TEST(Safetensors, RefusedWriteLeavesThePreviousFile) {
  // Checked before a byte is written (mid-write failures: AtomicFile tests).
  TempDir dir;
  const std::string p = dir.file("t.safetensors");
  write_safetensors(p, {{"x", Tensor::zeros(DType::f32, {2})}});
  const auto before = std::filesystem::file_size(p);
  EXPECT_THROW(write_safetensors(p, {{"x", Tensor::zeros(DType::f32, {3})},
                                     {"x", Tensor::zeros(DType::f32, {3})}}),
               Error);
  EXPECT_EQ(std::filesystem::file_size(p), before);
}

struct BadCase {
  const char* label;
  std::string bytes;
  const char* expect;  // a phrase the message must contain
};

std::vector<BadCase> bad_cases() {
  const std::string two = floats({1, 2});
  std::string huge(8, '\0');
  const uint64_t hundred_gb = 100ull << 30;
  std::memcpy(huge.data(), &hundred_gb, 8);
  std::string past(8, '\0');
  const uint64_t n = 64;
  std::memcpy(past.data(), &n, 8);
  past += "{}";
  return {
      {"short", "abc", "too short"},
      {"header past end", past, "past the end"},
      {"header of 100 GB", huge + "{}", "100 MB"},
      {"invalid JSON", make_file("{\"a\": {", two), "not valid JSON"},
      {"not an object", make_file("[1,2]", ""), "not a JSON object"},
      {"offsets outside data",
       make_file(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", two),
       "past the data"},
      {"overlap",
       make_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                 R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                 two),
       "overlaps"},
      {"gap", make_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", two), "gap"},
      {"trailing bytes",
       make_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", two), "cover 4 of 8"},
      {"shape x dtype != span",
       make_file(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", two), "byte span"},
      {"overflowing shape",
       make_file(R"({"a":{"dtype":"F32","shape":[4611686018427387904,8],"data_offsets":[0,8]}})",
                 two),
       "byte span"},
      {"negative dim", make_file(R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", two),
       "non-negative"},
      {"unknown dtype",
       make_file(R"({"a":{"dtype":"Q4_K","shape":[2],"data_offsets":[0,8]}})", two),
       "unknown dtype 'Q4_K'"},
      {"duplicate names",
       make_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                 R"("a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                 two),
       "duplicate tensor name 'a'"},
      {"begin > end", make_file(R"({"a":{"dtype":"F32","shape":[0],"data_offsets":[8,0]}})", two),
       "begin > end"},
      {"bad metadata", make_file(R"({"__metadata__":{"k":1}})", ""), "not a string"},
  };
}

TEST(Safetensors, MalformedFilesGiveOneLineErrorsNamingTheFile) {
  TempDir dir;
  for (const auto& c : bad_cases()) {
    const std::string p = dir.file("bad.safetensors");
    testing::write_bytes(p, c.bytes);
    SCOPED_TRACE(c.label);
    testing::expect_error_naming([&] { read_safetensors(p); }, p, c.expect);
  }
}

TEST(Safetensors, EveryTruncationOfAValidFileIsRefused) {
  TempDir dir;
  const std::string good = dir.file("good.safetensors");
  write_safetensors(good, expected_tensors(), kMetadata);
  const std::string bytes = read_file(good);
  const std::string p = dir.file("cut.safetensors");
  for (size_t len = 0; len < bytes.size(); ++len) {
    testing::write_bytes(p, bytes.substr(0, len));
    EXPECT_THROW(read_safetensors(p), Error) << "prefix of " << len << " bytes";
  }
}

TEST(Safetensors, CliReportsBadFileWithExitCode2) {
  TempDir dir;
  const std::string p = dir.file("bad.safetensors");
  testing::write_bytes(
      p, make_file(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", floats({1, 2})));
  const auto r = testing::run_cli("inspect " + p);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find(p), std::string::npos) << r.output;
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
}

TEST(Safetensors, CliInspectJson) {
  TempDir dir;
  const std::string p = dir.file("m.safetensors");
  write_safetensors(
      p, {{"w", Tensor::zeros(DType::f16, {6, 4})}, {"b", Tensor::zeros(DType::f32, {6})}});
  const auto r = testing::run_cli("inspect --json " + p);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j["format"], "safetensors");
  EXPECT_EQ(j["totals"]["tensors"], 2);
  EXPECT_EQ(j["totals"]["numel"], 30);
  EXPECT_EQ(j["totals"]["bytes"], 6 * 4 * 2 + 6 * 4);
  EXPECT_EQ(j["totals"]["matrices"], 1);
  EXPECT_EQ(j["tensors"][0]["name"], "w");
  EXPECT_EQ(j["tensors"][0]["out_in"], nlohmann::json({6, 4}));
  EXPECT_TRUE(j["tensors"][1]["out_in"].is_null());
}

}  // namespace
}  // namespace tailor
