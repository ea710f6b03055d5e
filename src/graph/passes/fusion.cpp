// Fusion: conv/gemm/matmul epilogues, LayerNorm and Softmax patterns,
// elementwise groups into ai.tailor ops. See passes.h and fused_ops.h.
#include <algorithm>
#include <cmath>
#include <limits>

#include "pass_util.h"
#include "tailor/graph/fused_ops.h"
#include "tailor/graph/passes.h"
#include "tailor/graph/shape_inference.h"

namespace tailor::graph {
namespace {

using namespace passes;

struct Proposal {
  FusionCandidate cand;
  std::vector<size_t> members;
  size_t sink = 0;
  Node fused;
  std::vector<std::pair<std::string, Tensor>> inits;
};

struct ActMatch {
  std::string name;
  std::vector<float> params;
  std::vector<size_t> nodes;
  std::string out;
};

bool is_op(const Node& n, const char* op) {
  return n.domain.empty() && n.op_type == op;
}

class Finder {
 public:
  Finder(const Graph& g, int64_t opset, NameGen& names) : g_(g), opset_(opset), names_(names) {
    uses_ = compute_uses(g);
    prod_ = producers(g);
    info_ = infer_value_info(g, opset);
  }

  std::vector<Proposal> find() {
    std::vector<Proposal> out;
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      if (claimed_.count(i)) continue;
      std::optional<Proposal> p;
      const Node& n = g_.nodes[i];
      if (is_op(n, "ReduceMean")) p = layer_norm(i);
      if (!p && (is_op(n, "Exp") || is_op(n, "ReduceMax"))) p = softmax(i);
      if (p) claim(*p, out);
    }
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      if (claimed_.count(i)) continue;
      std::optional<Proposal> p;
      const Node& n = g_.nodes[i];
      if (is_op(n, "Conv"))
        p = conv_epilogue(i);
      else if (is_op(n, "Gemm"))
        p = gemm_epilogue(i);
      else if (is_op(n, "MatMul"))
        p = matmul_epilogue(i);
      if (p) claim(*p, out);
    }
    for (size_t i = g_.nodes.size(); i-- > 0;) {
      if (claimed_.count(i)) continue;
      if (auto p = elementwise(i)) claim(*p, out);
    }
    std::sort(out.begin(), out.end(),
              [](const Proposal& a, const Proposal& b) { return a.sink < b.sink; });
    return out;
  }

 private:
  void claim(Proposal& p, std::vector<Proposal>& out) {
    std::sort(p.members.begin(), p.members.end());
    for (size_t m : p.members)
      if (claimed_.count(m)) return;
    p.sink = p.members.back();
    p.cand.nodes.clear();
    for (size_t m : p.members) p.cand.nodes.push_back(g_.node_label(m));
    p.cand.id = p.cand.kind + ":" + p.fused.outputs[0];
    p.fused.name = names_.fresh(p.cand.kind + "_" + p.fused.outputs[0]);
    for (size_t m : p.members) claimed_.insert(m);
    out.push_back(std::move(p));
  }

  /// The only reader of v (v no graph output), unclaimed, in the default domain.
  std::optional<size_t> sole(const std::string& v) const {
    auto r = uses_.sole_reader(v);
    if (!r || claimed_.count(*r) || !g_.nodes[*r].domain.empty()) return std::nullopt;
    return r;
  }
  const Tensor* cst(const std::string& v) const { return constant(g_, v); }
  std::optional<double> scalar(const std::string& v) const {
    const Tensor* t = cst(v);
    if (!t || t->numel() != 1) return std::nullopt;
    return uniform_value(*t);
  }
  std::optional<size_t> rank_of(const std::string& v) const {
    auto it = info_.find(v);
    return it == info_.end() ? std::nullopt : it->second.rank;
  }
  bool is_f32(const std::string& v) const {
    auto it = info_.find(v);
    return it != info_.end() && it->second.dtype == DType::f32;
  }
  /// The other input of binary node n when one input is `v`.
  static std::optional<std::string> other(const Node& n, const std::string& v, bool commutative) {
    if (n.inputs.size() != 2) return std::nullopt;
    if (n.inputs[0] == v && n.inputs[1] != v) return n.inputs[1];
    if (commutative && n.inputs[1] == v && n.inputs[0] != v) return n.inputs[0];
    return std::nullopt;
  }

