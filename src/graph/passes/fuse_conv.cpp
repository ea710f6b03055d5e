#include "tailor/graph/passes/fuse_conv.h"

#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <unordered_map>

#include "tailor/core/error.h"
#include "tailor/graph/verify.h"

namespace tailor::graph {
namespace {

class Fuser {
 public:
  explicit Fuser(Model& m) : m_(m), g_(m.graph) {}

  int run() {
    collect_constants();
    count_uses();
    int removed = 0;
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      if (dead_.count(i)) continue;
      const Node& n = g_.nodes[i];
      if (n.op_type == "Conv" && n.domain.empty()) removed += fuse(i);
    }
    std::vector<Node> kept;
    for (size_t i = 0; i < g_.nodes.size(); ++i)
      if (!dead_.count(i)) kept.push_back(std::move(g_.nodes[i]));
    g_.nodes = std::move(kept);
    if (removed > 0) drop_unused_constants();
    debug_verify(m_);
    return removed;
  }

 private:
  /// Removes initializers and Constant nodes nothing reads any more (the
  /// weights the fused convolutions replaced).
  void drop_unused_constants() {
    std::set<std::string> used(g_.outputs.begin(), g_.outputs.end());
    std::function<void(const Graph&)> walk = [&](const Graph& g) {
      for (const Node& n : g.nodes) {
        used.insert(n.inputs.begin(), n.inputs.end());
        for (const auto& [k, a] : n.attributes) {
          if (a.kind == Attribute::Kind::g) walk(*a.g);
          for (const auto& sub : a.graphs) walk(*sub);
        }
      }
      used.insert(g.outputs.begin(), g.outputs.end());
    };
    walk(g_);
    std::vector<Node> kept;
    for (Node& n : g_.nodes) {
      if (n.op_type == "Constant" && n.domain.empty() && n.outputs.size() == 1 &&
          !used.count(n.outputs[0])) {
        g_.types.erase(n.outputs[0]);
        continue;
      }
      kept.push_back(std::move(n));
    }
    g_.nodes = std::move(kept);
    std::vector<std::string> order;
    for (const auto& name : g_.initializer_order) {
      if (used.count(name)) {
        order.push_back(name);
      } else {
        g_.initializers.erase(name);
        g_.types.erase(name);
      }
    }
    g_.initializer_order = std::move(order);
  }

  void collect_constants() {
    for (const auto& [name, t] : g_.initializers) consts_[name] = t;
    for (const Node& n : g_.nodes)
      if (n.op_type == "Constant" && n.domain.empty() && n.outputs.size() == 1)
        if (const Attribute* a = n.find("value"); a && a->kind == Attribute::Kind::t)
          consts_[n.outputs[0]] = a->t;
  }

  void uses_of(const Graph& g) {
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      const Node& n = g.nodes[i];
      for (const auto& in : n.inputs)
        if (!in.empty()) {
          ++uses_[in];
          if (&g == &g_) consumers_[in].push_back(i);
        }
      for (const auto& [k, a] : n.attributes) {
        if (a.kind == Attribute::Kind::g) outer_uses(*a.g);
        for (const auto& s : a.graphs) outer_uses(*s);
      }
    }
  }
  void outer_uses(const Graph& g) {
    // Anything a subgraph reads counts as an extra (unfusable) use.
    for (const Node& n : g.nodes) {
      for (const auto& in : n.inputs) uses_[in] += 2;
      for (const auto& [k, a] : n.attributes) {
        if (a.kind == Attribute::Kind::g) outer_uses(*a.g);
        for (const auto& s : a.graphs) outer_uses(*s);
      }
    }
    for (const auto& o : g.outputs) uses_[o] += 2;
  }
  void count_uses() {
    uses_of(g_);
    for (const auto& o : g_.outputs) uses_[o] += 2;
  }

  /// The single live consumer of `v`, or -1.
  long only_consumer(const std::string& v) {
    if (uses_[v] != 1) return -1;
    for (size_t c : consumers_[v])
      if (!dead_.count(c)) return static_cast<long>(c);
    return -1;
  }

  /// Per-channel values of constant `name` for `channels` outputs (rank `r`
  /// output, channel axis 1), or empty when it is not such a constant.
  std::vector<float> channel_values(const std::string& name, int64_t channels, size_t r) {
    auto it = consts_.find(name);
    if (it == consts_.end() || it->second.dtype() != DType::f32) return {};
    const Tensor& t = it->second;
    if (t.numel() == 1)
      return std::vector<float>(static_cast<size_t>(channels), t.to_f32_vector()[0]);
    if (t.numel() != channels || t.rank() > r) return {};
    // Left-pad to rank r; the one non-1 dim must be axis 1.
    const size_t off = r - t.rank();
    for (size_t d = 0; d < t.rank(); ++d)
      if (t.dim(d) != 1 && d + off != 1) return {};
    return t.to_f32_vector();
  }

  bool scalar_const(const std::string& name, float want) {
    auto it = consts_.find(name);
    return it != consts_.end() && it->second.numel() == 1 && it->second.dtype() == DType::f32 &&
           it->second.to_f32_vector()[0] == want;
  }

