#include "tailor/graph/shape_inference.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <set>
#include <unordered_map>

#include "shape_rules.h"
#include "tailor/core/error.h"
#include "tailor/graph/verify.h"

namespace tailor::graph {
namespace {

using shape_rules::Info;

/// Merges what a rule found for a value into what is known of it (a recorded
/// type): the dtype is kept when known; the rule's shape replaces one of
/// another rank, else each dim is the rule's when known or when the old one
/// is neither known nor symbolic. Elements and constants are the rule's.
void merge_into(Info& known, const Info& rule) {
  if (!known.dtype) known.dtype = rule.dtype;
  if (rule.shape) {
    if (!known.shape || known.shape->size() != rule.shape->size()) {
      known.shape = rule.shape;
    } else {
      for (size_t d = 0; d < rule.shape->size(); ++d) {
        const Dim& nd = (*rule.shape)[d];
        Dim& od = (*known.shape)[d];
        if (nd.is_known() || (!od.is_known() && od.symbol.empty())) od = nd;
      }
    }
  }
  known.value = rule.value;
  known.constant = rule.constant;
}

/// Walks one graph in node order: what is known of each value, from the
/// recorded types, the initializers and the rule of each node's op
/// (shape_rules.h). Ops without a rule leave their outputs as recorded.
class Inference {
 public:
  Inference(const Graph& g, int64_t opset) : g_(g), opset_(opset) {}

  void run() {
    info_.reserve(g_.types.size() + g_.initializers.size() + g_.nodes.size());
    for (const auto& [name, t] : g_.initializers)
      info_.emplace(name, shape_rules::info_of_tensor(t));
    for (const auto& [name, t] : g_.types)  // an initializer's tensor wins
      info_.try_emplace(name, Info{t.dtype, t.shape, std::nullopt, {}});
    for (const Node& n : g_.nodes) {
      const shape_rules::Rule rule = shape_rules::find_rule(n.domain, n.op_type);
      if (!rule) continue;
      std::vector<Info> outs = rule(shape_rules::NodeContext(n, opset_, info_));
      for (size_t o = 0; o < outs.size() && o < n.outputs.size(); ++o) {
        if (n.outputs[o].empty()) continue;
        merge_into(info_[n.outputs[o]], outs[o]);
      }
    }
  }

  const Info* get(const std::string& name) const {
    auto it = info_.find(name);
    return it == info_.end() ? nullptr : &it->second;
  }

  /// Hands every value with a known dtype or shape to `sink` (moved out:
  /// nothing is left known).
  void drain(const TypeSink& sink) {
    while (!info_.empty()) {
      auto node = info_.extract(info_.begin());
      Info& i = node.mapped();
      if (i.dtype || i.shape) sink(std::move(node.key()), ValueType{i.dtype, std::move(i.shape)});
    }
  }

 private:
  const Graph& g_;
  int64_t opset_;
  std::unordered_map<std::string, Info> info_;
};

}  // namespace

void for_each_inferred_type(const Graph& g, int64_t opset, const TypeSink& sink) {
  Inference inf(g, opset);
  inf.run();
  inf.drain(sink);
}

std::unordered_map<std::string, ValueType> infer_types(const Graph& g, int64_t opset) {
  std::unordered_map<std::string, ValueType> out;
  for_each_inferred_type(g, opset, [&](std::string&& name, ValueType&& t) {
    out.emplace(std::move(name), std::move(t));
  });
  return out;
}

bool has_shape_rule(const std::string& domain, const std::string& op_type) {
  return shape_rules::find_rule(domain, op_type) != nullptr;
}

void infer_shapes(Model& model) {
  Graph& g = model.graph;
  Inference inf(g, model.opset);
  inf.run();
  for (const Node& n : g.nodes)
    for (const auto& o : n.outputs) {
      const Info* i = o.empty() ? nullptr : inf.get(o);
      if (!i || (!i->dtype && !i->shape)) continue;
      g.types[o] = ValueType{i->dtype, i->shape};
    }
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
  Inference inf(g, model.opset);
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
        if (!shape_rules::is_number(d)) all = false;
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
