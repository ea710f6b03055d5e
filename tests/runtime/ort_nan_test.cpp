// NaN and ±Inf through every elementwise and activation op, against
// onnxruntime (tools/ort/run.js): one model holds each op alone and each op
// inside an elementwise chain (Mul → op → Add, which the fuse pass turns into
// one FusedElementwise node), run by tailor as imported and after every pass
// (the fastest kernels, AVX2 here), by `tailor run` with TAILOR_KERNELS=ref
// (the scalar reference kernels), and by onnxruntime once.
//
// Agreement: NaN where onnxruntime has NaN, the same infinity where it has
// one, finite values within 1e-5 · max(1, |ort|) (the two runtimes'
// polynomials for exp/tanh/erf differ by a few ulps).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>

#include "../ort/ort_runner.h"
#include "op_test_util.h"
#include "tailor/graph/passes.h"
#include "tailor/io/npy.h"
#include "tailor/io/onnx.h"
#include "tailor/runtime/executor.h"
#include "tailor/runtime/pass_options.h"
#include "test_util.h"

namespace tailor::testing {
namespace {

using graph::Attribute;
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr int64_t kN = 67;  // eight 8-lane vectors and a 3-element tail

/// [1, 67]: values spread over [-4, 4] with NaN in a vector body and in the
/// tail, ±Inf, and (for the second operand) the specials at other places.
Tensor specials(bool second) {
  std::vector<float> v(kN);
  for (int64_t i = 0; i < kN; ++i) v[i] = -4.0f + 8.0f * static_cast<float>(i) / (kN - 1);
  const std::vector<std::pair<int, float>> at =
      second ? std::vector<std::pair<int, float>>{{4, kNaN}, {9, kInf}, {20, -kInf}, {66, kNaN}}
             : std::vector<std::pair<int, float>>{{3, kNaN},  {5, kInf},   {9, -kInf}, {20, kNaN},
                                                  {40, kInf}, {65, -kInf}, {66, kNaN}};
  for (const auto& [i, x] : at) v[i] = x;
  return Tensor::from_f32({1, kN}, v);
}

struct OpCase {
  std::string op;
  std::vector<std::pair<std::string, Attribute>> attrs;
  bool binary = false;
  std::vector<float> bounds;  // Clip's min and max inputs, when given
};

std::vector<OpCase> cases() {
  std::vector<OpCase> c;
  for (const char* op : {"Relu", "Sigmoid", "Tanh", "Exp", "Log", "Sqrt", "Abs", "Neg", "Erf",
                         "Floor", "Ceil", "Round", "Reciprocal", "Softplus", "HardSwish"})
    c.push_back({op, {}});
  c.push_back({"Elu", {{"alpha", Attribute::of_float(0.7f)}}});
  c.push_back(
      {"HardSigmoid", {{"alpha", Attribute::of_float(0.3f)}, {"beta", Attribute::of_float(0.4f)}}});
  c.push_back({"LeakyRelu", {{"alpha", Attribute::of_float(0.05f)}}});
  c.push_back({"Clip", {}});
  c.push_back({"Clip", {}, false, {-1.0f, 1.5f}});
  c.push_back({"Softmax", {{"axis", Attribute::of_int(-1)}}});
  c.push_back({"LogSoftmax", {{"axis", Attribute::of_int(-1)}}});
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Sum", "Mean"})
    c.push_back({op, {}, true});
  return c;
}

/// One model: for case k, output "p<k>" = op(x[, y]) and output "c<k>" =
/// Add(op(Mul(x, 1.5)[, y]), 0.25).
graph::Model nan_model(const std::vector<OpCase>& ops) {
  graph::Model m;
  m.opset = 14;
  m.source = "nan_model";
  m.graph.inputs = {"x", "y"};
  for (const char* in : {"x", "y"})
    m.graph.types[in] = graph::ValueType{DType::f32, graph::sym_shape_of({1, kN})};
  m.graph.add_initializer("k_mul", Tensor::from_f32({}, std::vector<float>{1.5f}));
  m.graph.add_initializer("k_add", Tensor::from_f32({}, std::vector<float>{0.25f}));
  auto node = [&](const std::string& op, std::vector<std::string> in, const std::string& out,
                  const OpCase* c) {
    graph::Node n;
    n.op_type = op;
    n.name = "n_" + out;
    n.inputs = std::move(in);
    n.outputs = {out};
    if (c) n.attributes = c->attrs;
    m.graph.nodes.push_back(std::move(n));
  };
  for (size_t k = 0; k < ops.size(); ++k) {
    const OpCase& c = ops[k];
    const std::string id = std::to_string(k);
    std::vector<std::string> extra;
    if (c.binary) extra.push_back("y");
    if (!c.bounds.empty()) {
      m.graph.add_initializer("lo" + id, Tensor::from_f32({}, std::vector<float>{c.bounds[0]}));
      m.graph.add_initializer("hi" + id, Tensor::from_f32({}, std::vector<float>{c.bounds[1]}));
      extra = {"lo" + id, "hi" + id};
    }
    std::vector<std::string> plain{"x"}, chained{"m" + id};
    plain.insert(plain.end(), extra.begin(), extra.end());
    chained.insert(chained.end(), extra.begin(), extra.end());
    node(c.op, plain, "p" + id, &c);
    node("Mul", {"x", "k_mul"}, "m" + id, nullptr);
    node(c.op, chained, "u" + id, &c);
    node("Add", {"u" + id, "k_add"}, "c" + id, nullptr);
    for (const std::string& out : {"p" + id, "c" + id}) {
      m.graph.outputs.push_back(out);
      m.graph.types[out] = graph::ValueType{DType::f32, graph::sym_shape_of({1, kN})};
    }
  }
  return m;
}

void expect_same_specials(const Tensor& ours, const Tensor& ref, const std::string& what) {
  ASSERT_EQ(ours.shape(), ref.shape()) << what;
  const std::vector<float> a = ours.to_f32_vector(), b = ref.to_f32_vector();
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(b[i])) {
      EXPECT_TRUE(std::isnan(a[i])) << what << " at " << i << ": onnxruntime NaN, tailor " << a[i];
    } else if (std::isinf(b[i])) {
      EXPECT_EQ(a[i], b[i]) << what << " at " << i;
    } else {
      EXPECT_NEAR(a[i], b[i], 1e-5 * std::max(1.0f, std::abs(b[i]))) << what << " at " << i;
    }
  }
}