  std::optional<std::pair<float, float>> clip_bounds(const Node& n) const {
    if (opset_ < 11)
      return std::make_pair(n.attr_float("min", -std::numeric_limits<float>::infinity()),
                            n.attr_float("max", std::numeric_limits<float>::infinity()));
    float lo = -std::numeric_limits<float>::infinity(), hi = std::numeric_limits<float>::infinity();
    if (n.inputs.size() > 1 && !n.inputs[1].empty()) {
      auto v = scalar(n.inputs[1]);
      if (!v) return std::nullopt;
      lo = static_cast<float>(*v);
    }
    if (n.inputs.size() > 2 && !n.inputs[2].empty()) {
      auto v = scalar(n.inputs[2]);
      if (!v) return std::nullopt;
      hi = static_cast<float>(*v);
    }
    return std::make_pair(lo, hi);
  }

  /// An activation reading v (alone), or the decomposed HardSwish
  /// v·(Clip(v+3, 0, 6)/6) or (v·Clip(v+3, 0, 6))/6.
  std::optional<ActMatch> activation(const std::string& v) const {
    if (auto r = sole(v)) {
      const Node& a = g_.nodes[*r];
      ActMatch m{"", {}, {*r}, a.outputs.empty() ? "" : a.outputs[0]};
      if (a.outputs.size() != 1 || a.inputs.empty() || a.inputs[0] != v) return std::nullopt;
      if (a.op_type == "Relu")
        m.name = "relu";
      else if (a.op_type == "Sigmoid")
        m.name = "sigmoid";
      else if (a.op_type == "Tanh")
        m.name = "tanh";
      else if (a.op_type == "HardSwish")
        m.name = "hard_swish", m.params = {1.f / 6.f, 0.5f};
      else if (a.op_type == "HardSigmoid")
        m.name = "hard_sigmoid",
        m.params = {a.attr_float("alpha", 0.2f), a.attr_float("beta", 0.5f)};
      else if (a.op_type == "LeakyRelu")
        m.name = "leaky_relu", m.params = {a.attr_float("alpha", 0.01f), 0.f};
      else if (a.op_type == "Clip") {
        auto b = clip_bounds(a);
        if (!b) return std::nullopt;
        m.name = "clip", m.params = {b->first, b->second};
      }
      if (m.name.empty()) return std::nullopt;
      return m;
    }
    // v·(Clip(v + 3, 0, 6) / 6): v read by exactly an Add and a Mul.
    if (uses_.graph_outputs.count(v)) return std::nullopt;
    auto it = uses_.readers.find(v);
    if (it == uses_.readers.end() || it->second.size() != 2) return std::nullopt;
    size_t add = it->second[0], mul = it->second[1];
    if (!is_op(g_.nodes[add], "Add")) std::swap(add, mul);
    const Node& na = g_.nodes[add];
    const Node& nm = g_.nodes[mul];
    if (claimed_.count(add) || claimed_.count(mul) || !is_op(na, "Add") || !is_op(nm, "Mul"))
      return std::nullopt;
    auto three = other(na, v, true);
    if (!three || scalar(*three) != std::optional<double>(3.0) || cst(*three)->rank() > 1)
      return std::nullopt;
    auto c = sole(na.outputs[0]);
    if (!c || !is_op(g_.nodes[*c], "Clip")) return std::nullopt;
    auto cb = clip_bounds(g_.nodes[*c]);
    if (!cb || cb->first != 0.f || cb->second != 6.f) return std::nullopt;
    auto d = sole(g_.nodes[*c].outputs[0]);
    if (d && *d == mul &&
        other(nm, g_.nodes[*c].outputs[0], true) == std::optional<std::string>(v)) {
      // (v·Clip(v + 3, 0, 6)) / 6.
      auto d2 = sole(nm.outputs[0]);
      if (!d2 || !is_op(g_.nodes[*d2], "Div") || g_.nodes[*d2].inputs[0] != nm.outputs[0])
        return std::nullopt;
      const std::string& six_v = g_.nodes[*d2].inputs[1];
      if (scalar(six_v) != std::optional<double>(6.0) || cst(six_v)->rank() > 1)
        return std::nullopt;
      return ActMatch{
          "hard_swish", {1.f / 6.f, 0.5f}, {add, *c, mul, *d2}, g_.nodes[*d2].outputs[0]};
    }
    if (!d || !is_op(g_.nodes[*d], "Div") || g_.nodes[*d].inputs[0] != g_.nodes[*c].outputs[0])
      return std::nullopt;
    auto six = scalar(g_.nodes[*d].inputs[1]);
    if (six != std::optional<double>(6.0) || cst(g_.nodes[*d].inputs[1])->rank() > 1)
      return std::nullopt;
    auto m2 = sole(g_.nodes[*d].outputs[0]);
    if (!m2 || *m2 != mul ||
        other(nm, g_.nodes[*d].outputs[0], true) != std::optional<std::string>(v))
      return std::nullopt;
    return ActMatch{"hard_swish", {1.f / 6.f, 0.5f}, {add, *c, *d, mul}, nm.outputs[0]};
  }

