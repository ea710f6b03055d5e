#include "pass_util.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string_view>
#include <unordered_set>

#include "tailor/core/error.h"
#include "tailor/graph/shape_inference.h"

namespace tailor::graph::passes {

void detach_subgraphs(Graph& g) {
  for (auto& n : g.nodes)
    for (auto& [name, a] : n.attributes) {
      if (a.kind == Attribute::Kind::g && a.g) {
        a.g = std::make_shared<Graph>(*a.g);
        detach_subgraphs(*a.g);
      }
      for (auto& sub : a.graphs)
        if (sub) {
          sub = std::make_shared<Graph>(*sub);
          detach_subgraphs(*sub);
        }
    }
}

bool has_subgraph(const Node& n) {
  for (const auto& [name, a] : n.attributes)
    if (a.kind == Attribute::Kind::g || a.kind == Attribute::Kind::graphs) return true;
  return false;
}

std::optional<size_t> Uses::sole_reader(const std::string& v) const {
  if (graph_outputs.count(v)) return std::nullopt;
  auto it = readers.find(v);
  if (it == readers.end() || it->second.size() != 1) return std::nullopt;
  return it->second[0];
}

Uses compute_uses(const Graph& g) {
  Uses u;
  u.readers.reserve(g.nodes.size() * 2);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    // One entry per reading node: an input read twice (Mul(x, x)) counts
    // once; a node has a few inputs, so earlier ones are searched in place.
    for (auto in = n.inputs.begin(); in != n.inputs.end(); ++in)
      if (!in->empty() && std::find(n.inputs.begin(), in, *in) == in) u.readers[*in].push_back(i);
    if (has_subgraph(n))
      for (const auto& v : subgraph_free_names(n))
        if (std::find(n.inputs.begin(), n.inputs.end(), v) == n.inputs.end())
          u.readers[v].push_back(i);
  }
  u.graph_outputs.insert(g.outputs.begin(), g.outputs.end());
  return u;
}

namespace {
void replace_in_subgraph(Graph& g, const std::string& from, const std::string& to) {
  // A subgraph that defines `from` itself shadows it: leave it alone.
  for (const auto& in : g.inputs)
    if (in == from) return;
  if (g.initializers.count(from)) return;
  for (auto& n : g.nodes) {
    for (auto& in : n.inputs)
      if (in == from) in = to;
    for (auto& [an, a] : n.attributes) {
      if (a.kind == Attribute::Kind::g && a.g) replace_in_subgraph(*a.g, from, to);
      for (auto& sub : a.graphs)
        if (sub) replace_in_subgraph(*sub, from, to);
    }
  }
  for (auto& o : g.outputs)
    if (o == from) o = to;
}
}  // namespace

void replace_uses(Graph& g, const std::string& from, const std::string& to) {
  for (auto& n : g.nodes) {
    for (auto& in : n.inputs)
      if (in == from) in = to;
    for (auto& [an, a] : n.attributes) {
      if (a.kind == Attribute::Kind::g && a.g) replace_in_subgraph(*a.g, from, to);
      for (auto& sub : a.graphs)
        if (sub) replace_in_subgraph(*sub, from, to);
    }
  }
  if (std::find(g.outputs.begin(), g.outputs.end(), from) != g.outputs.end()) {
    // Keep the interface name: from = Identity(to), appended after everything.
    g.nodes.push_back(make_node("Identity", from + "_identity", {to}, {from}));
  }
}

std::unordered_map<std::string, size_t> producers(const Graph& g) {
  std::unordered_map<std::string, size_t> p;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (const auto& o : g.nodes[i].outputs)
      if (!o.empty()) p[o] = i;
  return p;
}

const Tensor* constant(const Graph& g, const std::string& v) {
  if (v.empty()) return nullptr;
  auto it = g.initializers.find(v);
  return it == g.initializers.end() ? nullptr : &it->second;
}

