// Algebraic simplification and BatchNorm folding. See passes.h.
#include <algorithm>
#include <cmath>

#include "pass_util.h"
#include "tailor/graph/passes.h"
#include "tailor/graph/shape_inference.h"

namespace tailor::graph {
namespace {

using namespace passes;

class Simplifier {
 public:
  Simplifier(Graph& g, int64_t opset, NameGen& names, bool rounded_scales)
      : g_(g), opset_(opset), names_(names), rounded_scales_(rounded_scales) {}

  void run() {
    for (int round = 0; round < 100000; ++round) {
      uses_ = compute_uses(g_);
      prod_ = producers(g_);
      info_.reset();  // inferred again when a rewrite first asks (most rounds never do)
      bool changed = false;
      for (size_t i = 0; i < g_.nodes.size() && !changed; ++i) changed = rewrite(i);
      if (!changed) break;
    }
    for_each_subgraph(g_,
                      [&](Graph& sub) { Simplifier(sub, opset_, names_, rounded_scales_).run(); });
  }

 private:
  const std::unordered_map<std::string, ValueInfo>& info() const {
    if (!info_) info_ = infer_value_info(g_, opset_);
    return *info_;
  }
  std::optional<size_t> rank_of(const std::string& v) const { return passes::rank_of(info(), v); }
  std::optional<DType> dtype_of(const std::string& v) const { return passes::dtype_of(info(), v); }
  /// A one-element constant that broadcasting against x cannot enlarge x.
  std::optional<double> neutral_scalar(const std::string& c, const std::string& x) const {
    const Tensor* t = constant(g_, c);
    if (!t || t->numel() != 1) return std::nullopt;
    if (t->rank() > 0) {
      auto r = rank_of(x);
      if (!r || *r < t->rank()) return std::nullopt;
    }
    if (dtype_of(x) != t->dtype()) return std::nullopt;
    return uniform_value(*t);
  }
  /// The node producing v when v has no other reader, or nullopt.
  std::optional<size_t> sole_producer(const std::string& v, size_t reader) const {
    auto r = uses_.sole_reader(v);
    if (!r || *r != reader) return std::nullopt;
    auto p = prod_.find(v);
    if (p == prod_.end()) return std::nullopt;
    return p->second;
  }
  void erase(size_t i) { g_.nodes.erase(g_.nodes.begin() + static_cast<std::ptrdiff_t>(i)); }
  /// Replaces node i's only output by `x` and removes node i.
  bool forward(size_t i, const std::string& x) {
    const std::string out = g_.nodes[i].outputs[0];
    if (uses_.graph_outputs.count(out) && g_.nodes[i].op_type == "Identity") return false;
    replace_uses(g_, out, x);
    erase(i);
    return true;
  }

