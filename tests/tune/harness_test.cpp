// Harness: a wrong candidate is discarded before timing; a right one is timed.
#include <gtest/gtest.h>

#include "tailor/runtime/pass_options.h"
#include "tailor/tune/harness.h"
#include "tailor/tune/space.h"
#include "test_util.h"
#include "tune/showcase.h"

namespace tailor::tune {
namespace {

TEST(TuneHarness, SabotagedFoldingIsDiscardedWithoutTiming) {
  const graph::Model m = testing::showcase_model();
  HarnessOptions ho;
  ho.repeats = 3;
  ho.flush_bytes = 1 << 20;
  Harness h(m, {}, 5, ho);
  const ValueShapes shapes = observe_shapes(m, h.inputs());
  const DecisionSpace space = build_space(m, shapes, runtime::default_pass_options(), {});
  const Configuration c = space.default_configuration();

  // Sabotage: constant folding's evaluator returns Exp's result doubled.
  graph::PassOptions bad = runtime::default_pass_options();
  const graph::NodeEvaluator good = bad.evaluate;
  bad.evaluate = [good](const graph::Node& n, const std::vector<Tensor>& in, int64_t opset) {
    std::vector<Tensor> out = good(n, in, opset);
    if (n.op_type == "Exp")
      for (Tensor& t : out) {
        float* p = t.mutable_data<float>();
        for (int64_t i = 0; i < t.numel(); ++i) p[i] *= 2;
      }
    return out;
  };
  Applier sabotaged(m, space, bad);
  const Measurement wrong = h.measure(sabotaged.apply(c));
  EXPECT_FALSE(wrong.ok);
  EXPECT_TRUE(wrong.times_ms.empty());
  EXPECT_EQ(wrong.median_ms, 0.0);
  EXPECT_NE(wrong.error.find("relative error"), std::string::npos) << wrong.error;

  Applier fine(m, space, runtime::default_pass_options());
  const Measurement right = h.measure(fine.apply(c));
  EXPECT_TRUE(right.ok) << right.error;
  EXPECT_LE(right.max_rel_error, 1e-5);
  EXPECT_EQ(right.times_ms.size(), 3u);
  EXPECT_GT(right.median_ms, 0.0);
  EXPECT_GT(right.peak_bytes, 0);
}

TEST(TuneHarness, CpuClockTimesAndRefusesBadSettings) {
  const graph::Model m = testing::conv_relu_model();
  HarnessOptions ho;
  ho.repeats = 4;
  ho.flush_bytes = 1 << 20;
  ho.clock = "cpu";
  Harness h(m, {}, 5, ho);
  const DecisionSpace space =
      build_space(m, observe_shapes(m, h.inputs()), runtime::default_pass_options(), {});
  Applier a(m, space, runtime::default_pass_options());
  const Measurement r = h.measure(a.apply(space.default_configuration()));
  ASSERT_TRUE(r.ok) << r.error;
  ASSERT_EQ(r.times_ms.size(), 4u);
  for (double t : r.times_ms) EXPECT_GT(t, 0.0);
  const auto rounds = h.paired({a.apply(space.default_configuration())}, 2);
  EXPECT_GT(rounds[1][0], 0.0);
  ho.clock = "cycles";
  testing::expect_error_naming([&] { Harness(m, {}, 5, ho); }, "--clock", "wall or cpu");
}

TEST(TuneHarness, MedianAndMadByHand) {
  EXPECT_EQ(median({3, 1, 2}), 2.0);
  EXPECT_EQ(median({4, 1, 2, 3}), 2.5);
  // |x − 2| over {1, 2, 3, 10} = {1, 0, 1, 8}: median 1... of the sorted {0, 1, 1, 8} = 1.
  EXPECT_EQ(mad({1, 2, 3, 10}), 1.0);
}

TEST(TuneHarness, SymbolicInputWithoutShapeIsAnErrorNamingIt) {
  graph::Model m = testing::conv_relu_model();
  m.graph.types["x"] =
      graph::ValueType{DType::f32, graph::SymShape{graph::Dim::known(1), graph::Dim::known(2),
                                                   graph::Dim::named("h"), graph::Dim::known(32)}};
  testing::expect_error_naming([&] { random_inputs(m, {}, 1); }, "input 'x'", "--input-shape");
  EXPECT_EQ(random_inputs(m, {{"x", {1, 2, 8, 32}}}, 1).at("x").shape(), (Shape{1, 2, 8, 32}));
}

}  // namespace
}  // namespace tailor::tune