  int fuse(size_t ci) {
    Node conv = g_.nodes[ci];
    if (conv.inputs.size() < 2) return 0;
    auto wit = consts_.find(conv.inputs[1]);
    if (wit == consts_.end() || wit->second.dtype() != DType::f32 || wit->second.rank() < 3)
      return 0;
    const Tensor& w0 = wit->second;
    const int64_t c_out = w0.dim(0);
    const size_t rank = w0.rank();
    std::vector<float> w = w0.to_f32_vector();
    std::vector<float> b(static_cast<size_t>(c_out), 0.0f);
    if (conv.inputs.size() > 2 && !conv.inputs[2].empty()) {
      auto bit = consts_.find(conv.inputs[2]);
      if (bit == consts_.end() || bit->second.numel() != c_out || bit->second.dtype() != DType::f32)
        return 0;
      b = bit->second.to_f32_vector();
    }
    const int64_t per = static_cast<int64_t>(w.size()) / c_out;
    std::string out = conv.outputs.at(0);
    std::vector<size_t> fused;
    // Affine steps.
    for (;;) {
      const long c = only_consumer(out);
      if (c < 0) break;
      const Node& n = g_.nodes[static_cast<size_t>(c)];
      if (n.domain.empty() && n.op_type == "BatchNormalization") {
        // Inference BatchNormalization: y = (x − mean)·s + B, s = scale/sqrt(var + eps).
        if (n.inputs.size() != 5 || n.outputs.size() != 1 || n.inputs[0] != out ||
            n.attr_int("training_mode", 0) != 0)
          break;
        std::vector<float> p[4];
        bool ok = true;
        for (int k = 0; k < 4 && ok; ++k) {
          auto it = consts_.find(n.inputs[static_cast<size_t>(k + 1)]);
          ok = it != consts_.end() && it->second.dtype() == DType::f32 &&
               it->second.numel() == c_out;
          if (ok) p[k] = it->second.to_f32_vector();
        }
        if (!ok) break;
        const float eps = n.attr_float("epsilon", 1e-5f);
        for (int64_t o = 0; o < c_out; ++o) {
          const size_t u = static_cast<size_t>(o);
          const float sc = p[0][u] / std::sqrt(p[3][u] + eps);
          for (int64_t k = 0; k < per; ++k) w[static_cast<size_t>(o * per + k)] *= sc;
          b[u] = (b[u] - p[2][u]) * sc + p[1][u];
        }
        fused.push_back(static_cast<size_t>(c));
        out = n.outputs.at(0);
        continue;
      }
      if (!n.domain.empty() || (n.op_type != "Mul" && n.op_type != "Add") || n.inputs.size() != 2)
        break;
      const std::string& other = n.inputs[0] == out ? n.inputs[1] : n.inputs[0];
      if (other == out) break;
      const std::vector<float> v = channel_values(other, c_out, rank);
      if (v.empty()) break;
      if (n.op_type == "Mul") {
        for (int64_t o = 0; o < c_out; ++o) {
          for (int64_t k = 0; k < per; ++k)
            w[static_cast<size_t>(o * per + k)] *= v[static_cast<size_t>(o)];
          b[static_cast<size_t>(o)] *= v[static_cast<size_t>(o)];
        }
      } else {
        for (int64_t o = 0; o < c_out; ++o) b[static_cast<size_t>(o)] += v[static_cast<size_t>(o)];
      }
      fused.push_back(static_cast<size_t>(c));
      out = n.outputs.at(0);
    }
    // One activation.
    std::string act = "none";
    float alpha = 0, beta = 0;
    const long c = only_consumer(out);
    if (c >= 0) {
      const Node& n = g_.nodes[static_cast<size_t>(c)];
      if (n.domain.empty()) {
        if (n.op_type == "Relu") {
          act = "relu";
        } else if (n.op_type == "Sigmoid") {
          act = "sigmoid";
        } else if (n.op_type == "HardSigmoid") {
          act = "hard_sigmoid", alpha = n.attr_float("alpha", 0.2f),
          beta = n.attr_float("beta", 0.5f);
        } else if (n.op_type == "HardSwish") {
          act = "hard_swish", alpha = 1.0f / 6, beta = 0.5f;
        } else if (n.op_type == "LeakyRelu") {
          act = "leaky_relu", alpha = n.attr_float("alpha", 0.01f);
        } else if (n.op_type == "Clip") {
          float lo = -INFINITY, hi = INFINITY;
          bool ok = true;
          if (m_.opset < 11) {
            lo = n.attr_float("min", lo), hi = n.attr_float("max", hi);
          } else {
            for (size_t k = 1; k < n.inputs.size(); ++k) {
              if (n.inputs[k].empty()) continue;
              auto it = consts_.find(n.inputs[k]);
              if (it == consts_.end() || it->second.numel() != 1 ||
                  it->second.dtype() != DType::f32)
                ok = false;
              else
                (k == 1 ? lo : hi) = it->second.to_f32_vector()[0];
            }
          }
          if (ok) act = "clip", alpha = lo, beta = hi;
        }
        if (act != "none") {
          fused.push_back(static_cast<size_t>(c));
          out = n.outputs.at(0);
        }
      }
    }
    if (act == "none") {
      if (auto hs = hard_swish_pattern(out)) {
        act = "hard_swish", alpha = 1.0f / 6, beta = 0.5f;
        fused.insert(fused.end(), hs->first.begin(), hs->first.end());
        out = hs->second;
      }
    }
    if (fused.empty()) return 0;
    Node f = conv;
    f.op_type = "FusedConv";
    f.domain = "ai.tailor";
    const std::string base = conv.name.empty() ? conv.outputs[0] : conv.name;
    const std::string wname = unique(base + ".fused_weight"), bname = unique(base + ".fused_bias");
    g_.add_initializer(wname, Tensor::from_f32(w0.shape(), w));
    g_.add_initializer(bname, Tensor::from_f32({c_out}, b));
    consts_[wname] = g_.initializers[wname];
    f.inputs = {conv.inputs[0], wname, bname};
    f.outputs = {out};
    f.set("activation", Attribute::of_string(act));
    f.set("alpha", Attribute::of_float(alpha));
    f.set("beta", Attribute::of_float(beta));
    g_.nodes[ci] = f;
    for (size_t k : fused) dead_.insert(k);
    // Types of the removed intermediates go; the fused node's output keeps its own.
    g_.types.erase(conv.outputs[0]);
    for (size_t k : fused)
      for (const auto& o : g_.nodes[k].outputs)
        if (o != out) g_.types.erase(o);
    m_.other_opsets.emplace("ai.tailor", 1);
    return static_cast<int>(fused.size());
  }

