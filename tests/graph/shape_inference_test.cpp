// Shape inference: symbolic dims, shape-computation tracking, agreement with
// the shapes the executor produces, and constant folding of shape subgraphs.
#include <gtest/gtest.h>

#include <filesystem>
#include <tuple>
#include <vector>

#include "../runtime/op_test_util.h"
#include "tailor/core/error.h"
#include "tailor/core/rng.h"
#include "tailor/graph/shape_inference.h"
#include "tailor/graph/verify.h"
#include "tailor/io/onnx.h"
#include "test_util.h"

namespace tailor::testing {
namespace {

using graph::Attribute;
using graph::Dim;

graph::Node node(const char* op, std::vector<std::string> in, std::vector<std::string> out,
                 std::vector<std::pair<std::string, Attribute>> attrs = {}) {
  graph::Node n;
  n.op_type = op;
  n.name = out.at(0);
  n.inputs = std::move(in);
  n.outputs = std::move(out);
  n.attributes = std::move(attrs);
  return n;
}

// x [batch, 3, 4] → Shape → Gather(0) → Unsqueeze → Concat with [12] → Reshape:
// y [batch, 12], the batch symbol carried through the shape computation.
TEST(ShapeInference, SymbolicBatchThroughAShapeComputation) {
  graph::Model m;
  m.opset = 13;
  m.graph.inputs = {"x"};
  m.graph.types["x"] = graph::ValueType{
      DType::f32, graph::SymShape{Dim::named("batch"), Dim::known(3), Dim::known(4)}};
  m.graph.add_initializer("zero", i64({}, {0}));
  m.graph.add_initializer("axes0", i64({1}, {0}));
  m.graph.add_initializer("twelve", i64({1}, {12}));
  m.graph.nodes = {node("Shape", {"x"}, {"s"}),
                   node("Gather", {"s", "zero"}, {"b"}),
                   node("Unsqueeze", {"b", "axes0"}, {"b1"}),
                   node("Concat", {"b1", "twelve"}, {"target"}, {{"axis", Attribute::of_int(0)}}),
                   node("Reshape", {"x", "target"}, {"y"}),
                   node("Relu", {"y"}, {"z"}),
                   node("Transpose", {"z"}, {"t"})};
  m.graph.outputs = {"t"};
  graph::infer_shapes(m);
  EXPECT_EQ(m.graph.type_of("y")->to_string(), "f32[batch, 12]");
  EXPECT_EQ(m.graph.type_of("t")->to_string(), "f32[12, batch]");
  EXPECT_EQ(m.graph.type_of("s")->to_string(), "i64[3]");
  // With -1 instead of 12 the inferred dim is 3·4 = 12 (batch cancels).
  m.graph.initializers["twelve"] = i64({1}, {-1});
  graph::infer_shapes(m);
  EXPECT_EQ(m.graph.type_of("y")->to_string(), "f32[batch, 12]");
  // Fixing the batch folds the whole shape computation into an initializer.
  graph::specialize_input(m, "x", {2, 3, 4});
  EXPECT_EQ(m.graph.type_of("t")->to_string(), "f32[12, 2]");
  EXPECT_EQ(graph::fold_shape_constants(m), 4);
  ASSERT_EQ(m.graph.nodes.size(), 3u);
  EXPECT_EQ(i64_values(m.graph.initializers.at("target")), (std::vector<int64_t>{2, -1}));
  runtime::Executor ex(m);
  EXPECT_EQ(ex.run({{"x", f32({2, 3, 4}, std::vector<float>(24, 1.0f))}}).at("t").shape(),
            (Shape{12, 2}));
}

// Slice steps of 0 and 2^63 - 1 (found by review): a 0 step divided by zero
// (SIGFPE), and a step near 2^63 overflowed the element count.
TEST(ShapeInference, SliceExtremeStepsAndZeroStep) {
  const auto model = [](int64_t start, int64_t end, int64_t step) {
    graph::Model m;
    m.opset = 13;
    m.graph.inputs = {"x"};
    m.graph.types["x"] = graph::ValueType{DType::f32, graph::sym_shape_of({3, 4})};
    m.graph.add_initializer("s0", i64({1}, {start}));
    m.graph.add_initializer("s1", i64({1}, {end}));
    m.graph.add_initializer("ax", i64({1}, {1}));
    m.graph.add_initializer("st", i64({1}, {step}));
    m.graph.nodes = {node("Slice", {"x", "s0", "s1", "ax", "st"}, {"y"})};
    m.graph.outputs = {"y"};
    return m;
  };
  // numpy: x[:, 0:4:2**63-1] has 1 column, x[:, 1:4:2] has 2. (Negative
  // constants are not tracked as numbers, so negative steps leave the dim unknown.)
  for (const auto& [start, end, step, cols] :
       std::vector<std::tuple<int64_t, int64_t, int64_t, int>>{{0, 4, INT64_MAX, 1},
                                                               {1, INT64_MAX, 2, 2}}) {
    graph::Model m = model(start, end, step);
    graph::infer_shapes(m);
    EXPECT_EQ(m.graph.type_of("y")->to_string(), "f32[3, " + std::to_string(cols) + "]") << step;
  }
  graph::Model zero = model(0, 4, 0);
  EXPECT_THROW(graph::infer_shapes(zero), tailor::Error);
}

TEST(ShapeInference, ConvPoolMatMulBroadcastRules) {
  graph::Model m;
  m.opset = 13;
  m.graph.inputs = {"x"};
  m.graph.types["x"] = graph::ValueType{
      DType::f32, graph::SymShape{Dim::named("n"), Dim::known(3), Dim::known(17), Dim::named("w")}};
  m.graph.add_initializer("k", Tensor::zeros(DType::f32, {8, 3, 3, 3}));
  m.graph.add_initializer("bias", Tensor::zeros(DType::f32, {1, 8, 1, 1}));
  m.graph.add_initializer("mm", Tensor::zeros(DType::f32, {5, 6}));
  m.graph.nodes = {
      node("Conv", {"x", "k"}, {"c"},
           {{"pads", Attribute::of_ints({1, 1, 1, 1})}, {"strides", Attribute::of_ints({2, 1})}}),
      node("Add", {"c", "bias"}, {"a"}),
      node("MaxPool", {"a"}, {"p"},
           {{"kernel_shape", Attribute::of_ints({2, 2})}, {"strides", Attribute::of_ints({2, 2})}}),
      node("GlobalAveragePool", {"p"}, {"g"}),
      node("Flatten", {"g"}, {"f"}),
      node("Slice", {"f", "s0", "s1"}, {"sl"}),
      node("MatMul", {"sl", "mm"}, {"y"})};
  m.graph.add_initializer("s0", i64({1}, {0}));
  m.graph.add_initializer("s1", i64({1}, {5}));
  m.graph.nodes[5].inputs.push_back("ax");
  m.graph.add_initializer("ax", i64({1}, {1}));
  m.graph.outputs = {"y"};
  graph::infer_shapes(m);
  // Conv: (17 + 2 − 3)/2 + 1 = 9 rows; width symbolic with a 3-wide kernel: unknown.
  EXPECT_EQ(m.graph.type_of("c")->to_string(), "f32[n, 8, 9, ?]");
  EXPECT_EQ(m.graph.type_of("a")->to_string(), "f32[n, 8, 9, ?]");
  EXPECT_EQ(m.graph.type_of("p")->to_string(), "f32[n, 8, 4, ?]");
  EXPECT_EQ(m.graph.type_of("g")->to_string(), "f32[n, 8, 1, 1]");
  EXPECT_EQ(m.graph.type_of("f")->to_string(), "f32[n, 8]");
  EXPECT_EQ(m.graph.type_of("y")->to_string(), "f32[n, 6]");
}

/// Every value of the main graph made a graph output, so the executor returns them all.
graph::Model expose_all(graph::Model m) {
  std::set<std::string> outs(m.graph.outputs.begin(), m.graph.outputs.end());
  for (const auto& n : m.graph.nodes)
    for (const auto& o : n.outputs)
      if (!o.empty() && !outs.count(o)) {
        m.graph.outputs.push_back(o);
        outs.insert(o);
      }
  return m;
}

Tensor noise(Shape s) {
  Rng rng(5);
  std::vector<float> v(static_cast<size_t>(shape_numel(s)));
  for (float& x : v) x = static_cast<float>(rng.uniform(-1, 1));
  return Tensor::from_f32(std::move(s), v);
}

void expect_inferred_matches_runtime(const std::string& model_name, const Shape& shape,
                                     size_t min_known) {
  const std::string path = model_path(model_name);
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "models/" << model_name << " not fetched";
  OneThread one_thread;
  graph::Model m = graph::import_onnx(path);
  graph::specialize_input(m, m.graph.inputs.at(0), shape);
  const graph::Model all = expose_all(m);
  runtime::Executor ex(all);
  const auto values = ex.run({{m.graph.inputs.at(0), noise(shape)}});
  size_t known = 0;
  for (const auto& [name, t] : values) {
    const graph::ValueType* vt = m.graph.type_of(name);
    ASSERT_TRUE(vt && vt->shape) << name << " has no inferred shape";
    const auto c = graph::concrete_shape(*vt->shape);
    ASSERT_TRUE(c) << name << " inferred " << vt->to_string();
    EXPECT_EQ(*c, t.shape()) << name;
    EXPECT_EQ(*vt->dtype, t.dtype()) << name;
    ++known;
  }
  EXPECT_GE(known, min_known);
  // Folding the shape computations keeps the outputs.
  graph::Model folded = m;
  const int removed = graph::fold_shape_constants(folded);
  runtime::Executor ex2(folded);
  const auto out2 = ex2.run({{m.graph.inputs.at(0), noise(shape)}});
  for (const auto& name : m.graph.outputs)
    EXPECT_EQ(out2.at(name).to_f32_vector(), values.at(name).to_f32_vector()) << name;
  ::testing::Test::RecordProperty("folded_nodes", removed);
}

TEST(ShapeInference, RecognizerShapesAllKnownAndMatchTheRuntime) {
  expect_inferred_matches_runtime("ch_PP-OCRv4_rec_infer.onnx", {1, 3, 48, 160}, 500);
}

TEST(ShapeInference, ClassifierShapesAllKnownAndMatchTheRuntime) {
  expect_inferred_matches_runtime("ch_ppocr_mobile_v2.0_cls_infer.onnx", {1, 3, 48, 192}, 100);
}

TEST(ShapeInference, DetectorShapesAllKnownAndMatchTheRuntime) {
  expect_inferred_matches_runtime("ch_PP-OCRv4_det_infer.onnx", {1, 3, 64, 96}, 100);
}

TEST(ShapeInference, RecognizerKeepsTheBatchSymbol) {
  const std::string path = model_path("ch_PP-OCRv4_rec_infer.onnx");
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "recogniser not fetched";
  graph::Model m = graph::import_onnx(path);
  m.graph.types.erase("softmax_11.tmp_0");  // forget the declared output type
  graph::infer_shapes(m);
  const graph::ValueType* y = m.graph.type_of("softmax_11.tmp_0");
  ASSERT_TRUE(y && y->shape);
  ASSERT_EQ(y->shape->size(), 3u);
  EXPECT_EQ((*y->shape)[0].symbol, "p2o.DynamicDimension.0");
  EXPECT_EQ((*y->shape)[2].value, 6625);
}

}  // namespace
}  // namespace tailor::testing
