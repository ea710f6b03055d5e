// Constant folding, dead-code elimination and CSE on hand-built graphs.
#include "pass_test_util.h"
#include "tailor/core/error.h"
#include "test_util.h"

namespace tailor::testing {
namespace {

TEST(ConstantFolding, FoldsConstantNodesAndArithmeticIntoInitializers) {
  // y = x * (Constant[1,2,3] + c) with c = [10, 20, 30]: the Add folds to [11, 22, 33].
  GraphBuilder b;
  b.input("x", {3}).init("c", vec_f32({3}, {10, 20, 30}));
  b.node("Constant", {}, {"k"}, {{"value", graph::Attribute::of_tensor(vec_f32({3}, {1, 2, 3}))}});
  b.node("Add", {"k", "c"}, {"s"}).node("Mul", {"x", "s"}, {"y"}).output("y");
  const graph::Model out = check_passes(b.model(), {"fold"}, {{"x", vec_f32({3}, {1, 2, -1})}});
  ASSERT_EQ(out.graph.nodes.size(), 1u);
  EXPECT_EQ(out.graph.nodes[0].op_type, "Mul");
  ASSERT_TRUE(out.graph.initializers.count("s"));
  EXPECT_EQ(out.graph.initializers.at("s").to_f32_vector(), (std::vector<float>{11, 22, 33}));
  expect_f32(run_model(out, {{"x", vec_f32({3}, {1, 2, -1})}}).at("y"), {3}, {11, 44, -33});
}

TEST(ConstantFolding, SizeCapLeavesLargeResultsComputed) {
  // ConstantOfShape([4, 5]) has 20 elements: folded under a cap of 20, kept under 19.
  Tensor shape = Tensor::zeros(DType::i64, {2});
  shape.mutable_data<int64_t>()[0] = 4;
  shape.mutable_data<int64_t>()[1] = 5;
  GraphBuilder b;
  b.input("x", {4, 5}).init("shape", shape);
  b.node("ConstantOfShape", {"shape"}, {"z"}).node("Add", {"x", "z"}, {"y"}).output("y");
  graph::PassOptions o = runtime::default_pass_options();
  o.fold_max_elements = 20;
  EXPECT_EQ(graph::fold_constants(b.model(), o).graph.nodes.size(), 1u);
  o.fold_max_elements = 19;
  EXPECT_EQ(graph::fold_constants(b.model(), o).graph.nodes.size(), 2u);
}

TEST(ConstantFolding, InlinesTheBranchOfAConstantIf) {
  auto then_g = std::make_shared<graph::Graph>();
  then_g->name = "then";
  then_g->nodes.push_back(graph::Node{"t0", "Add", "", {"x", "one"}, {"t_out"}, {}});
  then_g->outputs = {"t_out"};
  auto else_g = std::make_shared<graph::Graph>();
  else_g->name = "else";
  else_g->nodes.push_back(graph::Node{"e0", "Sub", "", {"x", "one"}, {"e_out"}, {}});
  else_g->outputs = {"e_out"};
  Tensor yes = Tensor::zeros(DType::boolean, {});
  *reinterpret_cast<uint8_t*>(yes.mutable_raw()) = 1;
  GraphBuilder b;
  b.input("x", {2}).init("one", vec_f32({1}, {1})).init("cond", yes);
  b.node("If", {"cond"}, {"u"},
         {{"then_branch", graph::Attribute::of_graph(then_g)},
          {"else_branch", graph::Attribute::of_graph(else_g)}});
  b.node("Neg", {"u"}, {"y"}).output("y");
  const graph::Model out = check_passes(b.model(), {"fold"}, {{"x", vec_f32({2}, {1, 5})}});
  EXPECT_EQ(count_ops(out.graph, "If"), 0u);
  EXPECT_EQ(count_ops(out.graph, "Add"), 1u);
  expect_f32(run_model(out, {{"x", vec_f32({2}, {1, 5})}}).at("y"), {2}, {-2, -6});
}

TEST(ConstantFolding, NeedsAnEvaluator) {
  GraphBuilder b;
  b.input("x", {1}).node("Relu", {"x"}, {"y"}).output("y");
  expect_error_naming([&] { graph::fold_constants(b.model(), {}); }, "fold_constants", "evaluate");
}

TEST(DeadCode, RemovesUnreachableNodesAndUnusedInitializers) {
  GraphBuilder b;
  b.input("x", {2})
      .input("unused_input", {2})
      .init("w", vec_f32({2}, {1, 2}))
      .init("dead_w", vec_f32({2}, {3, 4}));
  b.node("Mul", {"x", "w"}, {"a"})
      .node("Add", {"x", "dead_w"}, {"dead1"})
      .node("Relu", {"dead1"}, {"dead2"});
  b.node("Relu", {"a"}, {"y"}).output("y");
  const graph::Model out = check_passes(
      b.model(), {"dce"}, {{"x", vec_f32({2}, {1, -1})}, {"unused_input", vec_f32({2}, {0, 0})}});
  EXPECT_EQ(out.graph.nodes.size(), 2u);
  EXPECT_FALSE(out.graph.initializers.count("dead_w"));
  EXPECT_TRUE(out.graph.initializers.count("w"));
  EXPECT_EQ(out.graph.inputs, (std::vector<std::string>{"x", "unused_input"}));
}

TEST(Cse, MergesEqualNodesKeepsOperandOrderAndDistinctInputs) {
  GraphBuilder b;
  b.input("a", {2}).input("b", {2});
  b.node("Sub", {"a", "b"}, {"s1"}).node("Sub", {"a", "b"}, {"s2"}).node("Sub", {"b", "a"}, {"s3"});
  b.node("Add", {"a", "b"}, {"p1"}).node("Add", {"b", "a"}, {"p2"});
  b.node("Relu", {"a"}, {"r1"})
      .node("Relu", {"b"}, {"r2"});  // equal values at run time, distinct inputs
  b.node("Sum", {"s1", "s2", "s3", "p1", "p2", "r1", "r2"}, {"y"}).output("y");
  const auto feeds =
      std::map<std::string, Tensor>{{"a", vec_f32({2}, {1, 2})}, {"b", vec_f32({2}, {1, 2})}};
  const graph::Model out = check_passes(b.model(), {"cse"}, feeds);
  // Only s2 merges into s1: 8 nodes → 7; the Sum reads s1 twice.
  EXPECT_EQ(out.graph.nodes.size(), 7u);
  EXPECT_EQ(count_ops(out.graph, "Sub"), 2u);
  EXPECT_EQ(count_ops(out.graph, "Add"), 2u);
  EXPECT_EQ(count_ops(out.graph, "Relu"), 2u);
  EXPECT_EQ(out.graph.nodes.back().inputs[1], "s1");
}

TEST(Cse, MergesEqualInitializersAndKeepsGraphOutputNames) {
  GraphBuilder b;
  b.input("x", {2})
      .init("c1", vec_f32({2}, {3, 4}))
      .init("c2", vec_f32({2}, {3, 4}))
      .init("c3", vec_f32({2}, {3, 5}));
  b.node("Mul", {"x", "c1"}, {"y1"})
      .node("Mul", {"x", "c2"}, {"y2"})
      .node("Mul", {"x", "c3"}, {"y3"});
  b.output("y1").output("y2").output("y3");
  const graph::Model out = check_passes(b.model(), {"cse"}, {{"x", vec_f32({2}, {1, 2})}});
  EXPECT_EQ(out.graph.initializers.size(), 2u);
  // y2 is now Identity(y1): the model keeps its three outputs by name.
  EXPECT_EQ(count_ops(out.graph, "Mul"), 2u);
  EXPECT_EQ(count_ops(out.graph, "Identity"), 1u);
  EXPECT_EQ(out.graph.outputs, (std::vector<std::string>{"y1", "y2", "y3"}));
}

}  // namespace
}  // namespace tailor::testing
