// Shape rules of the shape family: Constant, Shape, Size, Reshape, Flatten,
// Transpose, Squeeze, Unsqueeze, ConstantOfShape, Expand, Range. Shape and
// what these ops make of it are tracked element by element (symbols
// included), so a Reshape target computed from a symbolic batch keeps it.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "shape_rules.h"
#include "tailor/core/error.h"

namespace tailor::graph::shape_rules {
namespace {

std::vector<Info> constant(const NodeContext& c) {
  const Node& n = c.node;
  if (const Attribute* a = n.find("value"); a && a->kind == Attribute::Kind::t)
    return {info_of_tensor(a->t)};
  if (const Attribute* a = n.find("value_ints")) {
    Tensor t = Tensor::zeros(DType::i64, {static_cast<int64_t>(a->ints.size())});
    if (!a->ints.empty()) std::memcpy(t.mutable_raw(), a->ints.data(), a->ints.size() * 8);
    return {info_of_tensor(t)};
  }
  if (const Attribute* a = n.find("value_int")) {
    Tensor t = Tensor::zeros(DType::i64, {});
    *t.mutable_data<int64_t>() = a->i;
    return {info_of_tensor(t)};
  }
  if (const Attribute* a = n.find("value_float"))
    return {info_of_tensor(Tensor::from_f32({}, std::span<const float>(&a->f, 1)))};
  if (const Attribute* a = n.find("value_floats"))
    return {info_of_tensor(Tensor::from_f32({static_cast<int64_t>(a->floats.size())}, a->floats))};
  return {};
}

std::vector<Info> shape(const NodeContext& c) {
  const Info* x = c.in(0);
  Info o;
  o.dtype = DType::i64;
  o.shape = unknown_dims(1);  // always a 1-D tensor
  if (x && x->shape) {
    const int64_t r = static_cast<int64_t>(x->shape->size());
    int64_t a = c.node.attr_int("start", 0);
    int64_t b = c.node.find("end") ? c.node.attr_int("end", r) : r;
    if (a < 0) a += r;
    if (b < 0) b += r;
    a = std::clamp<int64_t>(a, 0, r);
    b = std::clamp<int64_t>(b, a, r);
    o.value = std::vector<Dim>();
    for (int64_t d = a; d < b; ++d)
      o.value->push_back(elem_of_dim((*x->shape)[static_cast<size_t>(d)]));
    o.shape = SymShape{Dim::known(b - a)};
  }
  return {o};
}

std::vector<Info> size(const NodeContext&) {
  Info o;
  o.dtype = DType::i64;
  o.shape = SymShape{};
  return {o};
}

std::vector<Info> flatten(const NodeContext& c) {
  const Info* x = c.in(0);
  Info o = c.same(0);
  o.shape = unknown_dims(2);  // always 2-D
  if (x && x->shape) {
    const int64_t r = static_cast<int64_t>(x->shape->size());
    const int64_t axis = norm_axis(c.node.attr_int("axis", 1), r + 1, c.who());
    o.shape = SymShape{product(*x->shape, 0, axis), product(*x->shape, axis, r)};
  }
  return {o};
}

std::vector<Info> transpose(const NodeContext& c) {
  const Info* x = c.in(0);
  Info o = c.same(0);
  if (x && x->shape) {
    const size_t r = x->shape->size();
    std::vector<int64_t> perm = c.node.attr_ints("perm", {});
    if (perm.empty())
      for (size_t i = 0; i < r; ++i) perm.push_back(static_cast<int64_t>(r - 1 - i));
    if (perm.size() != r) throw Error(c.who().label(), "perm length differs from the input rank");
    SymShape s;
    for (int64_t p : perm) s.push_back((*x->shape).at(static_cast<size_t>(p)));
    o.shape = s;
  }
  return {o};
}

SymShape unsqueezed(const SymShape& s, const std::vector<int64_t>& axes, Who who) {
  const int64_t r = static_cast<int64_t>(s.size() + axes.size());
  std::vector<bool> ins(static_cast<size_t>(r), false);
  for (int64_t a : axes) ins[static_cast<size_t>(norm_axis(a, r, who))] = true;
  SymShape out;
  size_t k = 0;
  for (int64_t d = 0; d < r; ++d)
    out.push_back(ins[static_cast<size_t>(d)] ? Dim::known(1) : s[k++]);
  return out;
}

/// The squeezed shape; nullopt when `axes` is empty and a dim that might be 1 is unknown.
std::optional<SymShape> squeezed(const SymShape& s, const std::vector<int64_t>& axes, Who who) {
  const int64_t r = static_cast<int64_t>(s.size());
  std::vector<bool> drop(static_cast<size_t>(r), false);
  if (axes.empty()) {
    for (int64_t d = 0; d < r; ++d) {
      if (!s[static_cast<size_t>(d)].is_known()) return std::nullopt;  // might be 1
      drop[static_cast<size_t>(d)] = s[static_cast<size_t>(d)].value == 1;
    }
  }
  for (int64_t a : axes) drop[static_cast<size_t>(norm_axis(a, r, who))] = true;
  SymShape out;
  for (int64_t d = 0; d < r; ++d)
    if (!drop[static_cast<size_t>(d)]) out.push_back(s[static_cast<size_t>(d)]);
  return out;
}

std::vector<Info> squeeze_or_unsqueeze(const NodeContext& c) {
  const Info* x = c.in(0);
  Info o;
  if (x) {
    o.dtype = x->dtype;
    o.value = x->value;
  }
  std::optional<std::vector<int64_t>> axes = c.node.attr_ints("axes", {});
  if (c.opset >= 13)
    axes = c.node.inputs.size() > 1 ? numbers(c.in(1)) : std::optional(std::vector<int64_t>{});
  if (!x || !x->shape || !axes) return {o};
  if (c.node.op_type == "Unsqueeze")
    o.shape = unsqueezed(*x->shape, *axes, c.who());
  else
    o.shape = squeezed(*x->shape, *axes, c.who());
  return {o};
}

/// Reshape's inferred (-1) dim: numel / product of the others when both are
/// known, or the one input dim left after cancelling equal symbols.
Dim inferred_dim(const SymShape& in, const SymShape& target, size_t infer) {
  std::vector<Dim> num(in.begin(), in.end());
  std::vector<Dim> den;
  for (size_t i = 0; i < target.size(); ++i)
    if (i != infer) den.push_back(target[i]);
  for (auto it = den.begin(); it != den.end();) {
    auto f = it->is_symbolic() ? std::find(num.begin(), num.end(), *it) : num.end();
    if (f != num.end()) {
      num.erase(f);
      it = den.erase(it);
    } else {
      ++it;
    }
  }
  int64_t pn = 1, pd = 1;
  std::vector<Dim> sym;
  for (const Dim& d : num) {
    if (d.is_known())
      pn *= d.value;
    else
      sym.push_back(d);
  }
  for (const Dim& d : den) {
    if (!d.is_known()) return Dim::unknown();
    pd *= d.value;
  }
  if (sym.empty() && pd > 0 && pn % pd == 0) return Dim::known(pn / pd);
  if (sym.size() == 1 && pn == pd) return sym[0];
  return Dim::unknown();
}

std::vector<Info> reshape(const NodeContext& c) {
  const Info* x = c.in(0);
  const Info* t = c.in(1);
  Info o;
  if (x) o.dtype = x->dtype;
  if (!t || !t->value) {
    if (t && t->shape && t->shape->size() == 1 && (*t->shape)[0].is_known())
      o.shape = unknown_dims(static_cast<size_t>((*t->shape)[0].value));
    return {o};
  }
  const bool allowzero = c.node.attr_int("allowzero", 0) != 0;
  SymShape s;
  int infer = -1;
  for (size_t i = 0; i < t->value->size(); ++i) {
    Dim d = (*t->value)[i];
    if (is_number(d) && d.value == 0 && !allowzero) {
      d = x && x->shape && i < x->shape->size() ? (*x->shape)[i] : Dim::unknown();
    } else if (is_number(d) && d.value == -1) {
      infer = static_cast<int>(i);
      d = Dim::unknown();
    } else {
      d = dim_of_elem(d);
    }
    s.push_back(d);
  }
  if (infer >= 0 && x && x->shape)
    s[static_cast<size_t>(infer)] = inferred_dim(*x->shape, s, static_cast<size_t>(infer));
  o.shape = s;
  if (x && x->value) o.value = x->value;
  return {o};
}

std::vector<Info> constant_of_shape(const NodeContext& c) {
  Info o;
  o.dtype = DType::f32;
  if (const Attribute* a = c.node.find("value"); a && a->kind == Attribute::Kind::t)
    o.dtype = a->t.dtype();
  if (const Info* s = c.in(0); s && s->value) o.shape = dims_of(*s->value);
  return {o};
}

std::vector<Info> expand(const NodeContext& c) {
  const Info* x = c.in(0);
  const Info* s = c.in(1);
  Info o = c.same(0);
  o.shape.reset();
  if (x && s && s->value) {
    Info t{std::nullopt, dims_of(*s->value), std::nullopt, {}};
    o.shape = bcast({x, &t}, c.who());
  }
  return {o};
}

/// Range(start, limit, delta): 1-D of start's type, max(ceil((limit − start)
/// / delta), 0) elements when the three scalars are constant integers or f32
/// (computed in double, as the runtime does).
std::vector<Info> range(const NodeContext& c) {
  Info o = c.same(0);
  o.shape = unknown_dims(1);
  double v[3];
  for (size_t i = 0; i < 3; ++i) {
    const Info* x = c.in(i);
    if (!x || !x->constant.defined() || x->constant.numel() != 1) return {o};
    if (auto ints = numbers(x))
      v[i] = static_cast<double>((*ints)[0]);
    else if (x->constant.dtype() == DType::f32)
      v[i] = static_cast<double>(x->constant.to_f32_vector()[0]);
    else
      return {o};
  }
  if (v[2] == 0) throw Error(c.who().label(), "delta is 0");
  const double count = std::ceil((v[1] - v[0]) / v[2]);
  if (std::isnan(count) || count >= 0x1p63) return {o};  // the runtime refuses it
  o.shape = SymShape{Dim::known(count > 0 ? static_cast<int64_t>(count) : 0)};
  return {o};
}

const RuleEntry kShapeOpRules[] = {
    {"", "Constant", constant},
    {"", "Shape", shape},
    {"", "Size", size},
    {"", "Flatten", flatten},
    {"", "Transpose", transpose},
    {"", "Squeeze", squeeze_or_unsqueeze},
    {"", "Unsqueeze", squeeze_or_unsqueeze},
    {"", "Reshape", reshape},
    {"", "ConstantOfShape", constant_of_shape},
    {"", "Expand", expand},
    {"", "Range", range},
};

}  // namespace

std::span<const RuleEntry> shape_op_rules() {
  return kShapeOpRules;
}

}  // namespace tailor::graph::shape_rules
