#include "fuse_squeeze_excite.h"

#include "epilogue_activation.h"

namespace tailor::graph::passes {
namespace {

/// True when every value of the ints attribute `name` of `n` is `v` (or it is absent).
bool all_ints(const Node& n, const char* name, int64_t v) {
  for (int64_t x : n.attr_ints(name, {}))
    if (x != v) return false;
  return true;
}

/// The 1×1 conv that is the only reader of `v` (and reads it as its input):
/// unit strides and dilations, no padding, one group, a constant f32 weight
/// [c_out, c_in, 1, 1] and an optional constant f32 bias [c_out]; nullopt
/// otherwise.
std::optional<size_t> pointwise_conv(const FusionScope& s, const std::string& v) {
  const auto r = s.sole(v);
  if (!r) return std::nullopt;
  const Node& n = s.g.nodes[*r];
  if (!is_op(n, "Conv") || n.inputs.size() < 2 || n.inputs[0] != v || n.outputs.size() != 1)
    return std::nullopt;
  const Tensor* w = s.constant(n.inputs[1]);
  if (!w || w->dtype() != DType::f32 || w->rank() != 4 || w->dim(2) != 1 || w->dim(3) != 1)
    return std::nullopt;
  if (n.inputs.size() > 2 && !n.inputs[2].empty()) {
    const Tensor* b = s.constant(n.inputs[2]);
    if (!b || b->dtype() != DType::f32 || b->numel() != w->dim(0)) return std::nullopt;
  }
  const std::string pad = n.attr_string("auto_pad", "NOTSET");
  if ((pad != "NOTSET" && pad != "VALID") || n.attr_int("group", 1) != 1 ||
      !all_ints(n, "strides", 1) || !all_ints(n, "dilations", 1) || !all_ints(n, "pads", 0) ||
      !all_ints(n, "kernel_shape", 1))
    return std::nullopt;
  return r;
}

}  // namespace

std::optional<FusionMatch> match_squeeze_excite(const FusionScope& scope, size_t pool) {
  const FusionScope& s = scope;
  const Node& gap = s.g.nodes[pool];
  if (!is_op(gap, "GlobalAveragePool") || gap.inputs.size() != 1 || gap.outputs.size() != 1)
    return std::nullopt;
  const std::string& x = gap.inputs[0];
  if (!s.is_f32(x) || s.rank(x) != size_t{4}) return std::nullopt;
  const auto c1 = pointwise_conv(s, gap.outputs[0]);
  if (!c1) return std::nullopt;
  const Node& conv1 = s.g.nodes[*c1];
  const auto act = match_activation(s, conv1.outputs[0]);
  const auto c2 = pointwise_conv(s, act ? act->out : conv1.outputs[0]);
  if (!c2) return std::nullopt;
  const Node& conv2 = s.g.nodes[*c2];
  const auto gate = match_activation(s, conv2.outputs[0]);
  if (!gate) return std::nullopt;
  const auto mul = s.sole(gate->out);
  if (!mul || !is_op(s.g.nodes[*mul], "Mul") || s.g.nodes[*mul].outputs.size() != 1 ||
      other_input(s.g.nodes[*mul], gate->out, true) != x)
    return std::nullopt;
  // W1 [m, C, 1, 1] and W2 [C, m, 1, 1]: the gate has x's channels.
  const Tensor* w1 = s.constant(conv1.inputs[1]);
  const Tensor* w2 = s.constant(conv2.inputs[1]);
  if (w2->dim(1) != w1->dim(0) || w2->dim(0) != w1->dim(1)) return std::nullopt;
  FusionMatch m;
  m.kind = "squeeze_excite";
  m.members = {pool, *c1};
  if (act) m.members.insert(m.members.end(), act->nodes.begin(), act->nodes.end());
  m.members.push_back(*c2);
  m.members.insert(m.members.end(), gate->nodes.begin(), gate->nodes.end());
  m.members.push_back(*mul);
  const auto bias = [](const Node& c) { return c.inputs.size() > 2 ? c.inputs[2] : std::string(); };
  m.fused = make_node("SqueezeExcite", "",
                      {x, conv1.inputs[1], bias(conv1), conv2.inputs[1], bias(conv2)},
                      {s.g.nodes[*mul].outputs[0]}, "ai.tailor");
  if (act) set_activation(m.fused, *act, "alpha", "beta");
  // The gate under its own names (set_activation writes `activation`).
  m.fused.set("gate", Attribute::of_string(std::string(gate->info->name)));
  m.fused.set("gate_alpha", Attribute::of_float(gate->alpha));
  m.fused.set("gate_beta", Attribute::of_float(gate->beta));
  return m;
}

}  // namespace tailor::graph::passes