  bool rewrite(size_t i) {
    Node& n = g_.nodes[i];
    if (!n.domain.empty() || n.outputs.empty()) return false;
    const std::string& op = n.op_type;
    if (op == "Identity" && n.inputs.size() == 1) {
      if (uses_.graph_outputs.count(n.outputs[0])) return false;
      return forward(i, n.inputs[0]);
    }
    if (op == "Dropout" && !n.inputs.empty()) {
      if (n.outputs.size() > 1 && !n.outputs[1].empty() && uses_.count(n.outputs[1]) > 0)
        return false;
      if (n.inputs.size() > 2 && !n.inputs[2].empty()) {
        const Tensor* tm = constant(g_, n.inputs[2]);
        auto v = tm ? uniform_value(tm->to(DType::i64)) : std::nullopt;
        if (!v || *v != 0) return false;
      }
      if (uses_.graph_outputs.count(n.outputs[0])) {
        n = make_node("Identity", n.name, {n.inputs[0]}, {n.outputs[0]});
        return true;
      }
      return forward(i, n.inputs[0]);
    }
    if ((op == "Mul" || op == "Add") && fold_conv_scale_shift(i)) return true;
    if ((op == "Add" || op == "Sub" || op == "Mul" || op == "Div") && n.inputs.size() == 2) {
      const std::string a = n.inputs[0], b = n.inputs[1];
      const double unit = (op == "Mul" || op == "Div") ? 1.0 : 0.0;
      if (auto v = neutral_scalar(b, a); v && *v == unit) return forward(i, a);
      if ((op == "Add" || op == "Mul") && neutral_scalar(a, b) == std::optional<double>(unit))
        return forward(i, b);
      return false;
    }
    if (op == "Transpose" && n.inputs.size() == 1) {
      const auto* pa = n.find("perm");
      if (!pa) return false;
      auto p = sole_producer(n.inputs[0], i);
      if (!p) return false;
      const Node& inner = g_.nodes[*p];
      const auto* pi = inner.find("perm");
      if (inner.op_type != "Transpose" || !inner.domain.empty() || !pi ||
          pi->ints.size() != pa->ints.size())
        return false;
      std::vector<int64_t> perm(pa->ints.size());
      bool identity = true;
      for (size_t k = 0; k < perm.size(); ++k) {
        const int64_t q = pa->ints[k];
        if (q < 0 || q >= static_cast<int64_t>(perm.size())) return false;
        perm[k] = pi->ints[static_cast<size_t>(q)];
        identity = identity && perm[k] == static_cast<int64_t>(k);
      }
      const std::string x = inner.inputs[0];
      const size_t j = *p;
      if (identity) {
        const std::string out = n.outputs[0];
        replace_uses(g_, out, x);
        erase(i);
        erase(j);
        return true;
      }
      n.inputs[0] = x;
      n.set("perm", Attribute::of_ints(perm));
      erase(j);
      return true;
    }
    if (op == "Reshape" && n.inputs.size() == 2) {
      auto p = sole_producer(n.inputs[0], i);
      if (!p) return false;
      const Node& inner = g_.nodes[*p];
      if (inner.op_type != "Reshape" || !inner.domain.empty() || inner.inputs.empty()) return false;
      const Tensor* s = constant(g_, n.inputs[1]);
      if (!s || s->dtype() != DType::i64 || n.attr_int("allowzero", 0) != 0) return false;
      const Tensor sc = s->contiguous();
      for (int64_t k = 0; k < sc.numel(); ++k)
        if (sc.data<int64_t>()[k] == 0) return false;  // 0 copies a dim of the input, which changes
      n.inputs[0] = inner.inputs[0];
      erase(*p);
      return true;
    }
    if (op == "BatchNormalization" && n.inputs.size() == 5) return fold_batch_norm(i);
    return false;
  }

  /// The Conv/Gemm/ConvTranspose (constant f32 weights, constant f32 bias or none) producing
  /// the input of node i when node i is its only reader (`convs_only`: not a
  /// Gemm); its c_out in `c_out`.
  std::optional<size_t> foldable_producer(size_t i, const std::string& v, int64_t& c_out,
                                          bool convs_only) const {
    auto p = sole_producer(v, i);
    if (!p) return std::nullopt;
    const Node& prod = g_.nodes[*p];
    const bool conv = prod.op_type == "Conv", gemm = prod.op_type == "Gemm",
               convt = prod.op_type == "ConvTranspose";
    if (!prod.domain.empty() || (!conv && !convt && !(gemm && !convs_only)) ||
        prod.inputs.size() < 2 || prod.outputs.size() != 1)
      return std::nullopt;
    const Tensor* w = constant(g_, prod.inputs[1]);
    if (!w || w->dtype() != DType::f32 || w->rank() < 2) return std::nullopt;
    const int64_t group = prod.attr_int("group", 1);
    // (2-D only, as the runtime runs it: a 1-D one keeps its error on its own node.)
    if (convt && (w->rank() != 4 || group < 1 || w->dim(0) % group != 0)) return std::nullopt;
    c_out = conv    ? w->dim(0)
            : convt ? w->dim(1) * group
                    : (prod.attr_int("transB", 0) ? w->dim(0) : w->dim(1));
    if (prod.inputs.size() > 2 && !prod.inputs[2].empty()) {
      const Tensor* b = constant(g_, prod.inputs[2]);
      if (!b || b->dtype() != DType::f32 || b->numel() != c_out) return std::nullopt;
      if (gemm && b->rank() == 2 && b->dim(0) != 1)
        return std::nullopt;  // C one value per output column
    }
    return p;
  }

