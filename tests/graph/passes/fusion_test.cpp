// The fusion driver on hand-built graphs: rules side by side, candidate ids
// and selection, and the runtime's checks of the fused ops' contracts. Each
// rule's own tests are in fuse_<rule>_test.cpp.
#include <cmath>

#include "pass_test_util.h"
#include "tailor/graph/fused_ops.h"
#include "test_util.h"

namespace tailor::testing {
namespace {

graph::PassOptions fuse_opts() {
  return runtime::default_pass_options();
}

TEST(Fusion, GemmAndMatMulEpilogues) {
  GraphBuilder b;
  b.input("x", {3, 4})
      .init("w", random_f32({4, 5}, 5))
      .init("c", random_f32({5}, 6))
      .init("w2", random_f32({5, 2}, 7));
  b.init("bias2", random_f32({2}, 8));
  b.node("Gemm", {"x", "w", "c"}, {"g"}).node("Relu", {"g"}, {"r"});
  b.node("MatMul", {"r", "w2"}, {"m"})
      .node("Add", {"m", "bias2"}, {"a"})
      .node("Sigmoid", {"a"}, {"y"})
      .output("y");
  const graph::Model out = check_passes(b.model(), {"fuse"}, {{"x", random_f32({3, 4}, 9)}}, 1e-6);
  ASSERT_EQ(out.graph.nodes.size(), 2u);
  EXPECT_EQ(out.graph.nodes[0].op_type, "FusedGemm");
  EXPECT_EQ(out.graph.nodes[1].op_type, "FusedMatMul");
  EXPECT_EQ(out.graph.nodes[1].inputs.size(), 3u);
}

TEST(Fusion, CandidatesHaveStableIdsAndCanBeSelected) {
  GraphBuilder b;
  b.input("x", {1, 2, 3, 3})
      .init("w", random_f32({2, 2, 1, 1}, 20))
      .init("w2", random_f32({2, 2, 1, 1}, 21));
  b.node("Conv", {"x", "w"}, {"c1"}).node("Relu", {"c1"}, {"r1"});
  b.node("Conv", {"r1", "w2"}, {"c2"}).node("Sigmoid", {"c2"}, {"y"}).output("y");
  const graph::Model m = b.model();
  const auto cands = graph::fusion_candidates(m);
  ASSERT_EQ(cands.size(), 2u);
  EXPECT_EQ(cands[0].id, "conv_epilogue:r1");
  EXPECT_EQ(cands[1].id, "conv_epilogue:y");
  EXPECT_EQ(cands[0].nodes.size(), 2u);
  EXPECT_EQ(graph::fusion_candidates(m)[1].id, cands[1].id);  // same graph, same ids
  graph::PassOptions o = fuse_opts();
  o.fusion_candidates = std::set<std::string>{"conv_epilogue:y"};
  const graph::Model out =
      check_passes(m, {"fuse"}, {{"x", random_f32({1, 2, 3, 3}, 22)}}, 1e-6, o);
  EXPECT_EQ(count_ops(out.graph, "Conv"), 1u);
  EXPECT_EQ(count_ops(out.graph, "Relu"), 1u);
  EXPECT_EQ(count_ops(out.graph, "ai.tailor.FusedConv"), 1u);
}

}  // namespace
}  // namespace tailor::testing

namespace tailor::testing {
namespace {

TEST(FusedOps, MalformedNodesAreLoadTimeErrorsNamingTheNode) {
  // A step reading register 5 of a 1-input program; an unknown activation.
  GraphBuilder b;
  b.input("x", {2});
  b.node("FusedElementwise", {"x"}, {"y"},
         {{"program", ints({static_cast<int64_t>(graph::ElementwiseOp::add), 1, 0, 5})},
          {"params", graph::Attribute::of_floats({0, 0})},
          {"constants", graph::Attribute::of_floats({})}},
         "ai.tailor");
  b.output("y");
  expect_error_naming([&] { runtime::Executor ex(b.model()); }, "FusedElementwise_0",
                      "undefined register");
  GraphBuilder c;
  c.input("a", {2, 2}).init("w", random_f32({2, 2}, 50));
  c.node("FusedMatMul", {"a", "w"}, {"y"}, {{"activation", graph::Attribute::of_string("swish")}},
         "ai.tailor");
  c.output("y");
  expect_error_naming([&] { runtime::Executor ex(c.model()); }, "FusedMatMul_0",
                      "activation 'swish' is unknown");
  // FusedConv and FusedGemm read the same activation table.
  GraphBuilder d;
  d.input("x", {1, 1, 2, 2}).init("w", random_f32({1, 1, 1, 1}, 51));
  d.node("FusedConv", {"x", "w"}, {"y"}, {{"activation", graph::Attribute::of_string("gelu")}},
         "ai.tailor");
  d.output("y");
  expect_error_naming([&] { runtime::Executor ex(d.model()); }, "FusedConv_0",
                      "activation 'gelu' is unknown");
  GraphBuilder e;
  e.input("a", {2, 2}).init("w", random_f32({2, 2}, 52));
  e.node("FusedGemm", {"a", "w"}, {"y"}, {{"activation", graph::Attribute::of_string("elu")}},
         "ai.tailor");
  e.output("y");
  expect_error_naming([&] { runtime::Executor ex(e.model()); }, "FusedGemm_0",
                      "activation 'elu' is unknown");
}

}  // namespace
}  // namespace tailor::testing
