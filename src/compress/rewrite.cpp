// The standard-ONNX rewrite of a planned model (see rewrite.h) and the
// encoding of a plan's choices.
#include "tailor/compress/rewrite.h"

#include <fmt/format.h>

#include <atomic>
#include <cmath>
#include <thread>

#include "compress/rewrite_util.h"
#include "tailor/core/error.h"
#include "tailor/core/rng.h"
#include "tailor/graph/passes.h"
#include "tailor/graph/verify.h"
#include "tailor/graph/weight_forms.h"
#include "tailor/linalg/threads.h"
#include "tailor/schemes/registry.h"

namespace tailor::compress {
namespace {

using detail::GraphEditor;
using graph::Attribute;
using graph::Node;

int64_t bytes_of(const Tensor& t) {
  return static_cast<int64_t>(t.nbytes());
}

Tensor f32_transposed(const Tensor& t) {
  return t.to(DType::f32).transpose(0, 1).contiguous();
}

/// Low-rank in place of a MatMul/Gemm/Conv node; false when the node does not fit.
bool lowrank_node(GraphEditor& ed, size_t index, size_t slot, const EncodedLayer& layer,
                  int64_t& bytes, std::string& form) {
  const Node& n = ed.graph().nodes[index];
  if (!n.domain.empty() || slot != 1) return false;
  const Tensor a = layer.encoded->factor("A").to(DType::f32);  // [out, R]
  const Tensor b = layer.encoded->factor("B").to(DType::f32);  // [R, in]
  const int64_t out = a.dim(0), r = a.dim(1);
  const std::string& name = layer.name;
  const std::string h = ed.fresh(name + ".lowrank_h");
  if ((n.op_type == "MatMul" && layer.layout == WeightLayout::in_out) ||
      (n.op_type == "Gemm" && n.attr_int("transA", 0) == 0 &&
       (layer.layout == WeightLayout::in_out || layer.layout == WeightLayout::out_in) &&
       layer.stored_shape.size() == 2)) {
    const Tensor bt = f32_transposed(b), at = f32_transposed(a);
    bytes = bytes_of(bt) + bytes_of(at);
    std::vector<Node> nodes;
    nodes.push_back(GraphEditor::make("MatMul", ed.fresh(n.name + "/lowrank_B"),
                                      {n.inputs[0], ed.constant(name + ".Bt", bt)}, {h}));
    if (n.op_type == "MatMul") {
      nodes.push_back(GraphEditor::make("MatMul", ed.fresh(n.name + "/lowrank_A"),
                                        {h, ed.constant(name + ".At", at)}, n.outputs));
      form = "MatMul·MatMul";
    } else {
      Node g = n;
      g.name = ed.fresh(n.name + "/lowrank_A");
      g.inputs[0] = h;
      g.inputs[1] = ed.constant(name + ".At", at);
      g.set("transB", Attribute::of_int(0));
      nodes.push_back(std::move(g));
      form = "MatMul·Gemm";
    }
    ed.replace(index, std::move(nodes));
    return true;
  }
  if (n.op_type == "Conv" && layer.layout == WeightLayout::conv && layer.stored_shape.size() == 4) {
    const int64_t groups = n.attr_int("group", 1);
    const Shape& s = layer.stored_shape;  // [out, in/g, kh, kw]
    if (out % groups != 0) return false;
    const Tensor first = b.contiguous().reshape({r, s[1], s[2], s[3]});
    const Tensor second = a.contiguous().reshape({out, r, 1, 1});
    bytes = bytes_of(first) + bytes_of(second);
    std::vector<Node> nodes;
    // Groups > 1: every group applies the same B, so B is stored once and the
    // groups are moved into the batch: X [N, g·c, H, W] → [N·g, c, H, W],
    // Conv with B, → [N, g·R, OH, OW] (Reshape's 0 copies H, W / OH, OW).
    std::string x = n.inputs[0], hb = h;
    if (groups > 1) {
      x = ed.fresh(name + ".grouped_batch");
      nodes.push_back(GraphEditor::make("Reshape", ed.fresh(n.name + "/lowrank_split"),
                                        {n.inputs[0], ed.ints(name + ".split", {-1, s[1], 0, 0})},
                                        {x}));
      hb = ed.fresh(name + ".lowrank_hb");
    }
    Node c1 = n;
    c1.name = ed.fresh(n.name + "/lowrank_B");
    c1.inputs = {x, ed.constant(name + ".B", first)};
    c1.outputs = {hb};
    c1.set("group", Attribute::of_int(1));
    nodes.push_back(std::move(c1));
    if (groups > 1)
      nodes.push_back(GraphEditor::make("Reshape", ed.fresh(n.name + "/lowrank_merge"),
                                        {hb, ed.ints(name + ".merge", {-1, groups * r, 0, 0})},
                                        {h}));
    Node c2 = GraphEditor::make("Conv", ed.fresh(n.name + "/lowrank_A"),
                                {h, ed.constant(name + ".A", second)}, n.outputs);
    if (n.inputs.size() > 2 && !n.inputs[2].empty()) c2.inputs.push_back(n.inputs[2]);
    c2.set("kernel_shape", Attribute::of_ints({1, 1}));
    c2.set("group", Attribute::of_int(groups));
    nodes.push_back(std::move(c2));
    ed.replace(index, std::move(nodes));
    form = groups == 1 ? "Conv k×k (R)·Conv 1×1"
                       : "Reshape·Conv k×k (R, B once)·Reshape·Conv 1×1 (grouped)";
    return true;
  }
  return false;
}

/// Tucker-2 in place of a group-1 2-D Conv: 1×1, k×k, 1×1.
bool tucker_node(GraphEditor& ed, size_t index, size_t slot, const EncodedLayer& layer,
                 int64_t& bytes, std::string& form) {
  const Node& n = ed.graph().nodes[index];
  const schemes::Encoded& e = *layer.encoded;
  if (n.op_type != "Conv" || !n.domain.empty() || slot != 1 || layer.layout != WeightLayout::conv ||
      layer.stored_shape.size() != 4 || n.attr_int("group", 1) != 1 || e.factors().size() != 3)
    return false;
  const Shape& s = layer.stored_shape;
  const Tensor core = e.factor("core").to(DType::f32);  // [r0, r1, kh·kw]
  const Tensor u0 = e.factor("U0").to(DType::f32);      // [out, r0]
  const Tensor u1 = e.factor("U1").to(DType::f32);      // [in, r1]
  if (core.rank() != 3 || core.dim(2) != s[2] * s[3] || u0.dim(0) != s[0] || u1.dim(0) != s[1])
    return false;
  const int64_t r0 = core.dim(0), r1 = core.dim(1);
  const Tensor w1 = f32_transposed(u1).reshape({r1, s[1], 1, 1});
  const Tensor w2 = core.reshape({r0, r1, s[2], s[3]});
  const Tensor w3 = u0.contiguous().reshape({s[0], r0, 1, 1});
  bytes = bytes_of(w1) + bytes_of(w2) + bytes_of(w3);
  const std::string& name = layer.name;
  const std::string h1 = ed.fresh(name + ".tucker_in"), h2 = ed.fresh(name + ".tucker_core");
  Node c1 = GraphEditor::make("Conv", ed.fresh(n.name + "/tucker_U1"),
                              {n.inputs[0], ed.constant(name + ".U1", w1)}, {h1});
  c1.set("kernel_shape", Attribute::of_ints({1, 1}));
  Node c2 = n;
  c2.name = ed.fresh(n.name + "/tucker_core");
  c2.inputs = {h1, ed.constant(name + ".core", w2)};
  c2.outputs = {h2};
  Node c3 = GraphEditor::make("Conv", ed.fresh(n.name + "/tucker_U0"),
                              {h2, ed.constant(name + ".U0", w3)}, n.outputs);
  if (n.inputs.size() > 2 && !n.inputs[2].empty()) c3.inputs.push_back(n.inputs[2]);
  c3.set("kernel_shape", Attribute::of_ints({1, 1}));
  ed.replace(index, {std::move(c1), std::move(c2), std::move(c3)});
  form = "Conv 1×1·Conv k×k·Conv 1×1";
  return true;
}

void check_layer(const GraphEditor& ed, const EncodedLayer& layer) {
  const Tensor* w = ed.weight(layer.name);
  if (!w)
    throw Error(layer.name,
                "planned weight is not an initializer or Constant output of the main graph");
  if (w->shape() != layer.stored_shape)
    throw Error(layer.name,
                fmt::format("stored shape {} differs from the model's {}",
                            shape_to_string(layer.stored_shape), shape_to_string(w->shape())));
}

/// Collects the nodes a form emits for one replacement (the activation
/// rounding reads a value of the graph, so it cannot join the weight nodes).
class ReplacementSink final : public graph::FormSink {
 public:
  explicit ReplacementSink(GraphEditor& ed) : ed_(ed) {}
  std::string fresh(const std::string& base) override { return ed_.fresh(base); }
  std::string constant(const std::string& base, Tensor t) override {
    return ed_.constant(base, std::move(t));
  }
  void emit(Node n) override { nodes.push_back(std::move(n)); }
  int64_t opset() const override { return ed_.opset(); }
  std::vector<Node> nodes;

