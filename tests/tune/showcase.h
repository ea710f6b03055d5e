// Small graphs for the tuner's tests, built in code.
#pragma once

#include <string>
#include <vector>

#include "tailor/core/rng.h"
#include "tailor/graph/graph.h"

namespace tailor::testing {

inline graph::Node make_node(std::string op, std::string name, std::vector<std::string> in,
                             std::vector<std::string> out,
                             std::vector<std::pair<std::string, graph::Attribute>> attrs = {}) {
  graph::Node n;
  n.op_type = std::move(op);
  n.name = std::move(name);
  n.inputs = std::move(in);
  n.outputs = std::move(out);
  n.attributes = std::move(attrs);
  return n;
}

inline Tensor random_tensor(Shape shape, uint64_t seed, float lo = -1.f, float hi = 1.f) {
  Rng rng(seed);
  Tensor t = Tensor::zeros(DType::f32, std::move(shape));
  float* p = t.mutable_data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<float>(rng.uniform(lo, hi));
  return t;
}

inline void declare_input(graph::Model& m, const std::string& name, const Shape& shape) {
  m.graph.inputs.push_back(name);
  m.graph.types[name] = graph::ValueType{DType::f32, graph::sym_shape_of(shape)};
}

/// x [1, 2, 32, 32] → Conv (w [4, 2, 3, 3], pads 1, named "c") → Relu → y [1, 4, 32, 32].
inline graph::Model conv_relu_model() {
  graph::Model m;
  m.opset = 13;
  m.source = "conv_relu";
  declare_input(m, "x", {1, 2, 32, 32});
  m.graph.add_initializer("w", random_tensor({4, 2, 3, 3}, 1));
  m.graph.nodes = {make_node("Conv", "c", {"x", "w"}, {"cv"},
                             {{"pads", graph::Attribute::of_ints({1, 1, 1, 1})}}),
                   make_node("Relu", "r", {"cv"}, {"y"})};
  m.graph.outputs = {"y"};
  return m;
}

/// A graph built to need the passes (issue 7): x [1, 4, 64, 64] →
/// Conv 1×1 (4→16) → BatchNormalization → Relu = r; the same 3×3 Conv
/// (16→16) of r written twice (a duplicated subexpression) and added; plus a
/// constant branch Sqrt(Exp(C)·0.5) over a [16, 64, 64] initializer (folds to
/// one constant); a dead 3×3 Conv (16→32) → Relu whose value no output reads.
/// Output y [1, 16, 64, 64].
inline graph::Model showcase_model() {
  graph::Model m;
  m.opset = 13;
  m.source = "showcase";
  declare_input(m, "x", {1, 4, 64, 64});
  auto& g = m.graph;
  g.add_initializer("w1", random_tensor({16, 4, 1, 1}, 11));
  g.add_initializer("bn_scale", random_tensor({16}, 12, 0.5f, 1.5f));
  g.add_initializer("bn_bias", random_tensor({16}, 13));
  g.add_initializer("bn_mean", random_tensor({16}, 14));
  g.add_initializer("bn_var", random_tensor({16}, 15, 0.5f, 2.f));
  g.add_initializer("w2", random_tensor({16, 16, 3, 3}, 16, -0.2f, 0.2f));
  g.add_initializer("w3", random_tensor({32, 16, 3, 3}, 17, -0.2f, 0.2f));
  g.add_initializer("C", random_tensor({16, 64, 64}, 18));
  g.add_initializer("half", Tensor::from_f32({1}, std::vector<float>{0.5f}));
  const auto pads = graph::Attribute::of_ints({1, 1, 1, 1});
  g.nodes = {
      make_node("Conv", "conv1", {"x", "w1"}, {"c1"}),
      make_node("BatchNormalization", "bn1", {"c1", "bn_scale", "bn_bias", "bn_mean", "bn_var"},
                {"b1"}),
      make_node("Relu", "relu1", {"b1"}, {"r"}),
      make_node("Conv", "conv2a", {"r", "w2"}, {"d1"}, {{"pads", pads}}),
      make_node("Conv", "conv2b", {"r", "w2"}, {"d2"}, {{"pads", pads}}),
      make_node("Add", "sum", {"d1", "d2"}, {"s"}),
      make_node("Exp", "k_exp", {"C"}, {"k1"}),
      make_node("Mul", "k_mul", {"k1", "half"}, {"k2"}),
      make_node("Sqrt", "k_sqrt", {"k2"}, {"k"}),
      make_node("Add", "out", {"s", "k"}, {"y"}),
      make_node("Conv", "conv_dead", {"r", "w3"}, {"dead1"}, {{"pads", pads}}),
      make_node("Relu", "relu_dead", {"dead1"}, {"dead"}),
  };
  g.outputs = {"y"};
  return m;
}

}  // namespace tailor::testing
