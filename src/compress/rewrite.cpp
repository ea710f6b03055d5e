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
#include "tailor/graph/verify.h"
#include "tailor/schemes/composite.h"
#include "tailor/schemes/registry.h"

namespace tailor::compress {
namespace {

using detail::GraphEditor;
using graph::Attribute;
using graph::Node;

// `label`'s stored form (schemes::stored_form: -mse and -gptq share the reference's).
bool is_quantized(const std::string& label_in) {
  const std::string label = schemes::stored_form(label_in);
  return label == "int8" || label == "int4" || label == "int3" || label == "ternary" ||
         label.rfind("int4-g", 0) == 0;
}

int64_t bytes_of(const Tensor& t) {
  return static_cast<int64_t>(t.nbytes());
}

/// Emits the nodes turning the [out, in] f32 value `w` into the weight value
/// `layer.name` in its stored shape, layout and dtype.
void finish_weight(GraphEditor& ed, const std::string& w, const EncodedLayer& layer) {
  const std::string& name = layer.name;
  const Shape& s = layer.stored_shape;
  const bool cast = layer.stored_dtype != DType::f32;
  const std::string shaped = cast ? ed.fresh(name + ".f32") : name;
  if (layer.layout == WeightLayout::in_out) {
    Node t = GraphEditor::make("Transpose", ed.fresh(name + "/transpose"), {w}, {shaped});
    t.set("perm", Attribute::of_ints({1, 0}));
    ed.emit_front(std::move(t));
  } else if (layer.layout == WeightLayout::conv_transpose) {
    Shape swapped = s;
    std::swap(swapped[0], swapped[1]);
    const std::string r = ed.fresh(name + ".swapped");
    ed.emit_front(GraphEditor::make("Reshape", ed.fresh(name + "/reshape"),
                                    {w, ed.ints(name + ".shape", swapped)}, {r}));
    std::vector<int64_t> perm(s.size());
    for (size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<int64_t>(i);
    std::swap(perm[0], perm[1]);
    Node t = GraphEditor::make("Transpose", ed.fresh(name + "/transpose"), {r}, {shaped});
    t.set("perm", Attribute::of_ints(perm));
    ed.emit_front(std::move(t));
  } else {
    ed.emit_front(GraphEditor::make("Reshape", ed.fresh(name + "/reshape"),
                                    {w, ed.ints(name + ".shape", s)}, {shaped}));
  }
  if (cast) {
    Node c = GraphEditor::make("Cast", ed.fresh(name + "/cast"), {shaped}, {name});
    c.set("to", Attribute::of_int(detail::onnx_type_code(layer.stored_dtype)));
    ed.emit_front(std::move(c));
  }
}

/// Ŵ = q·s [out, in] f32 as Cast/Mul (see rewrite.h) from the quantized `e`,
/// its constants named from `name`. Returns the value; adds the initializer
/// bytes to `bytes`.
std::string dequantized_rows(GraphEditor& ed, const schemes::Encoded& e, const std::string& name,
                             int64_t& bytes, std::string& form) {
  const int64_t out = e.out(), in = e.in();
  const std::string label = schemes::stored_form(e.label());
  const Tensor scale = e.factor("scale").contiguous();  // f16 [out] or [out, ng]
  const int64_t ng = scale.rank() == 2 ? scale.dim(1) : 1;
  int64_t group = in;
  if (label.rfind("int4-g", 0) == 0) group = std::stoll(label.substr(6));
  const bool packed = label != "int8";
  int64_t gw = ng == 1 ? in : group;  // codes per group row, padded
  if (packed && (out * ng * gw) % 2 != 0) ++gw;
  if (ng * group < in && ng > 1) throw Error(name, "grouped scales do not cover the row");

  // Codes from Ŵ and the stored scales: q = round(Ŵ/s) (exact: Ŵ = q·s, |q| ≤ 127).
  const Tensor w_hat = e.decode().contiguous();
  const float* pw = w_hat.data<float>();
  const uint16_t* ps = scale.data<uint16_t>();
  std::vector<int8_t> q(static_cast<size_t>(out * ng * gw), 0);
  for (int64_t o = 0; o < out; ++o)
    for (int64_t j = 0; j < in; ++j) {
      const int64_t g = ng == 1 ? 0 : j / group, k = ng == 1 ? j : j % group;
      const float sv = f16_to_f32(ps[o * ng + g]);
      const float v = sv != 0.0f ? std::nearbyint(pw[o * in + j] / sv) : 0.0f;
      q[static_cast<size_t>((o * ng + g) * gw + k)] = static_cast<int8_t>(v);
    }

  const std::string qf = ed.fresh(name + ".qf");
  if (!packed) {
    Tensor qt = Tensor::zeros(DType::i8, {out, ng, gw});
    std::copy(q.begin(), q.end(), qt.mutable_data<int8_t>());
    bytes += bytes_of(qt);
    Node c =
        GraphEditor::make("Cast", ed.fresh(name + "/cast_q"), {ed.constant(name + ".q", qt)}, {qf});
    c.set("to", Attribute::of_int(detail::onnx_type_code(DType::f32)));
    ed.emit_front(std::move(c));
    form = "Cast·Mul (int8 codes)";
  } else {
    // Two's-complement nibbles, low nibble first: byte = (q0 & 15) | (q1 & 15) << 4.
    const int64_t nb = static_cast<int64_t>(q.size()) / 2;
    Tensor pt = Tensor::zeros(DType::u8, {nb});
    uint8_t* pp = pt.mutable_data<uint8_t>();
    for (int64_t i = 0; i < nb; ++i)
      pp[i] = static_cast<uint8_t>((q[2 * i] & 15) | ((q[2 * i + 1] & 15) << 4));
    bytes += bytes_of(pt);
    const std::string b = ed.fresh(name + ".bytes");
    Node c =
        GraphEditor::make("Cast", ed.fresh(name + "/cast_q"), {ed.constant(name + ".q", pt)}, {b});
    c.set("to", Attribute::of_int(detail::onnx_type_code(DType::f32)));
    ed.emit_front(std::move(c));
    const std::string c16 = ed.scalar(name + ".16", 16.0f), c8 = ed.scalar(name + ".8", 8.0f);
    auto op2 = [&](const std::string& op, const std::string& a, const std::string& bb) {
      const std::string o = ed.fresh(name + "." + op);
      ed.emit_front(GraphEditor::make(op, ed.fresh(name + "/" + op), {a, bb}, {o}));
      return o;
    };
    auto floor_of = [&](const std::string& a) {
      const std::string o = ed.fresh(name + ".floor");
      ed.emit_front(GraphEditor::make("Floor", ed.fresh(name + "/floor"), {a}, {o}));
      return o;
    };
    // u in [0, 16) → signed: u − 16·floor(u/8).
    auto to_signed = [&](const std::string& u) {
      return op2("Sub", u, op2("Mul", floor_of(op2("Div", u, c8)), c16));
    };
    const std::string hi_u = floor_of(op2("Div", b, c16));
    const std::string lo_u = op2("Sub", b, op2("Mul", hi_u, c16));
    const std::string lo = ed.fresh(name + ".lo"), hi = ed.fresh(name + ".hi");
    ed.emit_front(ed.unsqueeze(to_signed(lo_u), {1}, lo));
    ed.emit_front(ed.unsqueeze(to_signed(hi_u), {1}, hi));
    const std::string pairs = ed.fresh(name + ".pairs");
    Node cat = GraphEditor::make("Concat", ed.fresh(name + "/concat"), {lo, hi}, {pairs});
    cat.set("axis", Attribute::of_int(1));
    ed.emit_front(std::move(cat));
    ed.emit_front(GraphEditor::make("Reshape", ed.fresh(name + "/reshape_q"),
                                    {pairs, ed.ints(name + ".qshape", {out, ng, gw})}, {qf}));
    form = "Cast·Mul (4-bit codes, two per byte)";
  }
  const Tensor st = scale.reshape({out, ng, 1});
  bytes += bytes_of(st);
  const std::string sf = ed.fresh(name + ".scale_f32");
  Node cs = GraphEditor::make("Cast", ed.fresh(name + "/cast_scale"),
                              {ed.constant(name + ".scale", st)}, {sf});
  cs.set("to", Attribute::of_int(detail::onnx_type_code(DType::f32)));
  ed.emit_front(std::move(cs));
  const std::string wq = ed.fresh(name + ".dequantized");
  ed.emit_front(GraphEditor::make("Mul", ed.fresh(name + "/scale"), {qf, sf}, {wq}));
  std::string rows = ed.fresh(name + ".rows");
  ed.emit_front(GraphEditor::make("Reshape", ed.fresh(name + "/rows"),
                                  {wq, ed.ints(name + ".rows_shape", {out, ng * gw})}, {rows}));
  if (ng * gw != in) {
    const std::string cut = ed.fresh(name + ".cut");
    ed.emit_front(ed.slice(rows, 1, 0, in, cut));
    rows = cut;
  }
  return rows;
}

/// Ŵ = q·s as Cast/Mul, as the weight. Returns the initializer bytes.
int64_t emit_dequantize(GraphEditor& ed, const EncodedLayer& layer, std::string& form) {
  int64_t bytes = 0;
  finish_weight(ed, dequantized_rows(ed, *layer.encoded, layer.name, bytes, form), layer);
  return bytes;
}

/// One part of a composite as an f32 value [rows, cols]: Cast of an f16
/// factor, or a quantized part's Cast/Mul.
std::string part_rows(GraphEditor& ed, const schemes::Encoded& e, const std::string& name,
                      int64_t& bytes) {
  if (e.label() == "f16") {
    const Tensor& w = e.factor("w");
    bytes += bytes_of(w);
    const std::string v = ed.fresh(name + ".f32");
    Node c = GraphEditor::make("Cast", ed.fresh(name + "/cast"), {ed.constant(name, w)}, {v});
    c.set("to", Attribute::of_int(detail::onnx_type_code(DType::f32)));
    ed.emit_front(std::move(c));
    return v;
  }
  std::string form;
  return dequantized_rows(ed, e, name, bytes, form);
}

/// A composite Ŵ = base + A·B as the weight: its parts dequantized, MatMul(A, B),
/// Add. Returns the initializer bytes.
int64_t emit_composite(GraphEditor& ed, const EncodedLayer& layer,
                       const schemes::CompositeParts& parts, std::string& form) {
  int64_t bytes = 0;
  const std::string& name = layer.name;
  const std::string a = part_rows(ed, *parts.a, name + ".A", bytes);
  const std::string b = part_rows(ed, *parts.b, name + ".B", bytes);
  std::string w = ed.fresh(name + ".lowrank");
  ed.emit_front(GraphEditor::make("MatMul", ed.fresh(name + "/lowrank"), {a, b}, {w}));
  form = "MatMul(A, B) as the weight";
  if (parts.base) {
    std::string base_form;
    const std::string q = dequantized_rows(ed, *parts.base, name, bytes, base_form);
    const std::string sum = ed.fresh(name + ".sum");
    ed.emit_front(GraphEditor::make("Add", ed.fresh(name + "/add"), {q, w}, {sum}));
    w = sum;
    form = base_form + " + MatMul(A, B), as the weight";
  }
  finish_weight(ed, w, layer);
  return bytes;
}

/// Ŵ decoded, stored as the weight itself (same name, stored layout and dtype).
int64_t emit_decoded(GraphEditor& ed, const EncodedLayer& layer) {
  Tensor t = detail::to_stored(layer.encoded->decode(), layer.layout, layer.stored_shape,
                               layer.stored_dtype);
  const int64_t bytes = bytes_of(t);
  ed.graph().add_initializer(layer.name, std::move(t));
  return bytes;
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
    // First conv: B per group (repeated for every group), R outputs per group.
    Tensor first = Tensor::zeros(DType::f32, {groups * r, s[1], s[2], s[3]});
    const size_t per = static_cast<size_t>(b.numel());
    for (int64_t g = 0; g < groups; ++g)
      std::copy_n(b.data<float>(), per, first.mutable_data<float>() + g * per);
    const Tensor second = a.reshape({out, r, 1, 1});
    bytes = bytes_of(first) + bytes_of(second);
    Node c1 = n;
    c1.name = ed.fresh(n.name + "/lowrank_B");
    c1.inputs = {n.inputs[0], ed.constant(name + ".B", first)};
    c1.outputs = {h};
    Node c2 = GraphEditor::make("Conv", ed.fresh(n.name + "/lowrank_A"),
                                {h, ed.constant(name + ".A", second)}, n.outputs);
    if (n.inputs.size() > 2 && !n.inputs[2].empty()) c2.inputs.push_back(n.inputs[2]);
    c2.set("kernel_shape", Attribute::of_ints({1, 1}));
    c2.set("group", Attribute::of_int(groups));
    ed.replace(index, {std::move(c1), std::move(c2)});
    form = groups == 1 ? "Conv k×k (R)·Conv 1×1" : "Conv k×k (R per group)·Conv 1×1 (grouped)";
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

}  // namespace

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
    for (size_t k; (k = next++) < planned.size();) {
      try {
        const size_t i = planned[k];
        const plan::PlanChoice& c = plan.choices[i];
        const graph::WeightView& w = *found[i];
        attribute_errors(c.layer, [&] {
          schemes::SchemeParams p = defaults;
          p.svd.seed = Rng(seed).split(i).next_u64();
          if (const auto g = grams.find(c.layer); g != grams.end()) p.gram = g->second;
          const schemes::Scheme scheme = schemes::parse_scheme(c.label, p);
          const Tensor m = w.out_in();
          const Tensor in = w.layout == WeightLayout::conv ? m.reshape(w.tensor.shape()) : m;
          EncodedLayer& e = out[k];
          e.name = c.layer;
          e.layout = w.layout;
          e.stored_shape = w.tensor.shape();
          e.stored_dtype = w.tensor.dtype();
          e.encoded = scheme.encode(in);
          e.rel_error = schemes::rel_error(in, *e.encoded);
        });
      } catch (...) {
        std::lock_guard lock(mu);
        if (!failure) failure = std::current_exception();
      }
    }
  };
  const unsigned n = threads > 0 ? threads : std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < std::min<size_t>(n, planned.size()); ++t) pool.emplace_back(work);
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
    if (!done) {
      ed.remove_source(layer.name);
      if (const auto parts = schemes::composite_parts(*layer.encoded)) {
        rw.file_bytes = emit_composite(ed, layer, *parts, rw.form);
      } else if (is_quantized(label)) {
        rw.file_bytes = emit_dequantize(ed, layer, rw.form);
      } else if (label.rfind("lowrank-r", 0) == 0) {
        const Tensor a = layer.encoded->factor("A").to(DType::f32);
        const Tensor b = layer.encoded->factor("B").to(DType::f32);
        rw.file_bytes = bytes_of(a) + bytes_of(b);
        const std::string w = ed.fresh(layer.name + ".lowrank");
        ed.emit_front(GraphEditor::make(
            "MatMul", ed.fresh(layer.name + "/lowrank"),
            {ed.constant(layer.name + ".A", a), ed.constant(layer.name + ".B", b)}, {w}));
        finish_weight(ed, w, layer);
        rw.form = "MatMul(A, B) as the weight";
      } else {
        rw.file_bytes = emit_decoded(ed, layer);
        rw.form = "dense decoded";
      }
    }
    if (log) log->push_back(std::move(rw));
  }
  ed.finish();
  graph::verify(m);
  return m;
}

}  // namespace tailor::compress
