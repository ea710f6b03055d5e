// Decision space: counts by hand on a small graph, enumeration, application.
#include <gtest/gtest.h>

#include <set>

#include "tailor/core/error.h"
#include "tailor/runtime/pass_options.h"
#include "tailor/tune/harness.h"
#include "tailor/tune/space.h"
#include "test_util.h"
#include "tune/showcase.h"

namespace tailor::tune {
namespace {

using testing::conv_relu_model;

DecisionSpace space_of(const graph::Model& m, int threads) {
  const ValueShapes shapes = observe_shapes(m, random_inputs(m, {}, 1));
  SpaceOptions o;
  o.max_threads = threads;
  return build_space(m, shapes, runtime::default_pass_options(), o);
}

TEST(TuneSpace, CountsOnConvReluByHand) {
  // 8 passes (fold, simplify, strength, cse, hoist, fuse, layout, dce): 2
  // choices each; one fusion candidate (Conv + Relu epilogue): 2; the conv has
  // 32·32 = 1024 output columns, so of the blocks {256, 1024, 4096} only 256
  // is smaller: {full, 256}; 2 input channels: no Winograd, no conv_algo;
  // 4·1024·18 multiply-adds, a small op: op_threads {all, 1}; its weight an
  // f32 initializer: kernel_variant {dense, w8a8}; threads up to 2: {1, 2}.
  // 13 decisions, 2^8·2·2·2·2·2 = 8192 points.
  const DecisionSpace s = space_of(conv_relu_model(), 2);
  ASSERT_EQ(s.decisions.size(), 13u);
  EXPECT_EQ(s.points(), 8192.0);
  EXPECT_EQ(s.decisions[0].name, "pass:fold");
  EXPECT_EQ(s.decisions[2].name, "pass:strength");
  EXPECT_EQ(s.decisions[7].name, "pass:dce");
  EXPECT_EQ(s.decisions[8].name, "fusion:conv_epilogue:y");
  EXPECT_EQ(s.decisions[9].name, "kernel_variant:c");
  EXPECT_EQ(s.decisions[9].choices, (std::vector<std::string>{"dense", "w8a8"}));
  EXPECT_EQ(s.decisions[10].name, "conv_block:c");
  EXPECT_EQ(s.decisions[10].choices, (std::vector<std::string>{"full", "256"}));
  EXPECT_EQ(s.decisions[11].name, "op_threads:c");
  EXPECT_EQ(s.decisions[11].choices, (std::vector<std::string>{"all", "1"}));
  EXPECT_EQ(s.decisions[12].choices, (std::vector<std::string>{"1", "2"}));
  // Default: every pass in `all` on, fusion on, full blocks, all threads per
  // op, the dense kernels, most threads.
  EXPECT_EQ(s.default_configuration(), (Configuration{1, 1, 1, 1, 1, 1, 0, 1, 1, 0, 0, 0, 1}));
  EXPECT_EQ(space_of(conv_relu_model(), 4).decisions[12].choices,
            (std::vector<std::string>{"1", "2", "4"}));
  // One thread offered: no per-op thread decision.
  EXPECT_EQ(space_of(conv_relu_model(), 1).find("op_threads:c"), -1);
  EXPECT_THROW(s.enumerate(4096), Error);
}

TEST(TuneSpace, EnumeratesEverySmallSpacePointOnce) {
  const DecisionSpace s = space_of(conv_relu_model(), 1);  // threads {1}: 2048 points
  EXPECT_EQ(s.points(), 2048.0);
  const auto all = s.enumerate(2048);
  ASSERT_EQ(all.size(), 2048u);
  std::set<std::string> keys;
  for (const auto& c : all) {
    s.validate(c);
    keys.insert(DecisionSpace::key(c));
  }
  EXPECT_EQ(keys.size(), 2048u);
}

TEST(TuneSpace, ApplyingAConfigurationChangesTheGraph) {
  const graph::Model m = conv_relu_model();
  const DecisionSpace s = space_of(m, 2);
  Applier a(m, s, runtime::default_pass_options());
  Configuration c = s.default_configuration();
  // Default: Conv + Relu fused into one FusedConv.
  AppliedConfiguration d = a.apply(c);
  ASSERT_EQ(d.model.graph.nodes.size(), 1u);
  EXPECT_EQ(d.model.graph.nodes[0].op_type, "FusedConv");
  EXPECT_EQ(d.threads, 2);
  // The fusion candidate off: two nodes; block 256 sets the conv's attribute.
  EXPECT_EQ(d.model.graph.nodes[0].find("threads"), nullptr);
  c[8] = 0;
  c[10] = 1;
  c[11] = 1;
  c[12] = 0;
  AppliedConfiguration u = a.apply(c);
  ASSERT_EQ(u.model.graph.nodes.size(), 2u);
  EXPECT_EQ(u.model.graph.nodes[0].op_type, "Conv");
  EXPECT_EQ(u.model.graph.nodes[0].attr_int("column_block", 0), 256);
  EXPECT_EQ(u.model.graph.nodes[0].attr_int("threads", 0), 1);
  EXPECT_EQ(u.threads, 1);
  c.push_back(0);
  EXPECT_THROW(a.apply(c), Error);
}

TEST(TuneSpace, RoundedConvScaleFoldIsADecisionWhereItChangesTheGraph) {
  // x → Conv (1×1, w = 1) → Mul 3: exact (default) keeps the Mul; rounded folds
  // it into the weights (w' = 3): one node. x = 2 → 6 either way.
  graph::Model m;
  m.opset = 13;
  m.graph.inputs = {"x"};
  m.graph.types["x"] = graph::ValueType{DType::f32, graph::sym_shape_of({1, 1, 1, 1})};
  m.graph.add_initializer("w", Tensor::from_f32({1, 1, 1, 1}, std::vector<float>{1}));
  m.graph.add_initializer("three", Tensor::from_f32({}, std::vector<float>{3}));
  graph::Node conv, mul;
  conv.op_type = "Conv", conv.name = "c", conv.inputs = {"x", "w"}, conv.outputs = {"c"};
  mul.op_type = "Mul", mul.name = "m", mul.inputs = {"c", "three"}, mul.outputs = {"y"};
  m.graph.nodes = {conv, mul};
  m.graph.outputs = {"y"};
  const DecisionSpace s = space_of(m, 1);
  const int d = s.find("fold_scales");
  ASSERT_GE(d, 0);
  EXPECT_EQ(s.decisions[static_cast<size_t>(d)].choices,
            (std::vector<std::string>{"exact", "rounded"}));
  Applier a(m, s, runtime::default_pass_options());
  Configuration c = s.default_configuration();
  EXPECT_EQ(c[static_cast<size_t>(d)], 0);
  c[static_cast<size_t>(s.find("pass:fuse"))] = 0;  // count the plain nodes
  EXPECT_EQ(a.apply(c).model.graph.nodes.size(), 2u);
  c[static_cast<size_t>(d)] = 1;
  const AppliedConfiguration r = a.apply(c);
  ASSERT_EQ(r.model.graph.nodes.size(), 1u);
  EXPECT_EQ(r.model.graph.initializers.at(r.model.graph.nodes[0].inputs[1]).to_f32_vector(),
            (std::vector<float>{3}));
  // The conv-only model has no such Mul: no decision.
  EXPECT_EQ(space_of(conv_relu_model(), 1).find("fold_scales"), -1);
}

}  // namespace
}  // namespace tailor::tune
