#include "pass_util.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include <cstring>
#include "tailor/core/error.h"

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

namespace {
void collect_free(const Graph& g, std::set<std::string>& out) {
  std::set<std::string> defined(g.inputs.begin(), g.inputs.end());
  for (const auto& [name, t] : g.initializers) defined.insert(name);
  auto use = [&](const std::string& v) {
    if (!v.empty() && !defined.count(v)) out.insert(v);
  };
  for (const auto& n : g.nodes) {
    for (const auto& in : n.inputs) use(in);
    for (const auto& [an, a] : n.attributes) {
      std::set<std::string> inner;
      if (a.kind == Attribute::Kind::g && a.g) collect_free(*a.g, inner);
      for (const auto& sub : a.graphs)
        if (sub) collect_free(*sub, inner);
      for (const auto& v : inner) use(v);
    }
    for (const auto& o : n.outputs) defined.insert(o);
  }
  for (const auto& o : g.outputs) use(o);
}
}  // namespace

std::set<std::string> free_names(const Graph& g) {
  std::set<std::string> out;
  collect_free(g, out);
  return out;
}

std::optional<size_t> Uses::sole_reader(const std::string& v) const {
  if (graph_outputs.count(v)) return std::nullopt;
  auto it = readers.find(v);
  if (it == readers.end() || it->second.size() != 1) return std::nullopt;
  return it->second[0];
}

