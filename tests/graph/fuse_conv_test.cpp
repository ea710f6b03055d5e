// The Conv epilogue fusion: the fused graph computes what the original does.
#include <gtest/gtest.h>

#include <filesystem>

#include "../runtime/op_test_util.h"
#include "tailor/core/rng.h"
#include "tailor/graph/passes/fuse_conv.h"
#include "tailor/io/onnx.h"
#include "test_util.h"

namespace tailor::testing {
namespace {

using graph::Attribute;

Tensor randn(Shape s, uint64_t seed) {
  Rng rng(seed);
  std::vector<float> v(static_cast<size_t>(shape_numel(s)));
  for (float& x : v) x = static_cast<float>(rng.normal());
  return Tensor::from_f32(std::move(s), v);
}

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

void expect_same_outputs(const graph::Model& a, const graph::Model& b,
                         const std::map<std::string, Tensor>& feeds) {
  runtime::Executor ea(a), eb(b);
  const auto ya = ea.run(feeds), yb = eb.run(feeds);
  for (const auto& [name, t] : ya) {
    const auto x = t.to_f32_vector(), y = yb.at(name).to_f32_vector();
    ASSERT_EQ(x.size(), y.size());
    double err = 0, scale = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      err = std::max(err, std::abs(static_cast<double>(x[i]) - y[i]));
      scale = std::max(scale, std::abs(static_cast<double>(x[i])));
    }
    EXPECT_LE(err, 1e-5 * std::max(scale, 1.0)) << name;
  }
}

/// Conv (group g, k×k) → Mul(scale) → Add(shift) → activation nodes.
graph::Model conv_model(int64_t c, int64_t group, int64_t k, const std::vector<graph::Node>& tail,
                        int64_t opset = 13) {
  graph::Model m;
  m.opset = opset;
  m.graph.inputs = {"x"};
  m.graph.add_initializer("w", randn({c, c / group, k, k}, 1));
  m.graph.add_initializer("b", randn({c}, 2));
  m.graph.add_initializer("s", randn({1, c, 1, 1}, 3));
  m.graph.add_initializer("t", randn({1}, 4));
  m.graph.add_initializer("three", f32({}, {3}));
  m.graph.add_initializer("six", f32({}, {6}));
  m.graph.add_initializer("zero", f32({}, {0}));
  m.graph.nodes = {node("Conv", {"x", "w", "b"}, "c",
                        {{"group", Attribute::of_int(group)},
                         {"pads", Attribute::of_ints({k / 2, k / 2, k / 2, k / 2})}}),
                   node("Mul", {"s", "c"}, "m"), node("Add", {"m", "t"}, "a")};
  for (const auto& n : tail) m.graph.nodes.push_back(n);
  m.graph.outputs = {m.graph.nodes.back().outputs[0]};
  return m;
}

TEST(FuseConv, AffineAndActivationsOnEveryConvPath) {
  const std::vector<std::vector<graph::Node>> tails = {
      {},
      {node("Relu", {"a"}, "y")},
      {node("HardSigmoid", {"a"}, "y", {{"alpha", Attribute::of_float(0.2f)}})},
      {node("Sigmoid", {"a"}, "y")},
      {node("Clip", {"a", "zero", "six"}, "y")},
      // HardSwish as x·Clip(x + 3, 0, 6)/6.
      {node("Add", {"a", "three"}, "p"), node("Clip", {"p", "zero", "six"}, "q"),
       node("Mul", {"a", "q"}, "r"), node("Div", {"r", "six"}, "y")}};
  // (channels, group, kernel): im2col, depthwise, 1×1.
  const int64_t cases[3][3] = {{8, 1, 3}, {8, 8, 3}, {8, 1, 1}};
  for (const auto& cs : cases)
    for (size_t t = 0; t < tails.size(); ++t) {
      const graph::Model m = conv_model(cs[0], cs[1], cs[2], tails[t]);
      graph::Model f = m;
      const int removed = graph::fuse_conv_epilogues(f);
      EXPECT_EQ(removed, 2 + static_cast<int>(tails[t].size())) << "tail " << t;
      ASSERT_EQ(f.graph.nodes.size(), 1u);
      EXPECT_EQ(f.graph.nodes[0].op_type, "FusedConv");
      SCOPED_TRACE("case c=" + std::to_string(cs[0]) + " g=" + std::to_string(cs[1]) +
                   " k=" + std::to_string(cs[2]) + " tail " + std::to_string(t));
      expect_same_outputs(m, f, {{"x", randn({2, cs[0], 6, 7}, 9)}});
    }
}

TEST(FuseConv, FoldsBatchNormalization) {
  graph::Model m = conv_model(8, 1, 3, {});
  m.graph.add_initializer("bn_scale", randn({8}, 11));
  m.graph.add_initializer("bn_b", randn({8}, 12));
  m.graph.add_initializer("bn_mean", randn({8}, 13));
  Tensor var = randn({8}, 14);
  for (int64_t i = 0; i < 8; ++i)
    var.mutable_data<float>()[i] = std::abs(var.data<float>()[i]) + 0.1f;
  m.graph.add_initializer("bn_var", var);
  // Conv → BN (instead of Mul/Add) → Relu.
  m.graph.nodes.resize(1);
  m.graph.nodes.push_back(node("BatchNormalization", {"c", "bn_scale", "bn_b", "bn_mean", "bn_var"},
                               "bn", {{"epsilon", Attribute::of_float(1e-3f)}}));
  m.graph.nodes.push_back(node("Relu", {"bn"}, "y"));
  m.graph.outputs = {"y"};
  graph::Model f = m;
  EXPECT_EQ(graph::fuse_conv_epilogues(f), 2);
  ASSERT_EQ(f.graph.nodes.size(), 1u);
  expect_same_outputs(m, f, {{"x", randn({1, 8, 6, 6}, 9)}});
}

TEST(FuseConv, LeavesSharedIntermediatesAlone) {
  graph::Model m = conv_model(4, 1, 3, {node("Relu", {"a"}, "y")});
  m.graph.outputs.push_back("m");  // the Mul output is also a graph output
  graph::Model f = m;
  EXPECT_EQ(graph::fuse_conv_epilogues(f), 1);  // only Mul fuses
  EXPECT_EQ(f.graph.nodes.size(), 3u);
  expect_same_outputs(m, f, {{"x", randn({1, 4, 5, 5}, 9)}});
}

TEST(FuseConv, RealModelsKeepTheirOutputs) {
  OneThread one_thread;
  for (const auto& [name, shape] :
       {std::pair<std::string, Shape>{"ch_PP-OCRv4_rec_infer.onnx", {1, 3, 48, 160}},
        {"ch_ppocr_mobile_v2.0_cls_infer.onnx", {1, 3, 48, 192}},
        {"ch_PP-OCRv4_det_infer.onnx", {1, 3, 64, 64}}}) {
    const std::string path = model_path(name);
    if (!std::filesystem::exists(path)) GTEST_SKIP() << "models/" << name << " not fetched";
    const graph::Model m = graph::import_onnx(path);
    graph::Model f = m;
    EXPECT_GT(graph::fuse_conv_epilogues(f), 10) << name;
    Tensor x = randn(shape, 5);
    SCOPED_TRACE(name);
    expect_same_outputs(m, f, {{"x", x}});
  }
}

}  // namespace
}  // namespace tailor::testing