  /// The FusedConv contract (graph/passes/fuse_conv.h): `activation`, `alpha`, `beta`.
  /// FusedGemm keeps Gemm's own alpha/beta: its activation parameters are
  /// `activation_alpha`, `activation_beta`.
  static void set_activation(Node& n, const ActMatch& a, bool gemm = false) {
    std::vector<float> p = a.params;
    p.resize(2, 0.f);
    n.set("activation", Attribute::of_string(a.name));
    n.set(gemm ? "activation_alpha" : "alpha", Attribute::of_float(p[0]));
    n.set(gemm ? "activation_beta" : "beta", Attribute::of_float(p[1]));
  }

  std::optional<Proposal> conv_epilogue(size_t i) {
    const Node& conv = g_.nodes[i];
    if (conv.inputs.size() < 2 || conv.outputs.size() != 1) return std::nullopt;
    const Tensor* w = cst(conv.inputs[1]);
    if (!w || w->dtype() != DType::f32 || (w->rank() != 3 && w->rank() != 4)) return std::nullopt;
    const int64_t c_out = w->dim(0);
    const bool has_b = conv.inputs.size() > 2 && !conv.inputs[2].empty();
    const Tensor* b = has_b ? cst(conv.inputs[2]) : nullptr;
    if (has_b && (!b || b->dtype() != DType::f32 || b->numel() != c_out)) return std::nullopt;
    Proposal p;
    p.cand.kind = "conv_epilogue";
    p.members = {i};
    std::string cur = conv.outputs[0];
    Node f = conv;
    f.op_type = "FusedConv";
    f.domain = "ai.tailor";
    // Bias Add: a per-channel constant [C,1,1] / [1,C,1,1] (or a scalar).
    if (auto r = sole(cur); r && is_op(g_.nodes[*r], "Add")) {
      const Node& add = g_.nodes[*r];
      auto o = other(add, cur, true);
      const Tensor* t = o ? cst(*o) : nullptr;
      const size_t sp = w->rank() - 2;
      bool ok = t && t->dtype() == DType::f32 && (t->numel() == c_out || t->numel() == 1);
      if (ok && t->numel() == c_out && c_out > 1) {
        ok = (t->rank() == sp + 1 && t->dim(0) == c_out) ||
             (t->rank() == sp + 2 && t->dim(0) == 1 && t->dim(1) == c_out);
      } else if (ok) {
        ok = t->rank() <= sp + 2;
      }
      if (ok) {
        const std::vector<float> add_v = t->to_f32_vector();
        const std::vector<float> b0 =
            b ? b->to_f32_vector() : std::vector<float>(static_cast<size_t>(c_out), 0.f);
        std::vector<float> nb(static_cast<size_t>(c_out));
        for (size_t c = 0; c < nb.size(); ++c) nb[c] = b0[c] + add_v[add_v.size() == 1 ? 0 : c];
        const std::string bname = names_.fresh(add.outputs[0] + "_bias");
        p.inits.emplace_back(bname, Tensor::from_f32({c_out}, nb));
        f.inputs.resize(3);
        f.inputs[2] = bname;
        p.members.push_back(*r);
        cur = add.outputs[0];
      }
    }
    return finish_epilogue(std::move(p), std::move(f), cur);
  }

