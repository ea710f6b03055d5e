// Strength reduction on hand-built graphs: structure and values derived by hand.
#include <limits>

#include "pass_test_util.h"

namespace tailor::testing {
namespace {

TEST(StrengthReduction, EachRewriteIsExactOnHandValues) {
  // a = x/4 → x·0.25; c = a·2 → a+a; d = Pow(c, 2) → c·c; y = d·(−1) → Neg(d).
  // x = [1, −3, 0.5]: a = [0.25, −0.75, 0.125], c = [0.5, −1.5, 0.25],
  // d = [0.25, 2.25, 0.0625], y = [−0.25, −2.25, −0.0625] (all exact in f32).
  GraphBuilder b;
  b.input("x", {3})
      .init("four", scalar_f32(4))
      .init("two", scalar_f32(2))
      .init("minus_one", scalar_f32(-1));
  b.node("Div", {"x", "four"}, {"a"})
      .node("Mul", {"two", "a"}, {"c"})
      .node("Pow", {"c", "two"}, {"d"})
      .node("Mul", {"d", "minus_one"}, {"y"})
      .output("y");
  const auto feeds = std::map<std::string, Tensor>{{"x", vec_f32({3}, {1, -3, 0.5f})}};
  const graph::Model out = check_passes(b.model(), {"strength"}, feeds, 0.0);
  ASSERT_EQ(out.graph.nodes.size(), 4u);
  EXPECT_EQ(out.graph.nodes[0].op_type, "Mul");
  EXPECT_EQ(out.graph.initializers.at(out.graph.nodes[0].inputs[1]).to_f32_vector(),
            (std::vector<float>{0.25f}));
  EXPECT_EQ(out.graph.nodes[1].op_type, "Add");
  EXPECT_EQ(out.graph.nodes[1].inputs, (std::vector<std::string>{"a", "a"}));
  EXPECT_EQ(out.graph.nodes[2].op_type, "Mul");
  EXPECT_EQ(out.graph.nodes[2].inputs, (std::vector<std::string>{"c", "c"}));
  EXPECT_EQ(out.graph.nodes[3].op_type, "Neg");
  EXPECT_EQ(out.graph.nodes[3].outputs, (std::vector<std::string>{"y"}));
  expect_f32(run_model(out, feeds).at("y"), {3}, {-0.25f, -2.25f, -0.0625f});
}

TEST(StrengthReduction, DivisionByPerChannelPowersOfTwoOnlyBecomesAMultiplication) {
  // x [1, 2, 2] / [[[0.5], [8]]] → x · [[[2], [0.125]]]; x / [[[0.5], [3]]] stays a
  // division (1/3 is not a float).
  GraphBuilder b;
  b.input("x", {1, 2, 2})
      .init("p2", vec_f32({1, 2, 1}, {0.5f, 8}))
      .init("p3", vec_f32({1, 2, 1}, {0.5f, 3}));
  b.node("Div", {"x", "p2"}, {"y"}).node("Div", {"x", "p3"}, {"z"}).output("y").output("z");
  const auto feeds = std::map<std::string, Tensor>{{"x", vec_f32({1, 2, 2}, {1, -2, 4, 6})}};
  const graph::Model out = check_passes(b.model(), {"strength"}, feeds, 0.0);
  ASSERT_EQ(out.graph.nodes.size(), 2u);
  EXPECT_EQ(out.graph.nodes[0].op_type, "Mul");
  const Tensor& inv = out.graph.initializers.at(out.graph.nodes[0].inputs[1]);
  EXPECT_EQ(inv.shape(), (Shape{1, 2, 1}));
  EXPECT_EQ(inv.to_f32_vector(), (std::vector<float>{2, 0.125f}));
  EXPECT_EQ(out.graph.nodes[1].op_type, "Div");
  expect_f32(run_model(out, feeds).at("y"), {1, 2, 2}, {2, -4, 0.5f, 0.75f});
}

TEST(StrengthReduction, PowMinusOneIsAReciprocal) {
  GraphBuilder b;
  b.input("x", {3}).init("e", scalar_f32(-1));
  b.node("Pow", {"x", "e"}, {"y"}).output("y");
  const auto feeds = std::map<std::string, Tensor>{{"x", vec_f32({3}, {2, -4, 0.5f})}};
  const graph::Model out = check_passes(b.model(), {"strength"}, feeds, 0.0);
  ASSERT_EQ(out.graph.nodes.size(), 1u);
  EXPECT_EQ(out.graph.nodes[0].op_type, "Reciprocal");
  expect_f32(run_model(out, feeds).at("y"), {3}, {0.5f, -0.25f, 2});
}

TEST(StrengthReduction, DivBySqrtBecomesMulByReciprocalUnlessTheSqrtIsShared) {
  // y = a / √v → a · (1/√v): v = 4, a = [1, 2, 3, 4] → [0.5, 1, 1.5, 2].
  GraphBuilder b;
  b.input("a", {4}).input("v", {1});
  b.node("Sqrt", {"v"}, {"s"}).node("Div", {"a", "s"}, {"y"}).output("y");
  const auto feeds =
      std::map<std::string, Tensor>{{"a", vec_f32({4}, {1, 2, 3, 4})}, {"v", vec_f32({1}, {4})}};
  const graph::Model out = check_passes(b.model(), {"strength"}, feeds, 1e-7);
  EXPECT_EQ(count_ops(out.graph, "Div"), 0u);
  EXPECT_EQ(count_ops(out.graph, "Reciprocal"), 1u);
  EXPECT_EQ(count_ops(out.graph, "Mul"), 1u);
  expect_f32(run_model(out, feeds).at("y"), {4}, {0.5f, 1, 1.5f, 2});
  // The Sqrt also read elsewhere: the division stays.
  GraphBuilder shared;
  shared.input("a", {4}).input("v", {1});
  shared.node("Sqrt", {"v"}, {"s"}).node("Div", {"a", "s"}, {"y"}).output("y").output("s");
  const graph::Model kept = check_passes(shared.model(), {"strength"}, feeds, 0.0);
  EXPECT_EQ(count_ops(kept.graph, "Div"), 1u);
}

TEST(StrengthReduction, ConstantsThatWouldChangeTheShapeOrDtypeAreLeftAlone) {
  // x [2] · 2 of shape [1, 1] broadcasts to [1, 2]: x + x would be [2], so it stays.
  // An integer x · 2 stays too (the rules cover f32).
  GraphBuilder b;
  b.input("x", {2}).input("k", {2}, DType::i64).init("two", vec_f32({1, 1}, {2}));
  Tensor two_i = Tensor::zeros(DType::i64, {});
  two_i.mutable_data<int64_t>()[0] = 2;
  b.init("two_i", two_i);
  b.node("Mul", {"x", "two"}, {"y"}).node("Mul", {"k", "two_i"}, {"z"}).output("y").output("z");
  Tensor kv = Tensor::zeros(DType::i64, {2});
  kv.mutable_data<int64_t>()[0] = 3, kv.mutable_data<int64_t>()[1] = -5;
  const graph::Model out =
      check_passes(b.model(), {"strength"}, {{"x", vec_f32({2}, {1, 2})}, {"k", kv}}, 0.0);
  EXPECT_EQ(count_ops(out.graph, "Mul"), 2u);
  EXPECT_EQ(count_ops(out.graph, "Add"), 0u);
}

TEST(StrengthReduction, IntegerDivisionZeroDivisorsAndIntegerExponentsOnEdgeInputs) {
  // int64 k / 2 must stay a division (truncation: [7, −7] / 2 = [3, −3], while
  // k · 0.5 is not even defined on int64). x / 0 and x / −0 stay divisions
  // (0 has no reciprocal rule): [1, −2] / 0 = [+inf, −inf], [1, −2] / −0 =
  // [−inf, +inf]. Pow(x, int64 2) → x·x: [1, −2] → [1, 4]. x [2] / [[4]] (rank 2)
  // becomes x · [[0.25]], keeping the broadcast output shape [1, 2].
  GraphBuilder b;
  Tensor two_i = Tensor::zeros(DType::i64, {});
  two_i.mutable_data<int64_t>()[0] = 2;
  b.input("x", {2}).input("k", {2}, DType::i64);
  b.init("two_i", two_i).init("zero", scalar_f32(0.0f)).init("mzero", scalar_f32(-0.0f));
  b.init("four", vec_f32({1, 1}, {4}));
  b.node("Div", {"k", "two_i"}, {"q"})
      .node("Div", {"x", "zero"}, {"p"})
      .node("Div", {"x", "mzero"}, {"m"})
      .node("Pow", {"x", "two_i"}, {"s"})
      .node("Div", {"x", "four"}, {"w"})
      .output("q")
      .output("p")
      .output("m")
      .output("s")
      .output("w");
  Tensor kv = Tensor::zeros(DType::i64, {2});
  kv.mutable_data<int64_t>()[0] = 7, kv.mutable_data<int64_t>()[1] = -7;
  const std::map<std::string, Tensor> feeds{{"x", vec_f32({2}, {1, -2})}, {"k", kv}};
  const graph::Model out = check_passes(b.model(), {"strength"}, feeds, 0.0);
  ASSERT_EQ(out.graph.nodes.size(), 5u);
  EXPECT_EQ(out.graph.nodes[0].op_type, "Div");
  EXPECT_EQ(out.graph.nodes[1].op_type, "Div");
  EXPECT_EQ(out.graph.nodes[2].op_type, "Div");
  EXPECT_EQ(out.graph.nodes[3].op_type, "Mul");
  EXPECT_EQ(out.graph.nodes[4].op_type, "Mul");
  const auto r = run_model(out, feeds);
  const Tensor q = r.at("q").contiguous();
  ASSERT_EQ(q.dtype(), DType::i64);
  EXPECT_EQ(q.data<int64_t>()[0], 3);
  EXPECT_EQ(q.data<int64_t>()[1], -3);
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(r.at("p").to_f32_vector(), (std::vector<float>{inf, -inf}));
  EXPECT_EQ(r.at("m").to_f32_vector(), (std::vector<float>{-inf, inf}));
  expect_f32(r.at("s"), {2}, {1, 4});
  expect_f32(r.at("w"), {1, 2}, {0.25f, -0.5f});
}

TEST(StrengthReduction, RunsAfterSimplifySoAConvScaleFoldsIntoTheWeights) {
  // Conv (1×1, w = 3) → Mul 2: simplify folds the 2 into w (w' = 6) before
  // strength reduction could turn it into an Add. x = [1, −2] → y = [6, −12].
  GraphBuilder b;
  b.input("x", {1, 1, 1, 2}).init("w", vec_f32({1, 1, 1, 1}, {3})).init("two", scalar_f32(2));
  b.node("Conv", {"x", "w"}, {"c"}).node("Mul", {"c", "two"}, {"y"}).output("y");
  const auto feeds = std::map<std::string, Tensor>{{"x", vec_f32({1, 1, 1, 2}, {1, -2})}};
  const graph::Model out = check_passes(b.model(), {"simplify", "strength"}, feeds, 0.0);
  ASSERT_EQ(out.graph.nodes.size(), 1u);
  EXPECT_EQ(out.graph.nodes[0].op_type, "Conv");
  expect_f32(run_model(out, feeds).at("y"), {1, 1, 1, 2}, {6, -12});
}

TEST(StrengthReduction, PipelineHasEightPassesInOrder) {
  std::vector<std::string> names;
  for (const auto& p : graph::registered_passes()) names.push_back(p.name);
  EXPECT_EQ(names, (std::vector<std::string>{"fold", "simplify", "strength", "cse", "hoist", "fuse",
                                             "layout", "dce"}));
  EXPECT_EQ(graph::parse_pass_list("dce,strength,simplify"),
            (std::vector<std::string>{"simplify", "strength", "dce"}));
}

}  // namespace
}  // namespace tailor::testing
