// Recognition of the standard forms of compressed weights (weight_forms.h):
//
//   factors ──(form: Cast, Div, Floor, MatMul, ...)──► W ──► MatMul / Gemm / Conv
//      becomes
//   X ──► ai.tailor.CompressedLinear / CompressedConv (the factors, kept as stored)
//
// See passes.h (recognise_compressed_weights).
#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <tuple>

#include "pass_util.h"
#include "tailor/core/error.h"
#include "tailor/graph/passes.h"
#include "tailor/graph/shape_inference.h"
#include "tailor/graph/weight_forms.h"
#include "tailor/schemes/registry.h"

namespace tailor::graph {
namespace {

using namespace passes;

/// Collects a regenerated form: names are fresh by a counter, constants kept aside.
class ScratchSink final : public FormSink {
 public:
  explicit ScratchSink(int64_t opset) : opset_(opset) {}
  std::string fresh(const std::string& base) override {
    return base + "\x1f" + std::to_string(next_++);
  }
  std::string constant(const std::string& base, Tensor t) override {
    std::string name = fresh(base);
    constants.emplace(name, std::move(t));
    return name;
  }
  void emit(Node n) override { nodes.push_back(std::move(n)); }
  int64_t opset() const override { return opset_; }

  std::map<std::string, Tensor> constants;
  std::vector<Node> nodes;

