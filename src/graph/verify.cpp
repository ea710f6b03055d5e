#include "tailor/graph/verify.h"

#include <string_view>
#include <unordered_set>
#include <vector>

#include "tailor/core/error.h"

namespace tailor::graph {
namespace {

/// The values a graph defines, as views of its own names (the graph is not
/// changed while it is verified), and the enclosing graph's scope.
struct Scope {
  const Scope* parent = nullptr;
  std::unordered_set<std::string_view> defined;
  bool has(std::string_view v) const {
    for (const Scope* s = this; s; s = s->parent)
      if (s->defined.count(v)) return true;
    return false;
  }
};

class Verifier {
 public:
  explicit Verifier(std::string source) : source_(std::move(source)) {}

  void graph(const Graph& g, const Scope* parent, const std::string& where) {
    Scope scope;
    scope.parent = parent;
    scope.defined.reserve(g.inputs.size() + g.initializers.size() + 2 * g.nodes.size());
    // `by` (what defines v) is built only when v is defined twice.
    auto define = [&](const std::string& v, const auto& by) {
      if (v.empty()) return;
      if (!scope.defined.insert(v).second)
        fail(where + ": value '" + v + "' is defined twice (again by " + by() + ")");
    };
    for (const auto& in : g.inputs) define(in, [] { return std::string("a graph input"); });
    for (const auto& name : g.initializer_order) {
      if (!g.initializers.count(name)) fail(where + ": initializer '" + name + "' has no tensor");
      define(name, [] { return std::string("an initializer"); });
    }
    if (g.initializer_order.size() != g.initializers.size())
      fail(where + ": the initializer order lists " + std::to_string(g.initializer_order.size()) +
           " names for " + std::to_string(g.initializers.size()) + " initializers");
    for (const auto& [name, t] : g.initializers) {
      const ValueType* vt = g.type_of(name);
      if (vt && ((vt->dtype && *vt->dtype != t.dtype()) ||
                 (vt->shape && *vt->shape != sym_shape_of(t.shape()))))
        fail(where + ": initializer '" + name + "' is recorded as " + vt->to_string() +
             " but holds " + std::string(dtype_name(t.dtype())) + shape_to_string(t.shape()));
    }
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      const Node& n = g.nodes[i];
      const auto label = [&] { return g.node_label(i); };  // built only when needed
      if (n.op_type.empty()) fail(where + ": node #" + std::to_string(i) + " has no op type");
      for (const auto& in : n.inputs)
        if (!in.empty() && !scope.has(in))
          fail(where + ": " + label() + " reads '" + in + "', which is not defined before it");
      for (const auto& [aname, a] : n.attributes) {
        if (a.kind == Attribute::Kind::g) {
          if (!a.g) fail(where + ": " + label() + ": attribute '" + aname + "' holds no graph");
          graph(*a.g, &scope, where + "/" + label() + "/" + aname);
        } else if (a.kind == Attribute::Kind::encoded) {
          if (!a.encoded)
            fail(where + ": " + label() + ": attribute '" + aname + "' holds no weight");
        } else if (a.kind == Attribute::Kind::graphs) {
          for (const auto& sub : a.graphs) {
            if (!sub) fail(where + ": " + label() + ": attribute '" + aname + "' holds no graph");
            graph(*sub, &scope, where + "/" + label() + "/" + aname);
          }
        }
      }
      for (const auto& out : n.outputs) define(out, label);
    }
    for (const auto& out : g.outputs)
      if (!scope.has(out)) fail(where + ": graph output '" + out + "' is never produced");
    for (const auto& [name, vt] : g.types) {
      if (!scope.defined.count(name))
        fail(where + ": value '" + name + "' has a type but is never defined (dangling)");
      if (vt.shape)
        for (const Dim& d : *vt.shape)
          if (d.value < -1) fail(where + ": value '" + name + "' has a negative dimension");
    }
  }

 private:
  [[noreturn]] void fail(const std::string& m) const { throw Error(source_, m); }
  std::string source_;
};

}  // namespace

void verify(const Model& model) {
  Verifier(model.source.empty() ? "graph" : model.source).graph(model.graph, nullptr, "main graph");
}

}  // namespace tailor::graph