std::optional<double> uniform_value(const Tensor& t) {
  if (t.numel() == 0) return std::nullopt;
  const Tensor c = t.contiguous();
  std::vector<double> v(static_cast<size_t>(c.numel()));
  switch (c.dtype()) {
    case DType::f32:
      for (size_t i = 0; i < v.size(); ++i) v[i] = c.data<float>()[i];
      break;
    case DType::f64:
      for (size_t i = 0; i < v.size(); ++i) v[i] = c.data<double>()[i];
      break;
    case DType::i64:
      for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(c.data<int64_t>()[i]);
      break;
    case DType::i32:
      for (size_t i = 0; i < v.size(); ++i) v[i] = c.data<int32_t>()[i];
      break;
    default:
      return std::nullopt;
  }
  for (double x : v)
    if (!(x == v[0])) return std::nullopt;
  return v[0];
}

std::unordered_map<std::string, ValueInfo> infer_value_info(const Graph& g, int64_t opset) {
  std::unordered_map<std::string, ValueInfo> info;
  info.reserve(g.types.size() + g.initializers.size() + g.nodes.size());
  for_each_inferred_type(g, opset, [&](std::string&& name, ValueType&& t) {
    info.emplace(std::move(name),
                 ValueInfo{t.dtype, t.shape ? std::optional(t.shape->size()) : std::nullopt});
  });
  return info;
}

NameGen::NameGen(const Graph& root) {
  collect(root);
}

void NameGen::collect(const Graph& g) {
  used_.insert(g.inputs.begin(), g.inputs.end());
  used_.insert(g.outputs.begin(), g.outputs.end());
  for (const auto& [name, t] : g.initializers) used_.insert(name);
  for (const auto& [name, t] : g.types) used_.insert(name);
  for (const auto& n : g.nodes) {
    used_.insert(n.outputs.begin(), n.outputs.end());
    if (!n.name.empty()) used_.insert(n.name);
    for (const auto& [an, a] : n.attributes) {
      if (a.kind == Attribute::Kind::g && a.g) collect(*a.g);
      for (const auto& sub : a.graphs)
        if (sub) collect(*sub);
    }
  }
}

std::string NameGen::fresh(const std::string& base) {
  std::string name = base;
  for (int k = 1; used_.count(name); ++k) name = base + "_" + std::to_string(k);
  used_.insert(name);
  return name;
}

void erase_nodes(Graph& g, const std::set<size_t>& dead) {
  if (dead.empty()) return;
  std::vector<Node> kept;
  kept.reserve(g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (!dead.count(i)) kept.push_back(std::move(g.nodes[i]));
  g.nodes = std::move(kept);
}

std::optional<int64_t> norm_axis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) return std::nullopt;
  return axis < 0 ? axis + rank : axis;
}

std::optional<std::vector<int64_t>> reduce_axes(const Graph& g, const Node& n, int64_t opset) {
  const bool from_input = n.op_type == "ReduceSum" ? opset >= 13 : opset >= 18;
  if (from_input && n.inputs.size() > 1 && !n.inputs[1].empty()) {
    const Tensor* t = constant(g, n.inputs[1]);
    if (!t || t->dtype() != DType::i64) return std::nullopt;
    const Tensor c = t->contiguous();
    return std::vector<int64_t>(c.data<int64_t>(), c.data<int64_t>() + c.numel());
  }
  return n.attr_ints("axes", {});
}

Node make_node(std::string op, std::string name, std::vector<std::string> inputs,
               std::vector<std::string> outputs, std::string domain) {
  Node n;
  n.op_type = std::move(op);
  n.name = std::move(name);
  n.inputs = std::move(inputs);
  n.outputs = std::move(outputs);
  n.domain = std::move(domain);
  return n;
}

void remove_initializer(Graph& g, const std::string& name) {
  g.initializers.erase(name);
  g.initializer_order.erase(
      std::remove(g.initializer_order.begin(), g.initializer_order.end(), name),
      g.initializer_order.end());
  g.types.erase(name);
}

}  // namespace tailor::graph::passes

