// Shape rules of the reduce family: Reduce* (axes from the attribute, or from
// input 1 from opset 13 for ReduceSum and 18 for the others), ArgMax/ArgMin,
// Softmax and LogSoftmax.
#include "shape_rules.h"

namespace tailor::graph::shape_rules {
namespace {

/// x's shape with the `red` axes removed, or kept as 1 when keepdims.
SymShape reduced(const SymShape& x, const std::vector<bool>& red, bool keepdims) {
  SymShape s;
  for (size_t d = 0; d < x.size(); ++d) {
    if (!red[d])
      s.push_back(x[d]);
    else if (keepdims)
      s.push_back(Dim::known(1));
  }
  return s;
}

std::vector<Info> reduce(const NodeContext& c) {
  const Info* x = c.in(0);
  Info o = c.same(0);
  const bool keepdims = c.node.attr_int("keepdims", 1) != 0;
  std::vector<int64_t> axes = c.node.attr_ints("axes", {});
  const bool from_input = c.node.op_type == "ReduceSum" ? c.opset >= 13 : c.opset >= 18;
  if (from_input && c.node.inputs.size() > 1) {
    auto v = numbers(c.in(1));
    if (!v) {  // axes unknown: the rank is kept with keepdims
      if (!keepdims || !o.shape) return {Info{o.dtype, std::nullopt, std::nullopt, {}}};
      o.shape = unknown_dims(o.shape->size());
      return {o};
    }
    axes = *v;
  }
  if (x && x->shape) {
    const int64_t r = static_cast<int64_t>(x->shape->size());
    std::vector<bool> red(static_cast<size_t>(r), axes.empty());
    for (int64_t a : axes) red[static_cast<size_t>(norm_axis(a, r, c.who()))] = true;
    o.shape = reduced(*x->shape, red, keepdims);
  }
  return {o};
}

/// ArgMax/ArgMin: i64 indices along `axis`, kept as 1 when keepdims.
std::vector<Info> arg_extreme(const NodeContext& c) {
  Info o = c.same(0, DType::i64);
  if (o.shape) {
    const int64_t r = static_cast<int64_t>(o.shape->size());
    std::vector<bool> red(static_cast<size_t>(r), false);
    red[static_cast<size_t>(norm_axis(c.node.attr_int("axis", 0), r, c.who()))] = true;
    o.shape = reduced(*o.shape, red, c.node.attr_int("keepdims", 1) != 0);
  }
  return {o};
}

const RuleEntry kReduceRules[] = {
    {"", "ReduceMean", reduce},     {"", "ReduceSum", reduce},
    {"", "ReduceMax", reduce},      {"", "ReduceMin", reduce},
    {"", "ReduceProd", reduce},     {"", "ReduceSumSquare", reduce},
    {"", "ReduceL1", reduce},       {"", "ReduceL2", reduce},
    {"", "ReduceLogSum", reduce},   {"", "ReduceLogSumExp", reduce},
    {"", "ArgMax", arg_extreme},    {"", "ArgMin", arg_extreme},
    {"", "Softmax", same_as_input}, {"", "LogSoftmax", same_as_input},
};

}  // namespace

std::span<const RuleEntry> reduce_rules() {
  return kReduceRules;
}

}  // namespace tailor::graph::shape_rules
