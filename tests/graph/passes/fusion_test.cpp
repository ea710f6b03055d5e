// Fusion on hand-built graphs: structure, and outputs against the unfused
// graph run by the same runtime (and hand-derived values on tiny inputs).
#include <cmath>

#include "pass_test_util.h"

namespace tailor::testing {
namespace {

graph::PassOptions fuse_opts() {
  return runtime::default_pass_options();
}

TEST(Fusion, ConvBiasAddAndActivationBecomeOneFusedConv) {
  for (const char* act : {"Relu", "Sigmoid", "HardSigmoid", "HardSwish", "LeakyRelu", "Clip"}) {
    GraphBuilder b(13);
    b.input("x", {1, 2, 5, 5})
        .init("w", random_f32({3, 2, 3, 3}, 1))
        .init("bias", random_f32({3}, 2));
    b.init("add", random_f32({3, 1, 1}, 3))
        .init("lo", scalar_f32(-0.2f))
        .init("hi", scalar_f32(0.3f));
    b.node("Conv", {"x", "w", "bias"}, {"c"}, {{"pads", ints({1, 1, 1, 1})}})
        .node("Add", {"c", "add"}, {"a"});
    if (std::string(act) == "Clip")
      b.node("Clip", {"a", "lo", "hi"}, {"y"});
    else
      b.node(act, {"a"}, {"y"});
    b.output("y");
    const graph::Model out =
        check_passes(b.model(), {"fuse"}, {{"x", random_f32({1, 2, 5, 5}, 4)}}, 1e-6);
    ASSERT_EQ(out.graph.nodes.size(), 1u) << act;
    EXPECT_EQ(out.graph.nodes[0].op_type, "FusedConv");
    EXPECT_EQ(out.graph.nodes[0].attr_string("activation", ""), act);
  }
}

TEST(Fusion, DecomposedHardSwishAfterConv) {
  // x·Clip(x + 3, 0, 6)/6 in both association orders (opset 9: Clip bounds as attributes).
  for (int order = 0; order < 2; ++order) {
    GraphBuilder b(9);
    b.input("x", {1, 1, 2, 2})
        .init("w", vec_f32({2, 1, 1, 1}, {4, -5}))
        .init("three", vec_f32({1}, {3}));
    b.init("six", vec_f32({1}, {6}));
    b.node("Conv", {"x", "w"}, {"c"})
        .node("Add", {"c", "three"}, {"p"})
        .node("Clip", {"p"}, {"q"}, {{"min", flt(0)}, {"max", flt(6)}});
    if (order == 0)
      b.node("Div", {"q", "six"}, {"r"}).node("Mul", {"c", "r"}, {"y"});
    else
      b.node("Mul", {"c", "q"}, {"r"}).node("Div", {"r", "six"}, {"y"});
    b.output("y");
    const auto feeds =
        std::map<std::string, Tensor>{{"x", vec_f32({1, 1, 2, 2}, {-1, -0.25f, 0.25f, 1})}};
    const graph::Model out = check_passes(b.model(), {"fuse"}, feeds, 1e-6);
    ASSERT_EQ(out.graph.nodes.size(), 1u);
    EXPECT_EQ(out.graph.nodes[0].attr_string("activation", ""), "HardSwish");
    // By hand: c = 4x then -5x; hardswish(v) = v·min(max(v + 3, 0), 6)/6.
    std::vector<float> want;
    for (float w : {4.f, -5.f})
      for (float x : {-1.f, -0.25f, 0.25f, 1.f}) {
        const float v = w * x;
        want.push_back(v * std::min(std::max(v + 3, 0.f), 6.f) / 6);
      }
    expect_f32(run_model(out, feeds).at("y"), {1, 2, 2, 2}, want, 1e-6f);
  }
}

TEST(Fusion, GemmAndMatMulEpilogues) {
  GraphBuilder b;
  b.input("x", {3, 4})
      .init("w", random_f32({4, 5}, 5))
      .init("c", random_f32({5}, 6))
      .init("w2", random_f32({5, 2}, 7));
  b.init("bias2", random_f32({2}, 8));
  b.node("Gemm", {"x", "w", "c"}, {"g"}).node("Relu", {"g"}, {"r"});
  b.node("MatMul", {"r", "w2"}, {"m"})
      .node("Add", {"m", "bias2"}, {"a"})
      .node("Sigmoid", {"a"}, {"y"})
      .output("y");
  const graph::Model out = check_passes(b.model(), {"fuse"}, {{"x", random_f32({3, 4}, 9)}}, 1e-6);
  ASSERT_EQ(out.graph.nodes.size(), 2u);
  EXPECT_EQ(out.graph.nodes[0].op_type, "FusedGemm");
  EXPECT_EQ(out.graph.nodes[1].op_type, "FusedMatMul");
  EXPECT_EQ(out.graph.nodes[1].inputs.size(), 3u);
}

TEST(Fusion, LayerNormFromItsDecomposedForm) {
  // Both forms: Pow/Div (as exported) and Mul(d, d)/Mul∘Reciprocal (after simplify).
  for (bool simplified : {false, true}) {
    GraphBuilder b(13);
    b.input("x", {2, 3, 8}).init("two", scalar_f32(2)).init("eps", scalar_f32(1e-5f));
    b.init("g", random_f32({8}, 10, 0.5f, 1.5f)).init("beta", random_f32({8}, 11));
    b.node("ReduceMean", {"x"}, {"m"}, {{"axes", ints({-1})}}).node("Sub", {"x", "m"}, {"d"});
    if (simplified)
      b.node("Mul", {"d", "d"}, {"sq"});
    else
      b.node("Pow", {"d", "two"}, {"sq"});
    b.node("ReduceMean", {"sq"}, {"v"}, {{"axes", ints({-1})}})
        .node("Add", {"v", "eps"}, {"ve"})
        .node("Sqrt", {"ve"}, {"s"});
    if (simplified)
      b.node("Reciprocal", {"s"}, {"rs"}).node("Mul", {"d", "rs"}, {"n"});
    else
      b.node("Div", {"d", "s"}, {"n"});
    b.node("Mul", {"n", "g"}, {"ng"}).node("Add", {"ng", "beta"}, {"y"}).output("y");
    const graph::Model out =
        check_passes(b.model(), {"fuse"}, {{"x", random_f32({2, 3, 8}, 12, -3, 3)}}, 1e-6);
    ASSERT_EQ(out.graph.nodes.size(), 1u);
    EXPECT_EQ(out.graph.nodes[0].op_type, "LayerNormalization");
    EXPECT_FLOAT_EQ(out.graph.nodes[0].attr_float("epsilon", 0), 1e-5f);
  }
}

TEST(Fusion, SoftmaxFromBothDecomposedForms) {
  for (bool with_max : {false, true}) {
    Tensor axes = Tensor::zeros(DType::i64, {1});
    axes.mutable_data<int64_t>()[0] = 1;
    GraphBuilder b(13);
    b.input("x", {2, 5, 3}).init("axes", axes);
    std::string e_in = "x";
    if (with_max) {
      b.node("ReduceMax", {"x"}, {"mx"}, {{"axes", ints({1})}}).node("Sub", {"x", "mx"}, {"t"});
      e_in = "t";
    }
    b.node("Exp", {e_in}, {"e"})
        .node("ReduceSum", {"e", "axes"}, {"s"})
        .node("Div", {"e", "s"}, {"y"})
        .output("y");
    const auto feeds = std::map<std::string, Tensor>{{"x", random_f32({2, 5, 3}, 13, -4, 4)}};
    const graph::Model out = check_passes(b.model(), {"fuse"}, feeds, 1e-6);
    ASSERT_EQ(out.graph.nodes.size(), 1u);
    EXPECT_EQ(out.graph.nodes[0].op_type, "Softmax");
    EXPECT_EQ(out.graph.nodes[0].attr_int("axis", 0), 1);
    // Each column over axis 1 sums to 1.
    const std::vector<float> y = run_model(out, feeds).at("y").to_f32_vector();
    for (int n = 0; n < 2; ++n)
      for (int i = 0; i < 3; ++i) {
        double s = 0;
        for (int a = 0; a < 5; ++a) s += y[static_cast<size_t>((n * 5 + a) * 3 + i)];
        EXPECT_NEAR(s, 1.0, 1e-6);
      }
  }
}

TEST(Fusion, ElementwiseGroupIsOneKernelWithBroadcasting) {
  // y = HardSigmoid(x·scale[C,1,1] + 0.5) · x − Relu(z): one node, inputs x, scale, z.
  GraphBuilder b;
  b.input("x", {1, 3, 2, 2})
      .input("z", {1, 1, 2, 2})
      .init("scale", vec_f32({3, 1, 1}, {1, -2, 3}))
      .init("half", scalar_f32(0.5f));
  b.node("Mul", {"x", "scale"}, {"a"})
      .node("Add", {"a", "half"}, {"c"})
      .node("HardSigmoid", {"c"}, {"h"});
  b.node("Mul", {"h", "x"}, {"p"})
      .node("Relu", {"z"}, {"rz"})
      .node("Sub", {"p", "rz"}, {"y"})
      .output("y");
  std::vector<float> xv(12), zv = {-1, 2, -3, 4};
  for (size_t i = 0; i < 12; ++i) xv[i] = 0.25f * static_cast<float>(i) - 1.5f;
  const auto feeds = std::map<std::string, Tensor>{{"x", vec_f32({1, 3, 2, 2}, xv)},
                                                   {"z", vec_f32({1, 1, 2, 2}, zv)}};
  const graph::Model out = check_passes(b.model(), {"fuse"}, feeds, 0.0);
  ASSERT_EQ(out.graph.nodes.size(), 1u);
  EXPECT_EQ(out.graph.nodes[0].op_type, "FusedElementwise");
  EXPECT_EQ(out.graph.nodes[0].inputs.size(), 3u);
  std::vector<float> want;
  const float sc[3] = {1, -2, 3};
  for (size_t i = 0; i < 12; ++i) {
    const float x = xv[i], h = std::max(0.f, std::min(1.f, 0.2f * (x * sc[i / 4] + 0.5f) + 0.5f));
    want.push_back(h * x - std::max(0.f, zv[i % 4]));
  }
  expect_f32(run_model(out, feeds).at("y"), {1, 3, 2, 2}, want, 1e-6f);
}

TEST(Fusion, CandidatesHaveStableIdsAndCanBeSelected) {
  GraphBuilder b;
  b.input("x", {1, 2, 3, 3})
      .init("w", random_f32({2, 2, 1, 1}, 20))
      .init("w2", random_f32({2, 2, 1, 1}, 21));
  b.node("Conv", {"x", "w"}, {"c1"}).node("Relu", {"c1"}, {"r1"});
  b.node("Conv", {"r1", "w2"}, {"c2"}).node("Sigmoid", {"c2"}, {"y"}).output("y");
  const graph::Model m = b.model();
  const auto cands = graph::fusion_candidates(m);
  ASSERT_EQ(cands.size(), 2u);
  EXPECT_EQ(cands[0].id, "conv_epilogue:r1");
  EXPECT_EQ(cands[1].id, "conv_epilogue:y");
  EXPECT_EQ(cands[0].nodes.size(), 2u);
  EXPECT_EQ(graph::fusion_candidates(m)[1].id, cands[1].id);  // same graph, same ids
  graph::PassOptions o = fuse_opts();
  o.fusion_candidates = std::set<std::string>{"conv_epilogue:y"};
  const graph::Model out =
      check_passes(m, {"fuse"}, {{"x", random_f32({1, 2, 3, 3}, 22)}}, 1e-6, o);
  EXPECT_EQ(count_ops(out.graph, "Conv"), 1u);
  EXPECT_EQ(count_ops(out.graph, "Relu"), 1u);
  EXPECT_EQ(count_ops(out.graph, "ai.tailor.FusedConv"), 1u);
}

}  // namespace
}  // namespace tailor::testing
