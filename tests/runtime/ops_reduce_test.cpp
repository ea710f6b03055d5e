// Reductions, softmax and If on tiny inputs against values derived by hand.
#include <gtest/gtest.h>

#include <cmath>

#include "op_test_util.h"

namespace tailor::testing {
namespace {

using graph::Attribute;

TEST(OpsReduce, MeanSumMaxOverAxes) {
  const Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  expect_f32(OneOp{"ReduceMean", {x}, {{"axes", Attribute::of_ints({-1})}}}.run1(), {2, 1}, {2, 5});
  expect_f32(OneOp{"ReduceMean",
                   {x},
                   {{"axes", Attribute::of_ints({0})}, {"keepdims", Attribute::of_int(0)}}}
                 .run1(),
             {3}, {2.5f, 3.5f, 4.5f});
  expect_f32(OneOp{"ReduceMax", {x}, {{"keepdims", Attribute::of_int(0)}}}.run1(), {}, {6});
  // ReduceSum: axes attribute at opset 11, input at 13.
  expect_f32(OneOp{"ReduceSum", {x}, {{"axes", Attribute::of_ints({1})}}, 11}.run1(), {2, 1},
             {6, 15});
  expect_f32(OneOp{"ReduceSum", {x, i64({1}, {0})}, {}, 13}.run1(), {1, 3}, {5, 7, 9});
  // Middle axis of [2,2,2].
  expect_f32(OneOp{"ReduceMean",
                   {f32({2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7})},
                   {{"axes", Attribute::of_ints({1})}}}
                 .run1(),
             {2, 1, 2}, {1, 2, 5, 6});
}

// A NaN anywhere in a row makes its max and min NaN, wherever it lies (the
// first element, later ones); a row without one keeps its value. std::max
// and std::min had dropped it: [1, NaN] gave 1.
TEST(OpsReduce, MaxAndMinKeepNaN) {
  const float nan = std::nanf("");
  const Tensor x = f32({4, 3}, {nan, 1, 2, 1, nan, 3, -1, 5, nan, 4, -2, 0});
  for (const char* op : {"ReduceMax", "ReduceMin"}) {
    const Tensor y = OneOp{op, {x}, {{"axes", Attribute::of_ints({1})}}}.run1();
    ASSERT_EQ(y.shape(), (Shape{4, 1})) << op;
    const float* p = y.data<float>();
    for (int r = 0; r < 3; ++r) EXPECT_TRUE(std::isnan(p[r])) << op << " row " << r;
    EXPECT_EQ(p[3], std::string(op) == "ReduceMax" ? 4.f : -2.f) << op;
  }
}

TEST(OpsReduce, SoftmaxPerAxisAndCoercedTo2D) {
  // softmax([0, ln 3]) = [1/4, 3/4].
  const float l3 = std::log(3.0f);
  expect_f32(OneOp{"Softmax", {f32({2, 2}, {0, l3, l3, 0})}}.run1(), {2, 2},
             {0.25f, 0.75f, 0.75f, 0.25f});
  // Opset 13, axis 0 of [2, 2]: per column.
  expect_f32(
      OneOp{"Softmax", {f32({2, 2}, {0, 0, l3, 0})}, {{"axis", Attribute::of_int(0)}}}.run1(),
      {2, 2}, {0.25f, 0.5f, 0.75f, 0.5f});
  // Opset 11, axis 1 of [1, 2, 2]: the four values are one row.
  expect_f32(OneOp{"Softmax", {f32({1, 2, 2}, {0, 0, 0, l3})}, {{"axis", Attribute::of_int(1)}}, 11}
                 .run1(),
             {1, 2, 2}, {1.0f / 6, 1.0f / 6, 1.0f / 6, 0.5f});
  // Opset 13, same input, axis 1: per (n, w) column of 2.
  expect_f32(OneOp{"Softmax", {f32({1, 2, 2}, {0, 0, 0, l3})}, {{"axis", Attribute::of_int(1)}}, 13}
                 .run1(),
             {1, 2, 2}, {0.5f, 0.25f, 0.5f, 0.75f});
}

/// A model: If(cond) then y = x + 1 (x from the outer scope) else y = x * 2.
graph::Model if_model() {
  auto branch = [](const char* op, float c) {
    auto g = std::make_shared<graph::Graph>();
    g->add_initializer(std::string("c_") + op, f32({}, {c}));
    graph::Node n;
    n.op_type = op;
    n.name = op;
    n.inputs = {"x", std::string("c_") + op};
    n.outputs = {std::string("r_") + op};
    g->nodes.push_back(n);
    g->outputs = {std::string("r_") + op};
    return g;
  };
  graph::Model m;
  m.opset = 16;
  m.graph.inputs = {"cond", "x"};
  graph::Node relu;
  relu.op_type = "Relu";
  relu.name = "relu";
  relu.inputs = {"x_in"};
  relu.outputs = {"x"};
  m.graph.inputs = {"cond", "x_in"};
  graph::Node n;
  n.op_type = "If";
  n.name = "if";
  n.inputs = {"cond"};
  n.outputs = {"y"};
  n.attributes = {{"then_branch", Attribute::of_graph(branch("Add", 1))},
                  {"else_branch", Attribute::of_graph(branch("Mul", 2))}};
  m.graph.nodes = {relu, n};
  m.graph.outputs = {"y"};
  return m;
}

TEST(OpsControl, IfRunsTheChosenBranchWithOuterScopeValues) {
  runtime::Executor ex(if_model());
  const Tensor x = f32({2}, {3, -1});  // relu -> [3, 0]
  auto y = ex.run({{"cond", boolean({}, {1})}, {"x_in", x}});
  expect_f32(y.at("y"), {2}, {4, 1});
  y = ex.run({{"cond", boolean({}, {0})}, {"x_in", x}});
  expect_f32(y.at("y"), {2}, {6, 0});
}

}  // namespace
}  // namespace tailor::testing
