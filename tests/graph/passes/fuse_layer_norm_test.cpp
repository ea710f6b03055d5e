// The layer-norm fusion (src/graph/passes/fuse_layer_norm.h) on hand-built graphs.
#include <cmath>

#include "pass_test_util.h"
#include "test_util.h"

namespace tailor::testing {
namespace {

TEST(FuseLayerNorm, LayerNormFromItsDecomposedForm) {
  // Both forms: Pow/Div (as exported) and Mul(d, d)/Mul∘Reciprocal (after simplify).
  for (bool simplified : {false, true}) {
    GraphBuilder b(13);
    b.input("x", {2, 3, 8}).init("two", scalar_f32(2)).init("eps", scalar_f32(1e-5f));
    b.init("g", random_f32({8}, 10, 0.5f, 1.5f)).init("beta", random_f32({8}, 11));
    b.node("ReduceMean", {"x"}, {"m"}, {{"axes", ints({-1})}}).node("Sub", {"x", "m"}, {"d"});
    if (simplified)
      b.node("Mul", {"d", "d"}, {"sq"});
    else
      b.node("Pow", {"d", "two"}, {"sq"});
    b.node("ReduceMean", {"sq"}, {"v"}, {{"axes", ints({-1})}})
        .node("Add", {"v", "eps"}, {"ve"})
        .node("Sqrt", {"ve"}, {"s"});
    if (simplified)
      b.node("Reciprocal", {"s"}, {"rs"}).node("Mul", {"d", "rs"}, {"n"});
    else
      b.node("Div", {"d", "s"}, {"n"});
    b.node("Mul", {"n", "g"}, {"ng"}).node("Add", {"ng", "beta"}, {"y"}).output("y");
    const graph::Model out =
        check_passes(b.model(), {"fuse"}, {{"x", random_f32({2, 3, 8}, 12, -3, 3)}}, 1e-6);
    ASSERT_EQ(out.graph.nodes.size(), 1u);
    EXPECT_EQ(out.graph.nodes[0].op_type, "LayerNormalization");
    EXPECT_FLOAT_EQ(out.graph.nodes[0].attr_float("epsilon", 0), 1e-5f);
  }
}

}  // namespace
}  // namespace tailor::testing