 private:
  int64_t opset_;
  int next_ = 0;
};

bool same_tensor(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  const Tensor ca = a.contiguous(), cb = b.contiguous();
  return std::memcmp(ca.raw(), cb.raw(), ca.nbytes()) == 0;
}

/// The nodes computing `v` from initializers alone, in graph order; empty when
/// `v` depends on anything else, or a node of the cone has several outputs or
/// a subgraph.
std::vector<size_t> cone_of(const Graph& g, const std::string& v,
                            const std::unordered_map<std::string, size_t>& producer) {
  std::vector<size_t> cone;
  std::vector<std::string> unvisited{v};
  std::set<std::string> seen;
  while (!unvisited.empty()) {
    const std::string x = unvisited.back();
    unvisited.pop_back();
    if (x.empty() || !seen.insert(x).second || g.initializers.count(x)) continue;
    const auto it = producer.find(x);
    if (it == producer.end()) return {};
    const Node& n = g.nodes[it->second];
    if (n.outputs.size() != 1 || has_subgraph(n) || !n.domain.empty()) return {};
    cone.push_back(it->second);
    for (const auto& in : n.inputs) unvisited.push_back(in);
  }
  std::sort(cone.begin(), cone.end());
  return cone;
}

/// Whether the cone's nodes compute exactly what `s` emitted: same operators
/// and attributes in the same order, reading equal constants or the values
/// the previous nodes produced.
bool same_computation(const Graph& g, const std::vector<size_t>& cone, const ScratchSink& s) {
  if (cone.size() != s.nodes.size()) return false;
  std::unordered_map<std::string, std::string> value;  // scratch name → graph name
  for (size_t i = 0; i < cone.size(); ++i) {
    const Node& a = s.nodes[i];
    const Node& b = g.nodes[cone[i]];
    if (a.op_type != b.op_type || a.inputs.size() != b.inputs.size()) return false;
    Node renamed = a;
    for (size_t j = 0; j < a.inputs.size(); ++j) {
      if (const auto c = s.constants.find(a.inputs[j]); c != s.constants.end()) {
        const auto t = g.initializers.find(b.inputs[j]);
        if (t == g.initializers.end() || !same_tensor(c->second, t->second)) return false;
      } else if (const auto m = value.find(a.inputs[j]);
                 m == value.end() || m->second != b.inputs[j]) {
        return false;
      }
      renamed.inputs[j] = b.inputs[j];
    }
    if (node_key(renamed) != node_key(b)) return false;
    value[a.outputs[0]] = b.outputs[0];
  }
  return true;
}

/// Matches the graph computing `v` against the form regenerated in `s` (its
/// value `sv`), node by node from `v` back to the form's inputs: the scratch
/// names in `free` stand for graph values of any source, bound as they are
/// met. The same operators, attributes and constants; returns the bindings
/// (stand-in → graph value) and the form's nodes, or nullopt. A node of the
/// form whose output is read outside it, or is a graph output (`v` aside),
/// does not match.
std::optional<std::pair<std::map<std::string, std::string>, std::vector<size_t>>> match_form(
    const Graph& g, const std::string& v, const ScratchSink& s, const std::string& sv,
    const std::set<std::string>& free, const std::unordered_map<std::string, size_t>& producer,
    const Uses& uses) {
  std::unordered_map<std::string, size_t> scratch_producer;
  for (size_t i = 0; i < s.nodes.size(); ++i) scratch_producer[s.nodes[i].outputs.at(0)] = i;
  std::unordered_map<std::string, std::string> value;  // scratch name → graph name
  std::map<std::string, std::string> bound;
  std::set<size_t> nodes;
  std::function<bool(const std::string&, const std::string&)> match =
      [&](const std::string& a, const std::string& b) -> bool {
    if (const auto m = value.find(a); m != value.end()) return m->second == b;
    value[a] = b;
    if (free.count(a)) {
      bound[a] = b;
      return true;
    }
    if (const auto c = s.constants.find(a); c != s.constants.end()) {
      const auto t = g.initializers.find(b);
      return t != g.initializers.end() && same_tensor(c->second, t->second);
    }
    const auto sp = scratch_producer.find(a);
    const auto gp = producer.find(b);
    if (sp == scratch_producer.end() || gp == producer.end()) return false;
    const Node& sn = s.nodes[sp->second];
    const Node& gn = g.nodes[gp->second];
    if (sn.op_type != gn.op_type || sn.inputs.size() != gn.inputs.size() ||
        gn.outputs.size() != 1 || !gn.domain.empty() || has_subgraph(gn))
      return false;
    for (size_t j = 0; j < sn.inputs.size(); ++j)
      if (!match(sn.inputs[j], gn.inputs[j])) return false;
    Node renamed = sn;
    renamed.inputs = gn.inputs;
    renamed.outputs = gn.outputs;
    renamed.name = gn.name;
    if (node_key(renamed) != node_key(gn)) return false;
    nodes.insert(gp->second);
    return true;
  };
  if (!match(sv, v) || bound.size() != free.size() || nodes.size() != s.nodes.size())
    return std::nullopt;
  for (size_t k : nodes) {
    const std::string& o = g.nodes[k].outputs[0];
    if (o == v) continue;
    const auto r = uses.readers.find(o);
    if (uses.graph_outputs.count(o) || r == uses.readers.end()) return std::nullopt;
    for (size_t reader_of : r->second)
      if (!nodes.count(reader_of)) return std::nullopt;
  }
  return std::make_pair(bound, std::vector<size_t>(nodes.begin(), nodes.end()));
}

/// The int8-a8 form (emit_w8a8) around reader `i` of weight `sw` (int8
/// codes and scales in `factors`): the node replacing it (input X, the bias,
/// the form's output) and the form's other nodes; nullopt when the graph does
/// not hold the form. The form's end is found by walking from the reader's
/// output along sole readers as the regenerated form does, then the whole
/// form is matched back from there.
std::optional<std::pair<Node, std::vector<size_t>>> match_w8a8(
    const Graph& g, size_t i, const StoredWeight& sw, int64_t out, int64_t in,
    const std::vector<schemes::Factor>& factors, int64_t opset,
    const std::unordered_map<std::string, size_t>& producer, const Uses& uses) {
  const Node& n = g.nodes[i];
  std::shared_ptr<const schemes::Encoded> enc;
  try {
    enc = schemes::encoded_from_factors("int8-a8", out, in, factors);
  } catch (const Error&) {
    return std::nullopt;
  }
  const std::string x = "\x1fx",
                    b = "\x1f"
                        "b",
                    y = "\x1fy", w = "\x1fw";
  for (const bool biased : {true, false}) {
    if (biased && n.op_type == "MatMul") continue;
    ScratchSink rs(opset);
    Node r = n;
    r.inputs = {x, w};
    if (biased) r.inputs.push_back(b);
    r.outputs = {y};
    int64_t bytes = 0;
    try {
      emit_w8a8(rs, r, {w, sw.layout, sw.shape, sw.dtype}, *enc, bytes);
    } catch (const Error&) {
      return std::nullopt;  // not a reader the form takes
    }
    // From the first reader of W on, each value of the form has one reader.
    size_t k = 0;
    while (k < rs.nodes.size() && !(rs.nodes[k].op_type == n.op_type &&
                                    rs.nodes[k].inputs.size() > 1 && rs.nodes[k].inputs[1] == w))
      ++k;
    if (k == rs.nodes.size()) return std::nullopt;
    std::string at = rs.nodes[k].outputs[0], end = n.outputs.at(0);
    bool walked = true;
    while (at != y && walked) {
      walked = false;
      for (const Node& sn : rs.nodes)
        if (std::find(sn.inputs.begin(), sn.inputs.end(), at) != sn.inputs.end()) {
          const auto next = uses.sole_reader(end);
          if (!next || g.nodes[*next].op_type != sn.op_type || g.nodes[*next].outputs.size() != 1)
            break;
          at = sn.outputs[0];
          end = g.nodes[*next].outputs[0];
          walked = true;
          break;
        }
    }
    if (at != y) continue;
    std::set<std::string> free{x};
    if (biased) free.insert(b);
    const auto m = match_form(g, end, rs, y, free, producer, uses);
    if (!m) continue;
    Node reader = n;  // the original reader: X, the weight, the bias
    reader.inputs = {m->first.at(x), sw.name};
    if (biased) {
      const std::string& bias = m->first.at(b);
      if (const auto p = producer.find(bias); p != producer.end() && p->second > i) continue;
      reader.inputs.push_back(bias);
    }
    reader.outputs = {end};
    std::optional<Node> c = compressed_op(g, reader, sw.layout, sw.shape, enc);
    if (!c) continue;
    std::vector<size_t> dead;
    for (size_t d : m->second)
      if (d != i) dead.push_back(d);
    return std::make_pair(std::move(*c), std::move(dead));
  }
  return std::nullopt;
}

/// How reader `n` holds a weight of concrete shape `s`: the layout, out and in.
std::optional<std::tuple<WeightLayout, int64_t, int64_t>> reader_layout(const Node& n,
                                                                        const Shape& s) {
  if (s.size() < 2) return std::nullopt;
  int64_t o = s[0], in = shape_numel(s) / std::max<int64_t>(s[0], 1);
  if (n.op_type == "Conv") return std::make_tuple(WeightLayout::conv, o, in);
  if (s.size() != 2) return std::nullopt;
  const bool transposed = n.op_type == "Gemm" && n.attr_int("transB", 0) != 0;
  if (!transposed) std::swap(o, in);
  return std::make_tuple(transposed ? WeightLayout::out_in : WeightLayout::in_out, o, in);
}

/// Labels (with their factors as initializers of `g`) the factor names next
/// to weight `v` allow (weight_forms.h names them "<v>.<factor>").
std::vector<std::pair<std::string, std::vector<schemes::Factor>>> candidates(const Graph& g,
                                                                             const std::string& v,
                                                                             int64_t out,
                                                                             int64_t in) {
  auto init = [&](const std::string& f) -> const Tensor* {
    const auto it = g.initializers.find(v + "." + f);
    return it == g.initializers.end() ? nullptr : &it->second;
  };
  std::vector<std::pair<std::string, std::vector<schemes::Factor>>> out_list;
  auto add = [&](const std::string& label, std::vector<schemes::Factor> f) {
    out_list.emplace_back(label, std::move(f));
  };
  if (const Tensor* a = init("A"); a && a->rank() == 2 && init("B")) {
    add("lowrank-r" + std::to_string(a->dim(1)), {{"A", *a}, {"B", *init("B")}});
  } else if (init("values") && init("q")) {
    add("sparse-2:4", {{"values", *init("values")}, {"indices", *init("q")}});
  } else if (init("L") && init("R")) {
    add("monarch", {{"L", *init("L")}, {"R", *init("R")}});
  } else if (init("G1")) {
    std::vector<schemes::Factor> cores;
    for (int k = 1; init("G" + std::to_string(k)); ++k)
      cores.push_back({"G" + std::to_string(k), *init("G" + std::to_string(k))});
    add("tt", std::move(cores));
  } else if (init("core") && init("U0") && init("U1")) {
    std::vector<schemes::Factor> f{
        {"core", *init("core")}, {"U0", *init("U0")}, {"U1", *init("U1")}};
    if (init("U2")) f.push_back({"U2", *init("U2")});
    add("tucker", std::move(f));
  } else if (const Tensor* q = init("q"), *s = init("scale"); q && s && s->rank() >= 2) {
    // Scales are stored [out, 1] (per channel) or [out, ng, 1] (grouped).
    const Tensor scale =
        s->rank() == 2 ? s->reshape({s->dim(0)}) : s->reshape({s->dim(0), s->dim(1)});
    std::vector<std::string> labels;
    if (q->dtype() == DType::i8)
      labels = {s->rank() == 2 ? "int8" : "q8_0"};  // grouped int8: ggml's q8_0 form
    else if (s->rank() == 2)
      labels = {"int4", "int3", "ternary"};
    else
      labels = {"int4-g32", "int4-g64", "int4-g128"};
    const Tensor codes = q->dtype() == DType::i8 ? q->reshape({out, in}) : *q;
    for (const auto& l : labels) add(l, {{"q", codes}, {"scale", scale}});
  }
  return out_list;
}

}  // namespace

std::optional<Node> compressed_op(const Graph& g, const Node& n, WeightLayout layout,
                                  const Shape& s, std::shared_ptr<const schemes::Encoded> w) {
  Node c;
  c.domain = "ai.tailor";
  c.name = n.name;
  c.outputs = n.outputs;
  c.inputs = {n.inputs[0]};
  if (n.op_type == "MatMul") {
    c.op_type = "CompressedLinear";
  } else if (n.op_type == "Gemm") {
    if (n.attr_int("transA", 0) != 0 || n.attr_float("alpha", 1.0f) != 1.0f ||
        n.attr_float("beta", 1.0f) != 1.0f)
      return std::nullopt;
    c.op_type = "CompressedLinear";
    if (n.inputs.size() > 2 && !n.inputs[2].empty()) {
      const auto b = g.initializers.find(n.inputs[2]);
      if (b == g.initializers.end() || b->second.numel() != w->out() ||
          b->second.dtype() != DType::f32)
        return std::nullopt;
      c.inputs.push_back(n.inputs[2]);
    }
  } else {
    if (layout != WeightLayout::conv || s.size() != 4 || n.attr_int("group", 1) != 1 ||
        n.attr_string("auto_pad", "NOTSET") != "NOTSET")
      return std::nullopt;
    c.op_type = "CompressedConv";
    if (n.inputs.size() > 2 && !n.inputs[2].empty()) c.inputs.push_back(n.inputs[2]);
    c.set("kernel_shape", Attribute::of_ints({s[2], s[3]}));
    c.set("strides", Attribute::of_ints(n.attr_ints("strides", {1, 1})));
    c.set("pads", Attribute::of_ints(n.attr_ints("pads", {0, 0, 0, 0})));
    c.set("dilations", Attribute::of_ints(n.attr_ints("dilations", {1, 1})));
  }
  c.set("weight", Attribute::of_encoded(std::move(w)));
  return c;
}

Model recognise_compressed_weights(Model model, const PassOptions&) {
  Model out = std::move(model);
  Graph& g = out.graph;
  const auto producer = producers(g);
  const Uses uses = compute_uses(g);
  std::unordered_map<std::string, ValueType> types;
  bool typed = false;
  std::set<size_t> dead;
  bool changed = false;
  // The stored shape and dtype of value `v`, by shape inference.
  auto stored = [&](const std::string& v) -> std::optional<std::pair<Shape, DType>> {
    if (!typed) {
      types = infer_types(g, out.opset);
      typed = true;
    }
    const auto t = types.find(v);
    if (t == types.end() || !t->second.dtype || !t->second.shape) return std::nullopt;
    const std::optional<Shape> known = concrete_shape(*t->second.shape);
    if (!known) return std::nullopt;
    return std::make_pair(*known, *t->second.dtype);
  };
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (!n.domain.empty() || n.inputs.size() < 2 || dead.count(i) ||
        (n.op_type != "MatMul" && n.op_type != "Gemm" && n.op_type != "Conv"))
      continue;
    const std::string& v = n.inputs[1];
    if (g.initializers.count(v) || !producer.count(v)) continue;
    // int8-a8: int8 codes alone as the weight, the form around its readers.
    if (const auto q = g.initializers.find(v + ".q"); q != g.initializers.end() &&
                                                      q->second.dtype() == DType::i8 &&
                                                      g.initializers.count(v + ".scale")) {
      const auto st = stored(v);
      const auto lay = st ? reader_layout(n, st->first) : std::nullopt;
      if (lay) {
        const auto [layout, o, in] = *lay;
        for (auto& [label, factors] : candidates(g, v, o, in)) {
          if (label != "int8") continue;
          auto a8 = match_w8a8(g, i, {v, layout, st->first, st->second}, o, in, factors, out.opset,
                               producer, uses);
          if (!a8) continue;
          g.nodes[i] = std::move(a8->first);
          dead.insert(a8->second.begin(), a8->second.end());
          changed = true;
          break;
        }
        if (g.nodes[i].domain == "ai.tailor") continue;
      }
    }
    if (uses.count(v) != 1) continue;
    const std::vector<size_t> cone = cone_of(g, v, producer);
    if (cone.empty()) continue;
    bool private_cone = true;  // every value of the cone read only inside it
    for (size_t k : cone) {
      const std::string& o = g.nodes[k].outputs[0];
      if (o == v) continue;
      const auto r = uses.readers.find(o);
      if (uses.graph_outputs.count(o) || r == uses.readers.end())
        private_cone = false;
      else
        for (size_t reader : r->second)
          if (!std::binary_search(cone.begin(), cone.end(), reader)) private_cone = false;
    }
    if (!private_cone) continue;
    const auto st = stored(v);
    const auto lay = st ? reader_layout(n, st->first) : std::nullopt;
    if (!lay) continue;
    const Shape& s = st->first;
    const auto [layout, o, in] = *lay;
    for (auto& [label, factors] : candidates(g, v, o, in)) {
      std::shared_ptr<const schemes::Encoded> enc;
      try {
        enc = schemes::encoded_from_factors(label, o, in, factors);
      } catch (const Error&) {
        continue;  // the factors do not fit this label
      }
      ScratchSink sink(out.opset);
      std::string form;
      emit_weight_form(sink, {v, layout, s, st->second}, *enc, form);
      if (!same_computation(g, cone, sink)) continue;
      std::optional<Node> c = compressed_op(g, n, layout, s, enc);
      if (!c) break;
      g.nodes[i] = std::move(*c);
      dead.insert(cone.begin(), cone.end());
      changed = true;
      break;
    }
  }
  if (!changed) return out;
  erase_nodes(g, dead);
  out.other_opsets.emplace("ai.tailor", 1);
  prune_types(g);
  return out;
}

}  // namespace tailor::graph
