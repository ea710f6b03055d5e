// The squeeze-and-excitation fusion (src/graph/passes/fuse_squeeze_excite.h)
// and its runtime op: the fused block against the unfused ops the pipeline
// ran before (GlobalAveragePool, two FusedConvs, Mul: the same bits, at 1 and
// 2 threads), against the plain ONNX graph and against a double-precision
// reference written from the definition.
#include <cmath>
#include <cstring>

#include "pass_test_util.h"
#include "tailor/core/error.h"
#include "tailor/linalg/threads.h"
#include "test_util.h"

namespace tailor::testing {
namespace {

constexpr int64_t kN = 2, kC = 24, kM = 6, kH = 5, kW = 13;

/// The plain block: x ─► GAP ─► Conv(W1, B1) ─► Relu ─► Conv(W2, B2) ─► HardSigmoid ─► Mul(x, ·).
/// `x_first`: x is the Mul's first input.
graph::Model plain_block(bool x_first = true) {
  GraphBuilder b;
  b.input("x", {kN, kC, kH, kW})
      .init("w1", random_f32({kM, kC, 1, 1}, 31))
      .init("b1", random_f32({kM}, 32))
      .init("w2", random_f32({kC, kM, 1, 1}, 33))
      .init("b2", random_f32({kC}, 34));
  b.node("GlobalAveragePool", {"x"}, {"g"})
      .node("Conv", {"g", "w1", "b1"}, {"c1"}, {{"kernel_shape", ints({1, 1})}})
      .node("Relu", {"c1"}, {"r"})
      .node("Conv", {"r", "w2", "b2"}, {"c2"}, {{"strides", ints({1, 1})}})
      .node("HardSigmoid", {"c2"}, {"s"}, {{"alpha", flt(0.2f)}, {"beta", flt(0.5f)}})
      .node("Mul",
            x_first ? std::vector<std::string>{"x", "s"} : std::vector<std::string>{"s", "x"},
            {"y"})
      .output("y");
  return b.model();
}

/// The same block as the pipeline ran it before the fusion: the two convs as
/// FusedConv epilogues, the pool and the Mul as their own ops.
graph::Model epilogue_block() {
  graph::Model m = plain_block();
  GraphBuilder b;
  b.input("x", {kN, kC, kH, kW});
  for (const auto& [name, t] : m.graph.initializers) b.init(name, t);
  const auto act = [](const char* name, float alpha, float beta) {
    return std::vector<std::pair<std::string, graph::Attribute>>{
        {"activation", graph::Attribute::of_string(name)},
        {"alpha", flt(alpha)},
        {"beta", flt(beta)}};
  };
  b.node("GlobalAveragePool", {"x"}, {"g"})
      .node("FusedConv", {"g", "w1", "b1"}, {"r"}, act("relu", 0.f, 0.f), "ai.tailor")
      .node("FusedConv", {"r", "w2", "b2"}, {"s"}, act("hard_sigmoid", 0.2f, 0.5f), "ai.tailor")
      .node("Mul", {"x", "s"}, {"y"})
      .output("y");
  graph::Model out = b.model();
  out.other_opsets["ai.tailor"] = 1;
  return out;
}

/// y from the definition, in double: s = hardsigmoid(W2·relu(W1·mean(x) + B1) + B2), y = x·s.
std::vector<double> reference(const graph::Model& m, const Tensor& x) {
  const auto& in = m.graph.initializers;
  const std::vector<float> w1 = in.at("w1").to_f32_vector(), b1 = in.at("b1").to_f32_vector();
  const std::vector<float> w2 = in.at("w2").to_f32_vector(), b2 = in.at("b2").to_f32_vector();
  const std::vector<float> xv = x.to_f32_vector();
  const int64_t hw = kH * kW;
  std::vector<double> y(xv.size());
  for (int64_t n = 0; n < kN; ++n) {
    std::vector<double> mean(kC, 0.0), h(kM, 0.0);
    for (int64_t c = 0; c < kC; ++c) {
      for (int64_t i = 0; i < hw; ++i) mean[c] += xv[(n * kC + c) * hw + i];
      mean[c] /= static_cast<double>(hw);
    }
    for (int64_t j = 0; j < kM; ++j) {
      double a = b1[j];
      for (int64_t c = 0; c < kC; ++c) a += static_cast<double>(w1[j * kC + c]) * mean[c];
      h[j] = std::max(a, 0.0);
    }
    for (int64_t c = 0; c < kC; ++c) {
      double a = b2[c];
      for (int64_t j = 0; j < kM; ++j) a += static_cast<double>(w2[c * kM + j]) * h[j];
      const double s = std::min(std::max(0.2 * a + 0.5, 0.0), 1.0);
      for (int64_t i = 0; i < hw; ++i) y[(n * kC + c) * hw + i] = xv[(n * kC + c) * hw + i] * s;
    }
  }
  return y;
}

TEST(FuseSqueezeExcite, OneNodeWithTheUnfusedOpsBitsAndTheDefinitionsValues) {
  const Tensor x = random_f32({kN, kC, kH, kW}, 35, -3.f, 3.f);
  const std::map<std::string, Tensor> feeds{{"x", x}};
  for (bool x_first : {true, false}) {
    const graph::Model out = check_passes(plain_block(x_first), {"fuse"}, feeds, 1e-6);
    ASSERT_EQ(out.graph.nodes.size(), 1u);
    const graph::Node& se = out.graph.nodes[0];
    EXPECT_EQ(se.op_type, "SqueezeExcite");
    EXPECT_EQ(se.domain, "ai.tailor");
    EXPECT_EQ(se.inputs, (std::vector<std::string>{"x", "w1", "b1", "w2", "b2"}));
    EXPECT_EQ(se.attr_string("activation", ""), "relu");
    EXPECT_EQ(se.attr_string("gate", ""), "hard_sigmoid");
    EXPECT_FLOAT_EQ(se.attr_float("gate_alpha", 0.f), 0.2f);
    EXPECT_FLOAT_EQ(se.attr_float("gate_beta", 0.f), 0.5f);
    const auto cands = graph::fusion_candidates(plain_block(x_first));
    ASSERT_EQ(cands.size(), 1u);
    EXPECT_EQ(cands[0].id, "squeeze_excite:y");
    EXPECT_EQ(cands[0].nodes.size(), 6u);

    // The same bits as the epilogue-fused ops, at 1 and 2 threads.
    const int before = linalg::threads();
    for (int threads : {1, 2}) {
      linalg::set_threads(threads);
      const Tensor got = run_model(out, feeds).at("y");
      const Tensor want = run_model(epilogue_block(), feeds).at("y");
      ASSERT_EQ(got.shape(), want.shape());
      EXPECT_EQ(0, std::memcmp(got.raw(), want.raw(), want.nbytes())) << threads << " threads";
    }
    linalg::set_threads(before);

    const std::vector<float> y = run_model(out, feeds).at("y").to_f32_vector();
    const std::vector<double> ref = reference(out, x);
    ASSERT_EQ(y.size(), ref.size());
    for (size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(y[i], ref[i], 1e-5) << i;
  }
}

TEST(FuseSqueezeExcite, WithoutBiasesOrTheInnerActivationAndASigmoidGate) {
  GraphBuilder b;
  b.input("x", {1, 8, 3, 7})
      .init("w1", random_f32({2, 8, 1, 1}, 41))
      .init("w2", random_f32({8, 2, 1, 1}, 42));
  b.node("GlobalAveragePool", {"x"}, {"g"})
      .node("Conv", {"g", "w1"}, {"c1"})
      .node("Conv", {"c1", "w2"}, {"c2"})
      .node("Sigmoid", {"c2"}, {"s"})
      .node("Mul", {"s", "x"}, {"y"})
      .output("y");
  const graph::Model out =
      check_passes(b.model(), {"fuse"}, {{"x", random_f32({1, 8, 3, 7}, 43)}}, 1e-6);
  ASSERT_EQ(out.graph.nodes.size(), 1u);
  EXPECT_EQ(out.graph.nodes[0].op_type, "SqueezeExcite");
  EXPECT_EQ(out.graph.nodes[0].inputs[2], "");
  EXPECT_EQ(out.graph.nodes[0].inputs[4], "");
  EXPECT_EQ(out.graph.nodes[0].attr_string("activation", "none"), "none");
  EXPECT_EQ(out.graph.nodes[0].attr_string("gate", ""), "sigmoid");
}

TEST(FuseSqueezeExcite, LeavesBlocksItDoesNotCover) {
  const std::map<std::string, Tensor> feeds{{"x", random_f32({kN, kC, kH, kW}, 51)}};
  // The gate multiplies another value than the pooled one.
  {
    graph::Model m = plain_block();
    m.graph.inputs.push_back("z");
    m.graph.types["z"] = m.graph.types["x"];
    for (auto& n : m.graph.nodes)
      if (n.op_type == "Mul") n.inputs = {"z", "s"};
    std::map<std::string, Tensor> f = feeds;
    f["z"] = random_f32({kN, kC, kH, kW}, 52);
    const graph::Model out = check_passes(m, {"fuse"}, f, 1e-6);
    EXPECT_EQ(count_ops(out.graph, "ai.tailor.SqueezeExcite"), 0u);
    EXPECT_EQ(count_ops(out.graph, "ai.tailor.FusedConv"), 2u);
  }
  // A strided conv, and a gate read twice (also a graph output).
  for (int variant : {0, 1}) {
    graph::Model m = plain_block();
    if (variant == 0) {
      for (auto& n : m.graph.nodes)
        if (n.op_type == "Conv" && n.outputs[0] == "c1") n.set("strides", ints({2, 2}));
    } else {
      m.graph.outputs.push_back("s");
    }
    const graph::Model out = check_passes(m, {"fuse"}, feeds, 1e-6);
    EXPECT_EQ(count_ops(out.graph, "ai.tailor.SqueezeExcite"), 0u) << variant;
  }
}

TEST(FuseSqueezeExcite, MalformedNodesAreLoadOrRunTimeErrors) {
  graph::Model m = graph::run_passes(plain_block(), {"fuse"}, runtime::default_pass_options());
  ASSERT_EQ(m.graph.nodes.size(), 1u);
  {
    graph::Model bad = m;
    bad.graph.nodes[0].set("gate", graph::Attribute::of_string("swish"));
    EXPECT_THROW(runtime::Executor ex(bad), Error);
  }
  {
    graph::Model bad = m;
    bad.graph.nodes[0].inputs.pop_back();
    EXPECT_THROW(runtime::Executor ex(bad, runtime::ExecutorOptions{false}), Error);
  }
  // W2 with the wrong number of output channels for x.
  graph::Model bad = m;
  bad.graph.initializers["w2"] = random_f32({kC - 1, kM, 1, 1}, 61);
  runtime::Executor ex(bad, runtime::ExecutorOptions{false});
  EXPECT_THROW(ex.run({{"x", random_f32({kN, kC, kH, kW}, 62)}}), Error);
}

}  // namespace
}  // namespace tailor::testing
