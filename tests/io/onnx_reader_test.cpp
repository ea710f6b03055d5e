// Tests of the ONNX reader: small models built in code, a malformed-input
// corpus, the PP-OCR models and the CLI.
#include "tailor/io/onnx.h"

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <vector>

#include "io/analysed.h"
#include "tailor/core/error.h"
#include "tailor/graph/weights.h"
#include "tailor/io/load_model.h"
#include "test_util.h"

namespace tailor {
namespace {

using testing::TempDir;
using TP = onnx::TensorProto;

constexpr const char* kRec = "ch_PP-OCRv4_rec_infer.onnx";

onnx::ModelProto new_model() {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.set_producer_name("tailor-test");
  m.add_opset_import()->set_version(13);
  m.mutable_graph()->set_name("main");
  return m;
}

void set_dims(TP* t, const std::vector<int64_t>& dims) {
  for (int64_t d : dims) t->add_dims(d);
}

/// f32 tensor proto with raw_data.
void fill_raw(TP* t, const std::string& name, const std::vector<int64_t>& dims,
              const std::vector<float>& v) {
  t->set_name(name);
  t->set_data_type(TP::FLOAT);
  set_dims(t, dims);
  t->set_raw_data(std::string(reinterpret_cast<const char*>(v.data()), v.size() * 4));
}

onnx::NodeProto* add_node(onnx::GraphProto* g, const std::string& op,
                          const std::vector<std::string>& in, const std::vector<std::string>& out,
                          const std::string& name = "") {
  onnx::NodeProto* n = g->add_node();
  n->set_op_type(op);
  n->set_name(name);
  for (const auto& s : in) n->add_input(s);
  for (const auto& s : out) n->add_output(s);
  return n;
}

onnx::AttributeProto* add_attr(onnx::NodeProto* n, const std::string& name) {
  onnx::AttributeProto* a = n->add_attribute();
  a->set_name(name);
  return a;
}

/// A Constant node producing `out` with attribute `value` = f32 raw tensor.
void add_constant(onnx::GraphProto* g, const std::string& out, const std::vector<int64_t>& dims,
                  const std::vector<float>& v) {
  onnx::AttributeProto* a = add_attr(add_node(g, "Constant", {}, {out}), "value");
  a->set_type(onnx::AttributeProto::TENSOR);
  fill_raw(a->mutable_t(), "", dims, v);
}

std::string save(const TempDir& dir, const onnx::ModelProto& m,
                 const std::string& name = "model.onnx") {
  std::string bytes;
  EXPECT_TRUE(m.SerializeToString(&bytes));
  const std::string path = dir.file(name);
  testing::write_bytes(path, bytes);
  return path;
}

std::vector<float> iota(size_t n) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>(i);
  return v;
}

testing::Analysed read(const std::string& path) {
  return testing::analysed(read_onnx(path));
}

/// read_onnx must throw a one-line Error naming the file and containing `needle`.
void expect_error(const std::string& path, const std::string& needle) {
  testing::expect_error_naming([&] { read_onnx(path); }, path, needle);
}

// ---- tensor data ----------------------------------------------------------

TEST(OnnxReader, InitializerRawData) {
  TempDir dir;
  onnx::ModelProto m = new_model();
  fill_raw(m.mutable_graph()->add_initializer(), "w", {2, 3}, {1, 2, 3, 4, 5, 6});
  const testing::Analysed f = read(save(dir, m));
  EXPECT_EQ(f.format, "onnx");
  EXPECT_EQ(f.metadata.at("ir_version"), "8");
  EXPECT_EQ(f.metadata.at("opset"), "13");
  EXPECT_EQ(f.metadata.at("producer_name"), "tailor-test");
  ASSERT_NE(f.model.proto, nullptr);
  EXPECT_EQ(f.model.proto->graph().initializer_size(), 1);
  EXPECT_TRUE(f.model.graph.nodes.empty());
  ASSERT_EQ(f.weights.size(), 1u);
  const graph::WeightView& w = f.weights[0];
  EXPECT_EQ(w.name, "w");
  EXPECT_EQ(w.tensor.dtype(), DType::f32);
  EXPECT_EQ(w.tensor.shape(), (Shape{2, 3}));
  EXPECT_EQ(w.tensor.to_f32_vector(), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(w.layout, WeightLayout::none);  // rank 2, but no matrix op consumes it
}

TEST(OnnxReader, InitializerTypedFields) {
  TempDir dir;
  onnx::ModelProto m = new_model();
  TP* f = m.mutable_graph()->add_initializer();
  f->set_name("f");
  f->set_data_type(TP::FLOAT);
  set_dims(f, {3});
  for (float x : {0.5f, -1.0f, 2.0f}) f->add_float_data(x);
  TP* i = m.mutable_graph()->add_initializer();
  i->set_name("i");
  i->set_data_type(TP::INT64);
  set_dims(i, {2});
  i->add_int64_data(-7);
  i->add_int64_data(1LL << 40);
  TP* d = m.mutable_graph()->add_initializer();
  d->set_name("d");
  d->set_data_type(TP::DOUBLE);
  d->add_double_data(0.25);  // scalar
  TP* b = m.mutable_graph()->add_initializer();
  b->set_name("b");
  b->set_data_type(TP::BOOL);
  set_dims(b, {2});
  b->add_int32_data(1);
  b->add_int32_data(0);
  const testing::Analysed mf = read(save(dir, m));
  ASSERT_EQ(mf.weights.size(), 4u);
  EXPECT_EQ(mf.find("f")->tensor.to_f32_vector(), (std::vector<float>{0.5f, -1.0f, 2.0f}));
  EXPECT_EQ(mf.find("f")->layout, WeightLayout::none);
  const Tensor& it = mf.find("i")->tensor;
  EXPECT_EQ(it.dtype(), DType::i64);
  EXPECT_EQ(it.data<int64_t>()[0], -7);
  EXPECT_EQ(it.data<int64_t>()[1], 1LL << 40);
  EXPECT_EQ(mf.find("d")->tensor.dtype(), DType::f64);
  EXPECT_EQ(mf.find("d")->tensor.shape(), Shape{});
  EXPECT_EQ(mf.find("d")->tensor.data<double>()[0], 0.25);
  EXPECT_EQ(mf.find("b")->tensor.dtype(), DType::boolean);
  EXPECT_EQ(mf.find("b")->tensor.to_f32_vector(), (std::vector<float>{1, 0}));
}

TEST(OnnxReader, HalfAndByteTypesFromInt32Data) {
  TempDir dir;
  onnx::ModelProto m = new_model();
  TP* h = m.mutable_graph()->add_initializer();
  h->set_name("h");
  h->set_data_type(TP::FLOAT16);
  set_dims(h, {2, 2});
  for (float x : {1.0f, -2.0f, 0.5f, 65504.0f}) h->add_int32_data(f32_to_f16(x));
  TP* bf = m.mutable_graph()->add_initializer();
  bf->set_name("bf");
  bf->set_data_type(TP::BFLOAT16);
  set_dims(bf, {2});
  bf->add_int32_data(f32_to_bf16(3.0f));
  bf->add_int32_data(f32_to_bf16(-0.125f));
  TP* q = m.mutable_graph()->add_initializer();
  q->set_name("q");
  q->set_data_type(TP::INT8);
  set_dims(q, {3});
  for (int x : {-128, 0, 127}) q->add_int32_data(x);
  const testing::Analysed f = read(save(dir, m));
  const graph::WeightView& hw = *f.find("h");
  EXPECT_EQ(hw.tensor.dtype(), DType::f16);
  EXPECT_EQ(hw.tensor.to_f32_vector(), (std::vector<float>{1.0f, -2.0f, 0.5f, 65504.0f}));
  EXPECT_EQ(hw.layout, WeightLayout::none);  // no consumer
  EXPECT_EQ(f.find("bf")->tensor.dtype(), DType::bf16);
  EXPECT_EQ(f.find("bf")->tensor.to_f32_vector(), (std::vector<float>{3.0f, -0.125f}));
  EXPECT_EQ(f.find("q")->tensor.dtype(), DType::i8);
  EXPECT_EQ(f.find("q")->tensor.to_f32_vector(), (std::vector<float>{-128, 0, 127}));
}

TEST(OnnxReader, ConstantNodes) {
  TempDir dir;
  onnx::ModelProto m = new_model();
  onnx::GraphProto* g = m.mutable_graph();
  add_constant(g, "c_tensor", {2, 2}, {1, 2, 3, 4});
  add_attr(add_node(g, "Constant", {}, {"c_float"}), "value_float")->set_f(1.5f);
  onnx::AttributeProto* fs = add_attr(add_node(g, "Constant", {}, {"c_floats"}), "value_floats");
  for (float x : {0.25f, 0.5f, 0.75f}) fs->add_floats(x);
  add_attr(add_node(g, "Constant", {}, {"c_int"}), "value_int")->set_i(-3);
  onnx::AttributeProto* is = add_attr(add_node(g, "Constant", {}, {"c_ints"}), "value_ints");
  is->add_ints(4);
  is->add_ints(5);
  add_attr(add_node(g, "Constant", {}, {"c_string"}), "value_string")->set_s("label");
  const testing::Analysed f = read(save(dir, m));
  ASSERT_EQ(f.weights.size(), 5u);  // the string constant is not a weight
  EXPECT_EQ(f.weights[0].name, "c_tensor");
  EXPECT_EQ(f.weights[0].tensor.to_f32_vector(), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(f.find("c_float")->tensor.shape(), Shape{});
  EXPECT_EQ(f.find("c_float")->tensor.to_f32_vector(), (std::vector<float>{1.5f}));
  EXPECT_EQ(f.find("c_floats")->tensor.shape(), Shape{3});
  EXPECT_EQ(f.find("c_floats")->tensor.to_f32_vector(), (std::vector<float>{0.25f, 0.5f, 0.75f}));
  EXPECT_EQ(f.find("c_int")->tensor.dtype(), DType::i64);
  EXPECT_EQ(f.find("c_int")->tensor.data<int64_t>()[0], -3);
  EXPECT_EQ(f.find("c_ints")->tensor.shape(), Shape{2});
  EXPECT_EQ(f.find("c_ints")->tensor.data<int64_t>()[1], 5);
  EXPECT_EQ(f.find("c_string"), nullptr);
}

TEST(OnnxReader, IfSubgraphConstants) {
  TempDir dir;
  onnx::ModelProto m = new_model();
  onnx::GraphProto* g = m.mutable_graph();
  fill_raw(g->add_initializer(), "w", {2, 2}, {1, 2, 3, 4});
  add_constant(g, "outer", {3, 2}, iota(6));
  onnx::NodeProto* node = add_node(g, "If", {"cond"}, {"y"}, "if0");
  onnx::AttributeProto* then_a = add_attr(node, "then_branch");
  then_a->set_type(onnx::AttributeProto::GRAPH);
  onnx::GraphProto* then_g = then_a->mutable_g();
  add_constant(then_g, "w", {2, 2}, {5, 6, 7, 8});      // collides with the initializer
  add_constant(then_g, "inner_only", {2, 3}, iota(6));  // unique name
  add_node(then_g, "MatMul", {"x", "w"}, {"t0"});       // the branch's own "w"
  add_node(then_g, "MatMul", {"x", "outer"}, {"t1"});   // outer-scope reference
  onnx::AttributeProto* else_a = add_attr(node, "else_branch");
  else_a->set_type(onnx::AttributeProto::GRAPH);
  add_constant(else_a->mutable_g(), "w", {1}, {9});
  const testing::Analysed f = read(save(dir, m));
  ASSERT_EQ(f.weights.size(), 5u);
  EXPECT_EQ(f.find("w")->tensor.to_f32_vector(), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(f.find("w")->layout, WeightLayout::none);  // the main graph's w has no consumer
  const graph::WeightView* then_w = f.find("if0/then_branch/w");
  ASSERT_NE(then_w, nullptr);
  EXPECT_EQ(then_w->tensor.to_f32_vector(), (std::vector<float>{5, 6, 7, 8}));
  EXPECT_EQ(then_w->layout, WeightLayout::in_out);
  ASSERT_NE(f.find("inner_only"), nullptr);
  EXPECT_EQ(f.find("inner_only")->layout, WeightLayout::none);
  EXPECT_EQ(f.find("outer")->layout, WeightLayout::in_out);  // consumed inside the branch
  ASSERT_NE(f.find("if0/else_branch/w"), nullptr);
  EXPECT_EQ(f.find("if0/else_branch/w")->tensor.to_f32_vector(), (std::vector<float>{9}));
}

TEST(OnnxReader, NestedAndRepeatedSubgraphNames) {
  TempDir dir;
  onnx::ModelProto m = new_model();
  onnx::GraphProto* g = m.mutable_graph();
  add_constant(g, "w", {2, 1, 1, 1}, {0, 0});
  // Two If nodes both named "dup", each branch defining "w".
  for (float v : {1.0f, 2.0f}) {
    onnx::NodeProto* n =
        add_node(g, "If", {"c"}, {"y" + std::to_string(static_cast<int>(v))}, "dup");
    add_constant(add_attr(n, "then_branch")->mutable_g(), "w", {1}, {v});
  }
  // An unnamed Loop (node index 3) whose body holds an If whose branch holds "w"
  // consumed by a Conv.
  onnx::NodeProto* loop = add_node(g, "Loop", {"", "c"}, {"z"});
  onnx::GraphProto* body = add_attr(loop, "body")->mutable_g();
  onnx::NodeProto* inner_if = add_node(body, "If", {"c"}, {"o"}, "inner");
  onnx::GraphProto* branch = add_attr(inner_if, "else_branch")->mutable_g();
  add_constant(branch, "w", {2, 1, 1, 1}, {3, 4});
  add_node(branch, "Conv", {"x", "w"}, {"o2"});
  const testing::Analysed f = read(save(dir, m));
  ASSERT_EQ(f.weights.size(), 4u);
  EXPECT_EQ(f.weights[0].name, "w");
  EXPECT_EQ(f.weights[1].name, "dup/then_branch/w");
  EXPECT_EQ(f.weights[1].tensor.to_f32_vector(), (std::vector<float>{1}));
  EXPECT_EQ(f.weights[2].name, "dup/then_branch/w#2");
  EXPECT_EQ(f.weights[2].tensor.to_f32_vector(), (std::vector<float>{2}));
  EXPECT_EQ(f.weights[3].name, "Loop@3/body/inner/else_branch/w");
  EXPECT_EQ(f.weights[3].layout, WeightLayout::conv);
  // The Conv consumes the branch's own "w", which shadows the outer one.
  EXPECT_EQ(f.weights[0].layout, WeightLayout::none);
}

TEST(OnnxReader, ExternalData) {
  TempDir dir;
  std::filesystem::create_directories(dir.path() / "data");
  std::string blob(16, '\xee');  // 16 bytes of padding before the tensor
  const std::vector<float> vals = {1.5f, -2.5f, 3.5f, 4.5f, 5.5f, 6.5f};
  blob.append(reinterpret_cast<const char*>(vals.data()), vals.size() * 4);
  testing::write_bytes(dir.file("data/weights.bin"), blob);
  onnx::ModelProto m = new_model();
  TP* t = m.mutable_graph()->add_initializer();
  t->set_name("ext");
  t->set_data_type(TP::FLOAT);
  set_dims(t, {2, 3});
  t->set_data_location(TP::EXTERNAL);
  for (auto [k, v] :
       {std::pair{"location", "data/./weights.bin"}, {"offset", "16"}, {"length", "24"}}) {
    auto* e = t->add_external_data();
    e->set_key(k);
    e->set_value(v);
  }
  const testing::Analysed f = read(save(dir, m));
  ASSERT_EQ(f.weights.size(), 1u);
  EXPECT_TRUE(f.weights[0].tensor.is_mapped());
  EXPECT_EQ(f.weights[0].tensor.to_f32_vector(), vals);
}

// ---- orientation ----------------------------------------------------------

TEST(OnnxReader, MatMulWeightIsInOut) {
  TempDir dir;
  onnx::ModelProto m = new_model();
  // Stored [K=2, N=3]: B[k][n] = 3k + n.
  add_constant(m.mutable_graph(), "B", {2, 3}, iota(6));
  add_node(m.mutable_graph(), "MatMul", {"x", "B"}, {"y"});
  const testing::Analysed f = read(save(dir, m));
  const graph::WeightView& w = *f.find("B");
  EXPECT_EQ(w.layout, WeightLayout::in_out);
  EXPECT_EQ(w.out_in_shape(), (Shape{3, 2}));
  const Tensor v = w.out_in();
  EXPECT_EQ(v.shape(), (Shape{3, 2}));
  // Row n of W[out, in] is column n of B: {B[0][n], B[1][n]}.
  EXPECT_EQ(v.to_f32_vector(), (std::vector<float>{0, 3, 1, 4, 2, 5}));
}

TEST(OnnxReader, GemmFollowsTransB) {
  TempDir dir;
  onnx::ModelProto m = new_model();
  onnx::GraphProto* g = m.mutable_graph();
  fill_raw(g->add_initializer(), "Bt", {4, 2}, iota(8));  // transB = 1: [N, K]
  fill_raw(g->add_initializer(), "B", {2, 4}, iota(8));   // transB = 0: [K, N]
  fill_raw(g->add_initializer(), "bias", {4}, iota(4));
  add_attr(add_node(g, "Gemm", {"x", "Bt", "bias"}, {"y"}), "transB")->set_i(1);
  add_attr(add_node(g, "Gemm", {"x", "B"}, {"z"}), "transB")->set_i(0);
  const testing::Analysed f = read(save(dir, m));
  EXPECT_EQ(f.find("Bt")->layout, WeightLayout::out_in);
  EXPECT_EQ(f.find("Bt")->out_in_shape(), (Shape{4, 2}));
  EXPECT_EQ(f.find("Bt")->out_in().to_f32_vector(), iota(8));
  EXPECT_EQ(f.find("B")->layout, WeightLayout::in_out);
  EXPECT_EQ(f.find("B")->out_in_shape(), (Shape{4, 2}));
  EXPECT_EQ(f.find("bias")->layout, WeightLayout::none);
}

TEST(OnnxReader, ConvKernels) {
  TempDir dir;
  onnx::ModelProto m = new_model();
  onnx::GraphProto* g = m.mutable_graph();
  // Grouped conv, group = 2: kernel [out=4, in/g=3, 2, 2].
  add_constant(g, "K", {4, 3, 2, 2}, iota(48));
  add_attr(add_node(g, "Conv", {"x", "K"}, {"y"}), "group")->set_i(2);
  // ConvTranspose kernel [in=2, out/g=3, 2, 2].
  add_constant(g, "KT", {2, 3, 2, 2}, iota(24));
  add_node(g, "ConvTranspose", {"y", "KT"}, {"z"});
  // A rank-3 MatMul operand (batched) keeps the default.
  add_constant(g, "B3", {2, 2, 2}, iota(8));
  add_node(g, "MatMul", {"z", "B3"}, {"u"});
  const testing::Analysed f = read(save(dir, m));
  const graph::WeightView& k = *f.find("K");
  EXPECT_EQ(k.layout, WeightLayout::conv);
  EXPECT_EQ(k.out_in_shape(), (Shape{4, 12}));
  EXPECT_EQ(k.out_in().to_f32_vector(), iota(48));  // a reshape, no transpose
  EXPECT_EQ(f.find("KT")->layout, WeightLayout::conv_transpose);
  EXPECT_EQ(f.find("KT")->out_in_shape(), (Shape{3, 8}));
  EXPECT_EQ(f.find("B3")->layout, WeightLayout::out_in);
}

// ---- malformed input ------------------------------------------------------

TEST(OnnxReader, EmbeddingTablesHaveAViewAndBroadcastBiasesNone) {
  TempDir dir;
  onnx::ModelProto m = new_model();
  onnx::GraphProto* g = m.mutable_graph();
  // Gather's data is an embedding table [vocab=3, dim=2]: one row per token.
  add_constant(g, "E", {3, 2}, iota(6));
  add_node(g, "Gather", {"E", "ids"}, {"x"});
  // A ConvTranspose bias [1, 24, 1, 1] added by broadcast (as in PP-OCR's
  // detector) is no matrix, whatever its rank.
  add_constant(g, "bias", {1, 24, 1, 1}, iota(24));
  add_node(g, "Add", {"x", "bias"}, {"y"});
  const testing::Analysed f = read(save(dir, m));
  EXPECT_EQ(f.find("E")->layout, WeightLayout::out_in);
  EXPECT_EQ(f.find("E")->out_in_shape(), (Shape{3, 2}));
  EXPECT_EQ(f.find("bias")->layout, WeightLayout::none);
  EXPECT_TRUE(f.find("bias")->out_in_shape().empty());
}

TEST(OnnxReaderMalformed, TruncatedRealModel) {
  const std::string real = testing::model_path(kRec);
  if (!std::filesystem::exists(real))
    FAIL() << real << " absent: run scripts/fetch-models.sh (make test does)";
  std::ifstream in(real, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  TempDir dir;
  const std::string path = dir.file("half.onnx");
  testing::write_bytes(path, bytes.substr(0, bytes.size() / 2));
  expect_error(path, "not a valid ONNX model");
}

TEST(OnnxReaderMalformed, GarbageAndEmpty) {
  TempDir dir;
  std::string garbage;
  for (int i = 0; i < 4096; ++i) garbage += static_cast<char>((i * 7919 + 13) % 251);
  testing::write_bytes(dir.file("garbage.onnx"), garbage);
  expect_error(dir.file("garbage.onnx"), "not a valid ONNX model");
  testing::write_bytes(dir.file("empty.onnx"), "");
  expect_error(dir.file("empty.onnx"), "no graph");
  expect_error(dir.file("absent.onnx"), "cannot open");
}

TEST(OnnxReaderMalformed, RawDataLengthMismatch) {
  TempDir dir;
  onnx::ModelProto m = new_model();
  fill_raw(m.mutable_graph()->add_initializer(), "x", {3, 4}, {});
  m.mutable_graph()->mutable_initializer(0)->set_raw_data(std::string(10, '\0'));
  expect_error(save(dir, m), "tensor 'x': raw_data holds 10 bytes, shape [3, 4] f32 needs 48");
}

TEST(OnnxReaderMalformed, TypedCountMismatch) {
  TempDir dir;
  onnx::ModelProto m = new_model();
  TP* t = m.mutable_graph()->add_initializer();
  t->set_name("x");
  t->set_data_type(TP::FLOAT);
  set_dims(t, {2, 2});
  t->add_float_data(1);
  expect_error(save(dir, m), "float_data holds 1 values, shape [2, 2] f32 needs 4");
}

TEST(OnnxReaderMalformed, NegativeDim) {
  TempDir dir;
  onnx::ModelProto m = new_model();
  fill_raw(m.mutable_graph()->add_initializer(), "x", {2, -3}, {});
  expect_error(save(dir, m), "negative dimension -3");
}

TEST(OnnxReaderMalformed, HugeClaimedDims) {
  TempDir dir;
  onnx::ModelProto m = new_model();
  fill_raw(m.mutable_graph()->add_initializer(), "x", {1LL << 40, 1LL << 40}, {1, 2});
  expect_error(save(dir, m), "too large");
  // Large but representable: rejected by the length check, nothing allocated.
  onnx::ModelProto m2 = new_model();
  fill_raw(m2.mutable_graph()->add_initializer(), "y", {1LL << 40, 1LL << 20}, {1, 2});
  expect_error(save(dir, m2, "m2.onnx"), "raw_data holds 8 bytes");
  // No elements, but dims whose product overflows (found by fuzzing).
  onnx::ModelProto m3 = new_model();
  fill_raw(m3.mutable_graph()->add_initializer(), "z", {0, 1LL << 40, 1LL << 40}, {});
  expect_error(save(dir, m3, "m3.onnx"), "too large");
}

TEST(OnnxReaderMalformed, UnsupportedDataType) {
  TempDir dir;
  onnx::ModelProto m = new_model();
  TP* t = m.mutable_graph()->add_initializer();
  t->set_name("labels");
  t->set_data_type(TP::STRING);
  set_dims(t, {1});
  t->add_string_data("cat");
  expect_error(save(dir, m), "tensor 'labels' has unsupported ONNX data type 8 (STRING)");
  t->set_data_type(19);  // FLOAT8E5M2, newer than libonnx
  t->clear_string_data();
  expect_error(save(dir, m), "unsupported ONNX data type 19 (FLOAT8E5M2)");
}

TEST(OnnxReaderMalformed, DuplicateName) {
  TempDir dir;
  onnx::ModelProto m = new_model();
  fill_raw(m.mutable_graph()->add_initializer(), "x", {1}, {1});
  add_constant(m.mutable_graph(), "x", {1}, {2});
  expect_error(save(dir, m), "defined twice");
}

TEST(OnnxReaderMalformed, UnsupportedConstantForms) {
  TempDir dir;
  onnx::ModelProto m = new_model();
  add_attr(add_node(m.mutable_graph(), "Constant", {}, {"s"}), "sparse_value")
      ->mutable_sparse_tensor();
  expect_error(save(dir, m), "Constant 's': sparse_value is unsupported");
  onnx::ModelProto m2 = new_model();
  add_node(m2.mutable_graph(), "Constant", {}, {"c"});
  expect_error(save(dir, m2), "Constant 'c' has no value attribute");
}

/// A model with one external tensor "e" ([2] f32) at `location`.
std::string external_model(const TempDir& dir, const std::string& location,
                           const std::string& offset = "0", const std::string& length = "") {
  onnx::ModelProto m = new_model();
  TP* t = m.mutable_graph()->add_initializer();
  t->set_name("e");
  t->set_data_type(TP::FLOAT);
  set_dims(t, {2});
  t->set_data_location(TP::EXTERNAL);
  auto* e = t->add_external_data();
  e->set_key("location");
  e->set_value(location);
  e = t->add_external_data();
  e->set_key("offset");
  e->set_value(offset);
  if (!length.empty()) {
    e = t->add_external_data();
    e->set_key("length");
    e->set_value(length);
  }
  return save(dir, m, "m.onnx");
}

TEST(OnnxReaderMalformed, ExternalDataEscapes) {
  TempDir dir;
  expect_error(external_model(dir, "../../etc/passwd"),
               "external data path '../../etc/passwd' escapes the model folder");
  expect_error(external_model(dir, "a/../../x.bin"), "escapes the model folder");
  expect_error(external_model(dir, "/etc/passwd"), "escapes the model folder (absolute path)");
  // A symbolic link inside the folder that leads out of it.
  TempDir other;
  testing::write_bytes(other.file("secret.bin"), std::string(8, 'x'));
  std::filesystem::create_symlink(other.path() / "secret.bin", dir.path() / "link.bin");
  expect_error(external_model(dir, "link.bin"), "through a symbolic link");
}

TEST(OnnxReaderMalformed, ExternalDataRange) {
  TempDir dir;
  testing::write_bytes(dir.file("w.bin"), std::string(8, '\0'));
  expect_error(external_model(dir, "w.bin", "4"), "exceeds file 'w.bin' of 8 bytes");
  expect_error(external_model(dir, "w.bin", "1000"), "offset 1000 length 8 exceeds file");
  expect_error(external_model(dir, "w.bin", "0", "4"),
               "external data length is 4 bytes, shape [2] f32 needs 8");
  expect_error(external_model(dir, "w.bin", "-1"), "not a non-negative integer");
  expect_error(external_model(dir, "missing.bin"), "external data file 'missing.bin' not found");
  EXPECT_EQ(read(external_model(dir, "w.bin", "0")).weights[0].tensor.numel(), 2);
}

// ---- real models ----------------------------------------------------------

TEST(OnnxReaderReal, Recognizer) {
  const std::string path = testing::model_path(kRec);
  if (!std::filesystem::exists(path))
    FAIL() << path << " absent: run scripts/fetch-models.sh (make test does)";
  const testing::Analysed f = read(path);
  int64_t numel = 0, floating = 0;
  int conv = 0, in_out = 0;
  for (const graph::WeightView& w : f.weights) {
    numel += w.tensor.numel();
    if (is_floating(w.tensor.dtype())) floating += w.tensor.numel();
    conv += w.layout == WeightLayout::conv;
    in_out += w.layout == WeightLayout::in_out;
  }
  EXPECT_EQ(f.weights.size(), 325u);
  EXPECT_EQ(numel, 2690312);
  EXPECT_EQ(floating, 2690296);
  EXPECT_EQ(conv, 38);                                      // one kernel per Conv node
  EXPECT_EQ(in_out, 9);                                     // the MatMuls with a constant B
  const graph::WeightView* head = f.find("linear_85.w_0");  // CTC head, stored [120, 6625]
  ASSERT_NE(head, nullptr);
  EXPECT_EQ(head->layout, WeightLayout::in_out);
  EXPECT_EQ(head->out_in_shape(), (Shape{6625, 120}));
  EXPECT_EQ(f.metadata.at("opset"), "9");
}

TEST(OnnxReaderReal, DetectorAndClassifier) {
  // Counts of weights by consumer, taken independently with python-onnx
  // (Conv / ConvTranspose / MatMul initial inputs of each graph).
  struct Expected {
    const char* name;
    int conv, conv_transpose, in_out;
  };
  for (const Expected& e : {Expected{"ch_PP-OCRv4_det_infer.onnx", 62, 2, 0},
                            Expected{"ch_ppocr_mobile_v2.0_cls_infer.onnx", 53, 0, 1}}) {
    const std::string path = testing::model_path(e.name);
    if (!std::filesystem::exists(path))
      FAIL() << path << " absent: run scripts/fetch-models.sh (make test does)";
    const testing::Analysed f = read(path);
    int conv = 0, conv_t = 0, in_out = 0;
    for (const graph::WeightView& w : f.weights) {
      conv += w.layout == WeightLayout::conv;
      conv_t += w.layout == WeightLayout::conv_transpose;
      in_out += w.layout == WeightLayout::in_out;
    }
    EXPECT_EQ(conv, e.conv) << e.name;
    EXPECT_EQ(conv_t, e.conv_transpose) << e.name;
    EXPECT_EQ(in_out, e.in_out) << e.name;
  }
}

TEST(OnnxReaderLoadModel, OnnxExtensionWinsOverSafetensorsSniff) {
  // Bytes 0-3 are 08 08 12 06 (ir_version 8, producer_name of 6 bytes), so
  // byte 8 is the producer name's '{', which the safetensors sniff looks for.
  TempDir dir;
  onnx::ModelProto m = new_model();
  m.set_producer_name("abcd{f");
  m.clear_opset_import();
  fill_raw(m.mutable_graph()->add_initializer(), "w", {2}, {1, 2});
  const std::string path = save(dir, m);
  std::ifstream in(path, std::ios::binary);
  char head[9] = {};
  in.read(head, 9);
  ASSERT_EQ(head[8], '{');
  const testing::Analysed f = testing::analysed(load_model(path));
  EXPECT_EQ(f.format, "onnx");
  ASSERT_EQ(f.weights.size(), 1u);
}

// ---- CLI ------------------------------------------------------------------

TEST(OnnxReaderCli, InspectJsonTotals) {
  const std::string path = testing::model_path(kRec);
  if (!std::filesystem::exists(path))
    FAIL() << path << " absent: run scripts/fetch-models.sh (make test does)";
  const testing::CommandResult r = testing::run_cli("inspect '" + path + "' --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j["format"], "onnx");
  EXPECT_EQ(j["totals"]["tensors"], 325);
  EXPECT_EQ(j["totals"]["numel"], 2690312);
  EXPECT_EQ(j["totals"]["floating_numel"], 2690296);
  // 38 Conv kernels and 9 MatMul weights (linear_77 … linear_85); the rest are
  // BatchNorm parameters, biases and shape constants.
  EXPECT_EQ(j["totals"]["matrices"], 47);
}

TEST(OnnxReaderCli, InspectGarbageFails) {
  TempDir dir;
  const std::string path = dir.file("garbage.onnx");
  testing::write_bytes(path, std::string("\x08\x07\xff\xff\xff\xff garbage", 15));
  const testing::CommandResult r = testing::run_cli("inspect '" + path + "'");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find(path), std::string::npos) << r.output;
  ASSERT_FALSE(r.output.empty());
  EXPECT_EQ(r.output.find('\n'), r.output.size() - 1) << r.output;  // one line
}

}  // namespace
}  // namespace tailor
