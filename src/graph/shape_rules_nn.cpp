// Shape rules of the nn family: MatMul, Gemm, Conv, ConvTranspose, pools,
// BatchNormalization, Resize/Upsample, LSTM.
#include <cmath>

#include "shape_rules.h"
#include "tailor/core/error.h"

namespace tailor::graph::shape_rules {

std::optional<SymShape> matmul_shape(const Info* a, const Info* b, Who who) {
  if (!a || !b || !a->shape || !b->shape || a->shape->size() < 2 || b->shape->size() < 2)
    return std::nullopt;
  Info ba{std::nullopt, SymShape(a->shape->begin(), a->shape->end() - 2), std::nullopt, {}};
  Info bb{std::nullopt, SymShape(b->shape->begin(), b->shape->end() - 2), std::nullopt, {}};
  auto s = bcast({&ba, &bb}, who);
  s->push_back((*a->shape)[a->shape->size() - 2]);
  s->push_back(b->shape->back());
  return s;
}

SymShape gemm_shape(const NodeContext& c) {
  const Info* a = c.in(0);
  const Info* b = c.in(1);
  if (a && b && a->shape && b->shape && a->shape->size() == 2 && b->shape->size() == 2)
    return SymShape{(*a->shape)[c.node.attr_int("transA", 0) ? 1 : 0],
                    (*b->shape)[c.node.attr_int("transB", 0) ? 0 : 1]};
  return unknown_dims(2);  // Gemm's output is always 2-D
}

std::vector<int64_t> kernel_of(const Node& n, const Info* w, size_t rank) {
  std::vector<int64_t> ks = n.attr_ints("kernel_shape", {});
  if (ks.empty() && w && w->shape && w->shape->size() == rank)
    for (size_t d = 2; d < rank; ++d) ks.push_back((*w->shape)[d].value);
  return ks;
}

namespace {

/// ConvTranspose's output size along spatial axis d.
Dim transposed_out(const Node& n, const Dim& in, size_t d, size_t sd, int64_t k, int64_t st,
                   int64_t dil, int64_t pb, int64_t pe) {
  const std::string ap = n.attr_string("auto_pad", "NOTSET");
  const auto op = n.attr_ints("output_padding", std::vector<int64_t>(sd, 0));
  const auto os = n.attr_ints("output_shape", {});
  if (!os.empty()) return Dim::known(os[os.size() - sd + d]);
  if (!in.is_known() || ap != "NOTSET")
    return ap == "SAME_UPPER" || ap == "SAME_LOWER"
               ? (in.is_known() ? Dim::known(in.value * st) : Dim::unknown())
               : Dim::unknown();
  return Dim::known(st * (in.value - 1) + op[d] + dil * (k - 1) + 1 - pb - pe);
}

}  // namespace

SymShape window_shape(const Node& n, const SymShape& xs, Dim channels,
                      const std::vector<int64_t>& ks, bool transposed, Who who) {
  const size_t sd = xs.size() - 2;
  SymShape s{xs[0], std::move(channels)};
  if (ks.size() != sd) {
    for (size_t d = 0; d < sd; ++d) s.push_back(Dim::unknown());
    return s;
  }
  const auto st = n.attr_ints("strides", std::vector<int64_t>(sd, 1));
  const auto dil = n.attr_ints("dilations", std::vector<int64_t>(sd, 1));
  const auto pads = n.attr_ints("pads", std::vector<int64_t>(2 * sd, 0));
  const std::string ap = n.attr_string("auto_pad", "NOTSET");
  if (st.size() != sd || dil.size() != sd || pads.size() != 2 * sd)
    throw Error(who.label(), "strides, dilations or pads do not match the spatial rank");
  for (size_t d = 0; d < sd; ++d) {
    const Dim& in = xs[2 + d];
    if (transposed) {
      s.push_back(transposed_out(n, in, d, sd, ks[d], st[d], dil[d], pads[d], pads[d + sd]));
    } else if (ap == "SAME_UPPER" || ap == "SAME_LOWER") {
      s.push_back(in.is_known() ? Dim::known((in.value + st[d] - 1) / st[d])
                                : (st[d] == 1 ? in : Dim::unknown()));
    } else if (ap == "VALID") {
      s.push_back(window_out(in, ks[d], st[d], dil[d], 0, 0));
    } else {
      s.push_back(window_out(in, ks[d], st[d], dil[d], pads[d], pads[d + sd],
                             n.attr_int("ceil_mode", 0) != 0));
    }
  }
  return s;
}

namespace {

std::vector<Info> matmul(const NodeContext& c) {
  Info o = c.same(0);
  o.shape = matmul_shape(c.in(0), c.in(1), c.who());
  return {o};
}

std::vector<Info> gemm(const NodeContext& c) {
  Info o = c.same(0);
  o.shape = gemm_shape(c);
  return {o};
}

}  // namespace

std::vector<Info> window(const NodeContext& c) {
  const Info* x = c.in(0);
  const Info* w = c.in(1);
  Info o;
  if (x) o.dtype = x->dtype;
  if (!x || !x->shape || x->shape->size() < 3) return {o};
  const SymShape& xs = *x->shape;
  const std::string& op = c.node.op_type;
  const bool conv = op == "Conv", convt = op == "ConvTranspose" || op == "FusedConvTranspose";
  Dim channels = xs[1];
  if (conv || convt) {
    channels = Dim::unknown();
    if (w && w->shape && conv)
      channels = (*w->shape)[0];
    else if (w && w->shape && (*w->shape)[1].is_known())
      channels = Dim::known((*w->shape)[1].value * c.node.attr_int("group", 1));
  }
  const std::vector<int64_t> ks = kernel_of(c.node, conv || convt ? w : nullptr, xs.size());
  o.shape = window_shape(c.node, xs, channels, ks, convt, c.who());
  return {o};
}

namespace {

std::vector<Info> global_pool(const NodeContext& c) {
  Info o = c.same(0);
  if (o.shape)
    for (size_t d = 2; d < o.shape->size(); ++d) (*o.shape)[d] = Dim::known(1);
  return {o};
}

/// Resize (scales input 2, sizes input 3 from opset 11) and Upsample / Resize
/// before 11 (scales input 1): sizes when known, else floor(dim · scale).
std::vector<Info> resize(const NodeContext& c) {
  Info o = c.same(0);
  if (!o.shape) return {o};
  const bool opset10 = c.node.op_type == "Upsample" || c.opset < 11;
  const Info* sizes = opset10 ? nullptr : c.in(3);
  const Info* scales = c.in(opset10 ? 1 : 2);
  if (sizes && sizes->value && sizes->value->size() == o.shape->size()) {
    o.shape = dims_of(*sizes->value);
  } else if (scales && scales->constant.defined() &&
             scales->constant.numel() == static_cast<int64_t>(o.shape->size())) {
    const std::vector<float> sc = scales->constant.to_f32_vector();
    for (size_t d = 0; d < sc.size(); ++d) {
      Dim& x = (*o.shape)[d];
      if (x.is_known())
        x = Dim::known(static_cast<int64_t>(std::floor(static_cast<float>(x.value) * sc[d])));
      else if (sc[d] != 1.0f)
        x = Dim::unknown();
    }
  } else {
    for (size_t d = 2; d < o.shape->size(); ++d) (*o.shape)[d] = Dim::unknown();
  }
  return {o};
}

/// LSTM(X [seq, batch, in]): Y [seq, dirs, batch, hidden], Y_h and Y_c [dirs, batch, hidden].
std::vector<Info> lstm(const NodeContext& c) {
  const Info* x = c.in(0);
  const int64_t h = c.node.attr_int("hidden_size", 0);
  const int64_t dirs = c.node.attr_string("direction", "forward") == "bidirectional" ? 2 : 1;
  std::vector<Info> outs(c.node.outputs.size());
  for (Info& o : outs) o.dtype = x ? x->dtype : std::nullopt;
  if (x && x->shape && x->shape->size() == 3) {
    const Dim seq = (*x->shape)[0], batch = (*x->shape)[1];
    if (!outs.empty()) outs[0].shape = SymShape{seq, Dim::known(dirs), batch, Dim::known(h)};
    for (size_t i = 1; i < outs.size(); ++i)
      outs[i].shape = SymShape{Dim::known(dirs), batch, Dim::known(h)};
  }
  return outs;
}

const RuleEntry kNnRules[] = {
    {"", "MatMul", matmul},
    {"", "Gemm", gemm},
    {"", "Conv", window},
    {"", "ConvTranspose", window},
    {"", "MaxPool", window},
    {"", "AveragePool", window},
    {"", "GlobalAveragePool", global_pool},
    {"", "GlobalMaxPool", global_pool},
    {"", "BatchNormalization", same_as_input},
    {"", "Resize", resize},
    {"", "Upsample", resize},
    {"", "LSTM", lstm},
};

}  // namespace

std::span<const RuleEntry> nn_rules() {
  return kNnRules;
}

}  // namespace tailor::graph::shape_rules
