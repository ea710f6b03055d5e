// Per-node conv decisions (issue 16): the space lists exactly the eligible
// conv algorithms per node and per-op threads for small convs, the applier
// writes them as node attributes the runtime honours, the cost model tells
// the kernels apart, and the gradient search over them is seeded.
#include <gtest/gtest.h>

#include <cmath>

#include "tailor/runtime/executor.h"
#include "tailor/runtime/pass_options.h"
#include "tailor/tune/cost_model.h"
#include "tailor/tune/harness.h"
#include "tailor/tune/search.h"
#include "tailor/tune/space.h"
#include "tune/showcase.h"

namespace tailor::tune {
namespace {

using testing::declare_input;
using testing::make_node;
using testing::random_tensor;

// x [1, 16, 20, 20] → a: 3×3 s1 pad 1 (16→16, 20×20 plane) → b: 3×3 stride 3
// pad 1 (→ 7×7) → c: 1×1 → d: 3×3 s1 pad 1 (7×7) → e: depthwise 3×3 →
// f: 3×3 s1 pad 1 (16→4) → y [1, 4, 7, 7]. a's plane is at least, d's below,
// either kernel table's winograd_min_plane (16, or 8 with AVX-512).
graph::Model chain_model() {
  graph::Model m;
  m.opset = 13;
  m.source = "conv_chain";
  declare_input(m, "x", {1, 16, 20, 20});
  auto& g = m.graph;
  const auto pads = graph::Attribute::of_ints({1, 1, 1, 1});
  for (const char* w : {"wa", "wb", "wd"}) g.add_initializer(w, random_tensor({16, 16, 3, 3}, 7));
  g.add_initializer("wc", random_tensor({16, 16, 1, 1}, 8));
  g.add_initializer("we", random_tensor({16, 1, 3, 3}, 9));
  g.add_initializer("wf", random_tensor({4, 16, 3, 3}, 10));
  g.nodes = {
      make_node("Conv", "a", {"x", "wa"}, {"va"}, {{"pads", pads}}),
      make_node("Conv", "b", {"va", "wb"}, {"vb"},
                {{"pads", pads}, {"strides", graph::Attribute::of_ints({3, 3})}}),
      make_node("Conv", "c", {"vb", "wc"}, {"vc"}),
      make_node("Conv", "d", {"vc", "wd"}, {"vd"}, {{"pads", pads}}),
      make_node("Conv", "e", {"vd", "we"}, {"ve"},
                {{"pads", pads}, {"group", graph::Attribute::of_int(16)}}),
      make_node("Conv", "f", {"ve", "wf"}, {"y"}, {{"pads", pads}}),
  };
  g.outputs = {"y"};
  return m;
}

// chain_model with the 16→16 3×3 weight `w` (wa, wb or wd) fed by a
// Constant node instead of an initializer: an initializer only once fold
// runs, so with fold off nothing is packed at load.
graph::Model with_constant_weight(const std::string& w) {
  graph::Model m = chain_model();
  m.graph.initializers.erase(w);
  std::erase(m.graph.initializer_order, w);
  m.graph.nodes.insert(
      m.graph.nodes.begin(),
      make_node("Constant", "k_" + w, {}, {w},
                {{"value", graph::Attribute::of_tensor(random_tensor({16, 16, 3, 3}, 7))}}));
  return m;
}

DecisionSpace space_of(const graph::Model& m, int threads, int64_t small_macs) {
  SpaceOptions o;
  o.max_threads = threads;
  o.small_op_macs = small_macs;
  return build_space(m, observe_shapes(m, random_inputs(m, {}, 1)), runtime::default_pass_options(),
                     o);
}

std::vector<std::string> names_of_kind(const DecisionSpace& s, const std::string& kind) {
  std::vector<std::string> out;
  for (const auto& d : s.decisions)
    if (d.kind == kind) out.push_back(d.name);
  return out;
}

TEST(TuneConvDecisions, SpaceListsExactlyTheEligibleChoices) {
  unsetenv("TAILOR_CONV_WINOGRAD");
  // Winograd serves a and d (3×3 s1, 16 channels); not b (stride 2), c
  // (1×1), e (depthwise), f (4 output channels). The rule takes it on a's
  // 20×20 plane, not on d's 7×7.
  const DecisionSpace s = space_of(chain_model(), 1, int64_t{1} << 24);
  EXPECT_EQ(names_of_kind(s, "conv_algo"),
            (std::vector<std::string>{"conv_algo:a", "conv_algo:d"}));
  const auto& a = s.decisions[static_cast<size_t>(s.find("conv_algo:a"))];
  const auto& d = s.decisions[static_cast<size_t>(s.find("conv_algo:d"))];
  EXPECT_EQ(a.choices, (std::vector<std::string>{"gemm", "winograd"}));
  EXPECT_EQ(a.default_choice, 1);
  EXPECT_EQ(d.choices, (std::vector<std::string>{"gemm", "winograd"}));
  EXPECT_EQ(d.default_choice, 0);
  EXPECT_TRUE(names_of_kind(s, "op_threads").empty());  // one thread offered
  // Multiply-adds: a 16·400·144 = 921600, b and d 16·49·144 = 112896,
  // c 16·49·16 = 12544, e 16·49·9 = 7056, f 4·49·144 = 28224; under a
  // 500000 limit every conv but a is small.
  EXPECT_EQ(names_of_kind(space_of(chain_model(), 4, 500000), "op_threads"),
            (std::vector<std::string>{"op_threads:b", "op_threads:c", "op_threads:d",
                                      "op_threads:e", "op_threads:f"}));
}

TEST(TuneConvDecisions, AppliedChoicesReachTheRuntimeAndTheCostModel) {
  unsetenv("TAILOR_CONV_WINOGRAD");
  const graph::Model m = chain_model();
  const DecisionSpace s = space_of(m, 1, int64_t{1} << 24);
  const ValueShapes shapes = observe_shapes(m, random_inputs(m, {}, 1));
  Applier applier(m, s, runtime::default_pass_options());
  Configuration c = s.default_configuration();
  const AppliedConfiguration dflt = applier.apply(c);
  for (const auto& n : dflt.model.graph.nodes) EXPECT_EQ(n.find("conv_algorithm"), nullptr);
  c[static_cast<size_t>(s.find("conv_algo:a"))] = 0;  // gemm
  c[static_cast<size_t>(s.find("conv_algo:d"))] = 1;  // winograd
  const AppliedConfiguration swapped = applier.apply(c);
  std::map<std::string, std::string> algo;
  for (const auto& n : swapped.model.graph.nodes)
    if (n.find("conv_algorithm")) algo[n.name] = n.attr_string("conv_algorithm", "");
  EXPECT_EQ(algo, (std::map<std::string, std::string>{{"a", "gemm"}, {"d", "winograd"}}));
  // Same function, different rounding: the runtime ran other kernels.
  const auto in = random_inputs(m, {}, 3);
  runtime::Executor e0(dflt.model), e1(swapped.model);
  const Tensor y0 = e0.run(in).at("y"), y1 = e1.run(in).at("y");
  ASSERT_EQ(y0.numel(), 196);
  double diff = 0, scale = 0;
  for (int64_t i = 0; i < y0.numel(); ++i) {
    diff = std::max(diff, std::fabs(double(y0.data<float>()[i]) - y1.data<float>()[i]));
    scale = std::max(scale, std::fabs(double(y0.data<float>()[i])));
  }
  EXPECT_GT(diff, 0.0);
  EXPECT_LT(diff, 1e-4 * scale);
  // The cost model's Winograd term: a's FLOPs (2·16·400·144 = 1843200) by
  // default, d's (2·16·49·144 = 225792) after the swap.
  const auto& names = feature_names();
  const size_t wf = static_cast<size_t>(
      std::find(names.begin(), names.end(), "winograd_flops_1e7_per_thread") - names.begin());
  ASSERT_LT(wf, names.size());
  const MachineInfo machine;
  EXPECT_NEAR(graph_features(dflt.model, 1, shapes, machine)[wf], 1843200 / 1e7, 1e-12);
  EXPECT_NEAR(graph_features(swapped.model, 1, shapes, machine)[wf], 225792 / 1e7, 1e-12);
}

TEST(TuneConvDecisions, WinogradOnAConstantNodesWeightPassesTheCheck) {
  // d's weight comes from a Constant node, an initializer only once fold
  // runs: with fold off it is not packed at load, and the Winograd choice
  // (offered on d's shape) must still run and agree with the reference
  // (it was an Error, so the candidate failed its check).
  unsetenv("TAILOR_CONV_WINOGRAD");
  const graph::Model m = with_constant_weight("wd");
  const DecisionSpace s = space_of(m, 1, int64_t{1} << 24);
  ASSERT_GE(s.find("conv_algo:d"), 0);
  Applier applier(m, s, runtime::default_pass_options());
  Configuration c = s.default_configuration();
  c[static_cast<size_t>(s.find("pass:fold"))] = 0;
  c[static_cast<size_t>(s.find("conv_algo:d"))] = 1;  // winograd
  const AppliedConfiguration applied = applier.apply(c);
  bool d_is_fed = false;
  for (const auto& n : applied.model.graph.nodes)
    if (n.name == "d")
      d_is_fed = n.attr_string("conv_algorithm", "") == "winograd" &&
                 applied.model.graph.initializers.count(n.inputs[1]) == 0;
  EXPECT_TRUE(d_is_fed);
  const Harness harness(m, {}, 1, HarnessOptions{});
  const Measurement check = harness.check(applied);
  EXPECT_TRUE(check.ok) << check.error;
}

TEST(TuneConvDecisions, AWinogradDefaultHoldsOnAWeightNotPackedAtLoad) {
  // a's weight from a Constant node: with fold on (the default) it becomes
  // an initializer, is packed at load, and the automatic rule runs Winograd
  // with no attribute; with fold off it stays computed, and the default
  // choice (winograd, a's 20×20 plane) is written out, else the runtime
  // would run the GEMM: the run differs from the gemm choice's.
  unsetenv("TAILOR_CONV_WINOGRAD");
  const graph::Model m = with_constant_weight("wa");
  const DecisionSpace s = space_of(m, 1, int64_t{1} << 24);
  const int da = s.find("conv_algo:a");
  ASSERT_GE(da, 0);
  ASSERT_EQ(s.decisions[static_cast<size_t>(da)].default_choice, 1);  // winograd
  Applier applier(m, s, runtime::default_pass_options());
  const auto algo_of_a = [](const AppliedConfiguration& a) {
    for (const auto& n : a.model.graph.nodes)
      if (n.name == "a") return n.attr_string("conv_algorithm", "");
    return std::string("no node a");
  };
  Configuration c = s.default_configuration();
  EXPECT_EQ(algo_of_a(applier.apply(c)), "");  // folded: packed, the rule's Winograd
  c[static_cast<size_t>(s.find("pass:fold"))] = 0;
  const AppliedConfiguration wino = applier.apply(c);
  EXPECT_EQ(algo_of_a(wino), "winograd");
  c[static_cast<size_t>(da)] = 0;
  const AppliedConfiguration gemm = applier.apply(c);
  EXPECT_EQ(algo_of_a(gemm), "gemm");
  const auto in = random_inputs(m, {}, 5);
  runtime::Executor e0(wino.model), e1(gemm.model);
  const Tensor y0 = e0.run(in).at("y"), y1 = e1.run(in).at("y");
  double diff = 0;
  for (int64_t i = 0; i < y0.numel(); ++i)
    diff = std::max(diff, std::fabs(double(y0.data<float>()[i]) - y1.data<float>()[i]));
  EXPECT_GT(diff, 0.0);  // different kernels ran
  const Harness harness(m, {}, 1, HarnessOptions{});
  EXPECT_TRUE(harness.check(wino).ok);
}

TEST(TuneConvDecisions, GradientSearchOverConvChoicesIsSeeded) {
  unsetenv("TAILOR_CONV_WINOGRAD");
  const graph::Model m = chain_model();
  const DecisionSpace s = space_of(m, 1, int64_t{1} << 24);
  const ValueShapes shapes = observe_shapes(m, random_inputs(m, {}, 1));
  Applier applier(m, s, runtime::default_pass_options());
  const MachineInfo machine;
  const FeatureFn features = [&](const Configuration& c) {
    const AppliedConfiguration a = applier.apply(c);
    return graph_features(a.model, a.threads, shapes, machine);
  };
  // A synthetic latency (no timing): Winograd pays 0.4 ms on a, 0.2 on d.
  const int da = s.find("conv_algo:a"), dd = s.find("conv_algo:d");
  const Oracle oracle = [&](const Configuration& c) -> std::optional<double> {
    return 2.0 + (c[static_cast<size_t>(da)] == 0 ? 0.4 : 0.0) +
           (c[static_cast<size_t>(dd)] == 0 ? 0.2 : 0.0);
  };
  auto run = [&](uint64_t seed) {
    CostModel model(feature_names().size());
    return search_gradient(s, oracle, features, 8, seed, model);
  };
  const SearchResult r1 = run(11), r2 = run(11);
  ASSERT_EQ(r1.evaluations.size(), r2.evaluations.size());
  for (size_t i = 0; i < r1.evaluations.size(); ++i)
    EXPECT_EQ(r1.evaluations[i].config, r2.evaluations[i].config) << i;
  ASSERT_GE(r1.best, 0);
  EXPECT_DOUBLE_EQ(*r1.evaluations[static_cast<size_t>(r1.best)].latency_ms, 2.0);
}

}  // namespace
}  // namespace tailor::tune
