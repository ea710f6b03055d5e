// Layout: NCHW convs to channels-last ai.tailor.ConvNhwc with the transposes
// they need; inverse transpose pairs between them cancel. See passes.h.
#include <algorithm>
#include <set>
#include <unordered_map>

#include "pass_util.h"
#include "tailor/graph/fused_ops.h"
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
  // Writes in order, reads at a stride of kh·kw floats (a few cache lines);
  // the source's order wrote every element c_in floats apart.
  for (int64_t a = 0; a < o; ++a)
    for (int64_t y = 0; y < kh; ++y)
      for (int64_t x = 0; x < kw; ++x)
        for (int64_t b = 0; b < i; ++b)
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
    // The model's node name is kept (it replaces that node): errors name it.
    Node c = make_node("ConvNhwc", !n.name.empty() ? n.name : names.fresh(y + "_conv_nhwc"),
                       {xt, wn}, {yt}, "ai.tailor");
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
    if (const Attribute* a = n.find("alpha")) c.set("alpha", *a);
    if (const Attribute* a = n.find("beta")) c.set("beta", *a);
    for (std::string_view name : kEpilogueAffineAttributes)
      if (const Attribute* a = n.find(std::string(name))) c.set(std::string(name), *a);
    Node t2 = make_node("Transpose", names.fresh(y + "_to_nchw"), {yt}, {y});
    t2.set("perm", Attribute::of_ints(kToNchw));
    out.push_back(std::move(t1));
    out.push_back(std::move(c));
    out.push_back(std::move(t2));
  }
  g.nodes = std::move(out);
}

/// Transpose(Transpose(a, to_nchw), to_nhwc) → a, for the pairs convert() made,
/// then the transposes to NCHW nobody reads any more are dropped. Linear in
/// the graph's size: one sweep in node order resolves every pair (the
/// renaming of a cancelled pair's output is applied to the nodes after it as
/// the sweep reaches them), one backward sweep drops the unread transposes.
void cancel_pairs(Graph& g) {
  const std::set<std::string> outputs(g.outputs.begin(), g.outputs.end());
  std::unordered_map<std::string, std::string> to_nchw_input;  // t1's output → t1's input
  std::unordered_map<std::string, std::string> renamed;        // t2's output → a
  std::vector<Node> kept;
  kept.reserve(g.nodes.size());
  for (Node& n : g.nodes) {
    for (auto& in : n.inputs)
      if (auto r = renamed.find(in); r != renamed.end()) in = r->second;
    if (n.domain.empty() && n.op_type == "Transpose" && n.inputs.size() == 1 &&
        n.outputs.size() == 1) {
      const std::vector<int64_t> perm = n.attr_ints("perm", {});
      if (perm == kToNchw) {
        to_nchw_input[n.outputs[0]] = n.inputs[0];
      } else if (perm == kToNhwc && !outputs.count(n.outputs[0])) {
        if (auto t1 = to_nchw_input.find(n.inputs[0]); t1 != to_nchw_input.end()) {
          renamed[n.outputs[0]] = t1->second;
          continue;
        }
      }
    }
    kept.push_back(std::move(n));
  }
  g.nodes = std::move(kept);
  // Subgraphs may read a renamed value from this scope.
  for (const auto& rename : renamed)  // (clang 14 cannot capture structured bindings)
    for_each_subgraph(g, [&](Graph& sub) { rename_reads(sub.nodes, rename.first, rename.second); });
  // Drop the transposes to NCHW that no node, subgraph or graph output reads,
  // sweeping backwards so a transpose only read by a dropped one goes too.
  const Uses u = compute_uses(g);
  std::unordered_map<std::string, size_t> reads;
  for (const auto& [v, r] : u.readers) reads[v] = r.size();
  for (const auto& v : u.graph_outputs) ++reads[v];
  std::set<size_t> dead;
  for (size_t i = g.nodes.size(); i-- > 0;) {
    const Node& t = g.nodes[i];
    if (!t.domain.empty() || t.op_type != "Transpose" || t.outputs.size() != 1 ||
        t.attr_ints("perm", {}) != kToNchw || reads[t.outputs[0]] != 0)
      continue;
    dead.insert(i);
    for (const auto& in : t.inputs) --reads[in];
  }
  erase_nodes(g, dead);
}

}  // namespace

Model convert_layout_nhwc(Model model, const PassOptions&) {
  Model out = std::move(model);
  detach_subgraphs(out.graph);
  NameGen names(out.graph);
  convert(out.graph, names);
  cancel_pairs(out.graph);
  if (!out.other_opsets.count("ai.tailor")) out.other_opsets["ai.tailor"] = 1;
  prune_types(out.graph);
  return out;
}

}  // namespace tailor::graph
