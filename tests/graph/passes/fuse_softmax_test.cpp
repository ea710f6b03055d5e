// The softmax fusion (src/graph/passes/fuse_softmax.h) on hand-built graphs.
#include <cmath>

#include "pass_test_util.h"
#include "test_util.h"

namespace tailor::testing {
namespace {

TEST(FuseSoftmax, SoftmaxFromBothDecomposedForms) {
  for (bool with_max : {false, true}) {
    Tensor axes = Tensor::zeros(DType::i64, {1});
    axes.mutable_data<int64_t>()[0] = 1;
    GraphBuilder b(13);
    b.input("x", {2, 5, 3}).init("axes", axes);
    std::string e_in = "x";
    if (with_max) {
      b.node("ReduceMax", {"x"}, {"mx"}, {{"axes", ints({1})}}).node("Sub", {"x", "mx"}, {"t"});
      e_in = "t";
    }
    b.node("Exp", {e_in}, {"e"})
        .node("ReduceSum", {"e", "axes"}, {"s"})
        .node("Div", {"e", "s"}, {"y"})
        .output("y");
    const auto feeds = std::map<std::string, Tensor>{{"x", random_f32({2, 5, 3}, 13, -4, 4)}};
    const graph::Model out = check_passes(b.model(), {"fuse"}, feeds, 1e-6);
    ASSERT_EQ(out.graph.nodes.size(), 1u);
    EXPECT_EQ(out.graph.nodes[0].op_type, "Softmax");
    EXPECT_EQ(out.graph.nodes[0].attr_int("axis", 0), 1);
    // Each column over axis 1 sums to 1.
    const std::vector<float> y = run_model(out, feeds).at("y").to_f32_vector();
    for (int n = 0; n < 2; ++n)
      for (int i = 0; i < 3; ++i) {
        double s = 0;
        for (int a = 0; a < 5; ++a) s += y[static_cast<size_t>((n * 5 + a) * 3 + i)];
        EXPECT_NEAR(s, 1.0, 1e-6);
      }
  }
}

}  // namespace
}  // namespace tailor::testing
