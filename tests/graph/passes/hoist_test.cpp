// Invariant hoisting out of If branches and Loop bodies.
#include "pass_test_util.h"

namespace tailor::testing {
namespace {

std::shared_ptr<graph::Graph> branch(const std::string& name, std::vector<graph::Node> nodes,
                                     std::string out) {
  auto g = std::make_shared<graph::Graph>();
  g->name = name;
  g->nodes = std::move(nodes);
  g->outputs = {std::move(out)};
  return g;
}

TEST(Hoist, IfBranchesLoseConstantsAndSharedNodesButKeepTheirOwnWork) {
  // then: k = Constant 2; s = Shape(x)... both branches compute n = Neg(x); then: Mul(n, k); else:
  // Exp(x) + n.
  graph::Node k{"k", "Constant", "",
                {},  {"k"},      {{"value", graph::Attribute::of_tensor(scalar_f32(2))}}};
  auto then_g = branch("then",
                       {k, graph::Node{"n_then", "Neg", "", {"x"}, {"n_then"}, {}},
                        graph::Node{"m", "Mul", "", {"n_then", "k"}, {"t_out"}, {}}},
                       "t_out");
  auto else_g = branch("else",
                       {graph::Node{"n_else", "Neg", "", {"x"}, {"n_else"}, {}},
                        graph::Node{"e", "Exp", "", {"x"}, {"ex"}, {}},
                        graph::Node{"a", "Add", "", {"ex", "n_else"}, {"e_out"}, {}}},
                       "e_out");
  GraphBuilder b;
  b.input("x", {2}).input("c", {}, DType::boolean);
  b.node("If", {"c"}, {"y"},
         {{"then_branch", graph::Attribute::of_graph(then_g)},
          {"else_branch", graph::Attribute::of_graph(else_g)}});
  b.output("y");
  const graph::Model m = b.model();
  graph::Model out;
  for (uint8_t cond : {0, 1}) {
    Tensor c = Tensor::zeros(DType::boolean, {});
    *reinterpret_cast<uint8_t*>(c.mutable_raw()) = cond;
    out = check_passes(m, {"hoist"}, {{"x", vec_f32({2}, {0.5f, -1})}, {"c", c}}, 0.0);
  }
  // Main graph: Constant k, the shared Neg, the If.
  ASSERT_EQ(out.graph.nodes.size(), 3u);
  EXPECT_EQ(out.graph.nodes[0].op_type, "Constant");
  EXPECT_EQ(out.graph.nodes[1].op_type, "Neg");
  const auto& ifn = out.graph.nodes[2];
  EXPECT_EQ(ifn.find("then_branch")->g->nodes.size(), 1u);  // Mul
  EXPECT_EQ(ifn.find("else_branch")->g->nodes.size(), 2u);  // Exp (only else needs it), Add
  // The input model is untouched.
  EXPECT_EQ(m.graph.nodes[0].find("then_branch")->g->nodes.size(), 3u);
}

TEST(Hoist, LoopBodyInvariantsMoveOut) {
  // Loop body (iter, cond, acc): w2 = Mul(w, w) reads only outer w: invariant.
  auto body = std::make_shared<graph::Graph>();
  body->name = "body";
  body->inputs = {"iter", "cond_in", "acc"};
  body->nodes = {graph::Node{"sq", "Mul", "", {"w", "w"}, {"w2"}, {}},
                 graph::Node{"upd", "Add", "", {"acc", "w2"}, {"acc_out"}, {}},
                 graph::Node{"keep", "Identity", "", {"cond_in"}, {"cond_out"}, {}}};
  body->outputs = {"cond_out", "acc_out"};
  GraphBuilder b;
  b.input("w", {2}).input("acc0", {2});
  Tensor trip = Tensor::zeros(DType::i64, {});
  trip.mutable_data<int64_t>()[0] = 3;
  b.init("trip", trip);
  b.node("Loop", {"trip", "", "acc0"}, {"y"}, {{"body", graph::Attribute::of_graph(body)}})
      .output("y");
  const graph::Model out = graph::run_passes(b.model(), {"hoist"}, {});
  ASSERT_EQ(out.graph.nodes.size(), 2u);
  EXPECT_EQ(out.graph.nodes[0].op_type, "Mul");
  EXPECT_EQ(out.graph.nodes[0].outputs[0], "w2");
  const graph::Graph& nb = *out.graph.nodes[1].find("body")->g;
  ASSERT_EQ(nb.nodes.size(), 2u);
  EXPECT_EQ(nb.nodes[0].op_type, "Add");  // reads acc (per iteration): stays
}

}  // namespace
}  // namespace tailor::testing
