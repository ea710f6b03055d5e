#include "tailor/graph/graph.h"

#include "tailor/core/error.h"

namespace tailor::graph {

std::string Dim::to_string() const {
  if (is_known()) return std::to_string(value);
  return symbol.empty() ? "?" : symbol;
}

std::string sym_shape_to_string(const SymShape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) out += ", ";
    out += s[i].to_string();
  }
  return out + "]";
}

SymShape sym_shape_of(const Shape& s) {
  SymShape out;
  out.reserve(s.size());
  for (int64_t d : s) out.push_back(Dim::known(d));
  return out;
}

std::optional<Shape> concrete_shape(const SymShape& s) {
  Shape out;
  out.reserve(s.size());
  for (const Dim& d : s) {
    if (!d.is_known()) return std::nullopt;
    out.push_back(d.value);
  }
  return out;
}

std::string ValueType::to_string() const {
  std::string out = dtype ? std::string(dtype_name(*dtype)) : "?";
  return out + (shape ? sym_shape_to_string(*shape) : "[?]");
}

Attribute Attribute::of_float(float v) {
  Attribute a;
  a.kind = Kind::f;
  a.f = v;
  return a;
}
Attribute Attribute::of_int(int64_t v) {
  Attribute a;
  a.kind = Kind::i;
  a.i = v;
  return a;
}
Attribute Attribute::of_string(std::string v) {
  Attribute a;
  a.kind = Kind::s;
  a.s = std::move(v);
  return a;
}
Attribute Attribute::of_tensor(Tensor v) {
  Attribute a;
  a.kind = Kind::t;
  a.t = std::move(v);
  return a;
}
Attribute Attribute::of_graph(std::shared_ptr<Graph> v) {
  Attribute a;
  a.kind = Kind::g;
  a.g = std::move(v);
  return a;
}
Attribute Attribute::of_floats(std::vector<float> v) {
  Attribute a;
  a.kind = Kind::floats;
  a.floats = std::move(v);
  return a;
}
Attribute Attribute::of_ints(std::vector<int64_t> v) {
  Attribute a;
  a.kind = Kind::ints;
  a.ints = std::move(v);
  return a;
}
Attribute Attribute::of_strings(std::vector<std::string> v) {
  Attribute a;
  a.kind = Kind::strings;
  a.strings = std::move(v);
  return a;
}

Attribute Attribute::of_encoded(std::shared_ptr<const schemes::Encoded> v) {
  Attribute a;
  a.kind = Kind::encoded;
  a.encoded = std::move(v);
  return a;
}

const char* Attribute::kind_name(Kind k) {
  switch (k) {
    case Kind::encoded:
      return "encoded";
    case Kind::f:
      return "float";
    case Kind::i:
      return "int";
    case Kind::s:
      return "string";
    case Kind::t:
      return "tensor";
    case Kind::g:
      return "graph";
    case Kind::floats:
      return "floats";
    case Kind::ints:
      return "ints";
    case Kind::strings:
      return "strings";
    case Kind::graphs:
      return "graphs";
  }
  return "?";
}

const Attribute* Node::find(const std::string& n) const {
  for (const auto& [k, a] : attributes)
    if (k == n) return &a;
  return nullptr;
}

namespace {
const Attribute* typed(const Node& node, const std::string& n, Attribute::Kind kind) {
  const Attribute* a = node.find(n);
  if (a && a->kind != kind)
    throw Error(node.label(), "attribute '" + n + "' is " + Attribute::kind_name(a->kind) +
                                  ", expected " + Attribute::kind_name(kind));
  return a;
}
}  // namespace

int64_t Node::attr_int(const std::string& n, int64_t fallback) const {
  const Attribute* a = typed(*this, n, Attribute::Kind::i);
  return a ? a->i : fallback;
}
float Node::attr_float(const std::string& n, float fallback) const {
  const Attribute* a = typed(*this, n, Attribute::Kind::f);
  return a ? a->f : fallback;
}
std::string Node::attr_string(const std::string& n, const std::string& fallback) const {
  const Attribute* a = typed(*this, n, Attribute::Kind::s);
  return a ? a->s : fallback;
}
std::vector<int64_t> Node::attr_ints(const std::string& n, std::vector<int64_t> fallback) const {
  const Attribute* a = typed(*this, n, Attribute::Kind::ints);
  return a ? a->ints : fallback;
}
std::vector<float> Node::attr_floats(const std::string& n, std::vector<float> fallback) const {
  const Attribute* a = typed(*this, n, Attribute::Kind::floats);
  return a ? a->floats : fallback;
}

void Node::set(const std::string& n, Attribute a) {
  for (auto& [k, v] : attributes)
    if (k == n) {
      v = std::move(a);
      return;
    }
  attributes.emplace_back(n, std::move(a));
}

std::string Node::label() const {
  std::string op = domain.empty() ? op_type : domain + "." + op_type;
  if (!name.empty()) return op + " node '" + name + "'";
  if (!outputs.empty()) return op + " node producing '" + outputs[0] + "'";
  return op + " node";
}

const ValueType* Graph::type_of(const std::string& value) const {
  auto it = types.find(value);
  return it == types.end() ? nullptr : &it->second;
}

void Graph::add_initializer(const std::string& n, Tensor t) {
  if (!initializers.count(n)) initializer_order.push_back(n);
  types[n] = ValueType{t.dtype(), sym_shape_of(t.shape())};
  initializers[n] = std::move(t);
}

std::string Graph::node_label(size_t i) const {
  const Node& n = nodes.at(i);
  if (!n.name.empty() || !n.outputs.empty()) return n.label();
  return n.op_type + " node #" + std::to_string(i);
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
    for (const auto& v : subgraph_free_names(n)) use(v);
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

std::set<std::string> subgraph_free_names(const Node& n) {
  std::set<std::string> out;
  for (const auto& [an, a] : n.attributes) {
    if (a.kind == Attribute::Kind::g && a.g) collect_free(*a.g, out);
    for (const auto& sub : a.graphs)
      if (sub) collect_free(*sub, out);
  }
  return out;
}

}  // namespace tailor::graph
