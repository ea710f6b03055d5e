#include "epilogue_activation.h"

namespace tailor::graph::passes {
namespace {

/// A one-element constant equal to `want`, of rank ≤ 1.
bool is_constant(const FusionScope& s, const std::string& v, double want) {
  return s.scalar(v) == std::optional<double>(want) && s.constant(v)->rank() <= 1;
}

/// One node of an activation op reading `v` alone.
std::optional<EpilogueActivation> single_node(const FusionScope& s, size_t r,
                                              const std::string& v) {
  const Node& a = s.g.nodes[r];
  if (a.outputs.size() != 1 || a.inputs.empty() || a.inputs[0] != v) return std::nullopt;
  const FusedActivationInfo* info = fused_activation_for_op(a.op_type);
  if (!info) return std::nullopt;
  EpilogueActivation m{info, info->alpha_default, info->beta_default, {r}, a.outputs[0]};
  if (info->kind == FusedActivation::clip) {
    const auto b = s.clip(a);
    if (!b) return std::nullopt;
    m.alpha = b->first, m.beta = b->second;
    return m;
  }
  if (!info->alpha_attribute.empty())
    m.alpha = a.attr_float(std::string(info->alpha_attribute), info->alpha_default);
  if (!info->beta_attribute.empty())
    m.beta = a.attr_float(std::string(info->beta_attribute), info->beta_default);
  return m;
}

/// v·(Clip(v + 3, 0, 6) / 6) or (v·Clip(v + 3, 0, 6)) / 6: `v` read by
/// exactly an Add and a Mul.
std::optional<EpilogueActivation> decomposed_hard_swish(const FusionScope& s,
                                                        const std::string& v) {
  if (s.uses.graph_outputs.count(v)) return std::nullopt;
  auto it = s.uses.readers.find(v);
  if (it == s.uses.readers.end() || it->second.size() != 2) return std::nullopt;
  size_t add = it->second[0], mul = it->second[1];
  if (!is_op(s.g.nodes[add], "Add")) std::swap(add, mul);
  const Node& na = s.g.nodes[add];
  const Node& nm = s.g.nodes[mul];
  if (s.claimed.count(add) || s.claimed.count(mul) || !is_op(na, "Add") || !is_op(nm, "Mul"))
    return std::nullopt;
  const auto three = other_input(na, v, true);
  if (!three || !is_constant(s, *three, 3.0)) return std::nullopt;
  const auto c = s.sole(na.outputs[0]);
  if (!c || !is_op(s.g.nodes[*c], "Clip")) return std::nullopt;
  const auto cb = s.clip(s.g.nodes[*c]);
  if (!cb || cb->first != 0.f || cb->second != 6.f) return std::nullopt;
  const std::string& clipped = s.g.nodes[*c].outputs[0];
  const FusedActivationInfo* hs = fused_activation_for_op("HardSwish");
  const auto d = s.sole(clipped);
  if (d && *d == mul && other_input(nm, clipped, true) == std::optional<std::string>(v)) {
    // (v·Clip(v + 3, 0, 6)) / 6.
    const auto d2 = s.sole(nm.outputs[0]);
    if (!d2 || !is_op(s.g.nodes[*d2], "Div") || s.g.nodes[*d2].inputs[0] != nm.outputs[0])
      return std::nullopt;
    if (!is_constant(s, s.g.nodes[*d2].inputs[1], 6.0)) return std::nullopt;
    return EpilogueActivation{
        hs, hs->alpha_default, hs->beta_default, {add, *c, mul, *d2}, s.g.nodes[*d2].outputs[0]};
  }
  // v·(Clip(v + 3, 0, 6) / 6).
  if (!d || !is_op(s.g.nodes[*d], "Div") || s.g.nodes[*d].inputs[0] != clipped) return std::nullopt;
  if (!is_constant(s, s.g.nodes[*d].inputs[1], 6.0)) return std::nullopt;
  const auto m2 = s.sole(s.g.nodes[*d].outputs[0]);
  if (!m2 || *m2 != mul ||
      other_input(nm, s.g.nodes[*d].outputs[0], true) != std::optional<std::string>(v))
    return std::nullopt;
  return EpilogueActivation{
      hs, hs->alpha_default, hs->beta_default, {add, *c, *d, mul}, nm.outputs[0]};
}

/// A float one-element constant that broadcasts against `v` without changing
/// its shape (rank ≤ v's rank, known), as a float.
std::optional<float> scalar_operand(const FusionScope& s, const std::string& c,
                                    const std::string& v) {
  const Tensor* t = s.constant(c);
  const auto r = s.rank(v);
  if (!t || t->dtype() != DType::f32 || t->numel() != 1 || !r || t->rank() > *r)
    return std::nullopt;
  return t->to_f32_vector()[0];
}

}  // namespace

ScalarAffine match_scalar_affine(const FusionScope& scope, const std::string& v) {
  ScalarAffine a;
  a.out = v;
  if (!scope.is_f32(v)) return a;
  for (const char* op : {"Mul", "Add"}) {
    const auto r = scope.sole(a.out);
    if (!r || !is_op(scope.g.nodes[*r], op) || scope.g.nodes[*r].outputs.size() != 1) continue;
    const Node& n = scope.g.nodes[*r];
    const auto o = other_input(n, a.out, true);
    const auto c = o ? scalar_operand(scope, *o, a.out) : std::nullopt;
    if (!c) continue;
    (op[0] == 'M' ? a.scale : a.shift) = *c;
    a.nodes.push_back(*r);
    a.out = n.outputs[0];
  }
  return a;
}

std::optional<EpilogueActivation> match_activation(const FusionScope& scope, const std::string& v) {
  if (const auto r = scope.sole(v)) return single_node(scope, *r, v);
  return decomposed_hard_swish(scope, v);
}

void set_activation(Node& n, const EpilogueActivation& a, std::string_view alpha_attribute,
                    std::string_view beta_attribute) {
  n.set("activation", Attribute::of_string(std::string(a.info->name)));
  n.set(std::string(alpha_attribute), Attribute::of_float(a.alpha));
  n.set(std::string(beta_attribute), Attribute::of_float(a.beta));
}

std::optional<FusionMatch> finish_epilogue(const FusionScope& scope, FusionMatch match, Node fused,
                                           std::string out) {
  // x·s + t before the activation joins only when an activation follows it.
  const ScalarAffine pre = match_scalar_affine(scope, out);
  auto a = pre.nodes.empty() ? std::nullopt : match_activation(scope, pre.out);
  const bool with_pre = a.has_value();
  if (!a) a = match_activation(scope, out);
  if (a) {
    set_activation(fused, *a, "alpha", "beta");
    const ScalarAffine post = match_scalar_affine(scope, a->out);
    const ScalarAffine none;
    const ScalarAffine& p0 = with_pre ? pre : none;
    const float maps[] = {p0.scale, p0.shift, post.scale, post.shift};
    const float identity[] = {1.f, 0.f, 1.f, 0.f};
    for (size_t i = 0; i < 4; ++i)
      if (maps[i] != identity[i])
        fused.set(std::string(kEpilogueAffineAttributes[i]), Attribute::of_float(maps[i]));
    for (const std::vector<size_t>* nodes :
         std::initializer_list<const std::vector<size_t>*>{&p0.nodes, &a->nodes, &post.nodes})
      match.members.insert(match.members.end(), nodes->begin(), nodes->end());
    out = post.out;
  }
  if (match.members.size() < 2) return std::nullopt;
  fused.outputs = {out};
  match.fused = std::move(fused);
  return match;
}

}  // namespace tailor::graph::passes
