// Tests of the onnxruntime reference harness (tools/ort/run.js): tiny models
// built here with libonnx's protobuf classes, run by onnxruntime, checked
// against values computed by hand. Proves the harness (npy in/out in every
// exchanged dtype, multiple outputs, initializers, errors, --time) before
// comparison tests rely on it.
#include "ort_runner.h"

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include "tailor/core/dtype.h"
#include "test_util.h"

namespace tailor {
namespace {

using testing::TempDir;
using TP = onnx::TensorProto;

void add_io(onnx::ValueInfoProto* v, const std::string& name, int elem,
            const std::vector<int64_t>& dims) {
  v->set_name(name);
  auto* tt = v->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elem);
  for (int64_t d : dims) tt->mutable_shape()->add_dim()->set_dim_value(d);
}

onnx::NodeProto* add_node(onnx::GraphProto* g, const std::string& op,
                          const std::vector<std::string>& in, const std::vector<std::string>& out) {
  onnx::NodeProto* n = g->add_node();
  n->set_op_type(op);
  n->set_name(op + "_" + out[0]);
  for (const auto& s : in) n->add_input(s);
  for (const auto& s : out) n->add_output(s);
  return n;
}

/// inputs a, b f32[2,3], n i64[3], h f16[2], k i32[2], u u8[3]; outputs
///   sum = a + b, mm = a · W (W f32[3,2] initializer), gt = a > b (bool),
///   n2 = n + n (i64), hf = Cast<float>(h), kk = k * k (i32), ku = Cast<u8>(k),
///   ui = Cast<i32>(u).
std::string build_model(const TempDir& dir) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.set_producer_name("tailor-test");
  m.add_opset_import()->set_version(13);
  onnx::GraphProto* g = m.mutable_graph();
  g->set_name("harness");
  add_io(g->add_input(), "a", TP::FLOAT, {2, 3});
  add_io(g->add_input(), "b", TP::FLOAT, {2, 3});
  add_io(g->add_input(), "n", TP::INT64, {3});
  add_io(g->add_input(), "h", TP::FLOAT16, {2});
  add_io(g->add_input(), "k", TP::INT32, {2});
  add_io(g->add_input(), "u", TP::UINT8, {3});
  TP* w = g->add_initializer();
  w->set_name("W");
  w->set_data_type(TP::FLOAT);
  w->add_dims(3);
  w->add_dims(2);
  const std::vector<float> wv{1, 2, 3, 4, 5, 6};
  w->set_raw_data(std::string(reinterpret_cast<const char*>(wv.data()), wv.size() * 4));
  add_node(g, "Add", {"a", "b"}, {"sum"});
  add_node(g, "MatMul", {"a", "W"}, {"mm"});
  add_node(g, "Greater", {"a", "b"}, {"gt"});
  add_node(g, "Add", {"n", "n"}, {"n2"});
  onnx::AttributeProto* to = add_node(g, "Cast", {"h"}, {"hf"})->add_attribute();
  to->set_name("to");
  to->set_type(onnx::AttributeProto::INT);
  to->set_i(TP::FLOAT);
  add_node(g, "Mul", {"k", "k"}, {"kk"});
  onnx::AttributeProto* to_u8 = add_node(g, "Cast", {"k"}, {"ku"})->add_attribute();
  to_u8->set_name("to");
  to_u8->set_type(onnx::AttributeProto::INT);
  to_u8->set_i(TP::UINT8);
  onnx::AttributeProto* to_i32 = add_node(g, "Cast", {"u"}, {"ui"})->add_attribute();
  to_i32->set_name("to");
  to_i32->set_type(onnx::AttributeProto::INT);
  to_i32->set_i(TP::INT32);
  add_io(g->add_output(), "sum", TP::FLOAT, {2, 3});
  add_io(g->add_output(), "mm", TP::FLOAT, {2, 2});
  add_io(g->add_output(), "gt", TP::BOOL, {2, 3});
  add_io(g->add_output(), "n2", TP::INT64, {3});
  add_io(g->add_output(), "hf", TP::FLOAT, {2});
  add_io(g->add_output(), "kk", TP::INT32, {2});
  add_io(g->add_output(), "ku", TP::UINT8, {2});
  add_io(g->add_output(), "ui", TP::INT32, {3});
  std::string bytes;
  EXPECT_TRUE(m.SerializeToString(&bytes));
  const std::string path = dir.file("harness.onnx");
  testing::write_bytes(path, bytes);
  return path;
}

