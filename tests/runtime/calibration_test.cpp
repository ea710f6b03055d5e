// Calibration Grams of weight layers (runtime/calibration.h): H = XᵀX of the
// rows each weight multiplies, compared with sums written out here from the
// definitions (a MatMul's input rows; a Conv's patches gathered pixel by pixel).
#include "tailor/runtime/calibration.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>

#include "tailor/core/error.h"
#include "tailor/core/rng.h"
#include "tailor/linalg/threads.h"
#include "tailor/runtime/executor.h"
#include "test_util.h"

namespace tailor::runtime {
namespace {

Tensor randn(const Shape& s, uint64_t seed) {
  Rng rng(seed);
  std::vector<float> v(static_cast<size_t>(shape_numel(s)));
  for (float& x : v) x = static_cast<float>(rng.normal());
  return Tensor::from_f32(s, v);
}

graph::Node node(const std::string& op, const std::string& name, std::vector<std::string> in,
                 std::vector<std::string> out) {
  graph::Node n;
  n.op_type = op;
  n.name = name;
  n.inputs = std::move(in);
  n.outputs = std::move(out);
  return n;
}

/// X [1, 3, 6, 5] → Conv(K [4, 3, 3, 3], pads 1, stride 2) → Relu → Transpose
/// to [1, 3, 3, 4]… flattened as rows [9, 4] → MatMul(W [4, 2]) → Y.
graph::Model model() {
  graph::Model m;
  m.opset = 13;
  m.source = "calib.onnx";
  m.graph.inputs = {"X"};
  m.graph.types["X"] = graph::ValueType{DType::f32, graph::sym_shape_of({1, 3, 6, 5})};
  m.graph.outputs = {"Y"};
  m.graph.add_initializer("K", randn({4, 3, 3, 3}, 1));
  m.graph.add_initializer("W", randn({4, 2}, 2));
  graph::Node c = node("Conv", "conv", {"X", "K"}, {"C"});
  c.set("kernel_shape", graph::Attribute::of_ints({3, 3}));
  c.set("pads", graph::Attribute::of_ints({1, 1, 1, 1}));
  c.set("strides", graph::Attribute::of_ints({2, 2}));
  graph::Node t = node("Transpose", "t", {"R"}, {"T"});
  t.set("perm", graph::Attribute::of_ints({0, 2, 3, 1}));
  m.graph.nodes = {c, node("Relu", "relu", {"C"}, {"R"}), t,
                   node("MatMul", "mm", {"T", "W"}, {"Y"})};
  return m;
}

TEST(Calibration, LayerInputsOfConvAndMatMul) {
  const std::vector<LayerInput> li = layer_inputs(model());
  ASSERT_EQ(li.size(), 2u);
  EXPECT_EQ(li[0].weight, "K");
  EXPECT_EQ(li[0].value, "X");
  EXPECT_EQ(li[0].in, 27);
  EXPECT_EQ(li[1].weight, "W");
  EXPECT_EQ(li[1].value, "T");
  EXPECT_EQ(li[1].in, 4);
}

TEST(Calibration, GramIsTheSumOfOuterProductsOfInputRows) {
  const graph::Model m = model();
  const Tensor x1 = randn({1, 3, 6, 5}, 3), x2 = randn({1, 3, 6, 5}, 4);
  const auto g = gram(m, {{{"X", x1}}, {{"X", x2}}});
  // Conv: output 3×3 (⌊(6 + 2 − 3)/2⌋ + 1 = 3, ⌊(5 + 2 − 3)/2⌋ + 1 = 3); one
  // patch per output pixel, element (c, ky, kx) = X[c, 2·oy − 1 + ky, 2·ox − 1 + kx] or 0.
  std::vector<double> hk(27 * 27, 0.0);
  for (const Tensor* x : {&x1, &x2}) {
    const std::vector<float> v = x->to_f32_vector();
    for (int oy = 0; oy < 3; ++oy)
      for (int ox = 0; ox < 3; ++ox) {
        double patch[27];
        for (int c = 0; c < 3; ++c)
          for (int ky = 0; ky < 3; ++ky)
            for (int kx = 0; kx < 3; ++kx) {
              const int y = 2 * oy - 1 + ky, xx = 2 * ox - 1 + kx;
              patch[c * 9 + ky * 3 + kx] =
                  (y >= 0 && y < 6 && xx >= 0 && xx < 5) ? v[(c * 6 + y) * 5 + xx] : 0.0;
            }
        for (int a = 0; a < 27; ++a)
          for (int b = 0; b < 27; ++b) hk[a * 27 + b] += patch[a] * patch[b];
      }
  }
  ASSERT_EQ(g.at("K").in, 27);
  EXPECT_EQ(g.at("K").rows, 18);
  for (int i = 0; i < 27 * 27; ++i)
    EXPECT_NEAR(g.at("K").h[i], hk[i], 1e-9 * (1 + std::abs(hk[i])));
  // MatMul: rows of T = Relu(Conv) in NHWC, 9 per input; its Gram from the
  // executor's own T (same model, T exposed), checked as Σ t tᵀ.
  graph::Model exposed = m;
  exposed.graph.outputs.push_back("T");
  Executor ex(exposed);
  std::vector<double> hw(16, 0.0);
  for (const Tensor* x : {&x1, &x2}) {
    const std::vector<float> t = ex.run({{"X", *x}}).at("T").to_f32_vector();
    ASSERT_EQ(t.size(), 36u);
    for (int r = 0; r < 9; ++r)
      for (int a = 0; a < 4; ++a)
        for (int b = 0; b < 4; ++b) hw[a * 4 + b] += double(t[r * 4 + a]) * t[r * 4 + b];
  }
  EXPECT_EQ(g.at("W").rows, 18);
  for (int i = 0; i < 16; ++i) EXPECT_NEAR(g.at("W").h[i], hw[i], 1e-9 * (1 + std::abs(hw[i])));
}

TEST(Calibration, GramOfChosenWeightsEqualsTheirEntriesOfTheFullGram) {
  const graph::Model m = model();
  const std::vector<std::map<std::string, Tensor>> feeds{{{"X", randn({1, 3, 6, 5}, 5)}},
                                                         {{"X", randn({1, 3, 6, 5}, 6)}}};
  const auto full = gram(m, feeds);
  for (const std::set<std::string>& only :
       {std::set<std::string>{"W"}, std::set<std::string>{"K"}, std::set<std::string>{"K", "W"},
        std::set<std::string>{"W", "not a weight"}}) {
    const auto some = gram(m, feeds, &only);
    std::set<std::string> got;
    for (const auto& [w, g] : some) {
      got.insert(w);
      EXPECT_EQ(g.rows, full.at(w).rows) << w;
      EXPECT_EQ(g.h, full.at(w).h) << w;  // the same sums in the same order: bit for bit
    }
    std::set<std::string> want;
    for (const std::string& w : only)
      if (full.count(w)) want.insert(w);
    EXPECT_EQ(got, want);
  }
}

TEST(Calibration, GramsDoNotDependOnTheThreadCount) {
  // The layers accumulate in parallel, one weight per item: the same bits on
  // one thread and on two, full Grams and diagonals alike.
  const graph::Model m = model();
  const std::vector<std::map<std::string, Tensor>> feeds{{{"X", randn({1, 3, 6, 5}, 7)}},
                                                         {{"X", randn({1, 3, 6, 5}, 8)}}};
  const int before = linalg::threads();
  linalg::set_threads(1);
  const auto one = gram(m, feeds);
  InputStats diag_one(layer_inputs(m), false);
  linalg::set_threads(2);
  const auto two = gram(m, feeds);
  InputStats diag_two(layer_inputs(m), false);
  graph::Model exposed = m;
  exposed.graph.outputs.push_back("T");
  Executor ex(exposed);
  for (const auto& f : feeds) {
    std::map<std::string, Tensor> values = ex.run(f);
    values.emplace("X", f.at("X"));
    linalg::set_threads(1);
    diag_one.add(values);
    linalg::set_threads(2);
    diag_two.add(values);
  }
  linalg::set_threads(before);
  ASSERT_EQ(one.size(), 2u);
  for (const auto& [w, g] : one) {
    EXPECT_EQ(g.rows, two.at(w).rows) << w;
    EXPECT_EQ(g.h, two.at(w).h) << w;
  }
  EXPECT_EQ(diag_one.mean_squares(), diag_two.mean_squares());
}

TEST(Calibration, ZeroInputsGiveZeroGramAndNaNIsRefused) {
  const graph::Model m = model();
  const auto g = gram(m, {{{"X", Tensor::zeros(DType::f32, {1, 3, 6, 5})}}});
  for (double v : g.at("K").h) EXPECT_EQ(v, 0.0);
  EXPECT_EQ(g.at("K").rows, 9);
  Tensor bad = randn({1, 3, 6, 5}, 5);
  bad.mutable_data<float>()[7] = std::numeric_limits<float>::quiet_NaN();
  testing::expect_error_naming([&] { gram(m, {{{"X", bad}}}); }, "calibration", "NaN");
  testing::expect_error_naming([&] { gram(m, {}); }, "calibration", "no calibration inputs");
}

TEST(Calibration, MeanSquaresAreTheGramDiagonalOverRows) {
  const graph::Model m = model();
  const Tensor x = randn({1, 3, 6, 5}, 6);
  const auto g = gram(m, {{{"X", x}}});
  InputStats diag(layer_inputs(m), false);
  diag.add({{"X", x}});
  const auto ms = diag.mean_squares();
  for (int j = 0; j < 27; ++j)
    EXPECT_NEAR(ms.at("K")[j], g.at("K").h[j * 27 + j] / 9, 1e-5 * (1 + ms.at("K")[j]));
}

}  // namespace
}  // namespace tailor::runtime