Uses compute_uses(const Graph& g) {
  Uses u;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    std::set<std::string> seen;
    for (const auto& in : n.inputs)
      if (!in.empty() && seen.insert(in).second) u.readers[in].push_back(i);
    if (has_subgraph(n)) {
      for (const auto& [an, a] : n.attributes) {
        std::set<std::string> inner;
        if (a.kind == Attribute::Kind::g && a.g) collect_free(*a.g, inner);
        for (const auto& sub : a.graphs)
          if (sub) collect_free(*sub, inner);
        for (const auto& v : inner)
          if (seen.insert(v).second) u.readers[v].push_back(i);
      }
    }
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

namespace {
bool is_unary_same_type(const std::string& op) {
  static const std::set<std::string> s = {
      "Relu",       "Sigmoid",  "Tanh",     "Exp",     "Log",         "Sqrt",
      "Reciprocal", "Neg",      "Abs",      "Clip",    "HardSigmoid", "HardSwish",
      "LeakyRelu",  "Elu",      "Softplus", "Erf",     "Floor",       "Ceil",
      "Round",      "Identity", "Dropout",  "Softmax", "LogSoftmax",  "BatchNormalization",
      "Sin",        "Cos"};
  return s.count(op) > 0;
}
bool is_binary_broadcast(const std::string& op) {
  static const std::set<std::string> s = {"Add", "Sub", "Mul", "Div", "Pow",
                                          "Max", "Min", "Mod", "Sum", "Mean"};
  return s.count(op) > 0;
}
}  // namespace

std::unordered_map<std::string, ValueInfo> infer_value_info(
    const Graph& g, int64_t opset, const std::unordered_map<std::string, ValueInfo>* outer) {
  std::unordered_map<std::string, ValueInfo> info;
  if (outer) info = *outer;
  for (const auto& [name, vt] : g.types) {
    ValueInfo vi;
    vi.dtype = vt.dtype;
    if (vt.shape) vi.rank = vt.shape->size();
    info[name] = vi;
  }
  for (const auto& [name, t] : g.initializers) info[name] = ValueInfo{t.dtype(), t.rank()};
  auto get = [&](const std::string& v) -> ValueInfo {
    auto it = info.find(v);
    return it == info.end() ? ValueInfo{} : it->second;
  };
  for (const Node& n : g.nodes) {
    if (n.outputs.empty() || !n.domain.empty()) {
      // ai.tailor fused ops keep input 0's dtype/rank.
      if (n.domain == "ai.tailor" && !n.inputs.empty() && !n.outputs.empty()) {
        ValueInfo vi = get(n.inputs[0]);
        if (!info.count(n.outputs[0]) || !info[n.outputs[0]].dtype) info[n.outputs[0]] = vi;
      }
      continue;
    }
    const std::string& op = n.op_type;
    ValueInfo out;
    const ValueInfo a = n.inputs.empty() ? ValueInfo{} : get(n.inputs[0]);
    if (is_unary_same_type(op)) {
      out = a;
    } else if (is_binary_broadcast(op)) {
      out.dtype = a.dtype;
      std::optional<size_t> r = a.rank;
      for (size_t i = 1; i < n.inputs.size(); ++i) {
        const ValueInfo b = get(n.inputs[i]);
        if (r && b.rank)
          r = std::max(*r, *b.rank);
        else
          r.reset();
      }
      out.rank = r;
    } else if (op == "Conv" || op == "ConvTranspose" || op == "MaxPool" || op == "AveragePool" ||
               op == "GlobalAveragePool" || op == "Resize" || op == "Upsample" ||
               op == "Transpose") {
      out = a;
    } else if (op == "Gemm") {
      out = ValueInfo{a.dtype, 2};
    } else if (op == "MatMul") {
      const ValueInfo b = n.inputs.size() > 1 ? get(n.inputs[1]) : ValueInfo{};
      out.dtype = a.dtype;
      if (a.rank && b.rank && *a.rank >= 2 && *b.rank >= 2) out.rank = std::max(*a.rank, *b.rank);
    } else if (op == "Shape") {
      out = ValueInfo{DType::i64, 1};
    } else if (op == "Size") {
      out = ValueInfo{DType::i64, 0};
    } else if (op == "Cast") {
      static const std::map<int64_t, DType> onnx_types = {
          {1, DType::f32}, {2, DType::u8},      {3, DType::i8},   {5, DType::i16}, {6, DType::i32},
          {7, DType::i64}, {9, DType::boolean}, {10, DType::f16}, {11, DType::f64}};
      auto it = onnx_types.find(n.attr_int("to", 0));
      if (it != onnx_types.end()) out.dtype = it->second;
      out.rank = a.rank;
    } else if (op == "Equal" || op == "Less" || op == "Greater" || op == "LessOrEqual" ||
               op == "GreaterOrEqual" || op == "And" || op == "Or" || op == "Xor" || op == "Not") {
      out.dtype = DType::boolean;
    } else if (op == "Concat" || op == "Slice" || op == "Expand" || op == "Tile" || op == "Pad") {
      out = a;
      if (op == "Expand") out.rank.reset();
    } else if (op == "Reshape" || op == "Squeeze" || op == "Unsqueeze" || op == "Flatten" ||
               op == "Gather") {
      out.dtype = a.dtype;
      if (op == "Flatten") out.rank = 2;
    } else if (op.rfind("Reduce", 0) == 0) {
      out.dtype = a.dtype;
      if (n.attr_int("keepdims", 1) != 0) out.rank = a.rank;
    } else if (op == "LSTM") {
      out.dtype = a.dtype;
    }
    (void)opset;
    for (size_t o = 0; o < n.outputs.size(); ++o) {
      if (n.outputs[o].empty()) continue;
      ValueInfo& dst = info[n.outputs[o]];
      if (o == 0 || op == "Split") {
        if (!dst.dtype) dst.dtype = out.dtype;
        if (!dst.rank) dst.rank = out.rank;
      }
    }
  }
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
  std::set<std::string> defined(g.inputs.begin(), g.inputs.end());
  for (const auto& [name, t] : g.initializers) defined.insert(name);
  for (auto& n : g.nodes) {
    defined.insert(n.outputs.begin(), n.outputs.end());
  }
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
  constexpr float inf = std::numeric_limits<float>::infinity();
  if (opset < 11) return std::make_pair(n.attr_float("min", -inf), n.attr_float("max", inf));
  std::pair<float, float> b{-inf, inf};
  for (size_t k = 1; k <= 2; ++k) {
    if (n.inputs.size() <= k || n.inputs[k].empty()) continue;
    const auto v = scalar_constant(g, n.inputs[k]);
    if (!v) return std::nullopt;
    (k == 1 ? b.first : b.second) = static_cast<float>(*v);
  }
  return b;
}

}  // namespace tailor::graph::passes
