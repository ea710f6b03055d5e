// The showcase graph: each pass shrinks it as derived by hand (see showcase.h).
#include "showcase.h"

namespace tailor::testing {
namespace {

size_t nodes_after(const std::vector<std::string>& passes) {
  const graph::Model m = showcase_model(4, 6);
  const graph::Model out = check_passes(m, passes, {{"x", random_f32({1, 4, 6, 6}, 110)}}, 1e-5);
  return out.graph.nodes.size();
}

TEST(Showcase, EachPassShrinksItAsDerivedByHand) {
  EXPECT_EQ(showcase_model(4, 6).graph.nodes.size(), 17u);
  // fold: the 3 Constants, Mul(c1, c2) and the If (its then branch's Constant
  // folds too, its Mul takes the If's place): 17 − 4 = 13.
  EXPECT_EQ(nodes_after({"fold"}), 13u);
  // dce: dead1, dead2: 15.
  EXPECT_EQ(nodes_after({"dce"}), 15u);
  // cse: a2, bn2, r2 merge into a, bn, r: 14.
  EXPECT_EQ(nodes_after({"cse"}), 14u);
  // simplify: both BatchNorms fold into their convs, the Identity goes: 14.
  EXPECT_EQ(nodes_after({"simplify"}), 14u);
  // hoist: the then branch's Constant moves out: 18.
  EXPECT_EQ(nodes_after({"hoist"}), 18u);
  // Everything (fold, simplify, cse, hoist, fuse, dce): one FusedConv (conv + folded BN + Relu)
  // and one FusedElementwise (Add(r, r), Add k, Mul 0.5, Relu): 2.
  EXPECT_EQ(nodes_after(graph::parse_pass_list("all")), 2u);
}

TEST(Showcase, AllPassesLeaveOneConvAndOneElementwiseKernel) {
  const graph::Model out = check_passes(showcase_model(4, 6), graph::parse_pass_list("all"),
                                        {{"x", random_f32({1, 4, 6, 6}, 111)}}, 1e-5);
  EXPECT_EQ(count_ops(out.graph, "ai.tailor.FusedConv"), 1u);
  EXPECT_EQ(count_ops(out.graph, "ai.tailor.FusedElementwise"), 1u);
}

}  // namespace
}  // namespace tailor::testing
