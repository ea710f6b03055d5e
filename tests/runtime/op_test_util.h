// Builds one-node models in code and runs them through the Executor.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "tailor/graph/graph.h"
#include "tailor/linalg/threads.h"
#include "tailor/runtime/executor.h"
#include "tailor/runtime/kernels.h"

namespace tailor::testing {

inline Tensor f32(Shape shape, std::vector<float> v) {
  return Tensor::from_f32(std::move(shape), v);
}

inline Tensor i64(Shape shape, std::vector<int64_t> v) {
  Tensor t = Tensor::zeros(DType::i64, std::move(shape));
  if (!v.empty()) std::memcpy(t.mutable_raw(), v.data(), v.size() * 8);
  return t;
}

inline Tensor boolean(Shape shape, std::vector<uint8_t> v) {
  Tensor t = Tensor::zeros(DType::boolean, std::move(shape));
  if (!v.empty()) std::memcpy(t.mutable_raw(), v.data(), v.size());
  return t;
}

inline std::vector<int64_t> i64_values(const Tensor& t) {
  std::vector<int64_t> v(static_cast<size_t>(t.numel()));
  const Tensor c = t.contiguous();
  if (!v.empty()) std::memcpy(v.data(), c.raw(), v.size() * 8);
  return v;
}

inline std::vector<uint8_t> bool_values(const Tensor& t) {
  std::vector<uint8_t> v(static_cast<size_t>(t.numel()));
  const Tensor c = t.contiguous();
  if (!v.empty()) std::memcpy(v.data(), c.raw(), v.size());
  return v;
}

/// One node of `op` reading `inputs` as graph inputs x0, x1, ... (an undefined
/// tensor leaves that input empty: an omitted optional input), with `constants`
/// as initializers c0, c1, ... appended after them.
struct OneOp {
  OneOp(std::string op_, std::vector<Tensor> inputs_,
        std::vector<std::pair<std::string, graph::Attribute>> attrs_ = {}, int64_t opset_ = 13,
        size_t outputs_ = 1, std::string domain_ = "")
      : op(std::move(op_)),
        inputs(std::move(inputs_)),
        attrs(std::move(attrs_)),
        opset(opset_),
        outputs(outputs_),
        domain(std::move(domain_)) {}
  std::string op;
  std::vector<Tensor> inputs;
  std::vector<std::pair<std::string, graph::Attribute>> attrs;
  int64_t opset = 13;
  size_t outputs = 1;
  std::string domain;

  graph::Model model() const {
    graph::Model m;
    m.opset = opset;
    m.source = "test";
    graph::Node n;
    n.name = "n0";
    n.op_type = op;
    n.domain = domain;
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (!inputs[i].defined()) {
        n.inputs.push_back("");
        continue;
      }
      const std::string name = "x" + std::to_string(i);
      m.graph.inputs.push_back(name);
      n.inputs.push_back(name);
    }
    for (size_t o = 0; o < outputs; ++o) {
      n.outputs.push_back("y" + std::to_string(o));
      m.graph.outputs.push_back("y" + std::to_string(o));
    }
    n.attributes = attrs;
    m.graph.nodes.push_back(n);
    return m;
  }

  std::vector<Tensor> run() const {
    runtime::Executor ex(model());
    std::map<std::string, Tensor> feeds;
    for (size_t i = 0; i < inputs.size(); ++i)
      if (inputs[i].defined()) feeds["x" + std::to_string(i)] = inputs[i];
    auto out = ex.run(feeds);
    std::vector<Tensor> r;
    for (size_t o = 0; o < outputs; ++o) r.push_back(out.at("y" + std::to_string(o)));
    return r;
  }
  Tensor run1() const { return run().at(0); }
};

inline void expect_f32(const Tensor& t, const Shape& shape, const std::vector<float>& want,
                       float tol = 1e-6f) {
  ASSERT_EQ(t.dtype(), DType::f32);
  ASSERT_EQ(t.shape(), shape);
  const std::vector<float> got = t.to_f32_vector();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "at " << i;
}

/// The kernels on one thread for the duration of a test (the machine may be
/// shared; OpenMP's spinning on busy cores costs seconds), restored after.
class OneThread {
  linalg::ThreadLimit limit_{1};
};

}  // namespace tailor::testing