template <typename T>
Tensor make(DType dt, Shape shape, const std::vector<T>& v) {
  Tensor t = Tensor::zeros(dt, std::move(shape));
  std::memcpy(t.mutable_raw(), v.data(), v.size() * sizeof(T));
  return t;
}

template <typename T>
std::vector<T> values(const Tensor& t) {
  const T* p = t.data<T>();
  return std::vector<T>(p, p + t.numel());
}

std::vector<std::pair<std::string, Tensor>> inputs() {
  return {
      {"a", Tensor::from_f32({2, 3}, std::vector<float>{1, 2, 3, 4, 5, 6})},
      {"b", Tensor::from_f32({2, 3}, std::vector<float>{0.5f, 2, 4, -1, 5.5f, 0})},
      {"n", make<int64_t>(DType::i64, {3}, {-3, 5'000'000'000LL, 7})},
      {"h", make<uint16_t>(DType::f16, {2}, {0x3E00, 0xC000})},  // 1.5, -2.0
      {"k", make<int32_t>(DType::i32, {2}, {-7, 40000})},
      {"u", make<uint8_t>(DType::u8, {3}, {1, 100, 200})},
  };
}

TEST(OrtRunner, RunsTinyModelInEveryExchangedDtype) {
  if (auto why = testing::ort_unavailable(); !why.empty()) GTEST_SKIP() << why;
  TempDir dir;
  const auto out = testing::run_ort(build_model(dir), inputs());
  ASSERT_EQ(out.size(), 8u);

  const Tensor& sum = out.at("sum");
  EXPECT_EQ(sum.dtype(), DType::f32);
  EXPECT_EQ(sum.shape(), (Shape{2, 3}));
  EXPECT_EQ(values<float>(sum), (std::vector<float>{1.5f, 4, 7, 3, 10.5f, 6}));

  // [1 2 3; 4 5 6] · [1 2; 3 4; 5 6] = [22 28; 49 64]
  const Tensor& mm = out.at("mm");
  EXPECT_EQ(mm.shape(), (Shape{2, 2}));
  EXPECT_EQ(values<float>(mm), (std::vector<float>{22, 28, 49, 64}));

  const Tensor& gt = out.at("gt");
  EXPECT_EQ(gt.dtype(), DType::boolean);
  EXPECT_EQ(gt.shape(), (Shape{2, 3}));
  EXPECT_EQ(values<uint8_t>(gt), (std::vector<uint8_t>{1, 0, 0, 1, 0, 1}));

  const Tensor& n2 = out.at("n2");
  EXPECT_EQ(n2.dtype(), DType::i64);
  EXPECT_EQ(values<int64_t>(n2), (std::vector<int64_t>{-6, 10'000'000'000LL, 14}));

  const Tensor& hf = out.at("hf");
  EXPECT_EQ(hf.dtype(), DType::f32);
  EXPECT_EQ(values<float>(hf), (std::vector<float>{1.5f, -2.0f}));

  const Tensor& kk = out.at("kk");
  EXPECT_EQ(kk.dtype(), DType::i32);
  EXPECT_EQ(values<int32_t>(kk), (std::vector<int32_t>{49, 1'600'000'000}));

  // Cast to u8 wraps modulo 256: -7 -> 249, 40000 = 156·256 + 64 -> 64.
  const Tensor& ku = out.at("ku");
  EXPECT_EQ(ku.dtype(), DType::u8);
  EXPECT_EQ(values<uint8_t>(ku), (std::vector<uint8_t>{249, 64}));

  const Tensor& ui = out.at("ui");
  EXPECT_EQ(ui.dtype(), DType::i32);
  EXPECT_EQ(values<int32_t>(ui), (std::vector<int32_t>{1, 100, 200}));
}

TEST(OrtRunner, FloatSixteenOutputAndTiming) {
  if (auto why = testing::ort_unavailable(); !why.empty()) GTEST_SKIP() << why;
  TempDir dir;
  // y = Cast<f16>(x): f16 output written as '<f2'.
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(13);
  onnx::GraphProto* g = m.mutable_graph();
  g->set_name("cast16");
  add_io(g->add_input(), "x", TP::FLOAT, {3});
  onnx::AttributeProto* to = add_node(g, "Cast", {"x"}, {"y"})->add_attribute();
  to->set_name("to");
  to->set_type(onnx::AttributeProto::INT);
  to->set_i(TP::FLOAT16);
  add_io(g->add_output(), "y", TP::FLOAT16, {3});
  std::string bytes;
  ASSERT_TRUE(m.SerializeToString(&bytes));
  const std::string model = dir.file("cast16.onnx");
  testing::write_bytes(model, bytes);

  const auto out =
      testing::run_ort(model, {{"x", Tensor::from_f32({3}, std::vector<float>{0.5f, -3, 65504})}});
  const Tensor& y = out.at("y");
  EXPECT_EQ(y.dtype(), DType::f16);
  // IEEE half: 0.5 = 0x3800, -3 = 0xC200, 65504 (largest finite) = 0x7BFF.
  EXPECT_EQ(values<uint16_t>(y), (std::vector<uint16_t>{0x3800, 0xC200, 0x7BFF}));

  // --time N: one machine-readable line with the median of N runs.
  const std::string x = dir.file("x.npy");
  write_npy(x, Tensor::from_f32({3}, std::vector<float>{1, 2, 3}));
  const auto r =
      testing::run_shell("node " + testing::shell_quote(testing::ort_runner_script()) + " " +
                         testing::shell_quote(model) + " --input x=" + testing::shell_quote(x) +
                         " --time 3 --threads 2");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(std::regex_search(
      r.output,
      std::regex(R"(^median_ms=[0-9]+\.[0-9]{3} runs=3 threads=2$)", std::regex::multiline)))
      << r.output;
}

TEST(OrtRunner, BatchRunsEachInputSetInOrder) {
  if (auto why = testing::ort_unavailable(); !why.empty()) GTEST_SKIP() << why;
  TempDir dir;
  const std::string model = build_model(dir);
  auto first = inputs(), second = inputs();
  second[0].second = Tensor::from_f32({2, 3}, std::vector<float>{-1, 0, 1, 2, 3, 4});
  const auto out = testing::run_ort_batch(model, {first, second});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(values<float>(out[0].at("sum")), (std::vector<float>{1.5f, 4, 7, 3, 10.5f, 6}));
  // [-1 0 1; 2 3 4] + b and [-1 0 1; 2 3 4] · [1 2; 3 4; 5 6] = [4 4; 31 40]
  EXPECT_EQ(values<float>(out[1].at("sum")), (std::vector<float>{-0.5f, 2, 5, 1, 8.5f, 4}));
  EXPECT_EQ(values<float>(out[1].at("mm")), (std::vector<float>{4, 4, 31, 40}));
  EXPECT_EQ(values<int64_t>(out[1].at("n2")), (std::vector<int64_t>{-6, 10'000'000'000LL, 14}));
}

// The fetched models load and run through the harness with the inputs their
// producers document: Silero VAD v5 (input [batch, samples] f32, state
// [2, batch, 128] f32, sr a 0-d i64) gives a speech probability [batch, 1] and
// the next state; the PP-OCRv4 detector a sigmoid map [1, 1, H, W].
TEST(OrtRunner, RunsFetchedModels) {
  if (auto why = testing::ort_unavailable(); !why.empty()) GTEST_SKIP() << why;
  const std::string vad = testing::model_path("silero_vad_v5.onnx");
  const std::string det = testing::model_path("ch_PP-OCRv4_det_infer.onnx");
  if (!std::filesystem::exists(vad) || !std::filesystem::exists(det)) {
    GTEST_SKIP() << "models not fetched (scripts/fetch-models.sh)";
  }
  std::vector<float> audio(512);
  for (size_t i = 0; i < audio.size(); ++i)
    audio[i] = 0.5f * std::sin(0.1f * static_cast<float>(i));
  const auto v = testing::run_ort(vad, {{"input", Tensor::from_f32({1, 512}, audio)},
                                        {"state", Tensor::zeros(DType::f32, {2, 1, 128})},
                                        {"sr", make<int64_t>(DType::i64, {}, {16000})}});
  ASSERT_EQ(v.at("output").shape(), (Shape{1, 1}));
  const float p = v.at("output").data<float>()[0];
  EXPECT_GE(p, 0.0f);
  EXPECT_LE(p, 1.0f);
  EXPECT_EQ(v.at("stateN").shape(), (Shape{2, 1, 128}));

  const auto d = testing::run_ort(det, {{"x", Tensor::zeros(DType::f32, {1, 3, 64, 96})}});
  const Tensor& map = d.at("sigmoid_0.tmp_0");
  ASSERT_EQ(map.shape(), (Shape{1, 1, 64, 96}));
  for (float q : map.to_f32_vector()) {
    ASSERT_GE(q, 0.0f);
    ASSERT_LE(q, 1.0f);
  }
}

TEST(OrtRunner, BadInputsAreOneLineErrors) {
  if (auto why = testing::ort_unavailable(); !why.empty()) GTEST_SKIP() << why;
  TempDir dir;
  const std::string model = build_model(dir);
  const std::string node = "node " + testing::shell_quote(testing::ort_runner_script()) + " ";
  auto expect_one_line = [](const testing::CommandResult& r, const std::string& needle) {
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_EQ(r.output.rfind("ort-run: ", 0), 0u) << r.output;
    EXPECT_NE(r.output.find(needle), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find('\n'), r.output.size() - 1) << r.output;
  };
  // A model input not given.
  const std::string a = dir.file("a.npy");
  write_npy(a, Tensor::from_f32({2, 3}, std::vector<float>(6, 1.0f)));
  expect_one_line(
      testing::run_shell(node + model + " --input a=" + a + " --output " + dir.file("o")),
      "model input 'b' not given");
  // Not an .npy file.
  const std::string junk = dir.file("junk.npy");
  testing::write_bytes(junk, "not numpy at all");
  expect_one_line(
      testing::run_shell(node + model + " --input a=" + junk + " --output " + dir.file("o")),
      "junk.npy: not a .npy file");
  // Truncated data.
  std::string bytes = npy_bytes(Tensor::from_f32({2, 3}, std::vector<float>(6, 1.0f)));
  bytes.resize(bytes.size() - 4);
  const std::string shortf = dir.file("short.npy");
  testing::write_bytes(shortf, bytes);
  expect_one_line(
      testing::run_shell(node + model + " --input a=" + shortf + " --output " + dir.file("o")),
      "short.npy: data is 20 bytes");
  // f64 is not an exchanged dtype.
  const std::string f64 = dir.file("f64.npy");
  write_npy(f64, Tensor::zeros(DType::f64, {2, 3}));
  expect_one_line(
      testing::run_shell(node + model + " --input a=" + f64 + " --output " + dir.file("o")),
      "unsupported .npy dtype '<f8'");
  expect_one_line(testing::run_shell(node + model + " --threads 0 --time 1"),
                  "--threads needs a positive integer");
  // An output folder that is a file, and a folder where the second output
  // (mm.npy) goes: exit 2, and sum.npy is not written (it was, and the
  // errors were node's EEXIST / EISDIR with exit 1).
  const std::string all = " --input a=" + a + " --input b=" + a +
                          " --input n=" + dir.file("n.npy") + " --input h=" + dir.file("h.npy") +
                          " --input k=" + dir.file("k.npy") + " --input u=" + dir.file("u.npy");
  write_npy(dir.file("n.npy"), Tensor::zeros(DType::i64, {3}));
  write_npy(dir.file("h.npy"), Tensor::zeros(DType::f16, {2}));
  write_npy(dir.file("k.npy"), Tensor::zeros(DType::i32, {2}));
  write_npy(dir.file("u.npy"), Tensor::zeros(DType::u8, {3}));
  testing::write_bytes(dir.file("afile"), "x");
  expect_one_line(testing::run_shell(node + model + all + " --output " + dir.file("afile")),
                  "afile: cannot create the output folder");
  std::filesystem::create_directories(dir.file("o2/mm.npy"));
  expect_one_line(testing::run_shell(node + model + all + " --output " + dir.file("o2")),
                  "mm.npy: exists and is not a regular file");
  EXPECT_FALSE(std::filesystem::exists(dir.file("o2/sum.npy")));
}

}  // namespace
}  // namespace tailor
