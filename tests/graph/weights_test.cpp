// graph::weights: weight orientation as an analysis of the graph, on graphs
// built in memory (the ONNX reader's tests cover files and subgraphs).
#include "tailor/graph/weights.h"

#include <gtest/gtest.h>

#include <vector>

#include "tailor/core/error.h"

namespace tailor {
namespace {

using graph::Node;

Tensor ramp(Shape shape, DType dtype = DType::f32) {
  std::vector<float> v(static_cast<size_t>(shape_numel(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
  return Tensor::from_f32(std::move(shape), v).to(dtype);
}

Node node(const std::string& op, std::vector<std::string> in, std::vector<std::string> out) {
  Node n;
  n.op_type = op;
  n.inputs = std::move(in);
  n.outputs = std::move(out);
  return n;
}

/// A weights-only model (no nodes): matrix [4, 3], kernel [2, 3, 2, 2],
/// gain [5], ids i64 [2, 2].
graph::Model weights_only(graph::WeightConvention c) {
  graph::Model m;
  m.weight_convention = c;
  m.graph.add_initializer("matrix", ramp({4, 3}));
  m.graph.add_initializer("kernel", ramp({2, 3, 2, 2}));
  m.graph.add_initializer("gain", ramp({5}));
  m.graph.add_initializer("ids", ramp({2, 2}, DType::i64));
  return m;
}

std::vector<WeightLayout> layouts(const std::vector<graph::WeightView>& w) {
  std::vector<WeightLayout> out;
  for (const auto& v : w) out.push_back(v.layout);
  return out;
}

TEST(GraphWeights, WeightsOnlyModelsFollowTheirFileConvention) {
  using L = WeightLayout;
  const auto onnx = graph::weights(weights_only(graph::WeightConvention::onnx));
  ASSERT_EQ(onnx.size(), 4u);
  EXPECT_EQ(onnx[0].name, "matrix");  // initializer_order
  EXPECT_EQ(onnx[3].name, "ids");
  EXPECT_EQ(layouts(onnx), (std::vector<L>{L::none, L::none, L::none, L::none}));
  // safetensors (PyTorch): rank 2 out_in, rank ≥ 3 conv.
  const auto pt = graph::weights(weights_only(graph::WeightConvention::pytorch));
  EXPECT_EQ(layouts(pt), (std::vector<L>{L::out_in, L::conv, L::none, L::none}));
  EXPECT_EQ(pt[1].out_in_shape(), (Shape{2, 12}));
  // llama2.c / GGUF: every floating matrix out_in.
  const auto gg = graph::weights(weights_only(graph::WeightConvention::out_in));
  EXPECT_EQ(layouts(gg), (std::vector<L>{L::out_in, L::out_in, L::none, L::none}));
  EXPECT_EQ(gg[1].out_in_shape(), (Shape{2, 12}));
}

TEST(GraphWeights, ConsumersDecideOverTheConvention) {
  graph::Model m = weights_only(graph::WeightConvention::pytorch);
  m.graph.nodes.push_back(node("MatMul", {"x", "matrix"}, {"y"}));
  m.graph.nodes.push_back(node("Add", {"y", "kernel"}, {"z"}));  // a broadcast: no matrix role
  const auto w = graph::weights(m);
  EXPECT_EQ(w[0].layout, WeightLayout::in_out);
  EXPECT_EQ(w[1].layout, WeightLayout::none);
  // [4, 3] stored [in, out]: the view is its transpose, [3, 4]; row o = column o.
  const Tensor v = w[0].out_in();
  EXPECT_EQ(v.shape(), (Shape{3, 4}));
  EXPECT_EQ(v.to_f32_vector(), (std::vector<float>{0, 3, 6, 9, 1, 4, 7, 10, 2, 5, 8, 11}));
}

TEST(GraphWeights, PrecedenceConvThenConvTransposeThenInOutThenOutIn) {
  graph::Model m;
  m.graph.add_initializer("k", ramp({2, 3, 2, 2}));
  m.graph.add_initializer("b", ramp({3, 4}));
  m.graph.add_initializer("g", ramp({3, 4}));
  m.graph.nodes.push_back(node("ConvTranspose", {"x", "k"}, {"y0"}));
  m.graph.nodes.push_back(node("Conv", {"x", "k"}, {"y1"}));
  Node gemm = node("Gemm", {"x", "b"}, {"y2"});
  gemm.set("transB", graph::Attribute::of_int(1));
  m.graph.nodes.push_back(gemm);
  m.graph.nodes.push_back(node("MatMul", {"x", "b"}, {"y3"}));
  m.graph.nodes.push_back(node("Gather", {"g", "ids"}, {"y4"}));
  m.graph.nodes.push_back(gemm);  // Gemm with transB = 1 on g too: out_in either way
  m.graph.nodes.back().inputs = {"x", "g"};
  const auto w = graph::weights(m);
  EXPECT_EQ(graph::find_weight(w, "k")->layout, WeightLayout::conv);
  EXPECT_EQ(graph::find_weight(w, "b")->layout, WeightLayout::in_out);
  EXPECT_EQ(graph::find_weight(w, "g")->layout, WeightLayout::out_in);
  EXPECT_EQ(graph::find_weight(w, "absent"), nullptr);
}

TEST(GraphWeights, ConstantValuesAreWeightsStringsAreNot) {
  graph::Model m;
  Node c = node("Constant", {}, {"c"});
  c.set("value", graph::Attribute::of_tensor(ramp({2, 2})));
  Node f = node("Constant", {}, {"f"});
  f.set("value_floats", graph::Attribute::of_floats({0.5f, 1.5f}));
  Node s = node("Constant", {}, {"s"});
  s.set("value_strings", graph::Attribute::of_strings({"a", "b"}));
  Node i = node("Constant", {}, {"i"});
  i.set("value_int", graph::Attribute::of_int(-4));
  for (const Node& n : {c, f, s, i}) m.graph.nodes.push_back(n);
  m.graph.nodes.push_back(node("Gemm", {"x", "c"}, {"y"}));  // transB absent: 0
  const auto w = graph::weights(m);
  ASSERT_EQ(w.size(), 3u);
  EXPECT_EQ(w[0].name, "c");
  EXPECT_EQ(w[0].layout, WeightLayout::in_out);
  EXPECT_EQ(w[0].tensor.raw(), c.find("value")->t.raw());  // shared, not copied
  EXPECT_EQ(w[1].tensor.to_f32_vector(), (std::vector<float>{0.5f, 1.5f}));
  EXPECT_EQ(w[2].tensor.dtype(), DType::i64);
  EXPECT_EQ(w[2].tensor.shape(), Shape{});
  EXPECT_EQ(w[2].tensor.data<int64_t>()[0], -4);
}

TEST(GraphWeights, OutInOfANoneLayoutIsAnErrorNamingTheWeight) {
  const auto w = graph::weights(weights_only(graph::WeightConvention::onnx));
  EXPECT_TRUE(w[0].out_in_shape().empty());
  try {
    (void)w[0].out_in();
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("matrix"), std::string::npos) << e.what();
  }
  EXPECT_STREQ(layout_name(WeightLayout::conv_transpose), "conv_transpose");
}

}  // namespace
}  // namespace tailor
