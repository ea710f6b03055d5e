// The Conv epilogue fusion (src/graph/passes/fuse_conv_bias_activation.h)
// with simplify before it, as the pipeline runs them: Conv + per-channel
// affine steps + activation become one FusedConv whose outputs equal the
// unfused graph's. (The cases of the removed graph/passes/fuse_conv test
// are here, on the live passes.)
#include <cmath>
#include <filesystem>

#include <fmt/format.h>

#include "pass_test_util.h"
#include "tailor/graph/fused_ops.h"
#include "tailor/graph/shape_inference.h"
#include "tailor/io/onnx.h"
#include "test_util.h"

namespace tailor::testing {
namespace {

TEST(FuseConvBiasActivation, ConvBiasAddAndActivationBecomeOneFusedConv) {
  const std::map<std::string, std::string> names = {{"Relu", "relu"},
                                                    {"Sigmoid", "sigmoid"},
                                                    {"HardSigmoid", "hard_sigmoid"},
                                                    {"HardSwish", "hard_swish"},
                                                    {"LeakyRelu", "leaky_relu"},
                                                    {"Clip", "clip"},
                                                    {"Tanh", "tanh"}};
  // Every row of the activation table is covered here (a new row needs a case).
  for (const auto& row : graph::kFusedActivations) {
    if (row.kind != graph::FusedActivation::none) {
      EXPECT_TRUE(names.count(std::string(row.onnx_op))) << row.onnx_op;
    }
  }
  for (const auto& [act, name] : names) {
    GraphBuilder b(13);
    b.input("x", {1, 2, 5, 5})
        .init("w", random_f32({3, 2, 3, 3}, 1))
        .init("bias", random_f32({3}, 2));
    b.init("add", random_f32({3, 1, 1}, 3))
        .init("lo", scalar_f32(-0.2f))
        .init("hi", scalar_f32(0.3f));
    b.node("Conv", {"x", "w", "bias"}, {"c"}, {{"pads", ints({1, 1, 1, 1})}})
        .node("Add", {"c", "add"}, {"a"});
    if (act == "Clip")
      b.node("Clip", {"a", "lo", "hi"}, {"y"});
    else
      b.node(act, {"a"}, {"y"});
    b.output("y");
    const graph::Model out =
        check_passes(b.model(), {"fuse"}, {{"x", random_f32({1, 2, 5, 5}, 4)}}, 1e-6);
    ASSERT_EQ(out.graph.nodes.size(), 1u) << act;
    EXPECT_EQ(out.graph.nodes[0].op_type, "FusedConv");
    EXPECT_EQ(out.graph.nodes[0].attr_string("activation", ""), name);
  }
}

TEST(FuseConvBiasActivation, ConvTransposeAndActivationBecomeOneFusedConvTranspose) {
  // Both col2im paths: 2×2 windows at stride 2 tile the output, 3×3 overlap.
  for (const int64_t k : {2, 3})
    for (const std::string act : {"Relu", "Sigmoid"}) {
      SCOPED_TRACE(act + " k" + std::to_string(k));
      GraphBuilder b(13);
      b.input("x", {1, 2, 4, 4})
          .init("w", random_f32({2, 3, k, k}, 1))
          .init("bias", random_f32({3}, 2));
      b.node("ConvTranspose", {"x", "w", "bias"}, {"c"}, {{"strides", ints({2, 2})}})
          .node(act, {"c"}, {"y"});
      b.output("y");
      const graph::Model out =
          check_passes(b.model(), {"fuse"}, {{"x", random_f32({1, 2, 4, 4}, 3)}}, 1e-6);
      ASSERT_EQ(out.graph.nodes.size(), 1u);
      EXPECT_EQ(out.graph.nodes[0].op_type, "FusedConvTranspose");
      EXPECT_EQ(out.graph.nodes[0].attr_string("activation", ""),
                act == "Relu" ? "relu" : "sigmoid");
      // Its shape rule: 3 channels (w [2, 3, k, k]), 2·(4 − 1) + k pixels a side.
      graph::Model inferred = out;
      graph::infer_shapes(inferred);
      const int64_t side = 2 * 3 + k;
      EXPECT_EQ(inferred.graph.type_of("y")->to_string(),
                fmt::format("f32[1, 3, {}, {}]", side, side));
    }
  // The detector's head through the default pipeline: ConvTranspose ─►
  // Add(bias) ─► BatchNormalization ─► Relu is one node.
  GraphBuilder b(11);
  b.input("x", {1, 2, 4, 4}).init("w", random_f32({2, 3, 2, 2}, 1));
  b.init("bias", random_f32({3, 1, 1}, 2))
      .init("scale", random_f32({3}, 3, 0.5f, 2.f))
      .init("beta", random_f32({3}, 4))
      .init("mean", random_f32({3}, 5))
      .init("var", random_f32({3}, 6, 0.5f, 2.f));
  b.node("ConvTranspose", {"x", "w"}, {"c"}, {{"strides", ints({2, 2})}})
      .node("Add", {"c", "bias"}, {"a"})
      .node("BatchNormalization", {"a", "scale", "beta", "mean", "var"}, {"n"})
      .node("Relu", {"n"}, {"y"});
  b.output("y");
  const graph::Model out = check_passes(b.model(), graph::parse_pass_list("all"),
                                        {{"x", random_f32({1, 2, 4, 4}, 7)}}, 1e-5);
  ASSERT_EQ(out.graph.nodes.size(), 1u);
  EXPECT_EQ(out.graph.nodes[0].op_type, "FusedConvTranspose");
}

TEST(FuseConvBiasActivation, DecomposedHardSwishAfterConv) {
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
    EXPECT_EQ(out.graph.nodes[0].attr_string("activation", ""), "hard_swish");
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

/// Simplify (per-channel Mul/Add and BatchNorm into the weights; rounded
/// scales allowed, the scales below are random) then fuse.
graph::PassOptions affine_opts() {
  graph::PassOptions o = runtime::default_pass_options();
  o.fold_rounded_scales = true;
  return o;
}

/// Conv (group g, k×k, c channels) → Mul(s [1,c,1,1]) → Add(t [1]) → `tail`.
GraphBuilder conv_affine(int64_t c, int64_t group, int64_t k) {
  GraphBuilder b(13);
  b.input("x", {2, c, 6, 7})
      .init("w", random_f32({c, c / group, k, k}, 1))
      .init("b", random_f32({c}, 2))
      .init("s", random_f32({1, c, 1, 1}, 3))
      .init("t", random_f32({1}, 4));
  b.init("three", scalar_f32(3)).init("six", scalar_f32(6)).init("zero", scalar_f32(0));
  b.node("Conv", {"x", "w", "b"}, {"c"},
         {{"group", int1(group)}, {"pads", ints({k / 2, k / 2, k / 2, k / 2})}})
      .node("Mul", {"s", "c"}, {"m"})
      .node("Add", {"m", "t"}, {"a"});
  return b;
}

TEST(FuseConvBiasActivation, AffineStepsAndActivationOnEveryConvPath) {
  using Tail = void (*)(GraphBuilder&);
  const std::vector<std::pair<const char*, Tail>> tails = {
      {"none", [](GraphBuilder& b) { b.output("a"); }},
      {"relu", [](GraphBuilder& b) { b.node("Relu", {"a"}, {"y"}).output("y"); }},
      {"hard_sigmoid",
       [](GraphBuilder& b) {
         b.node("HardSigmoid", {"a"}, {"y"}, {{"alpha", flt(0.2f)}}).output("y");
       }},
      {"sigmoid", [](GraphBuilder& b) { b.node("Sigmoid", {"a"}, {"y"}).output("y"); }},
      {"clip",
       [](GraphBuilder& b) {
         b.node("Clip", {"a", "zero", "six"}, {"y"}).output("y");
       }},
      // HardSwish as x·Clip(x + 3, 0, 6)/6.
      {"hard_swish", [](GraphBuilder& b) {
         b.node("Add", {"a", "three"}, {"p"})
             .node("Clip", {"p", "zero", "six"}, {"q"})
             .node("Mul", {"a", "q"}, {"r"})
             .node("Div", {"r", "six"}, {"y"})
             .output("y");
       }}};
  // (channels, group, kernel): im2col, depthwise, 1×1.
  const int64_t cases[3][3] = {{8, 1, 3}, {8, 8, 3}, {8, 1, 1}};
  for (const auto& cs : cases)
    for (const auto& [act, tail] : tails) {
      SCOPED_TRACE("case c=" + std::to_string(cs[0]) + " g=" + std::to_string(cs[1]) +
                   " k=" + std::to_string(cs[2]) + " tail " + act);
      GraphBuilder b = conv_affine(cs[0], cs[1], cs[2]);
      tail(b);
      const graph::Model out =
          check_passes(b.model(), {"simplify", "fuse"}, {{"x", random_f32({2, cs[0], 6, 7}, 9)}},
                       1e-5, affine_opts());
      // Every node folds or fuses into the one conv.
      ASSERT_EQ(out.graph.nodes.size(), 1u);
      const graph::Node& n = out.graph.nodes[0];
      if (std::string(act) == "none") {
        // Nothing left to fuse: simplify's folded Conv stays a plain Conv.
        EXPECT_EQ(n.op_type, "Conv");
      } else {
        EXPECT_EQ(n.op_type, "FusedConv");
        EXPECT_EQ(n.attr_string("activation", ""), act);
      }
    }
}

/// PP-OCRv4's learnable affine block around a decomposed HardSwish:
/// Conv(group g, k×k, c channels, bias) → Mul(s0 [1], ·) → Add(·, t0 [1]) →
/// x·Clip(x + 3, 0, 6)/6 → Mul(s1 [1], ·) → Add(·, t1 [1]) → y, the constants
/// of the recogniser's first blocks.
GraphBuilder conv_affine_hard_swish(int64_t c, int64_t group, int64_t k) {
  GraphBuilder b(13);
  b.input("x", {1, c, 6, 7})
      .init("w", random_f32({c, c / group, k, k}, 1))
      .init("b", random_f32({c}, 2))
      .init("s0", vec_f32({1}, {1.38f}))
      .init("t0", vec_f32({1}, {0.586f}));
  b.init("s1", vec_f32({1}, {0.168f})).init("t1", vec_f32({1}, {-0.201f}));
  b.init("three", scalar_f32(3)).init("six", scalar_f32(6)).init("zero", scalar_f32(0));
  b.node("Conv", {"x", "w", "b"}, {"c"},
         {{"group", int1(group)}, {"pads", ints({k / 2, k / 2, k / 2, k / 2})}})
      .node("Mul", {"s0", "c"}, {"m0"})
      .node("Add", {"m0", "t0"}, {"a0"})
      .node("Add", {"a0", "three"}, {"p"})
      .node("Clip", {"p", "zero", "six"}, {"q"})
      .node("Mul", {"a0", "q"}, {"r"})
      .node("Div", {"r", "six"}, {"h"})
      .node("Mul", {"s1", "h"}, {"m1"})
      .node("Add", {"m1", "t1"}, {"y"})
      .output("y");
  return b;
}

TEST(FuseConvBiasActivation, ScalarAffineMapsAroundTheActivationJoinTheEpilogue) {
  // (channels, group, kernel): im2col, depthwise, 1×1 — every conv kernel
  // applies the maps in its epilogue. The fused graph's outputs against the
  // unfused graph's (each map one FMA against the rounded Mul and Add; HardSwish's
  // v·clamp(v/6 + 1/2) differs from v·Clip(v + 3, 0, 6)/6 by a few ulps).
  const int64_t cases[3][3] = {{8, 1, 3}, {8, 8, 3}, {16, 1, 1}};
  for (const auto& cs : cases) {
    SCOPED_TRACE("c=" + std::to_string(cs[0]) + " g=" + std::to_string(cs[1]) +
                 " k=" + std::to_string(cs[2]));
    const graph::Model m = conv_affine_hard_swish(cs[0], cs[1], cs[2]).model();
    const std::map<std::string, Tensor> feeds = {{"x", random_f32({1, cs[0], 6, 7}, 9)}};
    const graph::Model out = check_passes(m, {"fuse"}, feeds, 1e-6);
    ASSERT_EQ(out.graph.nodes.size(), 1u);
    const graph::Node& n = out.graph.nodes[0];
    EXPECT_EQ(n.op_type, "FusedConv");
    EXPECT_EQ(n.attr_string("activation", ""), "hard_swish");
    EXPECT_EQ(n.attr_float("pre_scale", 0.f), 1.38f);
    EXPECT_EQ(n.attr_float("pre_shift", 0.f), 0.586f);
    EXPECT_EQ(n.attr_float("post_scale", 0.f), 0.168f);
    EXPECT_EQ(n.attr_float("post_shift", 0.f), -0.201f);
    // The same at 2 threads, bit for bit.
    std::map<std::string, Tensor> two;
    {
      linalg::ThreadLimit limit(2);
      two = run_model(out, feeds);
    }
    OneThread one_thread;
    expect_same_outputs(run_model(out, feeds), two, 0.0, "1 vs 2 threads");
  }
}

TEST(FuseConvBiasActivation, ScalarAffineMapsStayOutWithoutAnActivation) {
  // Conv → Mul(s) → Add(t) → y: no activation to carry the maps, so the conv
  // stays alone and the Mul and Add remain an elementwise group; a Mul by a
  // one-element constant of higher rank than the conv's output (it would
  // broadcast the shape) is no map either.
  GraphBuilder b(13);
  b.input("x", {1, 4, 5, 5})
      .init("w", random_f32({4, 4, 1, 1}, 1))
      .init("s", vec_f32({1}, {1.5f}))
      .init("t", vec_f32({1}, {0.25f}));
  b.init("s5", vec_f32({1, 1, 1, 1, 1}, {0.5f}));
  b.node("Conv", {"x", "w"}, {"c"})
      .node("Mul", {"c", "s"}, {"m"})
      .node("Add", {"m", "t"}, {"y"})
      .output("y");
  b.node("Conv", {"x", "w"}, {"c2"})
      .node("Relu", {"c2"}, {"r2"})
      .node("Mul", {"r2", "s5"}, {"y2"})
      .output("y2");
  const graph::Model out =
      check_passes(b.model(), {"fuse"}, {{"x", random_f32({1, 4, 5, 5}, 2)}}, 1e-6);
  EXPECT_EQ(count_ops(out.graph, "Conv"), 1u);
  EXPECT_EQ(count_ops(out.graph, "ai.tailor.FusedElementwise"), 1u);
  EXPECT_EQ(count_ops(out.graph, "ai.tailor.FusedConv"), 1u);
  for (const auto& n : out.graph.nodes)
    for (std::string_view a : graph::kEpilogueAffineAttributes)
      EXPECT_EQ(n.find(std::string(a)), nullptr) << n.op_type << " " << a;
}

TEST(FuseConvBiasActivation, FoldsBatchNormalizationThenTheActivation) {
  Tensor var = random_f32({8}, 14, 0.1f, 2.f);
  GraphBuilder b(13);
  b.input("x", {1, 8, 6, 6})
      .init("w", random_f32({8, 8, 3, 3}, 1))
      .init("b", random_f32({8}, 2))
      .init("bn_scale", random_f32({8}, 11));
  b.init("bn_b", random_f32({8}, 12)).init("bn_mean", random_f32({8}, 13)).init("bn_var", var);
  b.node("Conv", {"x", "w", "b"}, {"c"}, {{"pads", ints({1, 1, 1, 1})}})
      .node("BatchNormalization", {"c", "bn_scale", "bn_b", "bn_mean", "bn_var"}, {"bn"},
            {{"epsilon", flt(1e-3f)}})
      .node("Relu", {"bn"}, {"y"})
      .output("y");
  const graph::Model out =
      check_passes(b.model(), {"simplify", "fuse"}, {{"x", random_f32({1, 8, 6, 6}, 9)}}, 1e-5);
  ASSERT_EQ(out.graph.nodes.size(), 1u);
  EXPECT_EQ(out.graph.nodes[0].op_type, "FusedConv");
  EXPECT_EQ(out.graph.nodes[0].attr_string("activation", ""), "relu");
}

TEST(FuseConvBiasActivation, LeavesSharedIntermediatesAlone) {
  // The Mul output is also a graph output: the scale folds into the conv,
  // which produces it; the Add and Relu after it cannot join the conv (they
  // become one elementwise kernel instead).
  GraphBuilder b = conv_affine(4, 1, 3);
  b.node("Relu", {"a"}, {"y"}).output("y").output("m");
  const graph::Model out = check_passes(b.model(), {"simplify", "fuse"},
                                        {{"x", random_f32({2, 4, 6, 7}, 9)}}, 1e-5, affine_opts());
  ASSERT_EQ(out.graph.nodes.size(), 2u);
  EXPECT_EQ(out.graph.nodes[0].op_type, "Conv");
  EXPECT_EQ(out.graph.nodes[0].outputs, std::vector<std::string>{"m"});
  EXPECT_EQ(out.graph.nodes[1].op_type, "FusedElementwise");
  // The fusion alone, on a conv output that is a graph output: nothing fuses.
  GraphBuilder c(13);
  c.input("x", {1, 2, 4, 4}).init("w", random_f32({2, 2, 1, 1}, 5));
  c.node("Conv", {"x", "w"}, {"c"}).node("Relu", {"c"}, {"y"}).output("y").output("c");
  const graph::Model alone =
      check_passes(c.model(), {"fuse"}, {{"x", random_f32({1, 2, 4, 4}, 6)}}, 0.0);
  EXPECT_EQ(count_ops(alone.graph, "Conv"), 1u);
  EXPECT_EQ(count_ops(alone.graph, "Relu"), 1u);
  EXPECT_TRUE(graph::fusion_candidates(c.model()).empty());
}

TEST(FuseConvBiasActivation, RealModelsKeepTheirOutputs) {
  OneThread one_thread;
  for (const auto& [name, shape] :
       {std::pair<std::string, Shape>{"ch_PP-OCRv4_rec_infer.onnx", {1, 3, 48, 160}},
        {"ch_ppocr_mobile_v2.0_cls_infer.onnx", {1, 3, 48, 192}},
        {"ch_PP-OCRv4_det_infer.onnx", {1, 3, 64, 64}}}) {
    const std::string path = model_path(name);
    if (!std::filesystem::exists(path)) GTEST_SKIP() << "models/" << name << " not fetched";
    SCOPED_TRACE(name);
    const graph::Model m = graph::import_onnx(path);
    const graph::PassOptions opts = runtime::default_pass_options();
    const graph::Model folded = graph::run_passes(m, {"fold"}, opts);
    const graph::Model out = graph::run_passes(folded, {"simplify", "fuse"}, opts);
    EXPECT_GT(count_ops(out.graph, "ai.tailor.FusedConv"), 0u);
    // What goes into the convs: the BatchNormalizations and per-channel
    // Mul/Add simplify folds into their weights (any scale, as
    // fold_rounded_scales allows) plus the nodes the conv epilogues absorb:
    // more than 10 nodes on each model.
    const graph::Model pre = graph::run_passes(folded, {"simplify"}, affine_opts());
    size_t into_convs = 0;
    for (const char* op : {"BatchNormalization", "Mul", "Add"})
      into_convs += count_ops(folded.graph, op) - count_ops(pre.graph, op);
    for (const auto& c : graph::fusion_candidates(pre))
      if (c.kind == "conv_epilogue") into_convs += c.nodes.size() - 1;
    EXPECT_GT(into_convs, 10u);
    const std::map<std::string, Tensor> feeds = {{"x", random_f32(shape, 5)}};
    expect_same_outputs(run_model(m, feeds), run_model(out, feeds), 1e-5, name);
  }
}

}  // namespace
}  // namespace tailor::testing
