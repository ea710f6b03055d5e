#include "fuse_layer_norm.h"

namespace tailor::graph::passes {
namespace {

/// `red` reduces `x` over its last axis only, keeping dims.
bool over_last_axis(const FusionScope& s, const Node& red, const std::string& x) {
  const auto axes = reduce_axes(s.g, red, s.opset);
  if (!axes || axes->size() != 1 || red.attr_int("keepdims", 1) != 1) return false;
  if ((*axes)[0] == -1) return true;
  const auto r = s.rank(x);
  return r && static_cast<int64_t>(*r) - 1 == (*axes)[0];
}

/// The node reading `v` alone that is a `op` by an f32 rank-1 constant (of
/// `len` elements when given): its index and the constant's name.
std::optional<std::pair<size_t, std::string>> by_vector(const FusionScope& s, const std::string& v,
                                                        const char* op,
                                                        std::optional<int64_t> len) {
  const auto r = s.sole(v);
  if (!r || !is_op(s.g.nodes[*r], op)) return std::nullopt;
  const auto o = other_input(s.g.nodes[*r], v, true);
  const Tensor* t = o ? s.constant(*o) : nullptr;
  if (!t || t->dtype() != DType::f32 || t->rank() != 1) return std::nullopt;
  if (len && t->numel() != *len) return std::nullopt;
  return std::make_pair(*r, *o);
}

/// `n` squares `d`: Pow(d, 2) or Mul(d, d).
bool squares(const FusionScope& s, const Node& n, const std::string& d) {
  if (is_op(n, "Pow")) return n.inputs[0] == d && s.scalar(n.inputs[1]) == std::optional(2.0);
  return is_op(n, "Mul") && n.inputs.size() == 2 && n.inputs[0] == d && n.inputs[1] == d;
}

}  // namespace

std::optional<FusionMatch> match_layer_norm(const FusionScope& scope, size_t mean) {
  const FusionScope& s = scope;
  const Node& m1 = s.g.nodes[mean];
  if (!is_op(m1, "ReduceMean") || m1.inputs.empty() || m1.outputs.size() != 1) return std::nullopt;
  const std::string x = m1.inputs[0];
  if (!s.is_f32(x) || !over_last_axis(s, m1, x)) return std::nullopt;
  // d = x − mean(x), read by the square and the division.
  const auto sub = s.sole(m1.outputs[0]);
  if (!sub || !is_op(s.g.nodes[*sub], "Sub") ||
      s.g.nodes[*sub].inputs != std::vector<std::string>{x, m1.outputs[0]})
    return std::nullopt;
  const std::string d = s.g.nodes[*sub].outputs[0];
  if (s.uses.graph_outputs.count(d)) return std::nullopt;
  const auto it = s.uses.readers.find(d);
  if (it == s.uses.readers.end() || it->second.size() != 2) return std::nullopt;
  std::optional<size_t> sq, div;
  for (size_t r : it->second) {
    if (s.claimed.count(r) || !s.g.nodes[r].domain.empty()) return std::nullopt;
    (squares(s, s.g.nodes[r], d) ? sq : div) = r;
  }
  if (!sq || !div) return std::nullopt;
  // sqrt(mean(d²) + ε).
  const auto m2 = s.sole(s.g.nodes[*sq].outputs[0]);
  if (!m2 || !is_op(s.g.nodes[*m2], "ReduceMean") || !over_last_axis(s, s.g.nodes[*m2], x))
    return std::nullopt;
  const auto add = s.sole(s.g.nodes[*m2].outputs[0]);
  if (!add || !is_op(s.g.nodes[*add], "Add")) return std::nullopt;
  const auto eps_v = other_input(s.g.nodes[*add], s.g.nodes[*m2].outputs[0], true);
  const auto eps = eps_v ? s.scalar(*eps_v) : std::nullopt;
  if (!eps || s.constant(*eps_v)->rank() > 1) return std::nullopt;
  const auto root = s.sole(s.g.nodes[*add].outputs[0]);
  if (!root || !is_op(s.g.nodes[*root], "Sqrt")) return std::nullopt;
  const std::string sr = s.g.nodes[*root].outputs[0];
  std::vector<size_t> members = {mean, *sub, *sq, *m2, *add, *root};
  // d / sqrt(·), or d · Reciprocal(sqrt(·)).
  const Node& dv = s.g.nodes[*div];
  if (is_op(dv, "Div") && dv.inputs == std::vector<std::string>{d, sr}) {
    if (s.sole(sr) != div) return std::nullopt;
  } else if (is_op(dv, "Mul")) {
    const auto rec = s.sole(sr);
    if (!rec || !is_op(s.g.nodes[*rec], "Reciprocal")) return std::nullopt;
    const std::string& inv = s.g.nodes[*rec].outputs[0];
    if (other_input(dv, d, true) != std::optional<std::string>(inv) || s.sole(inv) != div)
      return std::nullopt;
    members.push_back(*rec);
  } else {
    return std::nullopt;
  }
  members.push_back(*div);
  std::string cur = dv.outputs[0];
  Node f = make_node("LayerNormalization", "", {x}, {}, "ai.tailor");
  f.set("axis", Attribute::of_int(-1));
  f.set("epsilon", Attribute::of_float(static_cast<float>(*eps)));
  // Optional scale, then optional bias of the same length.
  if (const auto scale = by_vector(s, cur, "Mul", std::nullopt)) {
    f.inputs.push_back(scale->second);
    members.push_back(scale->first);
    cur = s.g.nodes[scale->first].outputs[0];
    const int64_t len = s.constant(scale->second)->numel();
    if (const auto bias = by_vector(s, cur, "Add", len)) {
      f.inputs.push_back(bias->second);
      members.push_back(bias->first);
      cur = s.g.nodes[bias->first].outputs[0];
    }
  }
  f.outputs = {cur};
  FusionMatch m;
  m.kind = "layer_norm";
  m.members = std::move(members);
  m.fused = std::move(f);
  return m;
}

}  // namespace tailor::graph::passes
