// Strength reduction: an operation replaced by a cheaper one computing the
// same value (bit for bit, except a / Sqrt(b), within one rounding). See
// passes.h (reduce_strength).
#include <cmath>

#include "pass_util.h"
#include "tailor/graph/passes.h"
#include "tailor/graph/shape_inference.h"

namespace tailor::graph {
namespace {

using namespace passes;

class StrengthReducer {
 public:
  StrengthReducer(Graph& g, int64_t opset, NameGen& names) : g_(g), opset_(opset), names_(names) {}

  void run() {
    // Every rewrite keeps the node count or adds one Reciprocal before a Mul
    // that no rule rewrites again, so one sweep in node order suffices; the
    // uses and value info are recomputed for the inserted node.
    uses_ = compute_uses(g_);
    prod_ = producers(g_);
    info_ = infer_value_info(g_, opset_);
    for (size_t i = 0; i < g_.nodes.size(); ++i)
      if (rewrite(i)) {
        uses_ = compute_uses(g_);
        prod_ = producers(g_);
      }
    for_each_subgraph(g_, [&](Graph& sub) { StrengthReducer(sub, opset_, names_).run(); });
  }

 private:
  std::optional<size_t> rank_of(const std::string& v) const { return passes::rank_of(info_, v); }
  std::optional<DType> dtype_of(const std::string& v) const { return passes::dtype_of(info_, v); }
  /// The value of a one-element f32 constant `c` that broadcasting against
  /// the f32 value `x` cannot enlarge (its rank is at most x's), or nullopt.
  std::optional<double> scalar_against(const std::string& c, const std::string& x) const {
    const Tensor* t = constant(g_, c);
    if (!t || t->numel() != 1 || t->dtype() != DType::f32) return std::nullopt;
    if (dtype_of(x) != DType::f32) return std::nullopt;
    if (t->rank() > 0) {
      auto r = rank_of(x);
      if (!r || *r < t->rank()) return std::nullopt;
    }
    return uniform_value(*t);
  }

  /// 1/c element by element when every element of the f32 constant c is a
  /// power of two whose reciprocal is a normal float (then x/c == x·(1/c)
  /// bit for bit: both are the same real number rounded once); else nullopt.
  static std::optional<Tensor> exact_reciprocal(const Tensor& t) {
    if (t.dtype() != DType::f32 || t.numel() == 0) return std::nullopt;
    const Tensor c = t.contiguous();
    Tensor inv = Tensor::zeros(DType::f32, c.shape());
    for (int64_t k = 0; k < c.numel(); ++k) {
      const float v = c.data<float>()[k];
      int e = 0;
      const float m = std::frexp(v, &e);  // v = m·2^e, |m| in [0.5, 1)
      if (!std::isfinite(v) || std::fabs(m) != 0.5f || e < -124 || e > 126) return std::nullopt;
      inv.mutable_data<float>()[k] = 1.0f / v;
    }
    return inv;
  }

  bool rewrite(size_t i) {
    Node& n = g_.nodes[i];
    if (!n.domain.empty() || n.outputs.size() != 1 || n.inputs.size() != 2) return false;
    const std::string op = n.op_type, a = n.inputs[0], b = n.inputs[1];
    if (op == "Mul") {
      for (int side = 0; side < 2; ++side) {
        const std::string& x = side ? b : a;
        const std::string& c = side ? a : b;
        const auto v = scalar_against(c, x);
        if (v == 2.0) {  // x·2 → x + x
          n.op_type = "Add";
          n.inputs = {x, x};
          return true;
        }
        if (v == -1.0) {  // x·(−1) → −x
          n.op_type = "Neg";
          n.inputs = {x};
          return true;
        }
      }
      return false;
    }
    if (op == "Div") {
      if (dtype_of(a) != DType::f32) return false;
      if (const Tensor* t = constant(g_, b)) {
        // x / 2^k → x · 2^−k; the constant keeps its shape, so broadcasting
        // (and the output shape) is unchanged.
        auto inv = exact_reciprocal(*t);
        if (!inv) return false;
        const std::string cname = names_.fresh(b + "_reciprocal");
        g_.add_initializer(cname, *inv);
        n.op_type = "Mul";
        n.inputs = {a, cname};
        return true;
      }
      // a / Sqrt(s) → a · Reciprocal(Sqrt(s)) when the Sqrt has no other reader.
      auto r = uses_.sole_reader(b);
      auto p = prod_.find(b);
      if (!r || *r != i || p == prod_.end()) return false;
      const Node& sq = g_.nodes[p->second];
      if (sq.op_type != "Sqrt" || !sq.domain.empty()) return false;
      const std::string rec = names_.fresh(b + "_reciprocal");
      Node rn = make_node("Reciprocal", names_.fresh(rec), {b}, {rec});
      n.op_type = "Mul";
      n.inputs = {a, rec};
      g_.nodes.insert(g_.nodes.begin() + static_cast<std::ptrdiff_t>(i), std::move(rn));
      return true;
    }
    if (op == "Pow") {
      // The exponent may have another dtype than x; a one-element exponent
      // of rank at most x's leaves the shape alone.
      const Tensor* t = constant(g_, b);
      auto r = rank_of(a);
      if (!t || t->numel() != 1 || dtype_of(a) != DType::f32 ||
          (t->rank() > 0 && (!r || *r < t->rank())))
        return false;
      const auto e = uniform_value(*t);
      if (e == 2.0) {  // Pow(x, 2) → x·x
        n.op_type = "Mul";
        n.inputs = {a, a};
        return true;
      }
      if (e == -1.0) {  // Pow(x, −1) → Reciprocal(x)
        n.op_type = "Reciprocal";
        n.inputs = {a};
        return true;
      }
      return false;
    }
    return false;
  }

  Graph& g_;
  int64_t opset_;
  NameGen& names_;
  Uses uses_;
  std::unordered_map<std::string, size_t> prod_;
  std::unordered_map<std::string, ValueInfo> info_;
};

}  // namespace

Model reduce_strength(Model model, const PassOptions&) {
  Model out = std::move(model);
  detach_subgraphs(out.graph);
  infer_shapes(out);  // ranks and dtypes the rewrites check
  NameGen names(out.graph);
  StrengthReducer(out.graph, out.opset, names).run();
  prune_types(out.graph);
  return out;
}

}  // namespace tailor::graph