  /// y ─► Add(y, 3) ─► Clip(0, 6) ─► Mul(y, ·) ─► Div(·, 6) | Mul(·, 1/6):
  /// the nodes and the final output, or nullopt.
  std::optional<std::pair<std::vector<size_t>, std::string>> hard_swish_pattern(
      const std::string& y) {
    if (uses_[y] != 2) return std::nullopt;
    std::vector<size_t> cs;
    for (size_t c : consumers_[y])
      if (!dead_.count(c)) cs.push_back(c);
    if (cs.size() != 2) return std::nullopt;
    for (int swap = 0; swap < 2; ++swap) {
      const size_t ai = cs[swap], mi = cs[1 - swap];
      const Node& add = g_.nodes[ai];
      const Node& mul = g_.nodes[mi];
      if (add.op_type != "Add" || mul.op_type != "Mul" || !add.domain.empty() ||
          !mul.domain.empty())
        continue;
      if (add.inputs.size() != 2 ||
          !scalar_const(add.inputs[0] == y ? add.inputs[1] : add.inputs[0], 3.0f))
        continue;
      const long ci = only_consumer(add.outputs[0]);
      if (ci < 0 || static_cast<size_t>(ci) == mi) continue;
      const Node& clip = g_.nodes[static_cast<size_t>(ci)];
      if (clip.op_type != "Clip" || !clip.domain.empty()) continue;
      float lo = -INFINITY, hi = INFINITY;
      if (m_.opset < 11) {
        lo = clip.attr_float("min", lo), hi = clip.attr_float("max", hi);
      } else {
        if (clip.inputs.size() < 3 || !scalar_const(clip.inputs[1], 0.0f) ||
            !scalar_const(clip.inputs[2], 6.0f))
          continue;
        lo = 0, hi = 6;
      }
      if (lo != 0.0f || hi != 6.0f) continue;
      const std::string& co = clip.outputs[0];
      if (mul.inputs.size() != 2 || !((mul.inputs[0] == y && mul.inputs[1] == co) ||
                                      (mul.inputs[1] == y && mul.inputs[0] == co)))
        continue;
      if (uses_[co] != 1) continue;
      const long di = only_consumer(mul.outputs[0]);
      if (di < 0) continue;
      const Node& div = g_.nodes[static_cast<size_t>(di)];
      if (!div.domain.empty() || div.inputs.size() != 2 || div.inputs[0] != mul.outputs[0])
        continue;
      const bool ok = (div.op_type == "Div" && scalar_const(div.inputs[1], 6.0f)) ||
                      (div.op_type == "Mul" && scalar_const(div.inputs[1], 1.0f / 6));
      if (!ok) continue;
      return std::pair{
          std::vector<size_t>{ai, static_cast<size_t>(ci), mi, static_cast<size_t>(di)},
          div.outputs[0]};
    }
    return std::nullopt;
  }

  std::string unique(const std::string& name) {
    std::string n = name;
    for (int k = 2; g_.initializers.count(n) || consts_.count(n) || uses_.count(n); ++k)
      n = name + "#" + std::to_string(k);
    return n;
  }

  Model& m_;
  Graph& g_;
  std::unordered_map<std::string, Tensor> consts_;
  std::unordered_map<std::string, int> uses_;
  std::unordered_map<std::string, std::vector<size_t>> consumers_;
  std::set<size_t> dead_;
};

}  // namespace

int fuse_conv_epilogues(Model& model) {
  return Fuser(model).run();
}

}  // namespace tailor::graph
