// ONNX import and export of the graph IR on the real PP-OCR models.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <filesystem>

#include "tailor/core/error.h"
#include "tailor/graph/verify.h"
#include "tailor/io/onnx.h"
#include "tailor/io/onnx_reader.h"
#include "test_util.h"

namespace tailor::testing {
namespace {

std::string rec_path() {
  const std::string p = model_path("ch_PP-OCRv4_rec_infer.onnx");
  if (!std::filesystem::exists(p)) return "";
  return p;
}

/// Structural equality of two graphs: nodes (names, ops, edges, attributes),
/// inputs, outputs, initializers (bytes) and types.
void expect_same_graph(const graph::Graph& a, const graph::Graph& b) {
  ASSERT_EQ(a.nodes.size(), b.nodes.size());
  EXPECT_EQ(a.inputs, b.inputs);
  EXPECT_EQ(a.outputs, b.outputs);
  EXPECT_EQ(a.initializer_order, b.initializer_order);
  EXPECT_TRUE(a.types == b.types);
  for (const auto& [name, t] : a.initializers) {
    const Tensor& u = b.initializers.at(name);
    ASSERT_EQ(t.dtype(), u.dtype()) << name;
    ASSERT_EQ(t.shape(), u.shape()) << name;
    EXPECT_EQ(0, std::memcmp(t.contiguous().raw(), u.contiguous().raw(), t.nbytes())) << name;
  }
  for (size_t i = 0; i < a.nodes.size(); ++i) {
    const graph::Node& x = a.nodes[i];
    const graph::Node& y = b.nodes[i];
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.op_type, y.op_type);
    EXPECT_EQ(x.domain, y.domain);
    EXPECT_EQ(x.inputs, y.inputs);
    EXPECT_EQ(x.outputs, y.outputs);
    ASSERT_EQ(x.attributes.size(), y.attributes.size()) << x.name;
    for (size_t k = 0; k < x.attributes.size(); ++k) {
      const auto& [an, aa] = x.attributes[k];
      const auto& [bn, ba] = y.attributes[k];
      EXPECT_EQ(an, bn);
      ASSERT_EQ(aa.kind, ba.kind);
      EXPECT_EQ(aa.i, ba.i);
      EXPECT_EQ(aa.f, ba.f);
      EXPECT_EQ(aa.s, ba.s);
      EXPECT_EQ(aa.ints, ba.ints);
      EXPECT_EQ(aa.floats, ba.floats);
      if (aa.kind == graph::Attribute::Kind::t) {
        ASSERT_EQ(aa.t.shape(), ba.t.shape());
        EXPECT_EQ(0, std::memcmp(aa.t.contiguous().raw(), ba.t.contiguous().raw(), aa.t.nbytes()));
      }
      if (aa.kind == graph::Attribute::Kind::g) expect_same_graph(*aa.g, *ba.g);
    }
  }
}

TEST(GraphOnnx, ImportKeepsNodesNamesOrderAndSymbolicDims) {
  const std::string path = rec_path();
  if (path.empty())
    GTEST_SKIP() << "models/ch_PP-OCRv4_rec_infer.onnx not fetched (scripts/fetch-models.sh)";
  const ModelFile file = read_onnx(path);
  const graph::Model m = graph::import_onnx(file);
  const onnx::GraphProto& gp = file.onnx->graph();
  EXPECT_EQ(m.opset, 9);
  ASSERT_EQ(m.graph.nodes.size(), static_cast<size_t>(gp.node_size()));
  for (int i = 0; i < gp.node_size(); ++i) {
    EXPECT_EQ(m.graph.nodes[static_cast<size_t>(i)].name, gp.node(i).name());
    EXPECT_EQ(m.graph.nodes[static_cast<size_t>(i)].op_type, gp.node(i).op_type());
  }
  ASSERT_EQ(m.graph.inputs, std::vector<std::string>{"x"});
  const graph::ValueType* xt = m.graph.type_of("x");
  ASSERT_TRUE(xt && xt->shape);
  EXPECT_EQ(graph::sym_shape_to_string(*xt->shape),
            "[p2o.DynamicDimension.0, 3, 48, p2o.DynamicDimension.1]");
  EXPECT_EQ(*xt->dtype, DType::f32);
  graph::verify(m);
}

TEST(GraphOnnx, ConstantsViewTheModelProtoWithoutCopying) {
  const std::string path = rec_path();
  if (path.empty()) GTEST_SKIP() << "models/ch_PP-OCRv4_rec_infer.onnx not fetched";
  const ModelFile file = read_onnx(path);
  const graph::Model m = graph::import_onnx(file);
  // Every Constant tensor with raw_data aligned for its type points into the proto's string.
  size_t viewed = 0, total = 0;
  const onnx::GraphProto& gp = file.onnx->graph();
  for (int i = 0; i < gp.node_size(); ++i) {
    const auto& np = gp.node(i);
    if (np.op_type() != "Constant") continue;
    const std::string& raw = np.attribute(0).t().raw_data();
    const graph::Attribute* a = m.graph.nodes[static_cast<size_t>(i)].find("value");
    ASSERT_TRUE(a);
    ++total;
    const auto* p = reinterpret_cast<const std::byte*>(raw.data());
    if (a->t.raw() == p) {
      ++viewed;
      EXPECT_FALSE(a->t.storage()->mutable_data());  // read-only view
    } else {
      EXPECT_NE(reinterpret_cast<uintptr_t>(p) % dtype_size(a->t.dtype()), 0u)
          << "aligned but copied";
    }
  }
  EXPECT_GT(total, 0u);
  EXPECT_GT(viewed, total / 2);
}

TEST(GraphOnnx, ExportThenImportGivesTheSameGraph) {
  const std::string path = rec_path();
  if (path.empty()) GTEST_SKIP() << "models/ch_PP-OCRv4_rec_infer.onnx not fetched";
  const graph::Model a = graph::import_onnx(path);
  TempDir dir;
  graph::write_onnx(a, dir.file("rt.onnx"));
  const graph::Model b = graph::import_onnx(dir.file("rt.onnx"));
  EXPECT_EQ(a.opset, b.opset);
  expect_same_graph(a.graph, b.graph);
}

/// A minimal ModelProto with one node of `op` in `domain`.
std::string one_node_model(const std::string& domain, const std::string& op, int64_t opset) {
  onnx::ModelProto mp;
  mp.set_ir_version(8);
  auto* o = mp.add_opset_import();
  o->set_version(opset);
  auto* g = mp.mutable_graph();
  g->set_name("g");
  auto* in = g->add_input();
  in->set_name("x");
  in->mutable_type()->mutable_tensor_type()->set_elem_type(1);
  auto* out = g->add_output();
  out->set_name("y");
  out->mutable_type()->mutable_tensor_type()->set_elem_type(1);
  auto* n = g->add_node();
  n->set_name("the_node");
  n->set_op_type(op);
  n->set_domain(domain);
  n->add_input("x");
  n->add_output("y");
  return mp.SerializeAsString();
}

TEST(GraphOnnx, RefusesOtherDomainsAndOpsetsByName) {
  TempDir dir;
  write_bytes(dir.file("ms.onnx"), one_node_model("com.microsoft", "FusedConv", 13));
  expect_error_naming([&] { graph::import_onnx(dir.file("ms.onnx")); }, dir.file("ms.onnx"),
                      "com.microsoft");
  expect_error_naming([&] { graph::import_onnx(dir.file("ms.onnx")); }, dir.file("ms.onnx"),
                      "FusedConv");
  write_bytes(dir.file("old.onnx"), one_node_model("", "Relu", 8));
  expect_error_naming([&] { graph::import_onnx(dir.file("old.onnx")); }, dir.file("old.onnx"),
                      "opset 8");
  write_bytes(dir.file("ok.onnx"), one_node_model("ai.onnx", "Relu", 17));
  const graph::Model m = graph::import_onnx(dir.file("ok.onnx"));
  EXPECT_EQ(m.graph.nodes.at(0).domain, "");
}

}  // namespace
}  // namespace tailor::testing