  // Absorbs the activation reading `cur` (when there is one) into the fused
  // node `f` and makes `f` the proposal; nullopt when nothing but the root
  // node would be fused.
  std::optional<Proposal> finish_epilogue(Proposal p, Node f, std::string cur) {
    if (auto a = activation(cur)) {
      set_activation(f, *a);
      p.members.insert(p.members.end(), a->nodes.begin(), a->nodes.end());
      cur = a->out;
    }
    if (p.members.size() < 2) return std::nullopt;
    f.outputs = {cur};
    p.fused = std::move(f);
    return p;
  }

  std::optional<Proposal> gemm_epilogue(size_t i) {
    const Node& gemm = g_.nodes[i];
    if (gemm.outputs.size() != 1) return std::nullopt;
    auto a = activation(gemm.outputs[0]);
    if (!a || a->nodes.size() != 1) return std::nullopt;
    Proposal p;
    p.cand.kind = "gemm_epilogue";
    p.members = {i, a->nodes[0]};
    p.fused = gemm;
    p.fused.op_type = "FusedGemm";
    p.fused.domain = "ai.tailor";
    set_activation(p.fused, *a, true);
    p.fused.outputs = {a->out};
    return p;
  }

  std::optional<Proposal> matmul_epilogue(size_t i) {
    const Node& mm = g_.nodes[i];
    if (mm.inputs.size() != 2 || mm.outputs.size() != 1) return std::nullopt;
    const Tensor* b = cst(mm.inputs[1]);
    if (!b || b->dtype() != DType::f32 || b->rank() != 2 || !is_f32(mm.inputs[0]))
      return std::nullopt;
    const int64_t n = b->dim(1);
    Proposal p;
    p.cand.kind = "matmul_epilogue";
    p.members = {i};
    Node f = make_node("FusedMatMul", "", {mm.inputs[0], mm.inputs[1]}, {}, "ai.tailor");
    std::string cur = mm.outputs[0];
    if (auto r = sole(cur); r && is_op(g_.nodes[*r], "Add")) {
      const Node& add = g_.nodes[*r];
      auto o = other(add, cur, true);
      const Tensor* t = o ? cst(*o) : nullptr;
      if (t && t->dtype() == DType::f32 && t->rank() == 1 && t->numel() == n) {
        f.inputs.push_back(*o);
        p.members.push_back(*r);
        cur = add.outputs[0];
      }
    }
    return finish_epilogue(std::move(p), std::move(f), cur);
  }

  bool last_axis(const Node& red, const std::string& x) const {
    auto axes = reduce_axes(g_, red, opset_);
    if (!axes || axes->size() != 1 || red.attr_int("keepdims", 1) != 1) return false;
    if ((*axes)[0] == -1) return true;
    auto r = rank_of(x);
    return r && static_cast<int64_t>(*r) - 1 == (*axes)[0];
  }

