// The rewrite for tailor's runtime: CompressedLinear / CompressedConv nodes
// holding the Encoded weights (see rewrite.h).
#include <fmt/format.h>

#include "compress/rewrite_util.h"
#include "tailor/compress/rewrite.h"
#include "tailor/core/error.h"
#include "tailor/graph/verify.h"

namespace tailor::compress {
namespace {

using detail::GraphEditor;
using graph::Attribute;
using graph::Node;

/// CompressedLinear for MatMul(X, W [in, out]) or Gemm(X, W, C) with
/// transA = 0, alpha = beta = 1, C absent or [out]; CompressedConv for a 2-D
/// group-1 Conv with explicit pads. False when the node does not fit.
bool compressed_node(GraphEditor& ed, size_t index, size_t slot, const EncodedLayer& layer,
                     std::string& form) {
  const Node& n = ed.graph().nodes[index];
  if (!n.domain.empty() || slot != 1 || layer.stored_dtype != DType::f32) return false;
  const int64_t out = layer.encoded->out();
  Node c;
  c.domain = "ai.tailor";
  c.name = n.name;
  c.outputs = n.outputs;
  if (n.op_type == "MatMul" && layer.layout == WeightLayout::in_out) {
    c.op_type = "CompressedLinear";
    c.inputs = {n.inputs[0]};
  } else if (n.op_type == "Gemm" && n.attr_int("transA", 0) == 0 &&
             n.attr_float("alpha", 1.0f) == 1.0f && n.attr_float("beta", 1.0f) == 1.0f &&
             layer.stored_shape.size() == 2 &&
             (layer.layout == WeightLayout::in_out || layer.layout == WeightLayout::out_in)) {
    c.op_type = "CompressedLinear";
    c.inputs = {n.inputs[0]};
    if (n.inputs.size() > 2 && !n.inputs[2].empty()) {
      const Tensor* bias = ed.weight(n.inputs[2]);
      if (!bias || bias->numel() != out) return false;
      c.inputs.push_back(n.inputs[2]);
    }
  } else if (n.op_type == "Conv" && layer.layout == WeightLayout::conv &&
             layer.stored_shape.size() == 4 && n.attr_int("group", 1) == 1 &&
             n.attr_string("auto_pad", "NOTSET") == "NOTSET") {
    c.op_type = "CompressedConv";
    c.inputs = {n.inputs[0]};
    if (n.inputs.size() > 2 && !n.inputs[2].empty()) c.inputs.push_back(n.inputs[2]);
    const Shape& s = layer.stored_shape;
    c.set("kernel_shape", Attribute::of_ints({s[2], s[3]}));
    c.set("strides", Attribute::of_ints(n.attr_ints("strides", {1, 1})));
    c.set("pads", Attribute::of_ints(n.attr_ints("pads", {0, 0, 0, 0})));
    c.set("dilations", Attribute::of_ints(n.attr_ints("dilations", {1, 1})));
  } else {
    return false;
  }
  c.set("weight", Attribute::of_encoded(layer.encoded));
  form = c.op_type;
  ed.replace(index, {std::move(c)});
  return true;
}

}  // namespace

graph::Model rewrite_tailor(const graph::Model& model, const std::vector<EncodedLayer>& layers,
                            std::vector<LayerRewrite>* log) {
  graph::Model m = model;
  GraphEditor ed(m);
  m.other_opsets["ai.tailor"] = 1;
  for (const EncodedLayer& layer : layers) {
    const Tensor* w = ed.weight(layer.name);
    if (!w)
      throw Error(layer.name,
                  "planned weight is not an initializer or Constant output of the main graph");
    if (w->shape() != layer.stored_shape)
      throw Error(layer.name,
                  fmt::format("stored shape {} differs from the model's {}",
                              shape_to_string(layer.stored_shape), shape_to_string(w->shape())));
    LayerRewrite rw{layer.name, layer.encoded->label(), "", 0};
    bool sub = false;
    const std::vector<detail::Use> uses = ed.uses(layer.name, sub);
    if (uses.size() == 1 && !sub && !ed.replaced(uses[0].node) &&
        compressed_node(ed, uses[0].node, uses[0].input, layer, rw.form)) {
      ed.remove_source(layer.name);
      rw.file_bytes = static_cast<int64_t>(layer.encoded->bytes());
    } else {
      ed.remove_source(layer.name);
      Tensor t =
          detail::to_stored(layer.encoded->decode(), layer.layout, layer.stored_shape, DType::f32);
      rw.file_bytes = t.numel() * static_cast<int64_t>(dtype_size(layer.stored_dtype));
      rw.form = "dense decoded";
      if (layer.stored_dtype == DType::f32) {
        ed.graph().add_initializer(layer.name, std::move(t));
      } else {
        // Ŵ in f32, cast to the stored dtype as model.onnx does (rewrite_standard),
        // so a runtime that computes the graph in f32 (promote_f16_to_f32) runs
        // the same Ŵ in both.
        Node c = GraphEditor::make("Cast", ed.fresh(layer.name + "/cast"),
                                   {ed.constant(layer.name + ".f32", std::move(t))}, {layer.name});
        c.set("to", Attribute::of_int(detail::onnx_type_code(layer.stored_dtype)));
        ed.emit_front(std::move(c));
        rw.form = "dense decoded (f32, Cast)";
      }
    }
    if (log) log->push_back(std::move(rw));
  }
  ed.finish();
  graph::verify(m);
  return m;
}

}  // namespace tailor::compress
