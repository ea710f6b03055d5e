// Import-time topological sort and the f16 → f32 promotion.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include "../runtime/op_test_util.h"
#include "tailor/core/error.h"
#include "tailor/graph/passes/promote_f16.h"
#include "tailor/io/onnx.h"
#include "test_util.h"

namespace tailor::testing {
namespace {

/// x → a = Relu(x) → y = Neg(a), written with the nodes in the order `order`
/// (node names "a", "y"); `cycle` makes a read y instead of x.
std::string chain_proto(const std::vector<std::string>& order, bool cycle = false) {
  onnx::ModelProto mp;
  mp.set_ir_version(8);
  mp.add_opset_import()->set_version(13);
  auto* g = mp.mutable_graph();
  auto* in = g->add_input();
  in->set_name("x");
  in->mutable_type()->mutable_tensor_type()->set_elem_type(1);
  g->add_output()->set_name("y");
  for (const auto& name : order) {
    auto* n = g->add_node();
    n->set_name(name);
    if (name == "a") {
      n->set_op_type("Relu");
      n->add_input(cycle ? "y" : "x");
      n->add_output("a");
    } else {
      n->set_op_type("Neg");
      n->add_input("a");
      n->add_output("y");
    }
  }
  return mp.SerializeAsString();
}

TEST(GraphImport, SortsNodesTopologicallyKeepingAnOrderedGraphAsIs) {
  TempDir dir;
  write_bytes(dir.file("rev.onnx"), chain_proto({"y", "a"}));
  const graph::Model m = graph::import_onnx(dir.file("rev.onnx"));
  ASSERT_EQ(m.graph.nodes.size(), 2u);
  EXPECT_EQ(m.graph.nodes[0].name, "a");
  EXPECT_EQ(m.graph.nodes[1].name, "y");
  runtime::Executor ex(m);
  expect_f32(ex.run({{"x", f32({2}, {-1, 2})}}).at("y"), {2}, {0, -2});
  write_bytes(dir.file("cyc.onnx"), chain_proto({"y", "a"}, true));
  expect_error_naming([&] { graph::import_onnx(dir.file("cyc.onnx")); }, dir.file("cyc.onnx"),
                      "cycle");
}

TEST(GraphPasses, PromoteF16RunsAHalfPrecisionGraphInF32) {
  // y = Cast(Cast(x, f16) · c, f32) with c = 1.5 stored as f16.
  graph::Model m;
  m.opset = 13;
  m.graph.inputs = {"x"};
  m.graph.types["x"] = graph::ValueType{DType::f32, graph::sym_shape_of({3})};
  m.graph.add_initializer("c", f32({}, {1.5f}).to(DType::f16));
  graph::Node a, b, c;
  a.op_type = "Cast", a.name = "to16", a.inputs = {"x"}, a.outputs = {"h"};
  a.set("to", graph::Attribute::of_int(10));
  b.op_type = "Mul", b.name = "mul", b.inputs = {"h", "c"}, b.outputs = {"p"};
  c.op_type = "Cast", c.name = "to32", c.inputs = {"p"}, c.outputs = {"y"};
  c.set("to", graph::Attribute::of_int(1));
  m.graph.nodes = {a, b, c};
  m.graph.outputs = {"y"};
  // As is, the runtime has no f16 arithmetic: Mul refuses f16 by name.
  expect_error_naming(
      [&] {
        runtime::Executor(m).run({{"x", f32({3}, {1, 2, 4})}});
      },
      "mul", "f16");
  EXPECT_EQ(graph::promote_f16_to_f32(m), 2);  // the initializer and one Cast
  EXPECT_EQ(m.graph.initializers.at("c").dtype(), DType::f32);
  runtime::Executor ex(m);
  expect_f32(ex.run({{"x", f32({3}, {1, 2, 4})}}).at("y"), {3}, {1.5f, 3, 6});
}

}  // namespace
}  // namespace tailor::testing
