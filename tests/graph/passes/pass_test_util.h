// Shared helpers of the pass tests: run a model, compare outputs, count ops.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <string>

#include "runtime/op_test_util.h"
#include "tailor/core/rng.h"
#include "tailor/graph/graph.h"
#include "tailor/graph/passes.h"
#include "tailor/graph/verify.h"
#include "tailor/runtime/executor.h"
#include "tailor/runtime/pass_options.h"

namespace tailor::testing {

inline std::map<std::string, Tensor> run_model(const graph::Model& m,
                                               const std::map<std::string, Tensor>& feeds) {
  runtime::Executor ex(m);
  return ex.run(feeds);
}

/// A seeded f32 tensor, uniform in [lo, hi).
inline Tensor random_f32(Shape shape, uint64_t seed, float lo = -1.f, float hi = 1.f) {
  Rng rng(seed);
  std::vector<float> v(static_cast<size_t>(shape_numel(shape)));
  for (auto& x : v) x = static_cast<float>(rng.uniform(lo, hi));
  return Tensor::from_f32(std::move(shape), v);
}

/// ‖got − want‖∞ / max(‖want‖∞, tiny): the error relative to the output's scale.
inline double rel_inf_error(const Tensor& got, const Tensor& want) {
  const std::vector<float> g = got.to_f32_vector(), w = want.to_f32_vector();
  double num = 0, den = 0;
  for (size_t i = 0; i < w.size(); ++i) {
    num = std::max(num, std::fabs(static_cast<double>(g[i]) - w[i]));
    den = std::max(den, std::fabs(static_cast<double>(w[i])));
  }
  return num / std::max(den, 1e-30);
}

/// Every output of `b` equals `a`'s (same dtype and shape; f32 within `tol`
/// relative to the output's largest magnitude, other dtypes exactly).
inline void expect_same_outputs(const std::map<std::string, Tensor>& a,
                                const std::map<std::string, Tensor>& b, double tol,
                                const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (const auto& [name, t] : a) {
    ASSERT_TRUE(b.count(name)) << what << ": output " << name << " missing";
    const Tensor& u = b.at(name);
    ASSERT_EQ(t.dtype(), u.dtype()) << what << ": " << name;
    ASSERT_EQ(t.shape(), u.shape()) << what << ": " << name;
    if (t.dtype() == DType::f32) {
      const std::vector<float> tv = t.to_f32_vector(), uv = u.to_f32_vector();
      for (size_t i = 0; i < tv.size(); ++i)
        ASSERT_TRUE(std::isfinite(uv[i]) == std::isfinite(tv[i])) << what;
      EXPECT_LE(rel_inf_error(u, t), tol) << what << ": output " << name;
    } else {
      const Tensor tc = t.contiguous(), uc = u.contiguous();
      EXPECT_EQ(0, std::memcmp(tc.raw(), uc.raw(), tc.nbytes())) << what << ": " << name;
    }
  }
}

/// Nodes of `g` (main graph only) with op `op` (domain-qualified "ai.tailor.X" for other domains).
inline size_t count_ops(const graph::Graph& g, const std::string& op) {
  size_t n = 0;
  for (const auto& node : g.nodes)
    if ((node.domain.empty() ? node.op_type : node.domain + "." + node.op_type) == op) ++n;
  return n;
}

}  // namespace tailor::testing

namespace tailor::testing {

/// Builds small graphs in code.
class GraphBuilder {
 public:
  explicit GraphBuilder(int64_t opset = 13) {
    m_.opset = opset;
    m_.source = "test";
    m_.graph.name = "test";
  }
  GraphBuilder& input(const std::string& name, Shape shape, DType dt = DType::f32) {
    m_.graph.inputs.push_back(name);
    m_.graph.types[name] = graph::ValueType{dt, graph::sym_shape_of(shape)};
    return *this;
  }
  GraphBuilder& init(const std::string& name, Tensor t) {
    m_.graph.add_initializer(name, std::move(t));
    return *this;
  }
  GraphBuilder& node(const std::string& op, std::vector<std::string> in,
                     std::vector<std::string> out,
                     std::vector<std::pair<std::string, graph::Attribute>> attrs = {},
                     const std::string& domain = "") {
    graph::Node n;
    n.op_type = op;
    n.domain = domain;
    n.name = op + "_" + std::to_string(m_.graph.nodes.size());
    n.inputs = std::move(in);
    n.outputs = std::move(out);
    n.attributes = std::move(attrs);
    m_.graph.nodes.push_back(std::move(n));
    return *this;
  }
  GraphBuilder& output(const std::string& name) {
    m_.graph.outputs.push_back(name);
    return *this;
  }
  graph::Model model() const { return m_; }
  graph::Graph& graph() { return m_.graph; }

 private:
  graph::Model m_;
};

inline graph::Attribute ints(std::vector<int64_t> v) {
  return graph::Attribute::of_ints(std::move(v));
}
inline graph::Attribute int1(int64_t v) {
  return graph::Attribute::of_int(v);
}
inline graph::Attribute flt(float v) {
  return graph::Attribute::of_float(v);
}
inline Tensor scalar_f32(float v) {
  return Tensor::from_f32({}, std::vector<float>{v});
}
inline Tensor vec_f32(Shape s, std::vector<float> v) {
  return Tensor::from_f32(std::move(s), v);
}

/// A graph's output values after the passes `names` equal the original's
/// (within `tol`), the result verifies; returns the optimized model.
inline graph::Model check_passes(const graph::Model& m, const std::vector<std::string>& names,
                                 const std::map<std::string, Tensor>& feeds, double tol = 1e-6,
                                 graph::PassOptions opts = runtime::default_pass_options()) {
  graph::Model out = graph::run_passes(m, names, opts);
  expect_same_outputs(run_model(m, feeds), run_model(out, feeds), tol, "passes");
  return out;
}

}  // namespace tailor::testing
