// Algebraic simplification and BatchNorm folding on hand-built graphs.
#include "pass_test_util.h"

namespace tailor::testing {
namespace {

TEST(Simplify, NeutralElementsRemoved) {
  GraphBuilder b;
  b.input("x", {2, 2})
      .init("one", vec_f32({1}, {1}))
      .init("zero", scalar_f32(0))
      .init("big_one", vec_f32({1, 1, 1}, {1}));
  b.node("Mul", {"x", "one"}, {"a"})
      .node("Add", {"zero", "a"}, {"c"})
      .node("Sub", {"c", "zero"}, {"d"});
  b.node("Div", {"d", "one"}, {"e"});
  b.node("Mul", {"e", "big_one"}, {"f"});  // rank 3 constant raises x's rank: kept
  b.node("Relu", {"f"}, {"y"}).output("y");
  const graph::Model out =
      check_passes(b.model(), {"simplify"}, {{"x", vec_f32({2, 2}, {1, -2, 3, -4})}});
  ASSERT_EQ(out.graph.nodes.size(), 2u);
  EXPECT_EQ(out.graph.nodes[0].op_type, "Mul");
  EXPECT_EQ(out.graph.nodes[0].inputs, (std::vector<std::string>{"x", "big_one"}));
}

TEST(Simplify, TransposesComposeAndIdentityPairsVanish) {
  GraphBuilder b;
  b.input("x", {2, 3, 4});
  // perm [1, 0, 2] then [0, 2, 1]: composed q[i] = p1[p2[i]] = [1, 2, 0].
  b.node("Transpose", {"x"}, {"t1"}, {{"perm", ints({1, 0, 2})}})
      .node("Transpose", {"t1"}, {"t2"}, {{"perm", ints({0, 2, 1})}});
  // [2, 0, 1] then [1, 2, 0] is the identity.
  b.node("Transpose", {"t2"}, {"t3"}, {{"perm", ints({2, 0, 1})}})
      .node("Transpose", {"t3"}, {"t4"}, {{"perm", ints({1, 2, 0})}});
  b.node("Relu", {"t4"}, {"y"}).output("y");
  std::vector<float> xv(24);
  for (size_t i = 0; i < xv.size(); ++i) xv[i] = static_cast<float>(i) - 10;
  const graph::Model out =
      check_passes(b.model(), {"simplify"}, {{"x", vec_f32({2, 3, 4}, xv)}}, 0.0);
  ASSERT_EQ(count_ops(out.graph, "Transpose"), 1u);
  EXPECT_EQ(out.graph.nodes[0].attr_ints("perm", {}), (std::vector<int64_t>{1, 2, 0}));
  EXPECT_EQ(out.graph.nodes.size(), 2u);
}

TEST(Simplify, ReshapeChainsIdentityAndDropoutCollapse) {
  Tensor s1 = Tensor::zeros(DType::i64, {2}), s2 = Tensor::zeros(DType::i64, {1});
  s1.mutable_data<int64_t>()[0] = 3, s1.mutable_data<int64_t>()[1] = 4;
  s2.mutable_data<int64_t>()[0] = -1;
  GraphBuilder b;
  b.input("x", {2, 6}).init("s1", s1).init("s2", s2);
  b.node("Identity", {"x"}, {"i"})
      .node("Reshape", {"i", "s1"}, {"r1"})
      .node("Reshape", {"r1", "s2"}, {"r2"});
  b.node("Dropout", {"r2"}, {"d"}).node("Relu", {"d"}, {"y"}).output("y");
  std::vector<float> xv(12, -1.f);
  xv[5] = 2;
  const graph::Model out = check_passes(b.model(), {"simplify"}, {{"x", vec_f32({2, 6}, xv)}}, 0.0);
  ASSERT_EQ(out.graph.nodes.size(), 2u);
  EXPECT_EQ(out.graph.nodes[0].op_type, "Reshape");
  EXPECT_EQ(out.graph.nodes[0].inputs, (std::vector<std::string>{"x", "s2"}));
}

TEST(Simplify, BatchNormFoldsIntoConvWeightsAndBias) {
  // 1×1 conv, w = 2, b = 1; BN scale 3, beta 0.5, mean 1, var 3, ε 1:
  // s = 3/√4 = 1.5 → w' = 3, b' = (1 − 1)·1.5 + 0.5 = 0.5. x = 2: 6.5 both ways.
  GraphBuilder b;
  b.input("x", {1, 1, 1, 2}).init("w", vec_f32({1, 1, 1, 1}, {2})).init("b", vec_f32({1}, {1}));
  b.init("scale", vec_f32({1}, {3}))
      .init("beta", vec_f32({1}, {0.5f}))
      .init("mean", vec_f32({1}, {1}))
      .init("var", vec_f32({1}, {3}));
  b.node("Conv", {"x", "w", "b"}, {"c"})
      .node("BatchNormalization", {"c", "scale", "beta", "mean", "var"}, {"y"},
            {{"epsilon", flt(1)}});
  b.output("y");
  const auto feeds = std::map<std::string, Tensor>{{"x", vec_f32({1, 1, 1, 2}, {2, -1})}};
  const graph::Model out = check_passes(b.model(), {"simplify"}, feeds);
  ASSERT_EQ(out.graph.nodes.size(), 1u);
  const graph::Node& conv = out.graph.nodes[0];
  EXPECT_EQ(conv.op_type, "Conv");
  EXPECT_EQ(conv.outputs[0], "y");
  EXPECT_EQ(out.graph.initializers.at(conv.inputs[1]).to_f32_vector(), (std::vector<float>{3}));
  EXPECT_EQ(out.graph.initializers.at(conv.inputs[2]).to_f32_vector(), (std::vector<float>{0.5f}));
  expect_f32(run_model(out, feeds).at("y"), {1, 1, 1, 2}, {6.5f, -2.5f});
}

TEST(Simplify, BiasAddAndBatchNormFoldIntoAConvTranspose) {
  // The detector's DB head, ConvTranspose ─► Add(bias) ─► BatchNormalization,
  // here with 2 groups and 3×3 windows at stride 2 (they overlap, the
  // general col2im path) and the 2×2 stride-2 tiling; the folded graph
  // against the unfolded one, whose BatchNormalization kernel normalizes the
  // channels itself. Weight [c_in 4, c_out/group 3, k, k]: output channel
  // (ci / 2)·3 + j.
  for (const int64_t k : {3, 2}) {
    SCOPED_TRACE(k);
    GraphBuilder b;
    b.input("x", {1, 4, 5, 5}).init("w", random_f32({4, 3, k, k}, 1));
    b.init("bias", random_f32({1, 6, 1, 1}, 2))
        .init("scale", random_f32({6}, 3, 0.5f, 2.f))
        .init("beta", random_f32({6}, 4))
        .init("mean", random_f32({6}, 5))
        .init("var", random_f32({6}, 6, 0.5f, 2.f));
    b.node("ConvTranspose", {"x", "w"}, {"c"},
           {{"strides", ints({2, 2})}, {"group", graph::Attribute::of_int(2)}})
        .node("Add", {"c", "bias"}, {"a"})
        .node("BatchNormalization", {"a", "scale", "beta", "mean", "var"}, {"y"});
    b.output("y");
    const auto feeds = std::map<std::string, Tensor>{{"x", random_f32({1, 4, 5, 5}, 7)}};
    const graph::Model out = check_passes(b.model(), {"simplify"}, feeds, 1e-5);
    ASSERT_EQ(out.graph.nodes.size(), 1u);
    EXPECT_EQ(out.graph.nodes[0].op_type, "ConvTranspose");
    EXPECT_EQ(out.graph.nodes[0].outputs[0], "y");
  }
}

TEST(Simplify, ABiasAddFoldsIntoABiasFreeConvTransposeBitForBit) {
  // The kernel adds a bias after the window sums, as the Add did. (Onto a
  // bias b already there, b + c is rounded once more: not bit for bit.)
  GraphBuilder b;
  b.input("x", {1, 2, 4, 4}).init("w", random_f32({2, 3, 3, 3}, 1));
  b.init("bias", random_f32({3, 1, 1}, 2));
  b.node("ConvTranspose", {"x", "w"}, {"c"}, {{"strides", ints({2, 2})}})
      .node("Add", {"c", "bias"}, {"y"});
  b.output("y");
  const graph::Model out =
      check_passes(b.model(), {"simplify"}, {{"x", random_f32({1, 2, 4, 4}, 3)}}, 0.0);
  EXPECT_EQ(out.graph.nodes.size(), 1u);
}

TEST(Simplify, BatchNormWithAnInfiniteScaleStays) {
  // Variance 0 and ε 0: s = scale/√0 = ∞. Folded, w·s would be NaN where w
  // is 0 and the BatchNormalization gives ±Inf (or NaN for a zero output).
  GraphBuilder b;
  b.input("x", {1, 2, 1, 2}).init("w", vec_f32({2, 2, 1, 1}, {1, 0, 1, 0}));
  b.init("scale", vec_f32({2}, {1, 1}))
      .init("beta", vec_f32({2}, {0, 0}))
      .init("mean", vec_f32({2}, {0, 0}))
      .init("var", vec_f32({2}, {1, 0}));
  b.node("Conv", {"x", "w"}, {"c"})
      .node("BatchNormalization", {"c", "scale", "beta", "mean", "var"}, {"y"},
            {{"epsilon", flt(0)}});
  b.output("y");
  const auto feeds = std::map<std::string, Tensor>{{"x", vec_f32({1, 2, 1, 2}, {2, -1, 3, 4})}};
  const graph::Model out = check_passes(b.model(), {"simplify"}, feeds, 0.0);
  EXPECT_EQ(count_ops(out.graph, "BatchNormalization"), 1u);
}

TEST(Simplify, BatchNormStaysWhenTheConvOutputHasAnotherReader) {
  GraphBuilder b;
  b.input("x", {1, 1, 1, 2}).init("w", vec_f32({1, 1, 1, 1}, {2}));
  b.init("scale", vec_f32({1}, {3}))
      .init("beta", vec_f32({1}, {0.5f}))
      .init("mean", vec_f32({1}, {1}))
      .init("var", vec_f32({1}, {3}));
  b.node("Conv", {"x", "w"}, {"c"})
      .node("BatchNormalization", {"c", "scale", "beta", "mean", "var"}, {"bn"});
  b.node("Add", {"bn", "c"}, {"y"}).output("y");
  const graph::Model out =
      check_passes(b.model(), {"simplify"}, {{"x", vec_f32({1, 1, 1, 2}, {2, -1})}});
  EXPECT_EQ(count_ops(out.graph, "BatchNormalization"), 1u);
}

TEST(Simplify, PerChannelPowerOfTwoScaleAndShiftFoldIntoConvExactly) {
  // Conv (2 channels, 1×1, w = [1, 2]) → Mul [2,1,1] = [2, 4] → Add [1,2,1,1] = [5, 6].
  // x = 2: conv [2, 4], · [2, 4] = [4, 16], + [5, 6] = [9, 22]; w' = [2, 8], b' = [5, 6].
  GraphBuilder b;
  b.input("x", {1, 1, 1, 1}).init("w", vec_f32({2, 1, 1, 1}, {1, 2}));
  b.init("m", vec_f32({2, 1, 1}, {2, 4})).init("a", vec_f32({1, 2, 1, 1}, {5, 6}));
  b.node("Conv", {"x", "w"}, {"c"})
      .node("Mul", {"c", "m"}, {"d"})
      .node("Add", {"a", "d"}, {"y"})
      .output("y");
  const auto feeds = std::map<std::string, Tensor>{{"x", vec_f32({1, 1, 1, 1}, {2})}};
  const graph::Model out = check_passes(b.model(), {"simplify"}, feeds, 0.0);
  ASSERT_EQ(out.graph.nodes.size(), 1u);
  const graph::Node& conv = out.graph.nodes[0];
  EXPECT_EQ(out.graph.initializers.at(conv.inputs[1]).to_f32_vector(), (std::vector<float>{2, 8}));
  EXPECT_EQ(out.graph.initializers.at(conv.inputs[2]).to_f32_vector(), (std::vector<float>{5, 6}));
  expect_f32(run_model(out, feeds).at("y"), {1, 2, 1, 1}, {9, 22});
}

TEST(Simplify, OtherScalesAfterAConvStayInTheGraphBitForBit) {
  // A scale of 3 folded into the weights would make the conv sum rounded
  // products w·3 (the PP-OCRv4 detector's Conv → Mul blocks moved its output
  // by ~1e-5 that way); it stays a Mul, so the result is the original's exactly.
  GraphBuilder b;
  b.input("x", {1, 2, 3, 3})
      .init("w", random_f32({2, 2, 3, 3}, 40))
      .init("bias", random_f32({2}, 41))
      .init("three", scalar_f32(3));
  b.node("Conv", {"x", "w", "bias"}, {"c"}, {{"pads", ints({1, 1, 1, 1})}})
      .node("Mul", {"three", "c"}, {"y"})
      .output("y");
  const graph::Model out =
      check_passes(b.model(), {"simplify"}, {{"x", random_f32({1, 2, 3, 3}, 42)}}, 0.0);
  EXPECT_EQ(count_ops(out.graph, "Mul"), 1u);
  EXPECT_EQ(out.graph.nodes[0].inputs[1], "w");
}

}  // namespace
}  // namespace tailor::testing
