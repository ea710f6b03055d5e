// Load-time rewrites for models the f32 runtime could not otherwise run:
// out-of-order nodes, fp16 weights and casts.
#include <gtest/gtest.h>

#include "tailor/core/error.h"
#include "tailor/graph/passes/f16_as_f32.h"
#include "tailor/graph/verify.h"
#include "tailor/runtime/executor.h"
#include "test_util.h"

namespace tailor::testing {
namespace {

using graph::Attribute;

graph::Node node(const char* op, std::vector<std::string> in, std::string out,
                 std::vector<std::pair<std::string, Attribute>> attrs = {}) {
  graph::Node n;
  n.op_type = op;
  n.name = out;
  n.inputs = std::move(in);
  n.outputs = {std::move(out)};
  n.attributes = std::move(attrs);
  return n;
}

std::vector<std::string> order(const graph::Graph& g) {
  std::vector<std::string> v;
  for (const auto& n : g.nodes) v.push_back(n.name);
  return v;
}

TEST(SortTopologically, MovesProducersFirstAndKeepsSortedGraphs) {
  graph::Graph g;
  g.inputs = {"x"};
  g.outputs = {"z"};
  // z = Add(y, x) listed before y = Relu(x); u = Neg(x) is independent.
  g.nodes = {node("Add", {"y", "x"}, "z"), node("Neg", {"x"}, "u"), node("Relu", {"x"}, "y")};
  graph::sort_topologically(g);
  EXPECT_EQ(order(g), (std::vector<std::string>{"u", "y", "z"}));
  graph::sort_topologically(g);  // already sorted: unchanged
  EXPECT_EQ(order(g), (std::vector<std::string>{"u", "y", "z"}));
}

TEST(SortTopologically, CycleIsAnErrorNamingANode) {
  graph::Graph g;
  g.name = "loop";
  g.inputs = {"x"};
  g.outputs = {"b"};
  g.nodes = {node("Add", {"x", "b"}, "a"), node("Relu", {"a"}, "b")};
  expect_error_naming([&] { graph::sort_topologically(g); }, "loop", "Add node 'a' is on a cycle");
}

graph::Model f16_model(bool f16_output) {
  graph::Model m;
  m.opset = 13;
  m.graph.inputs = {"x", "k"};
  m.graph.outputs = {"y", "kf"};
  m.graph.types["x"] = graph::ValueType{DType::f32, std::nullopt};
  m.graph.types["k"] = graph::ValueType{DType::i64, std::nullopt};
  m.graph.types["y"] = graph::ValueType{f16_output ? DType::f16 : DType::f32, std::nullopt};
  m.graph.types["xh"] = graph::ValueType{DType::f16, std::nullopt};
  // Values exact in f16.
  const std::vector<float> w = {0.5f, -1.25f, 2.0f, 3.0f};
  m.graph.add_initializer("w", Tensor::from_f32({4}, w).to(DType::f16));
  m.graph.nodes.push_back(node("Cast", {"x"}, "xh", {{"to", Attribute::of_int(10)}}));
  m.graph.nodes.push_back(node("Mul", {"xh", "w"}, "yh"));
  if (f16_output)
    m.graph.nodes.push_back(node("Relu", {"yh"}, "y"));
  else
    m.graph.nodes.push_back(node("Cast", {"yh"}, "y", {{"to", Attribute::of_int(1)}}));
  // An integer-to-float cast is a real conversion and stays.
  m.graph.nodes.push_back(node("Cast", {"k"}, "kf", {{"to", Attribute::of_int(1)}}));
  return m;
}

std::map<std::string, Tensor> feeds() {
  Tensor k = Tensor::zeros(DType::i64, {2});
  k.mutable_data<int64_t>()[0] = 7;
  k.mutable_data<int64_t>()[1] = -3;
  return {{"x", Tensor::from_f32({4}, std::vector<float>{1.5f, 2.0f, -0.25f, 4.0f})}, {"k", k}};
}

TEST(ComputeF16AsF32, WeightsBecomeF32AndFloatCastsGo) {
  graph::Model m = f16_model(false);
  EXPECT_GT(graph::compute_f16_as_f32(m), 0);
  EXPECT_EQ(m.graph.initializers.at("w").dtype(), DType::f32);
  // Cast x→f16 is dropped (x is f32); the output Cast stays (graph output, now f32→f32).
  EXPECT_EQ(order(m.graph), (std::vector<std::string>{"yh", "y", "kf"}));
  EXPECT_EQ(m.graph.nodes[0].inputs[0], "x");
  graph::verify(m);
  runtime::Executor ex(m);
  const auto out = ex.run(feeds());
  ASSERT_EQ(out.at("y").dtype(), DType::f32);
  // x · w by hand: 1.5·0.5, 2·−1.25, −0.25·2, 4·3.
  EXPECT_EQ(out.at("y").to_f32_vector(), (std::vector<float>{0.75f, -2.5f, -0.5f, 12.0f}));
  EXPECT_EQ(out.at("kf").to_f32_vector(), (std::vector<float>{7.0f, -3.0f}));
}

TEST(ComputeF16AsF32, F16OutputIsCastBack) {
  graph::Model m = f16_model(true);
  graph::compute_f16_as_f32(m);
  graph::verify(m);
  runtime::Executor ex(m);
  const auto out = ex.run(feeds());
  ASSERT_EQ(out.at("y").dtype(), DType::f16);
  // Relu(x · w) = 0.75, 0, 0, 12, all exact in f16.
  EXPECT_EQ(out.at("y").to_f32_vector(), (std::vector<float>{0.75f, 0.0f, 0.0f, 12.0f}));
}

TEST(ComputeF16AsF32, F32ModelIsUntouched) {
  graph::Model m;
  m.opset = 13;
  m.graph.inputs = {"x"};
  m.graph.outputs = {"y"};
  m.graph.types["x"] = graph::ValueType{DType::f32, std::nullopt};
  m.graph.nodes.push_back(node("Relu", {"x"}, "y"));
  EXPECT_EQ(graph::compute_f16_as_f32(m), 0);
  EXPECT_EQ(order(m.graph), (std::vector<std::string>{"y"}));
}

}  // namespace
}  // namespace tailor::testing
