// Layout: NCHW convs to channels-last ai.tailor.ConvNhwc with the transposes
// they need; inverse transpose pairs between them cancel. See passes.h.
#include <algorithm>

#include "pass_util.h"
#include "tailor/graph/passes.h"

namespace tailor::graph {
namespace {

using namespace passes;

const std::vector<int64_t> kToNhwc = {0, 2, 3, 1};
const std::vector<int64_t> kToNchw = {0, 3, 1, 2};

/// W [o, i, kh, kw] → [o, kh, kw, i].
Tensor to_ohwi(const Tensor& w) {
  const Tensor c = w.contiguous();
  const int64_t o = c.dim(0), i = c.dim(1), kh = c.dim(2), kw = c.dim(3);
  Tensor out = Tensor::zeros(DType::f32, {o, kh, kw, i});
  const float* s = c.data<float>();
  float* d = out.mutable_data<float>();
  for (int64_t a = 0; a < o; ++a)
    for (int64_t b = 0; b < i; ++b)
      for (int64_t y = 0; y < kh; ++y)
        for (int64_t x = 0; x < kw; ++x)
          d[((a * kh + y) * kw + x) * i + b] = s[((a * i + b) * kh + y) * kw + x];
  return out;
}

bool convertible(const Graph& g, const Node& n) {
  const bool conv = n.domain.empty() && n.op_type == "Conv";
  const bool fused = n.domain == "ai.tailor" && n.op_type == "FusedConv";
  if ((!conv && !fused) || n.inputs.size() < 2 || n.outputs.size() != 1) return false;
  const Tensor* w = constant(g, n.inputs[1]);
  if (!w || w->dtype() != DType::f32 || w->rank() != 4) return false;
  const std::string ap = n.attr_string("auto_pad", "NOTSET");
  if (ap != "NOTSET" && ap != "VALID") return false;
  const int64_t group = n.attr_int("group", 1);
  const bool depthwise = group == w->dim(0) && w->dim(1) == 1;
  if (group != 1 && !depthwise) return false;
  if (n.inputs.size() > 2 && !n.inputs[2].empty()) {
    const Tensor* b = constant(g, n.inputs[2]);
    if (!b || b->dtype() != DType::f32) return false;
  }
  return true;
}

void convert(Graph& g, NameGen& names) {
  std::vector<Node> out;
  std::map<std::string, std::string> ohwi;  // weight → its OHWI initializer
  for (auto& n : g.nodes) {
    if (!convertible(g, n)) {
      out.push_back(std::move(n));
      continue;
    }
    const std::string x = n.inputs[0], y = n.outputs[0];
    const std::string xt = names.fresh(x + "_nhwc"), yt = names.fresh(y + "_nhwc");
    auto& wn = ohwi[n.inputs[1]];
    if (wn.empty()) {
      wn = names.fresh(n.inputs[1] + "_ohwi");
      g.add_initializer(wn, to_ohwi(*constant(g, n.inputs[1])));
    }
    Node t1 = make_node("Transpose", names.fresh(xt), {x}, {xt});
    t1.set("perm", Attribute::of_ints(kToNhwc));
    Node c = make_node("ConvNhwc", names.fresh(y + "_conv_nhwc"), {xt, wn}, {yt}, "ai.tailor");
    if (n.inputs.size() > 2 && !n.inputs[2].empty()) c.inputs.push_back(n.inputs[2]);
    const std::vector<int64_t> st = n.attr_ints("strides", {1, 1}),
                               dil = n.attr_ints("dilations", {1, 1});
    std::vector<int64_t> pads = n.attr_ints("pads", {0, 0, 0, 0});
    if (n.attr_string("auto_pad", "NOTSET") == "VALID") pads = {0, 0, 0, 0};
    c.set("strides", Attribute::of_ints(st));
    c.set("pads", Attribute::of_ints(pads));
    c.set("dilations", Attribute::of_ints(dil));
    c.set("group", Attribute::of_int(n.attr_int("group", 1)));
    if (const Attribute* a = n.find("activation")) c.set("activation", *a);
    if (const Attribute* a = n.find("activation_params")) c.set("activation_params", *a);
    Node t2 = make_node("Transpose", names.fresh(y + "_to_nchw"), {yt}, {y});
    t2.set("perm", Attribute::of_ints(kToNchw));
    out.push_back(std::move(t1));
    out.push_back(std::move(c));
    out.push_back(std::move(t2));
  }
  g.nodes = std::move(out);
}

/// Transpose(Transpose(a, to_nchw), to_nhwc) → a, for the pairs convert() made.
void cancel_pairs(Graph& g) {
  for (bool changed = true; changed;) {
    changed = false;
    auto prod = producers(g);
    for (size_t i = 0; i < g.nodes.size() && !changed; ++i) {
      const Node& t2 = g.nodes[i];
      if (!t2.domain.empty() || t2.op_type != "Transpose" || t2.attr_ints("perm", {}) != kToNhwc)
        continue;
      auto p = prod.find(t2.inputs[0]);
      if (p == prod.end()) continue;
      const Node& t1 = g.nodes[p->second];
      if (!t1.domain.empty() || t1.op_type != "Transpose" || t1.attr_ints("perm", {}) != kToNchw)
        continue;
      if (std::find(g.outputs.begin(), g.outputs.end(), t2.outputs[0]) != g.outputs.end()) continue;
      const std::string from = t2.outputs[0], to = t1.inputs[0];
      g.nodes.erase(g.nodes.begin() + static_cast<std::ptrdiff_t>(i));
      replace_uses(g, from, to);
      changed = true;
    }
  }
  // Transposes to NCHW nobody reads any more.
  for (bool changed = true; changed;) {
    changed = false;
    const Uses u = compute_uses(g);
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      const Node& t = g.nodes[i];
      if (t.domain.empty() && t.op_type == "Transpose" && u.count(t.outputs[0]) == 0) {
        g.nodes.erase(g.nodes.begin() + static_cast<std::ptrdiff_t>(i));
        changed = true;
        break;
      }
    }
  }
}

}  // namespace

Model convert_layout_nhwc(const Model& model, const PassOptions&) {
  Model out = model;
  detach_subgraphs(out.graph);
  NameGen names(out.graph);
  convert(out.graph, names);
  cancel_pairs(out.graph);
  if (!out.other_opsets.count("ai.tailor")) out.other_opsets["ai.tailor"] = 1;
  prune_types(out.graph);
  return out;
}

}  // namespace tailor::graph
