#include "fuse_softmax.h"

namespace tailor::graph::passes {
namespace {

/// The one axis `red` reduces over keeping dims, or nullopt.
std::optional<int64_t> one_axis(const FusionScope& s, const Node& red) {
  const auto axes = reduce_axes(s.g, red, s.opset);
  if (!axes || axes->size() != 1 || red.attr_int("keepdims", 1) != 1) return std::nullopt;
  return (*axes)[0];
}

}  // namespace

std::optional<FusionMatch> match_softmax(const FusionScope& scope, size_t first) {
  const FusionScope& s = scope;
  const Node& n0 = s.g.nodes[first];
  if (!is_op(n0, "Exp") && !is_op(n0, "ReduceMax")) return std::nullopt;
  if (n0.inputs.empty() || n0.outputs.size() != 1) return std::nullopt;
  const std::string x = n0.inputs[0];
  std::vector<size_t> members;
  std::optional<int64_t> max_axis;
  size_t exp = first;
  if (is_op(n0, "ReduceMax")) {
    // x − max(x), then Exp.
    max_axis = one_axis(s, n0);
    if (!max_axis) return std::nullopt;
    const auto sub = s.sole(n0.outputs[0]);
    if (!sub || !is_op(s.g.nodes[*sub], "Sub") ||
        s.g.nodes[*sub].inputs != std::vector<std::string>{x, n0.outputs[0]})
      return std::nullopt;
    const auto e = s.sole(s.g.nodes[*sub].outputs[0]);
    if (!e || !is_op(s.g.nodes[*e], "Exp")) return std::nullopt;
    members = {first, *sub};
    exp = *e;
  }
  // e / sum(e), e read by exactly the ReduceSum and the Div.
  const std::string e = s.g.nodes[exp].outputs[0];
  if (!s.is_f32(x) || s.uses.graph_outputs.count(e)) return std::nullopt;
  const auto it = s.uses.readers.find(e);
  if (it == s.uses.readers.end() || it->second.size() != 2) return std::nullopt;
  size_t rs = it->second[0], dv = it->second[1];
  if (!is_op(s.g.nodes[rs], "ReduceSum")) std::swap(rs, dv);
  if (s.claimed.count(rs) || s.claimed.count(dv) || !is_op(s.g.nodes[rs], "ReduceSum") ||
      !is_op(s.g.nodes[dv], "Div"))
    return std::nullopt;
  const auto axis = one_axis(s, s.g.nodes[rs]);
  if (!axis || (max_axis && *max_axis != *axis)) return std::nullopt;
  const std::string& sum = s.g.nodes[rs].outputs[0];
  if (s.sole(sum) != dv || s.g.nodes[dv].inputs != std::vector<std::string>{e, sum})
    return std::nullopt;
  members.insert(members.end(), {exp, rs, dv});
  FusionMatch m;
  m.kind = "softmax";
  m.members = std::move(members);
  m.fused = make_node("Softmax", "", {x}, {s.g.nodes[dv].outputs[0]}, "ai.tailor");
  m.fused.set("axis", Attribute::of_int(*axis));
  return m;
}

}  // namespace tailor::graph::passes