  /// Per-channel values of a constant that broadcasts along the channel axis
  /// of a conv output of rank `rank` ([C,1,..] or [1,C,1,..]) or a scalar.
  std::optional<std::vector<float>> per_channel(const std::string& v, int64_t c_out,
                                                size_t rank) const {
    const Tensor* t = constant(g_, v);
    if (!t || t->dtype() != DType::f32) return std::nullopt;
    if (t->numel() == 1 && t->rank() <= rank)
      return std::vector<float>(static_cast<size_t>(c_out), t->to_f32_vector()[0]);
    if (t->numel() != c_out) return std::nullopt;
    const bool ok = (t->rank() == rank - 1 && t->dim(0) == c_out) ||
                    (t->rank() == rank && t->dim(0) == 1 && t->dim(1) == c_out);
    if (!ok) return std::nullopt;
    return t->to_f32_vector();
  }

  /// y = x·s + t per output channel, folded into the producer of x. The new
  /// weights and bias are computed in double and rounded to f32 once.
  void fold_affine(size_t i, size_t p, const std::vector<double>& s, const std::vector<double>& t) {
    Node& prod = g_.nodes[p];
    const bool conv = prod.op_type == "Conv", convt = prod.op_type == "ConvTranspose";
    const int64_t c_out = static_cast<int64_t>(s.size());
    const Tensor wc = constant(g_, prod.inputs[1])->contiguous();
    Tensor w2 = Tensor::zeros(DType::f32, wc.shape());
    const float* src = wc.data<float>();
    float* dst = w2.mutable_data<float>();
    if (convt) {  // [c_in, c_out/group, k...]: input row ci feeds group ci/(c_in/group)
      const int64_t c_in = wc.dim(0), cog = wc.dim(1), per = wc.numel() / (c_in * cog);
      const int64_t cig = c_in / (c_out / cog);
      for (int64_t ci = 0; ci < c_in; ++ci)
        for (int64_t j = 0; j < cog; ++j) {
          const double sc = s[static_cast<size_t>(ci / cig * cog + j)];
          for (int64_t k = 0; k < per; ++k) {
            const int64_t at = (ci * cog + j) * per + k;
            dst[at] = static_cast<float>(static_cast<double>(src[at]) * sc);
          }
        }
    } else if (conv || prod.attr_int("transB", 0)) {  // rows are output channels
      const int64_t per = wc.numel() / c_out;
      for (int64_t c = 0; c < c_out; ++c)
        for (int64_t k = 0; k < per; ++k)
          dst[c * per + k] =
              static_cast<float>(static_cast<double>(src[c * per + k]) * s[static_cast<size_t>(c)]);
    } else {  // Gemm B [k, n]
      const int64_t kk = wc.dim(0);
      for (int64_t k = 0; k < kk; ++k)
        for (int64_t c = 0; c < c_out; ++c)
          dst[k * c_out + c] = static_cast<float>(static_cast<double>(src[k * c_out + c]) *
                                                  s[static_cast<size_t>(c)]);
    }
    const bool has_b = prod.inputs.size() > 2 && !prod.inputs[2].empty();
    const std::vector<float> b0 = has_b ? constant(g_, prod.inputs[2])->to_f32_vector()
                                        : std::vector<float>(static_cast<size_t>(c_out), 0.f);
    const double gemm_beta = conv || convt ? 1.0 : prod.attr_float("beta", 1.f);
    std::vector<float> b2(static_cast<size_t>(c_out));
    for (size_t c = 0; c < b2.size(); ++c)
      b2[c] = static_cast<float>(gemm_beta * b0[c] * s[c] + t[c]);
    const std::string out = g_.nodes[i].outputs[0];
    const std::string wname = names_.fresh(prod.inputs[1] + "_folded");
    const std::string bname = names_.fresh(out + "_folded_bias");
    g_.add_initializer(wname, w2);
    g_.add_initializer(bname, Tensor::from_f32({c_out}, b2));
    prod.inputs.resize(3);
    prod.inputs[1] = wname;
    prod.inputs[2] = bname;
    if (!conv && !convt) prod.set("beta", Attribute::of_float(1.f));
    prod.outputs[0] = out;
    erase(i);
  }