  std::optional<Proposal> layer_norm(size_t i) {
    const Node& m1 = g_.nodes[i];
    if (m1.inputs.empty() || m1.outputs.size() != 1) return std::nullopt;
    const std::string x = m1.inputs[0];
    if (!is_f32(x) || !last_axis(m1, x)) return std::nullopt;
    auto s = sole(m1.outputs[0]);
    if (!s || !is_op(g_.nodes[*s], "Sub") ||
        g_.nodes[*s].inputs != std::vector<std::string>{x, m1.outputs[0]})
      return std::nullopt;
    const std::string d = g_.nodes[*s].outputs[0];
    if (uses_.graph_outputs.count(d)) return std::nullopt;
    auto it = uses_.readers.find(d);
    if (it == uses_.readers.end() || it->second.size() != 2) return std::nullopt;
    std::optional<size_t> sq, div;
    for (size_t r : it->second) {
      const Node& n = g_.nodes[r];
      if (claimed_.count(r) || !n.domain.empty()) return std::nullopt;
      if ((is_op(n, "Pow") && n.inputs[0] == d &&
           scalar(n.inputs[1]) == std::optional<double>(2.0)) ||
          (is_op(n, "Mul") && n.inputs.size() == 2 && n.inputs[0] == d && n.inputs[1] == d))
        sq = r;
      else
        div = r;
    }
    if (!sq || !div) return std::nullopt;
    auto m2 = sole(g_.nodes[*sq].outputs[0]);
    if (!m2 || !is_op(g_.nodes[*m2], "ReduceMean") || !last_axis(g_.nodes[*m2], x))
      return std::nullopt;
    auto add = sole(g_.nodes[*m2].outputs[0]);
    if (!add || !is_op(g_.nodes[*add], "Add")) return std::nullopt;
    auto eps_v = other(g_.nodes[*add], g_.nodes[*m2].outputs[0], true);
    auto eps = eps_v ? scalar(*eps_v) : std::nullopt;
    if (!eps || cst(*eps_v)->rank() > 1) return std::nullopt;
    auto sq_root = sole(g_.nodes[*add].outputs[0]);
    if (!sq_root || !is_op(g_.nodes[*sq_root], "Sqrt")) return std::nullopt;
    const std::string sr = g_.nodes[*sq_root].outputs[0];
    std::vector<size_t> members = {i, *s, *sq, *m2, *add, *sq_root};
    const Node& dv = g_.nodes[*div];
    if (is_op(dv, "Div") && dv.inputs == std::vector<std::string>{d, sr}) {
      if (sole(sr) != div) return std::nullopt;
    } else if (is_op(dv, "Mul")) {
      auto rec = sole(sr);
      if (!rec || !is_op(g_.nodes[*rec], "Reciprocal")) return std::nullopt;
      if (other(dv, d, true) != std::optional<std::string>(g_.nodes[*rec].outputs[0]) ||
          sole(g_.nodes[*rec].outputs[0]) != div)
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
    std::string scale, bias;
    if (auto r = sole(cur); r && is_op(g_.nodes[*r], "Mul")) {
      auto o = other(g_.nodes[*r], cur, true);
      const Tensor* t = o ? cst(*o) : nullptr;
      if (t && t->dtype() == DType::f32 && t->rank() == 1) {
        scale = *o;
        members.push_back(*r);
        cur = g_.nodes[*r].outputs[0];
        if (auto r2 = sole(cur); r2 && is_op(g_.nodes[*r2], "Add")) {
          auto o2 = other(g_.nodes[*r2], cur, true);
          const Tensor* t2 = o2 ? cst(*o2) : nullptr;
          if (t2 && t2->dtype() == DType::f32 && t2->rank() == 1 && t2->numel() == t->numel()) {
            bias = *o2;
            members.push_back(*r2);
            cur = g_.nodes[*r2].outputs[0];
          }
        }
      }
    }
    f.inputs.push_back(scale);
    f.inputs.push_back(bias);
    while (!f.inputs.empty() && f.inputs.back().empty()) f.inputs.pop_back();
    f.outputs = {cur};
    Proposal p;
    p.cand.kind = "layer_norm";
    p.members = members;
    p.fused = f;
    return p;
  }

  std::optional<Proposal> softmax(size_t i) {
    std::vector<size_t> members;
    std::string x;
    std::optional<int64_t> axis;
    size_t exp_i = i;
    const Node& first = g_.nodes[i];
    if (first.inputs.empty() || first.outputs.size() != 1) return std::nullopt;
    if (is_op(first, "ReduceMax")) {
      auto ax = reduce_axes(g_, first, opset_);
      if (!ax || ax->size() != 1 || first.attr_int("keepdims", 1) != 1) return std::nullopt;
      axis = (*ax)[0];
      x = first.inputs[0];
      auto sub = sole(first.outputs[0]);
      if (!sub || !is_op(g_.nodes[*sub], "Sub") ||
          g_.nodes[*sub].inputs != std::vector<std::string>{x, first.outputs[0]})
        return std::nullopt;
      auto e = sole(g_.nodes[*sub].outputs[0]);
      if (!e || !is_op(g_.nodes[*e], "Exp")) return std::nullopt;
      members = {i, *sub};
      exp_i = *e;
    } else {
      x = first.inputs[0];
    }
    const std::string e = g_.nodes[exp_i].outputs[0];
    if (!is_f32(x) || uses_.graph_outputs.count(e)) return std::nullopt;
    auto it = uses_.readers.find(e);
    if (it == uses_.readers.end() || it->second.size() != 2) return std::nullopt;
    size_t rs = it->second[0], dv = it->second[1];
    if (!is_op(g_.nodes[rs], "ReduceSum")) std::swap(rs, dv);
    if (claimed_.count(rs) || claimed_.count(dv) || !is_op(g_.nodes[rs], "ReduceSum") ||
        !is_op(g_.nodes[dv], "Div"))
      return std::nullopt;
    auto ax = reduce_axes(g_, g_.nodes[rs], opset_);
    if (!ax || ax->size() != 1 || g_.nodes[rs].attr_int("keepdims", 1) != 1) return std::nullopt;
    if (axis && *axis != (*ax)[0]) return std::nullopt;
    const std::string s = g_.nodes[rs].outputs[0];
    if (sole(s) != dv || g_.nodes[dv].inputs != std::vector<std::string>{e, s}) return std::nullopt;
    members.push_back(exp_i);
    members.push_back(rs);
    members.push_back(dv);
    Node f = make_node("Softmax", "", {x}, {g_.nodes[dv].outputs[0]}, "ai.tailor");
    f.set("axis", Attribute::of_int((*ax)[0]));
    Proposal p;
    p.cand.kind = "softmax";
    p.members = members;
    p.fused = f;
    return p;
  }

  // ---- elementwise groups ----

  /// The program op of an elementwise node, or nullopt when it cannot join.
  bool eligible(size_t i) const {
    const Node& n = g_.nodes[i];
    if (!n.domain.empty() || n.outputs.size() != 1 || n.inputs.empty() || !is_f32(n.outputs[0]))
      return false;
    static const std::set<std::string> unary = {"Relu", "Sigmoid",     "Tanh",       "Exp",
                                                "Log",  "Sqrt",        "Reciprocal", "Neg",
                                                "Abs",  "HardSigmoid", "HardSwish",  "LeakyRelu"};
    static const std::set<std::string> binary = {"Add", "Sub", "Mul", "Div", "Max", "Min"};
    for (const auto& in : n.inputs)
      if (!in.empty() && !is_f32(in) && !(n.op_type == "Pow" || n.op_type == "Clip")) return false;
    if (unary.count(n.op_type)) return n.inputs.size() == 1;
    if (binary.count(n.op_type))
      return n.inputs.size() == 2 && is_f32(n.inputs[0]) && is_f32(n.inputs[1]);
    if (n.op_type == "Clip") return is_f32(n.inputs[0]) && clip_bounds(n).has_value();
    if (n.op_type == "Pow")
      return n.inputs.size() == 2 && is_f32(n.inputs[0]) &&
             (scalar(n.inputs[1]) || is_f32(n.inputs[1]));
    return false;
  }

  /// A one-element f32 constant that can be an immediate operand (its rank
  /// does not exceed the other operand's).
  std::optional<float> immediate(const std::string& v, const std::string& partner) const {
    const Tensor* t = cst(v);
    if (!t || t->numel() != 1 || t->dtype() != DType::f32) return std::nullopt;
    if (t->rank() > 0) {
      auto r = rank_of(partner);
      if (!r || *r < t->rank()) return std::nullopt;
    }
    return t->to_f32_vector()[0];
  }

  std::optional<Proposal> elementwise(size_t sink) {
    if (!eligible(sink)) return std::nullopt;
    std::set<size_t> group = {sink};
    bool grew = true;
    while (grew && group.size() < static_cast<size_t>(kFusedElementwiseMaxSteps)) {
      grew = false;
      for (size_t m : std::vector<size_t>(group.begin(), group.end())) {
        for (const auto& in : g_.nodes[m].inputs) {
          auto pit = prod_.find(in);
          if (pit == prod_.end() || group.count(pit->second) || claimed_.count(pit->second))
            continue;
          if (!eligible(pit->second) || uses_.graph_outputs.count(in)) continue;
          bool inside = true;
          for (size_t r : uses_.readers.at(in)) inside = inside && group.count(r);
          if (!inside) continue;
          std::set<size_t> trial = group;
          trial.insert(pit->second);
          if (!program(trial)) continue;
          group = trial;
          grew = true;
          if (group.size() >= static_cast<size_t>(kFusedElementwiseMaxSteps)) break;
        }
        if (grew) break;
      }
    }
    if (group.size() < 2) return std::nullopt;
    auto prog = program(group);
    if (!prog) return std::nullopt;
    Proposal p;
    p.cand.kind = "elementwise";
    p.members.assign(group.begin(), group.end());
    p.fused = *prog;
    return p;
  }

  /// The FusedElementwise node computing `group` (sink = its last member), or
  /// nullopt when it needs more inputs than the op takes.
  std::optional<Node> program(const std::set<size_t>& group) const {
    std::vector<std::string> inputs;
    std::map<std::string, int64_t> reg;
    std::vector<int64_t> prog;
    std::vector<float> params, consts;
    std::vector<std::pair<int64_t, std::string>> pending;  // resolved after inputs are known
    // First pass: external inputs.
    for (size_t m : group) {
      const Node& n = g_.nodes[m];
      for (size_t k = 0; k < n.inputs.size(); ++k) {
        const std::string& in = n.inputs[k];
        if (in.empty()) continue;
        auto pit = prod_.find(in);
        if (pit != prod_.end() && group.count(pit->second)) continue;
        if ((n.op_type == "Clip" && k > 0) || (n.op_type == "Pow" && k == 1 && scalar(in)))
          continue;
        const std::string partner = n.inputs.size() == 2 ? n.inputs[1 - k] : in;
        if (n.inputs.size() == 2 && immediate(in, partner)) continue;
        if (std::find(inputs.begin(), inputs.end(), in) == inputs.end()) inputs.push_back(in);
      }
    }
    if (inputs.size() > kFusedElementwiseMaxInputs || inputs.empty()) return std::nullopt;
    for (size_t k = 0; k < inputs.size(); ++k) reg[inputs[k]] = static_cast<int64_t>(k);
    int64_t next = static_cast<int64_t>(inputs.size());
    auto operand = [&](const Node& n, size_t k) -> int64_t {
      const std::string& in = n.inputs[k];
      if (auto it = reg.find(in); it != reg.end()) return it->second;
      const std::string partner = n.inputs.size() == 2 ? n.inputs[1 - k] : in;
      auto v = immediate(in, partner);
      consts.push_back(v ? *v : 0.f);
      return -static_cast<int64_t>(consts.size());
    };
    auto emit = [&](ElementwiseOp op, int64_t a, int64_t b, float p0, float p1) {
      prog.insert(prog.end(), {static_cast<int64_t>(op), next, a, b});
      params.push_back(p0);
      params.push_back(p1);
      ++next;
    };
    for (size_t m : group) {
      const Node& n = g_.nodes[m];
      const std::string& op = n.op_type;
      const int64_t a = operand(n, 0);
      static const std::map<std::string, ElementwiseOp> bin = {
          {"Add", ElementwiseOp::add}, {"Sub", ElementwiseOp::sub}, {"Mul", ElementwiseOp::mul},
          {"Div", ElementwiseOp::div}, {"Max", ElementwiseOp::max}, {"Min", ElementwiseOp::min}};
      static const std::map<std::string, ElementwiseOp> un = {
          {"Relu", ElementwiseOp::relu},
          {"Sigmoid", ElementwiseOp::sigmoid},
          {"Tanh", ElementwiseOp::tanh},
          {"Exp", ElementwiseOp::exp},
          {"Log", ElementwiseOp::log},
          {"Sqrt", ElementwiseOp::sqrt},
          {"Reciprocal", ElementwiseOp::reciprocal},
          {"Neg", ElementwiseOp::neg},
          {"Abs", ElementwiseOp::abs},
          {"HardSwish", ElementwiseOp::hard_swish}};
      if (auto it = bin.find(op); it != bin.end()) {
        emit(it->second, a, operand(n, 1), 0.f, 0.f);
      } else if (auto u = un.find(op); u != un.end()) {
        emit(u->second, a, 0, 0.f, 0.f);
      } else if (op == "HardSigmoid") {
        emit(ElementwiseOp::hard_sigmoid, a, 0, n.attr_float("alpha", 0.2f),
             n.attr_float("beta", 0.5f));
      } else if (op == "LeakyRelu") {
        emit(ElementwiseOp::leaky_relu, a, 0, n.attr_float("alpha", 0.01f), 0.f);
      } else if (op == "Clip") {
        auto b = clip_bounds(n);
        emit(ElementwiseOp::clip, a, 0, b->first, b->second);
      } else if (op == "Pow") {
        if (auto e = scalar(n.inputs[1])) {
          // As the runtime's Pow: x·x, x·x·x, x, sqrt for 2, 3, 1, 0.5; else pow in double.
          if (*e == 2)
            emit(ElementwiseOp::square, a, 0, 0.f, 0.f);
          else if (*e == 3)
            emit(ElementwiseOp::cube, a, 0, 0.f, 0.f);
          else if (*e == 1)
            emit(ElementwiseOp::identity, a, 0, 0.f, 0.f);
          else if (*e == 0.5)
            emit(ElementwiseOp::sqrt, a, 0, 0.f, 0.f);
          else
            emit(ElementwiseOp::pow_const, a, 0, static_cast<float>(*e), 0.f);
        } else {
          emit(ElementwiseOp::pow, a, operand(n, 1), 0.f, 0.f);
        }
      } else {
        return std::nullopt;
      }
      reg[n.outputs[0]] = next - 1;
    }
    Node f = make_node("FusedElementwise", "", inputs, {g_.nodes[*group.rbegin()].outputs[0]},
                       "ai.tailor");
    f.set("program", Attribute::of_ints(prog));
    f.set("params", Attribute::of_floats(params));
    f.set("constants", Attribute::of_floats(consts));
    return f;
  }

  const Graph& g_;
  int64_t opset_;
  NameGen& names_;
  Uses uses_;
  std::unordered_map<std::string, size_t> prod_;
  std::unordered_map<std::string, ValueInfo> info_;
  std::set<size_t> claimed_;
};

void collect(const Graph& g, int64_t opset, NameGen& names, std::vector<FusionCandidate>& out) {
  for (auto& p : Finder(g, opset, names).find()) out.push_back(p.cand);
  for (const auto& n : g.nodes)
    for (const auto& [an, a] : n.attributes) {
      if (a.kind == Attribute::Kind::g && a.g) collect(*a.g, opset, names, out);
      for (const auto& sub : a.graphs)
        if (sub) collect(*sub, opset, names, out);
    }
}

void apply(Graph& g, int64_t opset, NameGen& names, const PassOptions& o) {
  for_each_subgraph(g, [&](Graph& sub) { apply(sub, opset, names, o); });
  std::vector<Proposal> props = Finder(g, opset, names).find();
  std::map<size_t, const Proposal*> at_sink;
  std::set<size_t> removed;
  for (const auto& p : props) {
    if (o.fusion_candidates && !o.fusion_candidates->count(p.cand.id)) continue;
    at_sink[p.sink] = &p;
    removed.insert(p.members.begin(), p.members.end());
    for (const auto& [name, t] : p.inits) g.add_initializer(name, t);
  }
  if (removed.empty()) return;
  std::vector<Node> nodes;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (auto it = at_sink.find(i); it != at_sink.end())
      nodes.push_back(it->second->fused);
    else if (!removed.count(i))
      nodes.push_back(std::move(g.nodes[i]));
  }
  g.nodes = std::move(nodes);
}

}  // namespace

std::vector<FusionCandidate> fusion_candidates(const Model& model) {
  std::vector<FusionCandidate> out;
  NameGen names(model.graph);
  collect(model.graph, model.opset, names, out);
  return out;
}

Model fuse(const Model& model, const PassOptions& options) {
  Model out = model;
  detach_subgraphs(out.graph);
  infer_shapes(out);  // ranks and dtypes the rewrites check
  NameGen names(out.graph);
  apply(out.graph, out.opset, names, options);
  if (!out.other_opsets.count("ai.tailor")) out.other_opsets["ai.tailor"] = 1;
  prune_types(out.graph);
  return out;
}

}  // namespace tailor::graph
