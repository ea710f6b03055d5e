#include "tailor/graph/shape_inference.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <set>
#include <unordered_map>

#include "tailor/core/error.h"
#include "tailor/graph/verify.h"

namespace tailor::graph {
namespace {

/// What is known of a value: its type and, for small int64/int32 tensors of
/// rank ≤ 1 (shapes), its elements as Dims (numbers or symbols).
struct Info {
  std::optional<DType> dtype;
  std::optional<SymShape> shape;
  std::optional<std::vector<Dim>> value;
  /// The tensor itself when it is a constant (initializer or Constant node).
  Tensor constant;
};

constexpr int64_t kMaxTracked = 64;

std::optional<std::vector<Dim>> value_of_tensor(const Tensor& t) {
  if ((t.dtype() != DType::i64 && t.dtype() != DType::i32) || t.rank() > 1 ||
      t.numel() > kMaxTracked)
    return std::nullopt;
  std::vector<Dim> v;
  const Tensor c = t.to(DType::i64);
  const int64_t* p = c.data<int64_t>();
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(Dim{p[i], {}});
  return v;
}

Info info_of_tensor(const Tensor& t) {
  Info i;
  i.dtype = t.dtype();
  i.shape = sym_shape_of(t.shape());
  i.value = value_of_tensor(t);
  i.constant = t;
  return i;
}

/// Elements of tracked values are Dims too: a number (any int64, -1
/// included) with an empty symbol, a symbol, or unknown (kUnknownElem).
constexpr int64_t kUnknownElem = std::numeric_limits<int64_t>::min();
Dim raw(int64_t v) {
  return Dim{v, {}};
}
Dim unknown_elem() {
  return Dim{kUnknownElem, {}};
}
bool is_number(const Dim& d) {
  return d.symbol.empty() && d.value != kUnknownElem;
}
/// A shape dim as a value element.
Dim elem_of_dim(const Dim& d) {
  if (d.is_known() || d.is_symbolic()) return d;
  return unknown_elem();
}
/// A value element as a shape dim (negative numbers and unknowns: unknown).
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
/// Known integer elements of a value (all numbers), or nullopt.
std::optional<std::vector<int64_t>> numbers(const Info* i) {
  if (!i || !i->value) return std::nullopt;
  std::vector<int64_t> out;
  for (const Dim& d : *i->value) {
    if (!is_number(d)) return std::nullopt;
    out.push_back(d.value);
  }
  return out;
}

Dim bcast_dim(const Dim& a, const Dim& b, const std::string& who) {
  if (a.is_known() && a.value == 1) return b;
  if (b.is_known() && b.value == 1) return a;
  if (a == b) return a;
  if (a.is_known() && b.is_known())
    throw Error(who, "dims " + std::to_string(a.value) + " and " + std::to_string(b.value) +
                         " do not broadcast");
  if (a.is_known()) return a;
  if (b.is_known()) return b;
  return Dim::unknown();
}

std::optional<SymShape> bcast(const std::vector<const Info*>& ins, const std::string& who) {
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

int64_t norm_axis(int64_t a, int64_t r, const std::string& who) {
  if (a < -r || a >= std::max<int64_t>(r, 1))
    throw Error(who, "axis " + std::to_string(a) + " out of range");
  return a < 0 ? a + r : a;
}

Dim window_out(const Dim& in, int64_t k, int64_t s, int64_t d, int64_t pb, int64_t pe,
               bool ceil_mode = false) {
  if (!in.is_known()) {
    if (k == 1 && s == 1 && pb == 0 && pe == 0) return in;
    return Dim::unknown();
  }
  const int64_t num = in.value + pb + pe - d * (k - 1) - 1;
  const int64_t o = ceil_mode ? (num + s - 1) / s + 1 : num / s + 1;
  return Dim::known(o);
}

class Inference {
 public:
  explicit Inference(Model& m) : m_(m), g_(m.graph) {}

  void run() {
    for (const auto& in : g_.inputs)
      if (const ValueType* t = g_.type_of(in)) set(in, Info{t->dtype, t->shape, std::nullopt, {}});
    for (const auto& [name, t] : g_.initializers) info_[name] = info_of_tensor(t);
    for (const Node& n : g_.nodes) {
      std::vector<Info> outs = infer(n);
      for (size_t o = 0; o < outs.size() && o < n.outputs.size(); ++o) {
        if (n.outputs[o].empty()) continue;
        set(n.outputs[o], outs[o]);
        record(n.outputs[o], outs[o]);
      }
    }
  }

  const Info* get(const std::string& name) const {
    auto it = info_.find(name);
    return it == info_.end() ? nullptr : &it->second;
  }

 private:
  void set(const std::string& name, Info i) { info_[name] = std::move(i); }

  /// Stores a type when it adds knowledge to the recorded one.
  void record(const std::string& name, const Info& i) {
    if (!i.dtype && !i.shape) return;
    ValueType vt{i.dtype, i.shape};
    auto it = g_.types.find(name);
    if (it == g_.types.end()) {
      g_.types[name] = vt;
      return;
    }
    ValueType& old = it->second;
    if (!old.dtype) old.dtype = vt.dtype;
    if (vt.shape) {
      if (!old.shape || old.shape->size() != vt.shape->size()) {
        old.shape = vt.shape;
      } else {
        for (size_t d = 0; d < vt.shape->size(); ++d)
          if ((*vt.shape)[d].is_known() ||
              (!(*old.shape)[d].is_known() && (*old.shape)[d].symbol.empty()))
            (*old.shape)[d] = (*vt.shape)[d];
      }
    }
  }

  const Info* in(const Node& n, size_t i) const {
    if (i >= n.inputs.size() || n.inputs[i].empty()) return nullptr;
    return get(n.inputs[i]);
  }

  std::vector<Info> infer(const Node& n) {
    const std::string who = n.label();
    const std::string& op = n.op_type;
    if (!n.domain.empty()) return {};
    auto same = [&](size_t i, std::optional<DType> dt = std::nullopt) {
      const Info* x = in(n, i);
      Info o;
      if (x) {
        o.dtype = dt ? dt : x->dtype;
        o.shape = x->shape;
      } else if (dt) {
        o.dtype = dt;
      }
      return o;
    };
    static const std::set<std::string> unary = {"Relu",
                                                "Sigmoid",
                                                "HardSigmoid",
                                                "HardSwish",
                                                "Clip",
                                                "LeakyRelu",
                                                "Elu",
                                                "Tanh",
                                                "Exp",
                                                "Log",
                                                "Sqrt",
                                                "Neg",
                                                "Abs",
                                                "Erf",
                                                "Floor",
                                                "Ceil",
                                                "Round",
                                                "Reciprocal",
                                                "Softplus",
                                                "Not",
                                                "Softmax",
                                                "LogSoftmax",
                                                "BatchNormalization"};
    static const std::set<std::string> arith = {"Add", "Sub", "Mul", "Div",  "Pow",
                                                "Max", "Min", "Sum", "Mean", "Mod"};
    static const std::set<std::string> cmp = {"Equal",          "Less", "Greater", "LessOrEqual",
                                              "GreaterOrEqual", "And",  "Or",      "Xor"};

    if (op == "Constant") {
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
        return {
            info_of_tensor(Tensor::from_f32({static_cast<int64_t>(a->floats.size())}, a->floats))};
      return {};
    }
    if (unary.count(op)) return {same(0)};
    if (op == "Identity" || op == "Dropout") {
      Info o = *(in(n, 0) ? in(n, 0) : &empty_);
      o.constant = Tensor();
      if (n.outputs.size() > 1) return {o, same(0, DType::boolean)};
      return {o};
    }
    if (arith.count(op) || cmp.count(op) || op == "Where") {
      std::vector<const Info*> ins;
      for (size_t i = 0; i < n.inputs.size(); ++i) ins.push_back(in(n, i));
      Info o;
      o.shape = bcast(ins, who);
      const size_t ti = op == "Where" ? 1 : 0;
      o.dtype = cmp.count(op) ? std::optional<DType>(DType::boolean)
                              : (ins.size() > ti && ins[ti] ? ins[ti]->dtype : std::nullopt);
      if (ins.size() == 2 && (op == "Add" || op == "Sub" || op == "Mul" || op == "Div") && ins[0] &&
          ins[1])
        o.value = arith_values(op, *ins[0], *ins[1]);
      return {o};
    }
    if (op == "Cast") {
      static const std::pair<int64_t, DType> map[] = {
          {1, DType::f32},  {2, DType::u8},   {3, DType::i8},   {4, DType::u16},
          {5, DType::i16},  {6, DType::i32},  {7, DType::i64},  {9, DType::boolean},
          {10, DType::f16}, {11, DType::f64}, {16, DType::bf16}};
      std::optional<DType> dt;
      for (const auto& [k, v] : map)
        if (k == n.attr_int("to", 0)) dt = v;
      Info o = same(0, dt);
      if (const Info* x = in(n, 0); x && (dt == DType::i64 || dt == DType::i32) &&
                                    (x->dtype == DType::i64 || x->dtype == DType::i32))
        o.value = x->value;
      return {o};
    }
    if (op == "Shape") {
      const Info* x = in(n, 0);
      Info o;
      o.dtype = DType::i64;
      if (x && x->shape) {
        const int64_t r = static_cast<int64_t>(x->shape->size());
        int64_t a = n.attr_int("start", 0), b = n.find("end") ? n.attr_int("end", r) : r;
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
    if (op == "Size") {
      Info o;
      o.dtype = DType::i64;
      o.shape = SymShape{};
      return {o};
    }
    if (op == "Gather") return {gather(n, who)};
    if (op == "Slice") return {slice(n, who)};
    if (op == "Concat") return {concat(n, who)};
    if (op == "Squeeze" || op == "Unsqueeze") return {squeeze(n, who, op == "Unsqueeze")};
    if (op == "Reshape") return {reshape(n)};
    if (op == "Flatten") {
      const Info* x = in(n, 0);
      Info o = same(0);
      if (x && x->shape) {
        const int64_t r = static_cast<int64_t>(x->shape->size());
        const int64_t axis = norm_axis(n.attr_int("axis", 1), r + 1, who);
        o.shape = SymShape{product(*x->shape, 0, axis), product(*x->shape, axis, r)};
      }
      return {o};
    }
    if (op == "Transpose") {
      const Info* x = in(n, 0);
      Info o = same(0);
      if (x && x->shape) {
        const size_t r = x->shape->size();
        std::vector<int64_t> perm = n.attr_ints("perm", {});
        if (perm.empty())
          for (size_t i = 0; i < r; ++i) perm.push_back(static_cast<int64_t>(r - 1 - i));
        if (perm.size() != r) throw Error(who, "perm length differs from the input rank");
        SymShape s;
        for (int64_t p : perm) s.push_back((*x->shape).at(static_cast<size_t>(p)));
        o.shape = s;
      }
      return {o};
    }
    if (op == "MatMul") {
      const Info* a = in(n, 0);
      const Info* b = in(n, 1);
      Info o = same(0);
      o.shape.reset();
      if (a && b && a->shape && b->shape && a->shape->size() >= 2 && b->shape->size() >= 2) {
        Info ba{std::nullopt, SymShape(a->shape->begin(), a->shape->end() - 2), std::nullopt, {}};
        Info bb{std::nullopt, SymShape(b->shape->begin(), b->shape->end() - 2), std::nullopt, {}};
        auto s = bcast({&ba, &bb}, who);
        s->push_back((*a->shape)[a->shape->size() - 2]);
        s->push_back(b->shape->back());
        o.shape = s;
      }
      return {o};
    }
    if (op == "Gemm") {
      const Info* a = in(n, 0);
      const Info* b = in(n, 1);
      Info o = same(0);
      o.shape.reset();
      if (a && b && a->shape && b->shape && a->shape->size() == 2 && b->shape->size() == 2)
        o.shape = SymShape{(*a->shape)[n.attr_int("transA", 0) ? 1 : 0],
                           (*b->shape)[n.attr_int("transB", 0) ? 0 : 1]};
      return {o};
    }
    if (op == "Conv" || op == "MaxPool" || op == "AveragePool" || op == "ConvTranspose")
      return {window(n, who)};
    if (op == "GlobalAveragePool" || op == "GlobalMaxPool") {
      Info o = same(0);
      if (o.shape)
        for (size_t d = 2; d < o.shape->size(); ++d) (*o.shape)[d] = Dim::known(1);
      return {o};
    }
    if (op.rfind("Reduce", 0) == 0) {
      const Info* x = in(n, 0);
      Info o = same(0);
      std::vector<int64_t> axes = n.attr_ints("axes", {});
      const bool from_input = op == "ReduceSum" ? m_.opset >= 13 : m_.opset >= 18;
      if (from_input && n.inputs.size() > 1) {
        auto v = numbers(in(n, 1));
        if (!v) return {Info{o.dtype, std::nullopt, std::nullopt, {}}};
        axes = *v;
      }
      if (x && x->shape) {
        const int64_t r = static_cast<int64_t>(x->shape->size());
        std::vector<bool> red(static_cast<size_t>(r), axes.empty());
        for (int64_t a : axes) red[static_cast<size_t>(norm_axis(a, r, who))] = true;
        SymShape s;
        for (int64_t d = 0; d < r; ++d) {
          if (!red[static_cast<size_t>(d)])
            s.push_back((*x->shape)[static_cast<size_t>(d)]);
          else if (n.attr_int("keepdims", 1))
            s.push_back(Dim::known(1));
        }
        o.shape = s;
      }
      return {o};
    }
    if (op == "ConstantOfShape") {
      Info o;
      o.dtype = DType::f32;
      if (const Attribute* a = n.find("value"); a && a->kind == Attribute::Kind::t)
        o.dtype = a->t.dtype();
      if (const Info* s = in(n, 0); s && s->value) o.shape = dims_of(*s->value);
      return {o};
    }
    if (op == "Expand") {
      const Info* x = in(n, 0);
      const Info* s = in(n, 1);
      Info o = same(0);
      o.shape.reset();
      if (x && s && s->value) {
        Info t{std::nullopt, dims_of(*s->value), std::nullopt, {}};
        o.shape = bcast({x, &t}, who);
      }
      return {o};
    }
    if (op == "Split") {
      const Info* x = in(n, 0);
      std::vector<Info> outs(n.outputs.size(), same(0));
      if (!x || !x->shape) return outs;
      const int64_t axis =
          norm_axis(n.attr_int("axis", 0), static_cast<int64_t>(x->shape->size()), who);
      std::vector<int64_t> split = n.attr_ints("split", {});
      if (m_.opset >= 13 && n.inputs.size() > 1)
        split = numbers(in(n, 1)).value_or(std::vector<int64_t>{});
      const Dim& d = (*x->shape)[static_cast<size_t>(axis)];
      for (size_t i = 0; i < outs.size(); ++i) {
        Dim part = Dim::unknown();
        if (split.size() == outs.size())
          part = Dim::known(split[i]);
        else if (split.empty() && d.is_known() && d.value % static_cast<int64_t>(outs.size()) == 0)
          part = Dim::known(d.value / static_cast<int64_t>(outs.size()));
        (*outs[i].shape)[static_cast<size_t>(axis)] = part;
      }
      return outs;
    }
    if (op == "Pad") {
      Info o = same(0);
      std::optional<std::vector<int64_t>> pads =
          m_.opset >= 11 ? numbers(in(n, 1)) : std::optional(n.attr_ints("pads", {}));
      if (o.shape && pads && pads->size() == 2 * o.shape->size() && n.inputs.size() < 4) {
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
    if (op == "Resize" || op == "Upsample") {
      Info o = same(0);
      if (!o.shape) return {o};
      const bool opset10 = op == "Upsample" || m_.opset < 11;
      const Info* sizes = opset10 ? nullptr : in(n, 3);
      const Info* scales = in(n, opset10 ? 1 : 2);
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
    if (op == "LSTM") {
      const Info* x = in(n, 0);
      const int64_t h = n.attr_int("hidden_size", 0);
      const int64_t dirs = n.attr_string("direction", "forward") == "bidirectional" ? 2 : 1;
      std::vector<Info> outs(n.outputs.size());
      for (Info& o : outs) o.dtype = x ? x->dtype : std::nullopt;
      if (x && x->shape && x->shape->size() == 3) {
        const Dim seq = (*x->shape)[0], batch = (*x->shape)[1];
        if (!outs.empty()) outs[0].shape = SymShape{seq, Dim::known(dirs), batch, Dim::known(h)};
        for (size_t i = 1; i < outs.size(); ++i)
          outs[i].shape = SymShape{Dim::known(dirs), batch, Dim::known(h)};
      }
      return outs;
    }
    return {};
  }

  static Dim product(const SymShape& s, int64_t a, int64_t b) {
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

  std::optional<std::vector<Dim>> arith_values(const std::string& op, const Info& a,
                                               const Info& b) {
    if (!a.value || !b.value) return std::nullopt;
    const auto& x = *a.value;
    const auto& y = *b.value;
    if (x.size() != y.size() && x.size() != 1 && y.size() != 1) return std::nullopt;
    std::vector<Dim> out;
    const size_t n = std::max(x.size(), y.size());
    for (size_t i = 0; i < n; ++i) {
      const Dim& p = x[x.size() == 1 ? 0 : i];
      const Dim& q = y[y.size() == 1 ? 0 : i];
      if (!is_number(p) || !is_number(q)) {
        // x·1, x+0, x/1 keep a symbol.
        if (is_number(q) && ((op == "Mul" || op == "Div") ? q.value == 1 : q.value == 0))
          out.push_back(p);
        else if (is_number(p) && ((op == "Mul" && p.value == 1) || (op == "Add" && p.value == 0)))
          out.push_back(q);
        else
          out.push_back(unknown_elem());
        continue;
      }
      int64_t v = 0;
      if (op == "Add")
        v = p.value + q.value;
      else if (op == "Sub")
        v = p.value - q.value;
      else if (op == "Mul")
        v = p.value * q.value;
      else if (q.value != 0)
        v = p.value / q.value;
      else
        return std::nullopt;
      out.push_back(raw(v));
    }
    return out;
  }

  Info gather(const Node& n, const std::string& who) {
    const Info* data = in(n, 0);
    const Info* idx = in(n, 1);
    Info o;
    if (data) o.dtype = data->dtype;
    if (!data || !data->shape || !idx || !idx->shape) return o;
    const int64_t r = static_cast<int64_t>(data->shape->size());
    const int64_t axis = norm_axis(n.attr_int("axis", 0), r, who);
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
          if (i < 0 || i >= len) return o;
          v.push_back((*data->value)[static_cast<size_t>(i)]);
        }
        o.value = v;
      }
    }
    return o;
  }

  Info slice(const Node& n, const std::string& who) {
    const Info* x = in(n, 0);
    Info o;
    if (x) o.dtype = x->dtype;
    if (!x || !x->shape) return o;
    std::optional<std::vector<int64_t>> starts, ends, axes, steps;
    if (m_.opset < 10) {
      starts = n.attr_ints("starts", {});
      ends = n.attr_ints("ends", {});
      axes = n.attr_ints("axes", {});
    } else {
      starts = numbers(in(n, 1));
      ends = numbers(in(n, 2));
      axes = n.inputs.size() > 3 && !n.inputs[3].empty() ? numbers(in(n, 3))
                                                         : std::optional(std::vector<int64_t>{});
      steps = n.inputs.size() > 4 && !n.inputs[4].empty() ? numbers(in(n, 4))
                                                          : std::optional(std::vector<int64_t>{});
    }
    SymShape s = *x->shape;
    const int64_t r = static_cast<int64_t>(s.size());
    if (!starts || !ends || !axes || (steps == std::nullopt && m_.opset >= 10)) {
      for (Dim& d : s) d = Dim::unknown();
      o.shape = s;
      return o;
    }
    if (axes->empty())
      for (size_t i = 0; i < starts->size(); ++i) axes->push_back(static_cast<int64_t>(i));
    if (!steps || steps->empty()) steps = std::vector<int64_t>(starts->size(), 1);
    if (axes->size() != starts->size() || ends->size() != starts->size() ||
        steps->size() != starts->size())
      throw Error(who, "starts, ends, axes and steps differ in length");
    std::vector<std::pair<int64_t, int64_t>> ranges;  // for the value
    for (size_t i = 0; i < starts->size(); ++i) {
      const size_t a = static_cast<size_t>(norm_axis((*axes)[i], r, who));
      Dim& d = s[a];
      const int64_t st = (*steps)[i];
      int64_t b = (*starts)[i], e = (*ends)[i];
      if (!d.is_known()) {
        if (st == 1 && b == 0 && e >= std::numeric_limits<int32_t>::max()) continue;  // whole axis
        d = Dim::unknown();
        continue;
      }
      const int64_t dim = d.value;
      if (b < 0) b += dim;
      if (e < 0) e += dim;
      int64_t count;
      if (st > 0) {
        b = std::clamp<int64_t>(b, 0, dim);
        e = std::clamp<int64_t>(e, 0, dim);
        count = e > b ? (e - b + st - 1) / st : 0;
      } else {
        b = std::clamp<int64_t>(b, 0, dim - 1);
        e = std::clamp<int64_t>(e, -1, dim - 1);
        count = b > e ? (b - e - st - 1) / (-st) : 0;
      }
      d = Dim::known(count);
      if (r == 1 && st == 1) ranges.emplace_back(b, count);
    }
    o.shape = s;
    if (x->value && r == 1 && ranges.size() == 1)
      o.value = std::vector<Dim>(x->value->begin() + ranges[0].first,
                                 x->value->begin() + ranges[0].first + ranges[0].second);
    return o;
  }

  Info concat(const Node& n, const std::string& who) {
    Info o;
    std::vector<const Info*> ins;
    for (size_t i = 0; i < n.inputs.size(); ++i) ins.push_back(in(n, i));
    if (ins.empty() || !ins[0]) return o;
    o.dtype = ins[0]->dtype;
    bool all_values = true;
    std::vector<Dim> values;
    for (const Info* i : ins) {
      if (!i || !i->value)
        all_values = false;
      else
        values.insert(values.end(), i->value->begin(), i->value->end());
    }
    for (const Info* i : ins)
      if (!i || !i->shape) return o;
    const int64_t r = static_cast<int64_t>(ins[0]->shape->size());
    const int64_t axis = norm_axis(n.attr_int("axis", 0), r, who);
    SymShape s = *ins[0]->shape;
    int64_t total = 0;
    bool known = true;
    for (const Info* i : ins) {
      if (static_cast<int64_t>(i->shape->size()) != r) throw Error(who, "inputs differ in rank");
      const Dim& d = (*i->shape)[static_cast<size_t>(axis)];
      if (d.is_known())
        total += d.value;
      else
        known = false;
    }
    s[static_cast<size_t>(axis)] = known ? Dim::known(total) : Dim::unknown();
    o.shape = s;
    if (all_values && r == 1) o.value = values;
    return o;
  }

  Info squeeze(const Node& n, const std::string& who, bool unsqueeze) {
    const Info* x = in(n, 0);
    Info o;
    if (x) {
      o.dtype = x->dtype;
      o.value = x->value;
    }
    std::optional<std::vector<int64_t>> axes = n.attr_ints("axes", {});
    if (m_.opset >= 13)
      axes = n.inputs.size() > 1 ? numbers(in(n, 1)) : std::optional(std::vector<int64_t>{});
    if (!x || !x->shape || !axes) return o;
    const SymShape& s = *x->shape;
    if (unsqueeze) {
      const int64_t r = static_cast<int64_t>(s.size() + axes->size());
      std::vector<bool> ins(static_cast<size_t>(r), false);
      for (int64_t a : *axes) ins[static_cast<size_t>(norm_axis(a, r, who))] = true;
      SymShape out;
      size_t k = 0;
      for (int64_t d = 0; d < r; ++d)
        out.push_back(ins[static_cast<size_t>(d)] ? Dim::known(1) : s[k++]);
      o.shape = out;
    } else {
      const int64_t r = static_cast<int64_t>(s.size());
      std::vector<bool> drop(static_cast<size_t>(r), false);
      if (axes->empty()) {
        for (int64_t d = 0; d < r; ++d) {
          if (!s[static_cast<size_t>(d)].is_known()) return o;  // might be 1
          drop[static_cast<size_t>(d)] = s[static_cast<size_t>(d)].value == 1;
        }
      }
      for (int64_t a : *axes) drop[static_cast<size_t>(norm_axis(a, r, who))] = true;
      SymShape out;
      for (int64_t d = 0; d < r; ++d)
        if (!drop[static_cast<size_t>(d)]) out.push_back(s[static_cast<size_t>(d)]);
      o.shape = out;
    }
    return o;
  }

  Info reshape(const Node& n) {
    const Info* x = in(n, 0);
    const Info* t = in(n, 1);
    Info o;
    if (x) o.dtype = x->dtype;
    if (!t || !t->value) {
      if (t && t->shape && t->shape->size() == 1 && (*t->shape)[0].is_known())
        o.shape = SymShape(static_cast<size_t>((*t->shape)[0].value), Dim::unknown());
      return o;
    }
    const bool allowzero = n.attr_int("allowzero", 0) != 0;
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
    if (infer >= 0 && x && x->shape) {
      // The inferred dim: numel / product of the others, when both are known,
      // or the one input dim left after cancelling equal symbols.
      std::vector<Dim> num(x->shape->begin(), x->shape->end());
      std::vector<Dim> den;
      for (size_t i = 0; i < s.size(); ++i)
        if (static_cast<int>(i) != infer) den.push_back(s[i]);
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
      bool ok = true;
      for (const Dim& d : num) {
        if (d.is_known())
          pn *= d.value;
        else
          sym.push_back(d);
      }
      for (const Dim& d : den) {
        if (d.is_known())
          pd *= d.value;
        else
          ok = false;
      }
      if (ok && sym.empty() && pd > 0 && pn % pd == 0)
        s[static_cast<size_t>(infer)] = Dim::known(pn / pd);
      else if (ok && sym.size() == 1 && pn == pd)
        s[static_cast<size_t>(infer)] = sym[0];
    }
    o.shape = s;
    if (x && x->value) o.value = x->value;
    return o;
  }

  Info window(const Node& n, const std::string& who) {
    const Info* x = in(n, 0);
    const Info* w = in(n, 1);
    Info o;
    if (x) o.dtype = x->dtype;
    if (!x || !x->shape || x->shape->size() < 3) return o;
    const SymShape& xs = *x->shape;
    const size_t sd = xs.size() - 2;
    const bool conv = n.op_type == "Conv", convt = n.op_type == "ConvTranspose";
    std::vector<int64_t> ks = n.attr_ints("kernel_shape", {});
    if (ks.empty() && (conv || convt) && w && w->shape && w->shape->size() == xs.size())
      for (size_t d = 2; d < xs.size(); ++d) ks.push_back((*w->shape)[d].value);
    SymShape s{xs[0]};
    if (conv || convt) {
      if (!w || !w->shape) return o;
      s.push_back(conv ? (*w->shape)[0]
                       : ((*w->shape)[1].is_known()
                              ? Dim::known((*w->shape)[1].value * n.attr_int("group", 1))
                              : Dim::unknown()));
    } else {
      s.push_back(xs[1]);
    }
    if (ks.size() != sd) {
      for (size_t d = 0; d < sd; ++d) s.push_back(Dim::unknown());
      o.shape = s;
      return o;
    }
    const auto st = n.attr_ints("strides", std::vector<int64_t>(sd, 1));
    const auto dil = n.attr_ints("dilations", std::vector<int64_t>(sd, 1));
    const auto pads = n.attr_ints("pads", std::vector<int64_t>(2 * sd, 0));
    const std::string ap = n.attr_string("auto_pad", "NOTSET");
    if (st.size() != sd || dil.size() != sd || pads.size() != 2 * sd)
      throw Error(who, "strides, dilations or pads do not match the spatial rank");
    for (size_t d = 0; d < sd; ++d) {
      const Dim& in = xs[2 + d];
      if (convt) {
        const auto op = n.attr_ints("output_padding", std::vector<int64_t>(sd, 0));
        const auto os = n.attr_ints("output_shape", {});
        if (!os.empty())
          s.push_back(Dim::known(os[os.size() - sd + d]));
        else if (!in.is_known() || ap != "NOTSET")
          s.push_back(ap == "SAME_UPPER" || ap == "SAME_LOWER"
                          ? (in.is_known() ? Dim::known(in.value * st[d]) : Dim::unknown())
                          : Dim::unknown());
        else
          s.push_back(Dim::known(st[d] * (in.value - 1) + op[d] + dil[d] * (ks[d] - 1) + 1 -
                                 pads[d] - pads[d + sd]));
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
    o.shape = s;
    return o;
  }

  Model& m_;
  Graph& g_;
  std::unordered_map<std::string, Info> info_;
  Info empty_;
};

}  // namespace

void infer_shapes(Model& model) {
  Inference(model).run();
  debug_verify(model);
}

void specialize_input(Model& model, const std::string& name, const Shape& shape) {
  Graph& g = model.graph;
  const std::string who = "input '" + name + "'";
  if (std::find(g.inputs.begin(), g.inputs.end(), name) == g.inputs.end())
    throw Error(who, "the model has no such input");
  ValueType& vt = g.types[name];
  if (vt.shape) {
    if (vt.shape->size() != shape.size())
      throw Error(who, "rank " + std::to_string(shape.size()) + ", the model declares " +
                           sym_shape_to_string(*vt.shape));
    for (size_t d = 0; d < shape.size(); ++d)
      if ((*vt.shape)[d].is_known() && (*vt.shape)[d].value != shape[d])
        throw Error(who, "shape " + shape_to_string(shape) + ", the model declares " +
                             sym_shape_to_string(*vt.shape));
  }
  vt.shape = sym_shape_of(shape);
  // Types inferred from the old shape may be stale: recompute all but the declared ones.
  std::set<std::string> keep(g.inputs.begin(), g.inputs.end());
  for (const auto& [n, t] : g.initializers) keep.insert(n);
  for (auto it = g.types.begin(); it != g.types.end();) {
    if (!keep.count(it->first) &&
        std::find(g.outputs.begin(), g.outputs.end(), it->first) == g.outputs.end())
      it = g.types.erase(it);
    else
      ++it;
  }
  infer_shapes(model);
}

int fold_shape_constants(Model& model) {
  Graph& g = model.graph;
  Inference inf(model);
  inf.run();
  static const std::set<std::string> foldable = {
      "Shape", "Gather", "Slice", "Concat", "Cast",     "Unsqueeze", "Squeeze",
      "Add",   "Sub",    "Mul",   "Div",    "Constant", "Identity",  "Size"};
  std::vector<Node> kept;
  int removed = 0;
  for (Node& n : g.nodes) {
    bool all = n.domain.empty() && foldable.count(n.op_type) && !n.outputs.empty();
    std::vector<Tensor> values;
    for (const auto& o : n.outputs) {
      const Info* i = inf.get(o);
      if (!all || !i || !i->value || !i->shape || !i->dtype ||
          (*i->dtype != DType::i64 && *i->dtype != DType::i32)) {
        all = false;
        break;
      }
      auto c = concrete_shape(*i->shape);
      std::vector<int64_t> v;
      for (const Dim& d : *i->value) {
        if (!is_number(d)) all = false;
        v.push_back(d.value);
      }
      if (!all || !c || shape_numel(*c) != static_cast<int64_t>(v.size())) {
        all = false;
        break;
      }
      Tensor t = Tensor::zeros(DType::i64, *c);
      if (!v.empty()) std::memcpy(t.mutable_raw(), v.data(), v.size() * 8);
      values.push_back(*i->dtype == DType::i64 ? t : t.to(*i->dtype));
    }
    if (!all) {
      kept.push_back(std::move(n));
      continue;
    }
    for (size_t k = 0; k < n.outputs.size(); ++k) g.add_initializer(n.outputs[k], values[k]);
    ++removed;
  }
  g.nodes = std::move(kept);
  // Initializers no node, subgraph or output reads any more.
  std::set<std::string> used(g.outputs.begin(), g.outputs.end());
  std::function<void(const Graph&)> uses = [&](const Graph& sub) {
    for (const Node& n : sub.nodes) {
      used.insert(n.inputs.begin(), n.inputs.end());
      for (const auto& [k, a] : n.attributes) {
        if (a.kind == Attribute::Kind::g) uses(*a.g);
        for (const auto& s : a.graphs) uses(*s);
      }
    }
    used.insert(sub.outputs.begin(), sub.outputs.end());
  };
  uses(g);
  std::vector<std::string> order;
  for (const auto& name : g.initializer_order) {
    if (used.count(name)) {
      order.push_back(name);
    } else {
      g.initializers.erase(name);
      g.types.erase(name);
    }
  }
  g.initializer_order = order;
  debug_verify(model);
  return removed;
}

}  // namespace tailor::graph