  /// BatchNormalization after Conv/Gemm/ConvTranspose (constant weights, no other reader).
  bool fold_batch_norm(size_t i) {
    const Node& bn = g_.nodes[i];
    for (size_t k = 1; k < bn.outputs.size(); ++k)
      if (!bn.outputs[k].empty()) return false;
    if (bn.attr_int("training_mode", 0) != 0) return false;
    int64_t c_out = 0;
    auto p = foldable_producer(i, bn.inputs[0], c_out, false);
    if (!p) return false;
    std::vector<float> prm[4];
    for (int k = 0; k < 4; ++k) {
      const Tensor* t = constant(g_, bn.inputs[static_cast<size_t>(k + 1)]);
      if (!t || t->dtype() != DType::f32 || t->numel() != c_out) return false;
      prm[k] = t->to_f32_vector();
    }
    const double eps = bn.attr_float("epsilon", 1e-5f);
    std::vector<double> s(static_cast<size_t>(c_out)), t(static_cast<size_t>(c_out));
    for (size_t c = 0; c < s.size(); ++c) {
      s[c] = static_cast<double>(prm[0][c]) / std::sqrt(static_cast<double>(prm[3][c]) + eps);
      t[c] = static_cast<double>(prm[1][c]) - static_cast<double>(prm[2][c]) * s[c];
      // A zero variance with ε 0 (or NaN parameters): s·w would turn the
      // weights' zeros into NaN where the BatchNormalization gives ±Inf.
      if (!std::isfinite(s[c]) || !std::isfinite(t[c])) return false;
    }
    fold_affine(i, *p, s, t);
    return true;
  }

  /// Every value is ±2^k with |k| ≤ 64 (scaling by it is exact away from
  /// the ends of the float range).
  static bool all_powers_of_two(const std::vector<float>& v) {
    for (float x : v) {
      int e = 0;
      const float m = std::frexp(x, &e);
      if (!std::isfinite(x) || std::fabs(m) != 0.5f || e < -63 || e > 65) return false;
    }
    return true;
  }

  /// Mul (by powers of two) or Add of a per-channel constant after a Conv
  /// or ConvTranspose: into its weights/bias.
  bool fold_conv_scale_shift(size_t i) {
    const Node& n = g_.nodes[i];
    if (n.inputs.size() != 2 || n.outputs.size() != 1) return false;
    for (int side = 0; side < 2; ++side) {
      const std::string x = n.inputs[static_cast<size_t>(side)],
                        c = n.inputs[static_cast<size_t>(1 - side)];
      if (x == c) return false;
      int64_t c_out = 0;
      auto p = foldable_producer(i, x, c_out, true);
      if (!p) continue;
      auto v = per_channel(c, c_out, constant(g_, g_.nodes[*p].inputs[1])->rank());
      if (!v) continue;
      // A scale folds only when every s is a power of two: then w·s and b·s
      // are exact and the conv's sums scale exactly, so the result is bit for
      // bit the original's. Another scale would make the conv sum rounded
      // products w·s (a different rounding in every layer; on the PP-OCRv4
      // detector, whose Conv → Mul → Add blocks carry such scales, the
      // output moved by ~1e-5 of its range); it stays a Mul, which fusion
      // joins with the elementwise ops around it in the original order
      // (unless PassOptions::fold_rounded_scales asks for the rounded fold).
      if (n.op_type == "Mul" && !rounded_scales_ && !all_powers_of_two(*v)) continue;
      std::vector<double> s(static_cast<size_t>(c_out), 1.0), t(static_cast<size_t>(c_out), 0.0);
      if (n.op_type == "Mul")
        s.assign(v->begin(), v->end());
      else
        t.assign(v->begin(), v->end());
      fold_affine(i, *p, s, t);
      return true;
    }
    return false;
  }

  Graph& g_;
  int64_t opset_;
  NameGen& names_;
  bool rounded_scales_;
  Uses uses_;
  std::unordered_map<std::string, size_t> prod_;
  mutable std::optional<std::unordered_map<std::string, ValueInfo>> info_;
};

}  // namespace

Model simplify(Model model, const PassOptions& options) {
  Model out = std::move(model);
  detach_subgraphs(out.graph);
  infer_shapes(out);  // ranks and dtypes the rewrites check
  NameGen names(out.graph);
  Simplifier(out.graph, out.opset, names, options.fold_rounded_scales).run();
  prune_types(out.graph);
  return out;
}

}  // namespace tailor::graph
