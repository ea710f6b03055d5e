// The shape-rule registry: it covers every op the runtime runs, and the rules
// added beside the original ones (Tile, Range, ArgMax/ArgMin, If, tailor's
// fused, layout and compressed ops) give the shapes the executor produces.
// The passes' dtype/rank view is the same inference.
#include <gtest/gtest.h>

#include <set>

#include "../runtime/op_test_util.h"
#include "graph/passes/pass_util.h"
#include "tailor/core/rng.h"
#include "tailor/graph/fused_ops.h"
#include "tailor/graph/shape_inference.h"
#include "tailor/runtime/executor.h"
#include "tailor/runtime/op.h"
#include "tailor/schemes/registry.h"

namespace tailor::testing {
namespace {

using graph::Attribute;
using graph::Dim;

graph::Node node(const char* op, std::vector<std::string> in, std::vector<std::string> out,
                 std::vector<std::pair<std::string, Attribute>> attrs = {},
                 const char* domain = "") {
  graph::Node n;
  n.op_type = op;
  n.domain = domain;
  n.name = out.at(0);
  n.inputs = std::move(in);
  n.outputs = std::move(out);
  n.attributes = std::move(attrs);
  return n;
}

Tensor noise(Shape s, uint64_t seed) {
  Rng rng(seed);
  std::vector<float> v(static_cast<size_t>(shape_numel(s)));
  for (float& x : v) x = static_cast<float>(rng.uniform(-1, 1));
  return Tensor::from_f32(std::move(s), v);
}

/// Infers the types of `m` (every node output made a graph output first) and
/// runs it on `feeds`: every value must have a concrete inferred shape and
/// the dtype and shape the executor produced. Returns how many were checked.
size_t expect_inferred_equals_run(graph::Model m, const std::map<std::string, Tensor>& feeds) {
  std::set<std::string> outs(m.graph.outputs.begin(), m.graph.outputs.end());
  for (const auto& n : m.graph.nodes)
    for (const auto& o : n.outputs)
      if (outs.insert(o).second) m.graph.outputs.push_back(o);
  graph::infer_shapes(m);
  runtime::Executor ex(m);
  size_t checked = 0;
  for (const auto& [name, t] : ex.run(feeds)) {
    const graph::ValueType* vt = m.graph.type_of(name);
    EXPECT_TRUE(vt && vt->shape && vt->dtype) << name << " has no inferred type";
    if (!vt || !vt->shape || !vt->dtype) continue;
    const auto c = graph::concrete_shape(*vt->shape);
    EXPECT_TRUE(c) << name << " inferred " << vt->to_string();
    if (c) {
      EXPECT_EQ(shape_to_string(*c), shape_to_string(t.shape())) << name;
    }
    EXPECT_EQ(*vt->dtype, t.dtype()) << name;
    ++checked;
  }
  return checked;
}

// Every op the runtime registers has a shape rule, so no value the executor
// can compute is left untyped by a missing rule. (Scan, which the runtime does
// not run, is the one control-flow op left unknown.)
TEST(ShapeRules, CoverEveryOpTheRuntimeRuns) {
  const std::vector<std::string> ops = runtime::registered_ops();
  ASSERT_GE(ops.size(), 80u);  // the runtime registers about 90 ops
  for (const std::string& key : ops) {
    const size_t colon = key.find(':');
    ASSERT_NE(colon, std::string::npos) << key;
    std::string domain = key.substr(0, colon);
    if (domain == "onnx") domain.clear();
    EXPECT_TRUE(graph::has_shape_rule(domain, key.substr(colon + 1))) << key << " has no rule";
  }
  EXPECT_FALSE(graph::has_shape_rule("", "Scan"));
  EXPECT_FALSE(graph::has_shape_rule("com.example", "Relu"));
}

TEST(ShapeRules, TileRangeArgExtremaWhereAndIfMatchTheRuntime) {
  graph::Model m;
  m.opset = 13;
  m.graph.inputs = {"x"};
  m.graph.types["x"] = graph::ValueType{DType::f32, graph::sym_shape_of({2, 3, 4})};
  m.graph.add_initializer("reps", i64({3}, {2, 1, 3}));
  m.graph.add_initializer("start", i64({}, {1}));
  m.graph.add_initializer("limit", i64({}, {10}));
  m.graph.add_initializer("delta", i64({}, {3}));
  m.graph.add_initializer("fstart", f32({}, {0.5f}));
  m.graph.add_initializer("flimit", f32({}, {-2.0f}));
  m.graph.add_initializer("fdelta", f32({}, {-0.75f}));
  m.graph.add_initializer("cond", boolean({3, 1}, {1, 0, 1}));
  m.graph.add_initializer("y4", f32({4}, {1, 2, 3, 4}));
  m.graph.add_initializer("take", boolean({}, {0}));
  // If branches read x from the enclosing graph and declare their output type.
  auto branch = [](const char* op, const char* out) {
    auto g = std::make_shared<graph::Graph>();
    g->nodes = {node(op, {"x"}, {out})};
    g->outputs = {out};
    g->types[out] = graph::ValueType{DType::f32, graph::sym_shape_of({2, 3, 4})};
    return g;
  };
  graph::Node if_node = node("If", {"take"}, {"branch"});
  if_node.set("then_branch", Attribute::of_graph(branch("Relu", "then_out")));
  if_node.set("else_branch", Attribute::of_graph(branch("Neg", "else_out")));
  m.graph.nodes = {node("Tile", {"x", "reps"}, {"tiled"}),
                   node("Range", {"start", "limit", "delta"}, {"r"}),
                   node("Range", {"fstart", "flimit", "fdelta"}, {"fr"}),
                   node("ArgMax", {"x"}, {"amax"},
                        {{"axis", Attribute::of_int(1)}, {"keepdims", Attribute::of_int(0)}}),
                   node("ArgMin", {"x"}, {"amin"}, {{"axis", Attribute::of_int(-1)}}),
                   node("Where", {"cond", "x", "y4"}, {"w"}),
                   node("Not", {"cond"}, {"notc"}),
                   if_node};
  m.graph.outputs = {"w"};
  // numpy: tile → (4, 3, 12); arange(1, 10, 3) → 3; arange(0.5, -2, -0.75) → 4;
  // argmax axis 1 → (2, 4); argmin keepdims → (2, 3, 1); where broadcasts to (2, 3, 4).
  EXPECT_EQ(expect_inferred_equals_run(m, {{"x", noise({2, 3, 4}, 1)}}), 8u);
}

// tailor's own ops built by hand to their contracts (fused_ops.h,
// ops_compressed.cpp); their rules must give what their kernels produce.
TEST(ShapeRules, TailorOpsMatchTheRuntime) {
  graph::Model m;
  m.opset = 13;
  m.other_opsets["ai.tailor"] = 1;
  m.graph.inputs = {"img", "seq", "rows", "nhwc"};
  m.graph.types["img"] = graph::ValueType{DType::f32, graph::sym_shape_of({1, 3, 9, 8})};
  m.graph.types["seq"] = graph::ValueType{DType::f32, graph::sym_shape_of({2, 5, 6})};
  m.graph.types["rows"] = graph::ValueType{DType::f32, graph::sym_shape_of({3, 5})};
  m.graph.types["nhwc"] = graph::ValueType{DType::f32, graph::sym_shape_of({1, 9, 8, 3})};
  m.graph.add_initializer("w", noise({4, 3, 3, 3}, 2));
  m.graph.add_initializer("b", noise({4}, 3));
  m.graph.add_initializer("w_ohwi", noise({4, 3, 3, 3}, 4));
  m.graph.add_initializer("mm", noise({6, 7}, 5));
  m.graph.add_initializer("mm_bias", noise({7}, 6));
  m.graph.add_initializer("gemm_b", noise({4, 5}, 7));
  m.graph.add_initializer("scale", noise({6}, 8));
  m.graph.add_initializer("col", noise({5, 1}, 9));
  std::shared_ptr<const schemes::Encoded> lin =
      schemes::parse_scheme("int8").encode(noise({10, 6}, 10));
  std::shared_ptr<const schemes::Encoded> conv =
      schemes::parse_scheme("int8").encode(noise({8, 3 * 2 * 2}, 11));
  const int64_t add = static_cast<int64_t>(graph::ElementwiseOp::add);
  const auto window = std::vector<std::pair<std::string, Attribute>>{
      {"pads", Attribute::of_ints({1, 0, 1, 0})}, {"strides", Attribute::of_ints({2, 1})}};
  m.graph.nodes = {node("FusedConv", {"img", "w", "b"}, {"fconv"}, window, "ai.tailor"),
                   node("ConvNhwc", {"nhwc", "w_ohwi", "b"}, {"cnhwc"}, window, "ai.tailor"),
                   node("FusedMatMul", {"seq", "mm", "mm_bias"}, {"fmm"}, {}, "ai.tailor"),
                   node("FusedGemm", {"rows", "gemm_b"}, {"fgemm"},
                        {{"transB", Attribute::of_int(1)}}, "ai.tailor"),
                   node("LayerNormalization", {"seq", "scale"}, {"ln"}, {}, "ai.tailor"),
                   node("Softmax", {"seq"}, {"sm"}, {{"axis", Attribute::of_int(-1)}}, "ai.tailor"),
                   node("FusedElementwise", {"seq", "col"}, {"fe"},
                        {{"program", Attribute::of_ints({add, 2, 0, 1})},
                         {"params", Attribute::of_floats({0.f, 0.f})},
                         {"constants", Attribute::of_floats({})}},
                        "ai.tailor"),
                   node("CompressedLinear", {"seq"}, {"clin"},
                        {{"weight", Attribute::of_encoded(lin)}}, "ai.tailor"),
                   node("CompressedConv", {"img"}, {"cconv"},
                        {{"weight", Attribute::of_encoded(conv)},
                         {"kernel_shape", Attribute::of_ints({2, 2})},
                         {"strides", Attribute::of_ints({2, 2})}},
                        "ai.tailor")};
  m.graph.outputs = {"fconv"};
  const std::map<std::string, Tensor> feeds = {{"img", noise({1, 3, 9, 8}, 12)},
                                               {"seq", noise({2, 5, 6}, 13)},
                                               {"rows", noise({3, 5}, 14)},
                                               {"nhwc", noise({1, 9, 8, 3}, 15)}};
  EXPECT_EQ(expect_inferred_equals_run(m, feeds), 9u);
}

// Recorded types of intermediate values (ONNX value_info) feed the rules
// downstream, and a rule refines a recorded dim it knows.
TEST(ShapeRules, RecordedTypesFeedTheRules) {
  graph::Model m;
  m.opset = 13;
  m.graph.inputs = {"x"};
  m.graph.types["x"] = graph::ValueType{DType::f32, graph::SymShape{Dim::named("n"), Dim{}}};
  m.graph.types["y"] = graph::ValueType{DType::f32, graph::SymShape{Dim{}, Dim::known(7)}};
  m.graph.nodes = {node("Custom", {"x"}, {"c"}, {}, "com.example"), node("Relu", {"x"}, {"y"}),
                   node("Transpose", {"y"}, {"t"})};
  m.graph.types["c"] = graph::ValueType{DType::f16, graph::sym_shape_of({4})};
  m.graph.nodes.push_back(node("Neg", {"c"}, {"nc"}));
  m.graph.outputs = {"t", "nc"};
  graph::infer_shapes(m);
  EXPECT_EQ(m.graph.type_of("y")->to_string(), "f32[n, 7]");
  EXPECT_EQ(m.graph.type_of("t")->to_string(), "f32[7, n]");
  EXPECT_EQ(m.graph.type_of("nc")->to_string(), "f16[4]");
}

// The passes' view (infer_value_info) is infer_types' dtype and rank, on a
// subgraph too (a Loop body with typed inputs), and leaves the graph unchanged.
TEST(ShapeRules, PassesViewIsTheOneInference) {
  graph::Graph body;
  body.inputs = {"i", "cond_in", "acc"};
  body.types["i"] = graph::ValueType{DType::i64, graph::SymShape{}};
  body.types["cond_in"] = graph::ValueType{DType::boolean, graph::SymShape{}};
  body.types["acc"] = graph::ValueType{DType::f32, graph::sym_shape_of({2, 3})};
  body.add_initializer("k", f32({1, 3}, {1, 2, 3}));
  body.nodes = {node("Mul", {"acc", "k"}, {"scaled"}), node("ReduceSum", {"scaled"}, {"s"}),
                node("Shape", {"scaled"}, {"shp"}), node("Gemm", {"acc", "unknown"}, {"g"})};
  body.outputs = {"cond_in", "scaled"};
  const auto before = body.types;
  const auto types = graph::infer_types(body, 13);
  const auto view = graph::passes::infer_value_info(body, 13);
  EXPECT_EQ(body.types, before);
  EXPECT_EQ(types.at("scaled").to_string(), "f32[2, 3]");
  EXPECT_EQ(types.at("s").to_string(), "f32[1, 1]");
  EXPECT_EQ(types.at("shp").to_string(), "i64[2]");
  EXPECT_EQ(types.at("g").to_string(), "f32[?, ?]");  // Gemm is 2-D whatever its inputs
  EXPECT_EQ(types.size(), view.size());
  for (const auto& [name, t] : types) {
    ASSERT_TRUE(view.count(name)) << name;
    EXPECT_EQ(view.at(name).dtype, t.dtype) << name;
    EXPECT_EQ(view.at(name).rank, t.shape ? std::optional(t.shape->size()) : std::nullopt) << name;
  }
}

}  // namespace
}  // namespace tailor::testing
