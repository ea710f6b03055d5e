// A graph built to need the passes (the tuner's showcase): duplicated
// subexpressions, foldable constants and a constant If, BatchNorm after Conv,
// dead nodes, an Identity, elementwise chains.
#pragma once

#include "pass_test_util.h"

namespace tailor::testing {

/// x [1, c, hw, hw] → y [1, c, hw, hw]. 17 main-graph nodes:
///  1 Constant cond (true)     2 Constant c1 [c,1,1]    3 Constant c2 [c,1,1]
///  4 k = Mul(c1, c2)          5 a = Conv3×3(x)         6 bn = BN(a)
///  7 r = Relu(bn)             8 a2 = Conv3×3(x) (same as 5)
///  9 bn2 = BN(a2) (same as 6) 10 r2 = Relu(bn2)        11 s = Add(r, r2)
/// 12 t = Add(s, k)            13 u = If(cond) then {Constant half; Mul(t, half)} else {Conv3×3(t)}
/// 14 dead1 = Conv3×3(x)       15 dead2 = Relu(dead1) (read by nobody)
/// 16 v = Identity(u)          17 y = Relu(v)
inline graph::Model showcase_model(int64_t c = 16, int64_t hw = 32) {
  GraphBuilder b(13);
  b.input("x", {1, c, hw, hw});
  b.init("w1", random_f32({c, c, 3, 3}, 100, -0.2f, 0.2f)).init("b1", random_f32({c}, 101));
  b.init("w_dead", random_f32({c, c, 3, 3}, 102, -0.2f, 0.2f))
      .init("w_else", random_f32({c, c, 3, 3}, 103, -0.2f, 0.2f));
  b.init("bn_scale", random_f32({c}, 104, 0.5f, 1.5f)).init("bn_beta", random_f32({c}, 105));
  b.init("bn_mean", random_f32({c}, 106)).init("bn_var", random_f32({c}, 107, 0.5f, 2.f));
  Tensor yes = Tensor::zeros(DType::boolean, {});
  *reinterpret_cast<uint8_t*>(yes.mutable_raw()) = 1;
  const std::vector<std::pair<std::string, graph::Attribute>> pad1 = {{"pads", ints({1, 1, 1, 1})}};
  b.node("Constant", {}, {"cond"}, {{"value", graph::Attribute::of_tensor(yes)}});
  b.node("Constant", {}, {"c1"},
         {{"value", graph::Attribute::of_tensor(random_f32({c, 1, 1}, 108))}});
  b.node("Constant", {}, {"c2"},
         {{"value", graph::Attribute::of_tensor(random_f32({c, 1, 1}, 109))}});
  b.node("Mul", {"c1", "c2"}, {"k"});
  b.node("Conv", {"x", "w1", "b1"}, {"a"}, pad1);
  b.node("BatchNormalization", {"a", "bn_scale", "bn_beta", "bn_mean", "bn_var"}, {"bn"});
  b.node("Relu", {"bn"}, {"r"});
  b.node("Conv", {"x", "w1", "b1"}, {"a2"}, pad1);
  b.node("BatchNormalization", {"a2", "bn_scale", "bn_beta", "bn_mean", "bn_var"}, {"bn2"});
  b.node("Relu", {"bn2"}, {"r2"});
  b.node("Add", {"r", "r2"}, {"s"});
  b.node("Add", {"s", "k"}, {"t"});
  auto then_g = std::make_shared<graph::Graph>();
  then_g->name = "then";
  then_g->nodes = {graph::Node{"half",
                               "Constant",
                               "",
                               {},
                               {"half"},
                               {{"value", graph::Attribute::of_tensor(scalar_f32(0.5f))}}},
                   graph::Node{"scale", "Mul", "", {"t", "half"}, {"u_then"}, {}}};
  then_g->outputs = {"u_then"};
  auto else_g = std::make_shared<graph::Graph>();
  else_g->name = "else";
  else_g->nodes = {graph::Node{"conv_else", "Conv", "", {"t", "w_else"}, {"u_else"}, pad1}};
  else_g->outputs = {"u_else"};
  b.node("If", {"cond"}, {"u"},
         {{"then_branch", graph::Attribute::of_graph(then_g)},
          {"else_branch", graph::Attribute::of_graph(else_g)}});
  b.node("Conv", {"x", "w_dead"}, {"dead1"}, pad1);
  b.node("Relu", {"dead1"}, {"dead2"});
  b.node("Identity", {"u"}, {"v"});
  b.node("Relu", {"v"}, {"y"});
  b.output("y");
  return b.model();
}

}  // namespace tailor::testing
