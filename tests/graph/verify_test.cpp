// The verifier: each structural invariant broken once.
#include <gtest/gtest.h>

#include "tailor/core/error.h"
#include "tailor/graph/verify.h"
#include "test_util.h"

namespace tailor::testing {
namespace {

graph::Model chain() {
  graph::Model m;
  m.source = "g.onnx";
  m.opset = 13;
  m.graph.inputs = {"x"};
  graph::Node a;
  a.name = "a";
  a.op_type = "Relu";
  a.inputs = {"x"};
  a.outputs = {"h"};
  graph::Node b = a;
  b.name = "b";
  b.inputs = {"h"};
  b.outputs = {"y"};
  m.graph.nodes = {a, b};
  m.graph.outputs = {"y"};
  return m;
}

TEST(GraphVerify, AcceptsAWellFormedGraph) {
  EXPECT_NO_THROW(graph::verify(chain()));
}

TEST(GraphVerify, ValueDefinedTwice) {
  graph::Model m = chain();
  m.graph.nodes[1].outputs = {"h"};
  m.graph.outputs = {"h"};
  expect_error_naming([&] { graph::verify(m); }, "g.onnx", "'h' is defined twice");
}

TEST(GraphVerify, UseBeforeDefinition) {
  graph::Model m = chain();
  std::swap(m.graph.nodes[0], m.graph.nodes[1]);
  expect_error_naming([&] { graph::verify(m); }, "g.onnx", "reads 'h'");
}

TEST(GraphVerify, OutputNeverProduced) {
  graph::Model m = chain();
  m.graph.outputs = {"z"};
  expect_error_naming([&] { graph::verify(m); }, "g.onnx", "'z' is never produced");
}

TEST(GraphVerify, DanglingTypedValue) {
  graph::Model m = chain();
  m.graph.types["ghost"] = graph::ValueType{DType::f32, std::nullopt};
  expect_error_naming([&] { graph::verify(m); }, "g.onnx", "ghost");
}

TEST(GraphVerify, InitializerTypeMismatch) {
  graph::Model m = chain();
  m.graph.add_initializer("w", Tensor::zeros(DType::f32, {2}));
  m.graph.types["w"] = graph::ValueType{DType::f32, graph::sym_shape_of({3})};
  expect_error_naming([&] { graph::verify(m); }, "g.onnx", "initializer 'w'");
}

TEST(GraphVerify, SubgraphSeesOuterScope) {
  graph::Model m = chain();
  auto sub = std::make_shared<graph::Graph>();
  graph::Node n;
  n.op_type = "Relu";
  n.inputs = {"h"};  // outer value
  n.outputs = {"s"};
  sub->nodes = {n};
  sub->outputs = {"s"};
  graph::Node iff;
  iff.name = "if";
  iff.op_type = "If";
  iff.inputs = {"x"};
  iff.outputs = {"z"};
  iff.attributes = {{"then_branch", graph::Attribute::of_graph(sub)},
                    {"else_branch", graph::Attribute::of_graph(sub)}};
  m.graph.nodes.push_back(iff);
  EXPECT_NO_THROW(graph::verify(m));
  sub->nodes[0].inputs = {"nowhere"};
  expect_error_naming([&] { graph::verify(m); }, "g.onnx", "'nowhere'");
}

}  // namespace
}  // namespace tailor::testing
