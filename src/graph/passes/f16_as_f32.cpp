#include "tailor/graph/passes/f16_as_f32.h"

#include <algorithm>
#include <functional>
#include <map>
#include <queue>
#include <set>
#include <unordered_map>

#include "tailor/core/error.h"

namespace tailor::graph {
namespace {

constexpr int64_t kOnnxFloat = 1;     // TensorProto.FLOAT
constexpr int64_t kOnnxFloat16 = 10;  // TensorProto.FLOAT16

void for_each_subgraph(Node& n, const std::function<void(Graph&)>& fn) {
  for (auto& [name, a] : n.attributes) {
    if (a.kind == Attribute::Kind::g && a.g) fn(*a.g);
    for (auto& sub : a.graphs)
      if (sub) fn(*sub);
  }
}

/// Outer-scope names a subgraph reads, as extra dependencies of its node.
void free_names(const Graph& g, std::set<std::string>& out) {
  std::set<std::string> defined(g.inputs.begin(), g.inputs.end());
  for (const auto& [name, t] : g.initializers) defined.insert(name);
  for (const Node& n : g.nodes)
    for (const auto& o : n.outputs) defined.insert(o);
  auto use = [&](const std::string& v) {
    if (!v.empty() && !defined.count(v)) out.insert(v);
  };
  for (const Node& n : g.nodes) {
    for (const auto& in : n.inputs) use(in);
    for (const auto& [an, a] : n.attributes) {
      std::set<std::string> inner;
      if (a.kind == Attribute::Kind::g && a.g) free_names(*a.g, inner);
      for (const auto& sub : a.graphs)
        if (sub) free_names(*sub, inner);
      for (const auto& v : inner) use(v);
    }
  }
  for (const auto& o : g.outputs) use(o);
}

class F16Rewriter {
 public:
  int run(Graph& g, bool main) {
    int changed = 0;
    // Initializers.
    for (auto& [name, t] : g.initializers) {
      if (t.dtype() != DType::f16) continue;
      t = t.to(DType::f32);
      floats_.insert(name);
      ++changed;
    }
    for (const auto& [name, t] : g.initializers)
      if (t.dtype() == DType::f32) floats_.insert(name);
    for (const auto& [name, vt] : g.types)
      if (vt.dtype && (*vt.dtype == DType::f16 || *vt.dtype == DType::f32)) floats_.insert(name);
    // f16 graph inputs: cast to f32 on entry.
    std::vector<Node> entry;
    for (auto& in : g.inputs) {
      const ValueType* vt = g.type_of(in);
      if (!main || !vt || vt->dtype != DType::f16) continue;
      Node c;
      c.op_type = "Cast";
      c.name = in + "__f16_to_f32";
      c.inputs = {in};
      c.outputs = {in + "__f32"};
      c.set("to", Attribute::of_int(kOnnxFloat));
      rename_[in] = c.outputs[0];
      entry.push_back(std::move(c));
      ++changed;
    }
    std::set<std::string> outputs(g.outputs.begin(), g.outputs.end());
    std::vector<Node> kept = std::move(entry);
    for (Node& n : g.nodes) {
      for (auto& in : n.inputs) {
        auto it = rename_.find(in);
        if (it != rename_.end()) in = it->second;
      }
      for_each_subgraph(n, [&](Graph& sub) { changed += run(sub, false); });
      if (n.domain.empty() && n.op_type == "Constant") {
        if (Attribute* a = find_mut(n, "value");
            a && a->kind == Attribute::Kind::t && a->t.dtype() == DType::f16) {
          a->t = a->t.to(DType::f32);
          ++changed;
        }
      }
      if (n.domain.empty() && n.op_type == "ConstantOfShape") {
        if (Attribute* a = find_mut(n, "value");
            a && a->kind == Attribute::Kind::t && a->t.dtype() == DType::f16) {
          a->t = a->t.to(DType::f32);
          ++changed;
        }
      }
      if (n.domain.empty() && n.op_type == "Cast" && n.inputs.size() == 1 &&
          n.outputs.size() == 1) {
        const int64_t to = n.attr_int("to", 0);
        if (to == kOnnxFloat16 || to == kOnnxFloat) {
          if (to == kOnnxFloat16) ++changed;
          floats_.insert(n.outputs[0]);
          if (floats_.count(n.inputs[0]) && !outputs.count(n.outputs[0])) {
            rename_[n.outputs[0]] = n.inputs[0];  // a float-to-float cast: drop it
            g.types.erase(n.outputs[0]);
            continue;
          }
          n.set("to", Attribute::of_int(kOnnxFloat));
        }
      }
      kept.push_back(std::move(n));
    }
    g.nodes = std::move(kept);
    for (auto& o : g.outputs) {
      auto it = rename_.find(o);
      if (it != rename_.end()) o = it->second;  // cannot happen for kept outputs; safety
    }
    // f16 graph outputs: cast back on exit.
    if (main) {
      for (auto& o : g.outputs) {
        const ValueType* vt = g.type_of(o);
        if (!vt || vt->dtype != DType::f16) continue;
        const std::string inner = o + "__f32";
        for (Node& n : g.nodes) {
          for (auto& in : n.inputs)
            if (in == o) in = inner;
          for (auto& out : n.outputs)
            if (out == o) out = inner;
        }
        Node c;
        c.op_type = "Cast";
        c.name = o + "__f32_to_f16";
        c.inputs = {inner};
        c.outputs = {o};
        c.set("to", Attribute::of_int(kOnnxFloat16));
        g.nodes.push_back(std::move(c));
        ++changed;
      }
    }
    for (auto& [name, vt] : g.types) {
      if (vt.dtype != DType::f16) continue;
      const bool io =
          main && (std::find(g.inputs.begin(), g.inputs.end(), name) != g.inputs.end() ||
                   std::find(g.outputs.begin(), g.outputs.end(), name) != g.outputs.end());
      if (!io) vt.dtype = DType::f32;
    }
    if (main)
      for (const auto& in : g.inputs)
        if (rename_.count(in)) g.types[rename_[in]] = ValueType{DType::f32, g.types[in].shape};
    return changed;
  }

