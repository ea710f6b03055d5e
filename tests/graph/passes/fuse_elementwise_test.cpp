// The elementwise-group fusion (src/graph/passes/fuse_elementwise.h): structure, and
// outputs against the unfused graph and hand-derived values.
#include <cmath>

#include "pass_test_util.h"
#include "test_util.h"

namespace tailor::testing {
namespace {

TEST(FuseElementwise, ElementwiseGroupIsOneKernelWithBroadcasting) {
  // y = HardSigmoid(x·scale[C,1,1] + 0.5) · x − Relu(z): one node, inputs x, scale, z.
  GraphBuilder b;
  b.input("x", {1, 3, 2, 2})
      .input("z", {1, 1, 2, 2})
      .init("scale", vec_f32({3, 1, 1}, {1, -2, 3}))
      .init("half", scalar_f32(0.5f));
  b.node("Mul", {"x", "scale"}, {"a"})
      .node("Add", {"a", "half"}, {"c"})
      .node("HardSigmoid", {"c"}, {"h"});
  b.node("Mul", {"h", "x"}, {"p"})
      .node("Relu", {"z"}, {"rz"})
      .node("Sub", {"p", "rz"}, {"y"})
      .output("y");
  std::vector<float> xv(12), zv = {-1, 2, -3, 4};
  for (size_t i = 0; i < 12; ++i) xv[i] = 0.25f * static_cast<float>(i) - 1.5f;
  const auto feeds = std::map<std::string, Tensor>{{"x", vec_f32({1, 3, 2, 2}, xv)},
                                                   {"z", vec_f32({1, 1, 2, 2}, zv)}};
  const graph::Model out = check_passes(b.model(), {"fuse"}, feeds, 0.0);
  ASSERT_EQ(out.graph.nodes.size(), 1u);
  EXPECT_EQ(out.graph.nodes[0].op_type, "FusedElementwise");
  EXPECT_EQ(out.graph.nodes[0].inputs.size(), 3u);
  std::vector<float> want;
  const float sc[3] = {1, -2, 3};
  for (size_t i = 0; i < 12; ++i) {
    const float x = xv[i], h = std::max(0.f, std::min(1.f, 0.2f * (x * sc[i / 4] + 0.5f) + 0.5f));
    want.push_back(h * x - std::max(0.f, zv[i % 4]));
  }
  expect_f32(run_model(out, feeds).at("y"), {1, 3, 2, 2}, want, 1e-6f);
}

TEST(FuseElementwise, ElementwiseGroupOverLargeSameShapeInputsSplitsIntoBlocks) {
  // 70001 elements: several blocks and a short last one; same float ops as unfused.
  GraphBuilder b;
  b.input("x", {70001}).input("z", {70001}).init("half", scalar_f32(0.5f));
  b.node("Sigmoid", {"x"}, {"s"})
      .node("Mul", {"s", "z"}, {"m"})
      .node("Add", {"m", "half"}, {"y"})
      .output("y");
  const auto feeds = std::map<std::string, Tensor>{{"x", random_f32({70001}, 40, -5, 5)},
                                                   {"z", random_f32({70001}, 41)}};
  const graph::Model out = check_passes(b.model(), {"fuse"}, feeds, 0.0);
  ASSERT_EQ(out.graph.nodes.size(), 1u);
  EXPECT_EQ(out.graph.nodes[0].op_type, "FusedElementwise");
}

}  // namespace
}  // namespace tailor::testing