TEST(OrtNaN, EveryElementwiseOpPropagatesNanAndInfAsOnnxruntime) {
  if (auto why = ort_unavailable(); !why.empty()) GTEST_SKIP() << why;
  TempDir dir;
  const std::vector<OpCase> ops = cases();
  const graph::Model plain = nan_model(ops);
  const std::string path = dir.file("nan.onnx");
  graph::write_onnx(plain, path);
  const Tensor x = specials(false), y = specials(true);
  const auto ref = run_ort(path, {{"x", x}, {"y", y}});
  const graph::Model imported = graph::import_onnx(path);
  const graph::Model fused =
      graph::run_passes(imported, graph::parse_pass_list("all"), runtime::default_pass_options());
  const std::map<std::string, Tensor> feeds{{"x", x}, {"y", y}};
  // The reference kernels are chosen per process: `tailor run` in one.
  write_npy(dir.file("x.npy"), x);
  write_npy(dir.file("y.npy"), y);
  const CommandResult r =
      run_shell("TAILOR_KERNELS=ref " + shell_quote(TAILOR_CLI) + " run " + shell_quote(path) +
                " --input x=" + dir.file("x.npy") + " --input y=" + dir.file("y.npy") +
                " --output " + dir.file("ref"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::map<std::string, Tensor> ref_kernels;
  for (const auto& [name, t] : ref) ref_kernels[name] = read_npy(dir.file("ref/" + name + ".npy"));
  for (const auto& [label, model] :
       {std::pair<std::string, const graph::Model*>{"as imported", &imported},
        {"after all passes", &fused},
        {"reference kernels, all passes", nullptr}}) {
    std::map<std::string, Tensor> ours = ref_kernels;
    if (model) ours = runtime::Executor(*model).run(feeds);
    for (size_t k = 0; k < ops.size(); ++k) {
      const std::string op = ops[k].op + (ops[k].bounds.empty() ? "" : " [-1, 1.5]");
      for (const char* kind : {"p", "c"}) {
        const std::string out = kind + std::to_string(k);
        ASSERT_TRUE(ref.count(out) && ours.count(out)) << out;
        expect_same_specials(ours.at(out), ref.at(out),
                             op + (kind[0] == 'p' ? " alone, " : " in a chain, ") + label);
      }
    }
  }
}

}  // namespace
}  // namespace tailor::testing