namespace tailor::graph::passes {

void prune_types(Graph& g) {
  // Views of the graph's own names (only g.types changes below): no copies.
  std::unordered_set<std::string_view> defined;
  defined.reserve(g.inputs.size() + g.initializers.size() + 2 * g.nodes.size());
  defined.insert(g.inputs.begin(), g.inputs.end());
  for (const auto& [name, t] : g.initializers) defined.insert(name);
  for (const auto& n : g.nodes) defined.insert(n.outputs.begin(), n.outputs.end());
  for_each_subgraph(g, [](Graph& sub) { prune_types(sub); });
  for (auto it = g.types.begin(); it != g.types.end();) {
    if (!defined.count(it->first))
      it = g.types.erase(it);
    else
      ++it;
  }
}

void rename_reads(std::vector<Node>& nodes, const std::string& from, const std::string& to) {
  Graph tmp;
  tmp.nodes = std::move(nodes);
  replace_uses(tmp, from, to);
  nodes = std::move(tmp.nodes);
}

}  // namespace tailor::graph::passes

namespace tailor::graph::passes {

std::string tensor_key(const Tensor& t) {
  const Tensor c = t.contiguous();
  std::string k = std::string(dtype_name(c.dtype())) + shape_to_string(c.shape()) + ":";
  k.append(reinterpret_cast<const char*>(c.raw()), c.nbytes());
  return k;
}

/// A key equal for nodes that compute the same values; nullopt for nodes
/// never merged (subgraphs, random generators).
std::optional<std::string> node_key(const Node& n) {
  if (has_subgraph(n)) return std::nullopt;
  if (n.op_type.find("Random") != std::string::npos || n.op_type == "Multinomial")
    return std::nullopt;
  std::string k = n.domain + "\x1f" + n.op_type + "\x1f" + std::to_string(n.outputs.size());
  for (const auto& in : n.inputs) k += "\x1e" + in;
  for (const auto& [name, a] : n.attributes) {
    k += "\x1d" + name + "=" + std::to_string(static_cast<int>(a.kind)) + ":";
    switch (a.kind) {
      case Attribute::Kind::f: {
        char b[4];
        std::memcpy(b, &a.f, 4);
        k.append(b, 4);
        break;
      }
      case Attribute::Kind::i:
        k += std::to_string(a.i);
        break;
      case Attribute::Kind::s:
        k += std::to_string(a.s.size()) + ":" + a.s;
        break;
      case Attribute::Kind::t:
        k += tensor_key(a.t);
        break;
      case Attribute::Kind::floats:
        k.append(reinterpret_cast<const char*>(a.floats.data()), a.floats.size() * 4);
        break;
      case Attribute::Kind::ints:
        for (int64_t v : a.ints) k += std::to_string(v) + ",";
        break;
      case Attribute::Kind::strings:
        for (const auto& s : a.strings) k += std::to_string(s.size()) + ":" + s;
        break;
      default:
        return std::nullopt;
    }
  }
  return k;
}

}  // namespace tailor::graph::passes

namespace tailor::graph::passes {

std::optional<std::string> other_input(const Node& n, const std::string& v, bool commutative) {
  if (n.inputs.size() != 2) return std::nullopt;
  if (n.inputs[0] == v && n.inputs[1] != v) return n.inputs[1];
  if (commutative && n.inputs[1] == v && n.inputs[0] != v) return n.inputs[0];
  return std::nullopt;
}

std::optional<double> scalar_constant(const Graph& g, const std::string& v) {
  const Tensor* t = constant(g, v);
  if (!t || t->numel() != 1) return std::nullopt;
  return uniform_value(*t);
}

std::optional<std::pair<float, float>> clip_bounds(const Graph& g, const Node& n, int64_t opset) {
  // Absent bounds are the ONNX defaults, the lowest and largest finite floats.
  constexpr float lo = std::numeric_limits<float>::lowest(), hi = std::numeric_limits<float>::max();
  if (opset < 11) return std::make_pair(n.attr_float("min", lo), n.attr_float("max", hi));
  std::pair<float, float> b{lo, hi};
  for (size_t k = 1; k <= 2; ++k) {
    if (n.inputs.size() <= k || n.inputs[k].empty()) continue;
    const auto v = scalar_constant(g, n.inputs[k]);
    if (!v) return std::nullopt;
    (k == 1 ? b.first : b.second) = static_cast<float>(*v);
  }
  return b;
}

}  // namespace tailor::graph::passes
