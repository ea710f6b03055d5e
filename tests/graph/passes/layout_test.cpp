// Layout: conv chains in NHWC with one transpose at each end.
#include "pass_test_util.h"

namespace tailor::testing {
namespace {

TEST(Layout, ConvChainRunsChannelsLastWithTransposesOnlyAtTheEnds) {
  // 3×3 (stride 2, pads) → depthwise 3×3 (fused Relu after fuse) → 1×1, NCHW in and out.
  GraphBuilder b;
  b.input("x", {2, 3, 9, 7})
      .init("w1", random_f32({8, 3, 3, 3}, 30))
      .init("b1", random_f32({8}, 31));
  b.init("w2", random_f32({8, 1, 3, 3}, 32))
      .init("w3", random_f32({5, 8, 1, 1}, 33))
      .init("b3", random_f32({5}, 34));
  b.node("Conv", {"x", "w1", "b1"}, {"c1"},
         {{"strides", ints({2, 2})}, {"pads", ints({1, 0, 1, 1})}});
  b.node("Conv", {"c1", "w2"}, {"c2"}, {{"group", int1(8)}, {"pads", ints({1, 1, 1, 1})}})
      .node("Relu", {"c2"}, {"r2"});
  b.node("Conv", {"r2", "w3", "b3"}, {"y"}).output("y");
  const auto feeds = std::map<std::string, Tensor>{{"x", random_f32({2, 3, 9, 7}, 35)}};
  const graph::Model out = check_passes(b.model(), {"fuse", "layout", "dce"}, feeds, 1e-5);
  EXPECT_EQ(count_ops(out.graph, "ai.tailor.ConvNhwc"), 3u);
  EXPECT_EQ(count_ops(out.graph, "Transpose"), 2u);
  EXPECT_EQ(out.graph.nodes.size(), 5u);
  EXPECT_EQ(out.graph.nodes.front().attr_ints("perm", {}), (std::vector<int64_t>{0, 2, 3, 1}));
  EXPECT_EQ(out.graph.nodes.back().attr_ints("perm", {}), (std::vector<int64_t>{0, 3, 1, 2}));
}

TEST(Layout, AConvOutputThatIsAlsoAGraphOutputKeepsItsTransposeToNchw) {
  // x → Conv → c (a graph output) → Conv → y: the second conv reads the first
  // one's NHWC result directly; c still gets its transpose back to NCHW.
  GraphBuilder b;
  b.input("x", {1, 2, 5, 4}).init("w1", random_f32({3, 2, 3, 3}, 50));
  b.init("w2", random_f32({4, 3, 1, 1}, 51)).init("b2", random_f32({4}, 52));
  b.node("Conv", {"x", "w1"}, {"c"}, {{"pads", ints({1, 1, 1, 1})}})
      .node("Conv", {"c", "w2", "b2"}, {"y"})
      .output("c")
      .output("y");
  const graph::Model out =
      check_passes(b.model(), {"layout", "dce"}, {{"x", random_f32({1, 2, 5, 4}, 53)}}, 1e-5);
  EXPECT_EQ(count_ops(out.graph, "ai.tailor.ConvNhwc"), 2u);
  EXPECT_EQ(count_ops(out.graph, "Transpose"), 3u);  // x in, c out, y out
  const graph::Node* first = nullptr;
  const graph::Node* second = nullptr;
  for (const auto& n : out.graph.nodes)
    if (n.op_type == "ConvNhwc") (first ? second : first) = &n;
  ASSERT_TRUE(first && second);
  EXPECT_EQ(second->inputs[0], first->outputs[0]);
}

TEST(Layout, GroupedConvsOtherThanDepthwiseStayNchw) {
  GraphBuilder b;
  b.input("x", {1, 4, 5, 5}).init("w", random_f32({4, 2, 3, 3}, 36));
  b.node("Conv", {"x", "w"}, {"y"}, {{"group", int1(2)}}).output("y");
  const graph::Model out =
      check_passes(b.model(), {"layout"}, {{"x", random_f32({1, 4, 5, 5}, 37)}}, 1e-6);
  EXPECT_EQ(count_ops(out.graph, "Conv"), 1u);
  EXPECT_EQ(count_ops(out.graph, "Transpose"), 0u);
}

}  // namespace
}  // namespace tailor::testing
