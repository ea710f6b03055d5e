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
