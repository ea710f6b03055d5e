// Helpers shared by the shape rules, and the registry gathering every
// family's table.
#include "shape_rules.h"

#include <algorithm>

#include "tailor/core/error.h"

namespace tailor::graph::shape_rules {
namespace {

std::optional<std::vector<Dim>> value_of_tensor(const Tensor& t) {
  if ((t.dtype() != DType::i64 && t.dtype() != DType::i32) || t.rank() > 1 ||
      t.numel() > kMaxTracked)
    return std::nullopt;
  std::vector<Dim> v;
  v.reserve(static_cast<size_t>(t.numel()));
  const Tensor c = t.dtype() == DType::i64 ? t.contiguous() : t.to(DType::i64);
  const int64_t* p = c.data<int64_t>();
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(Dim{p[i], {}});
  return v;
}

Dim bcast_dim(const Dim& a, const Dim& b, Who who) {
  if (a.is_known() && a.value == 1) return b;
  if (b.is_known() && b.value == 1) return a;
  if (a == b) return a;
  if (a.is_known() && b.is_known())
    throw Error(who.label(), "dims " + std::to_string(a.value) + " and " + std::to_string(b.value) +
                                 " do not broadcast");
  if (a.is_known()) return a;
  if (b.is_known()) return b;
  return Dim::unknown();
}

/// domain → op_type → rule, from every family table.
using Registry = std::unordered_map<std::string, std::unordered_map<std::string, Rule>>;

Registry build_registry() {
  Registry r;
  for (auto table : {elementwise_rules(), shape_op_rules(), indexing_rules(), nn_rules(),
                     reduce_rules(), control_rules(), tailor_rules()})
    for (const RuleEntry& e : table) {
      auto [it, fresh] = r[e.domain].emplace(e.op_type, e.rule);
      if (!fresh)
        throw Error("shape inference", std::string("two rules for ") + e.domain + ":" + e.op_type);
    }
  return r;
}

}  // namespace

Info info_of_tensor(const Tensor& t) {
  Info i;
  i.dtype = t.dtype();
  i.shape = sym_shape_of(t.shape());
  i.value = value_of_tensor(t);
  i.constant = t;
  return i;
}

Dim elem_of_dim(const Dim& d) {
  if (d.is_known() || d.is_symbolic()) return d;
  return unknown_elem();
}

Dim dim_of_elem(const Dim& e) {
  if (!e.symbol.empty()) return Dim::named(e.symbol);
  if (e.value >= 0) return Dim::known(e.value);
  return Dim::unknown();
}

SymShape dims_of(const std::vector<Dim>& elems) {
  SymShape s;
  for (const Dim& e : elems) s.push_back(dim_of_elem(e));
  return s;
}

std::optional<std::vector<int64_t>> numbers(const Info* i) {
  if (!i || !i->value) return std::nullopt;
  std::vector<int64_t> out;
  for (const Dim& d : *i->value) {
    if (!is_number(d)) return std::nullopt;
    out.push_back(d.value);
  }
  return out;
}

std::optional<SymShape> bcast(const std::vector<const Info*>& ins, Who who) {
  SymShape out;
  for (const Info* i : ins) {
    if (!i || !i->shape) return std::nullopt;
    const SymShape& s = *i->shape;
    if (s.size() > out.size()) out.insert(out.begin(), s.size() - out.size(), Dim::known(1));
    const size_t off = out.size() - s.size();
    for (size_t d = 0; d < s.size(); ++d) out[off + d] = bcast_dim(out[off + d], s[d], who);
  }
  return out;
}

int64_t norm_axis(int64_t a, int64_t r, Who who) {
  if (a < -r || a >= std::max<int64_t>(r, 1))
    throw Error(who.label(), "axis " + std::to_string(a) + " out of range");
  return a < 0 ? a + r : a;
}

Dim product(const SymShape& s, int64_t a, int64_t b) {
  int64_t p = 1;
  for (int64_t d = a; d < b; ++d) {
    if (!s[static_cast<size_t>(d)].is_known()) {
      if (b - a == 1) return s[static_cast<size_t>(d)];
      return Dim::unknown();
    }
    p *= s[static_cast<size_t>(d)].value;
  }
  return Dim::known(p);
}

SymShape unknown_dims(size_t rank) {
  return SymShape(rank, Dim::unknown());
}

Dim window_out(const Dim& in, int64_t k, int64_t s, int64_t d, int64_t pb, int64_t pe,
               bool ceil_mode) {
  if (!in.is_known()) {
    if (k == 1 && s == 1 && pb == 0 && pe == 0) return in;
    return Dim::unknown();
  }
  const int64_t num = in.value + pb + pe - d * (k - 1) - 1;
  const int64_t o = ceil_mode ? (num + s - 1) / s + 1 : num / s + 1;
  return Dim::known(o);
}

const Info* NodeContext::in(size_t i) const {
  if (i >= node.inputs.size() || node.inputs[i].empty()) return nullptr;
  auto it = known_.find(node.inputs[i]);
  return it == known_.end() ? nullptr : &it->second;
}

Info NodeContext::same(size_t i, std::optional<DType> dt) const {
  const Info* x = in(i);
  Info o;
  if (x) {
    o.dtype = dt ? dt : x->dtype;
    o.shape = x->shape;
  } else if (dt) {
    o.dtype = dt;
  }
  return o;
}

std::vector<Info> same_as_input(const NodeContext& c) {
  return {c.same(0)};
}

Rule find_rule(const std::string& domain, const std::string& op_type) {
  static const Registry registry = build_registry();
  auto d = registry.find(domain);
  if (d == registry.end()) return nullptr;
  auto it = d->second.find(op_type);
  return it == d->second.end() ? nullptr : it->second;
}

}  // namespace tailor::graph::shape_rules
