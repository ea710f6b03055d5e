// Shared helpers of the compress rewrite tests: one-layer models, a seeded
// normal tensor, running a model once, comparisons.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "tailor/compress/rewrite.h"
#include "tailor/core/rng.h"
#include "tailor/graph/passes.h"
#include "tailor/runtime/executor.h"
#include "tailor/schemes/registry.h"

namespace tailor::rewrite_test {

using compress::EncodedLayer;
using graph::Attribute;

inline Tensor randn(const Shape& s, uint64_t seed) {
  Rng rng(seed);
  std::vector<float> v(static_cast<size_t>(shape_numel(s)));
  for (float& x : v) x = static_cast<float>(rng.normal());
  return Tensor::from_f32(s, v);
}

/// X → op(X, W[, b]) → Y, W (and b) initializers.
struct OneLayer {
  std::string op;
  Shape x_shape, w_shape;
  WeightLayout layout;
  std::vector<std::pair<std::string, Attribute>> attrs;
  int64_t bias = 0;  // bias length, 0 for none
  int64_t opset = 9;

  graph::Model model(const Tensor& w) const {
    graph::Model m;
    m.opset = opset;
    m.source = "test";
    m.graph.inputs = {"X"};
    m.graph.types["X"] = graph::ValueType{DType::f32, graph::sym_shape_of(x_shape)};
    m.graph.outputs = {"Y"};
    m.graph.add_initializer("W", w);
    graph::Node n;
    n.name = "layer";
    n.op_type = op;
    n.inputs = {"X", "W"};
    if (bias) {
      m.graph.add_initializer("b", randn({bias}, 99));
      n.inputs.push_back("b");
    }
    n.outputs = {"Y"};
    n.attributes = attrs;
    m.graph.nodes.push_back(n);
    return m;
  }
  Tensor weight() const { return randn(w_shape, 7); }
  /// The planned layer: W's [out, in] view (conv kernels 4-D) encoded by `label`.
  EncodedLayer encode(const std::string& label) const {
    const Tensor w = weight();
    Tensor view = w;
    if (layout == WeightLayout::in_out) view = w.transpose(0, 1).contiguous();
    if (layout == WeightLayout::out_in) view = w;
    EncodedLayer e;
    e.name = "W";
    e.layout = layout;
    e.stored_shape = w_shape;
    e.encoded = schemes::parse_scheme(label).encode(view);
    return e;
  }
  /// The original graph with W replaced by Ŵ (decoded) in its stored layout.
  graph::Model decoded_model(const EncodedLayer& e) const {
    Tensor d = e.encoded->decode().contiguous();
    if (layout == WeightLayout::in_out) d = d.transpose(0, 1).contiguous();
    return model(d.reshape(w_shape));
  }
};

inline Tensor run1(const graph::Model& m, const Tensor& x) {
  runtime::Executor ex(m);
  return ex.run({{"X", x}}).at("Y");
}

inline double rel_diff(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  const auto x = a.to_f32_vector(), y = b.to_f32_vector();
  double num = 0, den = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    num += (double(x[i]) - y[i]) * (double(x[i]) - y[i]);
    den += double(x[i]) * x[i];
  }
  return std::sqrt(num / den);
}

inline std::map<std::string, int> op_counts(const graph::Model& m) {
  std::map<std::string, int> c;
  for (const auto& n : m.graph.nodes) ++c[n.op_type];
  return c;
}

}  // namespace tailor::rewrite_test