 private:
  static Attribute* find_mut(Node& n, const std::string& name) {
    for (auto& [k, a] : n.attributes)
      if (k == name) return &a;
    return nullptr;
  }
  std::set<std::string> floats_;
  std::unordered_map<std::string, std::string> rename_;
};

}  // namespace

void sort_topologically(Graph& g) {
  for (Node& n : g.nodes) for_each_subgraph(n, [](Graph& sub) { sort_topologically(sub); });
  const size_t n = g.nodes.size();
  std::unordered_map<std::string, size_t> producer;
  for (size_t i = 0; i < n; ++i)
    for (const auto& o : g.nodes[i].outputs)
      if (!o.empty()) producer.emplace(o, i);
  std::vector<std::vector<size_t>> readers(n);
  std::vector<size_t> pending(n, 0);
  for (size_t i = 0; i < n; ++i) {
    std::set<std::string> deps(g.nodes[i].inputs.begin(), g.nodes[i].inputs.end());
    for (const auto& [an, a] : g.nodes[i].attributes) {
      if (a.kind == Attribute::Kind::g && a.g) free_names(*a.g, deps);
      for (const auto& sub : a.graphs)
        if (sub) free_names(*sub, deps);
    }
    std::set<size_t> from;
    for (const auto& d : deps) {
      auto it = producer.find(d);
      if (!d.empty() && it != producer.end() && it->second != i) from.insert(it->second);
    }
    pending[i] = from.size();
    for (size_t p : from) readers[p].push_back(i);
  }
  std::priority_queue<size_t, std::vector<size_t>, std::greater<>> ready;
  for (size_t i = 0; i < n; ++i)
    if (pending[i] == 0) ready.push(i);
  std::vector<size_t> order;
  order.reserve(n);
  while (!ready.empty()) {
    const size_t i = ready.top();
    ready.pop();
    order.push_back(i);
    for (size_t r : readers[i])
      if (--pending[r] == 0) ready.push(r);
  }
  if (order.size() != n) {
    for (size_t i = 0; i < n; ++i)
      if (pending[i] > 0)
        throw Error(g.name.empty() ? "graph" : "graph '" + g.name + "'",
                    g.node_label(i) +
                        " is on a cycle (or reads a value produced after it "
                        "that depends on it): no topological order exists");
  }
  std::vector<Node> sorted;
  sorted.reserve(n);
  for (size_t i : order) sorted.push_back(std::move(g.nodes[i]));
  g.nodes = std::move(sorted);
}

int compute_f16_as_f32(Model& model) {
  F16Rewriter r;
  return r.run(model.graph, true);
}

}  // namespace tailor::graph
