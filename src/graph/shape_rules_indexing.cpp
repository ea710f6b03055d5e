// Shape rules of the indexing family: Gather, Slice, Concat, Split, Pad,
// Tile. Gather, Slice and Concat of tracked shape values are tracked too.
#include <algorithm>
#include <limits>

#include "shape_rules.h"
#include "tailor/core/error.h"

namespace tailor::graph::shape_rules {
namespace {

std::vector<Info> gather(const NodeContext& c) {
  const Info* data = c.in(0);
  const Info* idx = c.in(1);
  Info o;
  if (data) o.dtype = data->dtype;
  if (!data || !data->shape || !idx || !idx->shape) return {o};
  const int64_t r = static_cast<int64_t>(data->shape->size());
  const int64_t axis = norm_axis(c.node.attr_int("axis", 0), r, c.who());
  SymShape s(data->shape->begin(), data->shape->begin() + axis);
  s.insert(s.end(), idx->shape->begin(), idx->shape->end());
  s.insert(s.end(), data->shape->begin() + axis + 1, data->shape->end());
  o.shape = s;
  if (data->value && r == 1) {
    if (auto iv = numbers(idx)) {
      std::vector<Dim> v;
      const int64_t len = static_cast<int64_t>(data->value->size());
      for (int64_t i : *iv) {
        if (i < 0) i += len;
        if (i < 0 || i >= len) return {o};
        v.push_back((*data->value)[static_cast<size_t>(i)]);
      }
      o.value = v;
    }
  }
  return {o};
}

/// starts, ends, axes, steps of a Slice (attributes before opset 10, inputs
/// from 10); a member is nullopt when not constant.
struct SliceArgs {
  std::optional<std::vector<int64_t>> starts, ends, axes, steps;
};

SliceArgs slice_args(const NodeContext& c) {
  SliceArgs a;
  const Node& n = c.node;
  if (c.opset < 10) {
    a.starts = n.attr_ints("starts", {});
    a.ends = n.attr_ints("ends", {});
    a.axes = n.attr_ints("axes", {});
    return a;
  }
  auto optional_input = [&](size_t i) {
    return n.inputs.size() > i && !n.inputs[i].empty() ? numbers(c.in(i))
                                                       : std::optional(std::vector<int64_t>{});
  };
  a.starts = numbers(c.in(1));
  a.ends = numbers(c.in(2));
  a.axes = optional_input(3);
  a.steps = optional_input(4);
  return a;
}

/// Elements a slice [b, e) with step st keeps of a dim of `dim` elements; b is
/// clamped in place (the first element kept).
int64_t slice_count(int64_t& b, int64_t e, int64_t st, int64_t dim) {
  if (b < 0) b += dim;
  if (e < 0) e += dim;
  if (st > 0) {
    b = std::clamp<int64_t>(b, 0, dim);
    e = std::clamp<int64_t>(e, 0, dim);
    return e > b ? (e - b - 1) / st + 1 : 0;  // no overflow for st near 2^63
  }
  b = std::clamp<int64_t>(b, 0, dim - 1);
  e = std::clamp<int64_t>(e, -1, dim - 1);
  const uint64_t back = 0 - static_cast<uint64_t>(st);  // |INT64_MIN| fits uint64
  return b > e ? static_cast<int64_t>(static_cast<uint64_t>(b - e - 1) / back) + 1 : 0;
}

std::vector<Info> slice(const NodeContext& c) {
  const Who who = c.who();
  const Info* x = c.in(0);
  Info o;
  if (x) o.dtype = x->dtype;
  if (!x || !x->shape) return {o};
  SliceArgs a = slice_args(c);
  SymShape s = *x->shape;
  const int64_t r = static_cast<int64_t>(s.size());
  if (!a.starts || !a.ends || !a.axes || (a.steps == std::nullopt && c.opset >= 10)) {
    o.shape = unknown_dims(s.size());
    return {o};
  }
  const size_t count = a.starts->size();
  if (a.axes->empty())
    for (size_t i = 0; i < count; ++i) a.axes->push_back(static_cast<int64_t>(i));
  if (!a.steps || a.steps->empty()) a.steps = std::vector<int64_t>(count, 1);
  if (a.axes->size() != count || a.ends->size() != count || a.steps->size() != count)
    throw Error(who.label(), "starts, ends, axes and steps differ in length");
  std::vector<std::pair<int64_t, int64_t>> ranges;  // for the value
  for (size_t i = 0; i < count; ++i) {
    Dim& d = s[static_cast<size_t>(norm_axis((*a.axes)[i], r, who))];
    const int64_t st = (*a.steps)[i];
    if (st == 0) throw Error(who.label(), "step is 0");  // it divided by zero (SIGFPE)
    int64_t b = (*a.starts)[i];
    const int64_t e = (*a.ends)[i];
    if (!d.is_known()) {
      if (st == 1 && b == 0 && e >= std::numeric_limits<int32_t>::max()) continue;  // whole axis
      d = Dim::unknown();
      continue;
    }
    d = Dim::known(slice_count(b, e, st, d.value));
    if (r == 1 && st == 1) ranges.emplace_back(b, d.value);
  }
  o.shape = s;
  if (x->value && r == 1 && ranges.size() == 1)
    o.value = std::vector<Dim>(x->value->begin() + ranges[0].first,
                               x->value->begin() + ranges[0].first + ranges[0].second);
  return {o};
}

std::vector<Info> concat(const NodeContext& c) {
  const Who who = c.who();
  Info o;
  std::vector<const Info*> ins;
  for (size_t i = 0; i < c.node.inputs.size(); ++i) ins.push_back(c.in(i));
  if (ins.empty() || !ins[0]) return {o};
  o.dtype = ins[0]->dtype;
  if (!ins[0]->shape) return {o};
  const int64_t r = static_cast<int64_t>(ins[0]->shape->size());
  const int64_t axis = norm_axis(c.node.attr_int("axis", 0), r, who);
  SymShape s = *ins[0]->shape;
  bool all_values = true, known = true;
  std::vector<Dim> values;
  int64_t total = 0;
  for (const Info* i : ins) {
    if (!i || !i->shape) {  // the rank is input 0's, the axis dim unknown
      s[static_cast<size_t>(axis)] = Dim::unknown();
      o.shape = s;
      return {o};
    }
    if (static_cast<int64_t>(i->shape->size()) != r)
      throw Error(who.label(), "inputs differ in rank");
    const Dim& d = (*i->shape)[static_cast<size_t>(axis)];
    if (d.is_known())
      total += d.value;
    else
      known = false;
    if (!i->value)
      all_values = false;
    else
      values.insert(values.end(), i->value->begin(), i->value->end());
  }
  s[static_cast<size_t>(axis)] = known ? Dim::known(total) : Dim::unknown();
  o.shape = s;
  if (all_values && r == 1) o.value = values;
  return {o};
}

std::vector<Info> split(const NodeContext& c) {
  const Info* x = c.in(0);
  std::vector<Info> outs(c.node.outputs.size(), c.same(0));
  if (!x || !x->shape) return outs;
  const int64_t axis =
      norm_axis(c.node.attr_int("axis", 0), static_cast<int64_t>(x->shape->size()), c.who());
  std::vector<int64_t> parts = c.node.attr_ints("split", {});
  if (c.opset >= 13 && c.node.inputs.size() > 1)
    parts = numbers(c.in(1)).value_or(std::vector<int64_t>{});
  const Dim& d = (*x->shape)[static_cast<size_t>(axis)];
  const int64_t n = static_cast<int64_t>(outs.size());
  for (size_t i = 0; i < outs.size(); ++i) {
    Dim part = Dim::unknown();
    if (parts.size() == outs.size())
      part = Dim::known(parts[i]);
    else if (parts.empty() && d.is_known() && d.value % n == 0)
      part = Dim::known(d.value / n);
    (*outs[i].shape)[static_cast<size_t>(axis)] = part;
  }
  return outs;
}

std::vector<Info> pad(const NodeContext& c) {
  Info o = c.same(0);
  std::optional<std::vector<int64_t>> pads =
      c.opset >= 11 ? numbers(c.in(1)) : std::optional(c.node.attr_ints("pads", {}));
  if (o.shape && pads && pads->size() == 2 * o.shape->size() && c.node.inputs.size() < 4) {
    const size_t r = o.shape->size();
    for (size_t d = 0; d < r; ++d) {
      Dim& x = (*o.shape)[d];
      if (x.is_known())
        x = Dim::known(x.value + (*pads)[d] + (*pads)[d + r]);
      else if ((*pads)[d] != 0 || (*pads)[d + r] != 0)
        x = Dim::unknown();
    }
  } else if (o.shape) {
    for (Dim& x : *o.shape) x = Dim::unknown();
  }
  return {o};
}

/// Tile(X, repeats): dim d times repeats[d] (a symbol kept when repeated once).
std::vector<Info> tile(const NodeContext& c) {
  Info o = c.same(0);
  if (!o.shape) return {o};
  const auto reps = numbers(c.in(1));
  if (!reps || reps->size() != o.shape->size()) {
    o.shape = unknown_dims(o.shape->size());
    return {o};
  }
  for (size_t d = 0; d < reps->size(); ++d) {
    Dim& x = (*o.shape)[d];
    if ((*reps)[d] < 0) throw Error(c.who().label(), "repeats must be non-negative");
    if (x.is_known())
      x = Dim::known(x.value * (*reps)[d]);
    else if ((*reps)[d] != 1)
      x = (*reps)[d] == 0 ? Dim::known(0) : Dim::unknown();
  }
  return {o};
}

const RuleEntry kIndexingRules[] = {
    {"", "Gather", gather}, {"", "Slice", slice}, {"", "Concat", concat},
    {"", "Split", split},   {"", "Pad", pad},     {"", "Tile", tile},
};

}  // namespace

std::span<const RuleEntry> indexing_rules() {
  return kIndexingRules;
}

}  // namespace tailor::graph::shape_rules
