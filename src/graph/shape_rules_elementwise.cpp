// Shape rules of the elementwise family: unary ops (the input's type),
// binary arithmetic and comparisons (numpy broadcasting), Where, Cast,
// Identity and Dropout. Small int shapes are tracked through Add/Sub/Mul/Div
// and Cast so shape computations stay known element by element.
#include <algorithm>

#include "shape_rules.h"

namespace tailor::graph::shape_rules {
namespace {

std::vector<Info> logical_not(const NodeContext& c) {
  return {c.same(0, DType::boolean)};
}

std::vector<Info> identity(const NodeContext& c) {
  Info o = c.in(0) ? *c.in(0) : Info{};
  o.constant = Tensor();
  if (c.node.outputs.size() > 1) return {o, c.same(0, DType::boolean)};  // Dropout's mask
  return {o};
}

/// One element of an integer Add/Sub/Mul/Div of tracked values; nullopt on a
/// division by zero.
std::optional<Dim> arith_elem(const std::string& op, const Dim& p, const Dim& q) {
  if (!is_number(p) || !is_number(q)) {
    // x·1, x+0, x/1 keep a symbol.
    if (is_number(q) && ((op == "Mul" || op == "Div") ? q.value == 1 : q.value == 0)) return p;
    if (is_number(p) && ((op == "Mul" && p.value == 1) || (op == "Add" && p.value == 0))) return q;
    return unknown_elem();
  }
  if (op == "Add") return raw(p.value + q.value);
  if (op == "Sub") return raw(p.value - q.value);
  if (op == "Mul") return raw(p.value * q.value);
  if (q.value != 0) return raw(p.value / q.value);
  return std::nullopt;
}

std::optional<std::vector<Dim>> arith_values(const std::string& op, const Info& a, const Info& b) {
  if (!a.value || !b.value) return std::nullopt;
  const auto& x = *a.value;
  const auto& y = *b.value;
  if (x.size() != y.size() && x.size() != 1 && y.size() != 1) return std::nullopt;
  std::vector<Dim> out;
  const size_t n = std::max(x.size(), y.size());
  for (size_t i = 0; i < n; ++i) {
    auto e = arith_elem(op, x[x.size() == 1 ? 0 : i], y[y.size() == 1 ? 0 : i]);
    if (!e) return std::nullopt;
    out.push_back(*e);
  }
  return out;
}

std::vector<const Info*> all_inputs(const NodeContext& c) {
  std::vector<const Info*> ins;
  for (size_t i = 0; i < c.node.inputs.size(); ++i) ins.push_back(c.in(i));
  return ins;
}

/// Broadcast shape; the type of input `ti`.
Info broadcast(const NodeContext& c, size_t ti) {
  const std::vector<const Info*> ins = all_inputs(c);
  Info o;
  o.shape = bcast(ins, c.who());
  o.dtype = ins.size() > ti && ins[ti] ? ins[ti]->dtype : std::nullopt;
  return o;
}

std::vector<Info> arithmetic(const NodeContext& c) {
  Info o = broadcast(c, 0);
  const std::string& op = c.node.op_type;
  const Info* a = c.in(0);
  const Info* b = c.in(1);
  if (c.node.inputs.size() == 2 && (op == "Add" || op == "Sub" || op == "Mul" || op == "Div") &&
      a && b)
    o.value = arith_values(op, *a, *b);
  return {o};
}

std::vector<Info> comparison(const NodeContext& c) {
  Info o = broadcast(c, 0);
  o.dtype = DType::boolean;
  return {o};
}

std::vector<Info> where(const NodeContext& c) {
  return {broadcast(c, 1)};
}

std::vector<Info> cast(const NodeContext& c) {
  static const std::pair<int64_t, DType> map[] = {
      {1, DType::f32},  {2, DType::u8},   {3, DType::i8},   {4, DType::u16},
      {5, DType::i16},  {6, DType::i32},  {7, DType::i64},  {9, DType::boolean},
      {10, DType::f16}, {11, DType::f64}, {16, DType::bf16}};
  std::optional<DType> dt;
  for (const auto& [k, v] : map)
    if (k == c.node.attr_int("to", 0)) dt = v;
  Info o = c.same(0, dt);
  if (const Info* x = c.in(0); x && (dt == DType::i64 || dt == DType::i32) &&
                               (x->dtype == DType::i64 || x->dtype == DType::i32))
    o.value = x->value;
  return {o};
}

const RuleEntry kElementwiseRules[] = {
    {"", "Relu", same_as_input},
    {"", "Sigmoid", same_as_input},
    {"", "HardSigmoid", same_as_input},
    {"", "HardSwish", same_as_input},
    {"", "Clip", same_as_input},
    {"", "LeakyRelu", same_as_input},
    {"", "Elu", same_as_input},
    {"", "Tanh", same_as_input},
    {"", "Exp", same_as_input},
    {"", "Log", same_as_input},
    {"", "Sqrt", same_as_input},
    {"", "Neg", same_as_input},
    {"", "Abs", same_as_input},
    {"", "Erf", same_as_input},
    {"", "Floor", same_as_input},
    {"", "Ceil", same_as_input},
    {"", "Round", same_as_input},
    {"", "Reciprocal", same_as_input},
    {"", "Softplus", same_as_input},
    {"", "Sin", same_as_input},
    {"", "Cos", same_as_input},
    {"", "Not", logical_not},
    {"", "Identity", identity},
    {"", "Dropout", identity},
    {"", "Add", arithmetic},
    {"", "Sub", arithmetic},
    {"", "Mul", arithmetic},
    {"", "Div", arithmetic},
    {"", "Pow", arithmetic},
    {"", "Max", arithmetic},
    {"", "Min", arithmetic},
    {"", "Sum", arithmetic},
    {"", "Mean", arithmetic},
    {"", "Mod", arithmetic},
    {"", "Equal", comparison},
    {"", "Less", comparison},
    {"", "Greater", comparison},
    {"", "LessOrEqual", comparison},
    {"", "GreaterOrEqual", comparison},
    {"", "And", comparison},
    {"", "Or", comparison},
    {"", "Xor", comparison},
    {"", "Where", where},
    {"", "Cast", cast},
};

}  // namespace

std::span<const RuleEntry> elementwise_rules() {
  return kElementwiseRules;
}

}  // namespace tailor::graph::shape_rules