 private:
  GraphEditor& ed_;
};

/// int8-a8: each reader of the weight becomes graph::emit_w8a8's form (the
/// first reading the weight's own name, others a fresh one, each with its own
/// codes and scales); returns the bytes of their initializers. Throws Error
/// naming the weight when a subgraph or an unsupported node reads it.
int64_t w8a8_readers(GraphEditor& ed, const EncodedLayer& layer,
                     const std::vector<detail::Use>& uses, bool in_subgraph) {
  if (in_subgraph)
    throw Error(layer.name,
                "int8-a8: a subgraph reads the weight; its activations cannot be "
                "rounded in the file");
  int64_t total = 0;
  for (size_t k = 0; k < uses.size(); ++k) {
    const detail::Use& u = uses[k];
    const Node& n = ed.graph().nodes[u.node];
    if (u.input != 1 || !n.domain.empty() || ed.replaced(u.node))
      throw Error(layer.name, "int8-a8: node '" + n.name + "' (" + n.op_type +
                                  ") does not read it as its weight");
    ReplacementSink sink(ed);
    const graph::StoredWeight sw{k == 0 ? layer.name : ed.fresh(layer.name), layer.layout,
                                 layer.stored_shape, layer.stored_dtype};
    int64_t bytes = 0;
    graph::emit_w8a8(sink, n, sw, *layer.encoded, bytes);
    total += bytes;
    ed.replace(u.node, std::move(sink.nodes));
  }
  return total;
}

}  // namespace

EncodedLayer encode_layer(const graph::WeightView& w, const std::string& label,
                          const schemes::SchemeParams& defaults, uint64_t seed, size_t index) {
  EncodedLayer e;
  attribute_errors(w.name, [&] {
    schemes::SchemeParams p = defaults;
    p.svd.seed = Rng(seed).split(index).next_u64();
    const schemes::Scheme scheme = schemes::parse_scheme(label, p);
    const Tensor m = w.out_in();
    const Tensor in = w.layout == WeightLayout::conv ? m.reshape(w.tensor.shape()) : m;
    e.name = w.name;
    e.layout = w.layout;
    e.stored_shape = w.tensor.shape();
    e.stored_dtype = w.tensor.dtype();
    e.encoded = scheme.encode(in);
    e.rel_error = schemes::rel_error(in, *e.encoded);
  });
  return e;
}

std::vector<EncodedLayer> encode_plan(
    const graph::Model& model, const plan::Plan& plan, const schemes::SchemeParams& defaults,
    uint64_t seed, int threads,
    const std::map<std::string, std::shared_ptr<const schemes::Gram>>& grams) {
  const std::vector<graph::WeightView> weights = graph::weights(model);
  std::vector<size_t> planned;
  std::vector<const graph::WeightView*> found(plan.choices.size());
  for (size_t i = 0; i < plan.choices.size(); ++i) {
    const plan::PlanChoice& c = plan.choices[i];
    found[i] = graph::find_weight(weights, c.layer);
    if (!found[i])
      throw Error(c.layer, "the plan names a weight " + model.source + " does not hold");
    if (c.label != "dense") planned.push_back(i);
  }
  std::vector<EncodedLayer> out(planned.size());
  std::atomic<size_t> next{0};
  std::exception_ptr failure;
  std::mutex mu;
  auto work = [&] {
    const linalg::ThreadLimit serial(1);  // one layer per worker of the --threads pool
    for (size_t k; (k = next++) < planned.size();) {
      try {
        const size_t i = planned[k];
        const plan::PlanChoice& c = plan.choices[i];
        const graph::WeightView& w = *found[i];
        schemes::SchemeParams p = defaults;
        if (const auto g = grams.find(c.layer); g != grams.end()) p.gram = g->second;
        out[k] = encode_layer(w, c.label, p, seed, i);
      } catch (...) {
        std::lock_guard lock(mu);
        if (!failure) failure = std::current_exception();
      }
    }
  };
  const size_t n = static_cast<size_t>(linalg::resolve_threads(threads));
  std::vector<std::thread> pool;
  for (size_t t = 1; t < std::min(n, planned.size()); ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  if (failure) std::rethrow_exception(failure);
  return out;
}

graph::Model rewrite_standard(const graph::Model& model, const std::vector<EncodedLayer>& layers,
                              std::vector<LayerRewrite>* log) {
  graph::Model m = model;
  GraphEditor ed(m);
  for (const EncodedLayer& layer : layers) {
    check_layer(ed, layer);
    const std::string label = layer.encoded->label();
    LayerRewrite rw{layer.name, label, "", 0};
    bool sub = false;
    const std::vector<detail::Use> uses = ed.uses(layer.name, sub);
    const bool single = uses.size() == 1 && !sub && !ed.replaced(uses[0].node);
    bool done = false;
    if (label == "dense") {
      rw.form = "unchanged";
      rw.file_bytes = static_cast<int64_t>(ed.weight(layer.name)->nbytes());
      done = true;
    } else if (single && layer.stored_dtype == DType::f32 && label.rfind("lowrank-r", 0) == 0) {
      done = lowrank_node(ed, uses[0].node, uses[0].input, layer, rw.file_bytes, rw.form);
      if (done) ed.remove_source(layer.name);
    } else if (single && layer.stored_dtype == DType::f32 && label == "tucker") {
      done = tucker_node(ed, uses[0].node, uses[0].input, layer, rw.file_bytes, rw.form);
      if (done) ed.remove_source(layer.name);
    }
    if (!done && label == "int8-a8") {
      ed.remove_source(layer.name);
      rw.file_bytes = w8a8_readers(ed, layer, uses, sub);
      rw.form =
          "int8 codes × int8-rounded inputs (W8A8; per row, a k×k conv per image), scaled after "
          "the integer sums";
    } else if (!done) {
      ed.remove_source(layer.name);
      if (graph::has_weight_form(label)) {
        const graph::StoredWeight sw{layer.name, layer.layout, layer.stored_shape,
                                     layer.stored_dtype};
        rw.file_bytes = graph::emit_weight_form(ed, sw, *layer.encoded, rw.form);
      } else {
        Tensor t = detail::to_stored(layer.encoded->decode(), layer.layout, layer.stored_shape,
                                     layer.stored_dtype);
        rw.file_bytes = bytes_of(t);
        ed.graph().add_initializer(layer.name, std::move(t));
        rw.form = "dense decoded";
      }
    }
    if (log) log->push_back(std::move(rw));
  }
  ed.finish();
  graph::verify(m);
  return m;
}

graph::Model rewrite_tailor(const graph::Model& model, const std::vector<EncodedLayer>& layers,
                            std::vector<LayerRewrite>* log) {
  return graph::recognise_compressed_weights(rewrite_standard(model, layers, log), {});
}

}  // namespace tailor::compress
