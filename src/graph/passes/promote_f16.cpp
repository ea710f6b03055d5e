#include "tailor/graph/passes/promote_f16.h"

#include <algorithm>

#include "tailor/graph/verify.h"

namespace tailor::graph {
namespace {

int promote(Graph& g, bool top) {
  int changed = 0;
  for (const auto& name : g.initializer_order) {
    Tensor& t = g.initializers.at(name);
    if (t.dtype() != DType::f16) continue;
    t = t.to(DType::f32);
    g.types[name] = ValueType{DType::f32, sym_shape_of(t.shape())};
    ++changed;
  }
  for (Node& n : g.nodes) {
    for (auto& [name, a] : n.attributes) {
      if (a.kind == Attribute::Kind::t && a.t.dtype() == DType::f16) {
        a.t = a.t.to(DType::f32);
        ++changed;
      } else if (a.kind == Attribute::Kind::g) {
        changed += promote(*a.g, false);
      } else if (a.kind == Attribute::Kind::graphs) {
        for (auto& sub : a.graphs) changed += promote(*sub, false);
      }
    }
    if (n.op_type == "Cast" && n.domain.empty() && n.attr_int("to", 0) == 10) {
      n.set("to", Attribute::of_int(1));
      ++changed;
    }
  }
  for (auto& [name, vt] : g.types) {
    const bool boundary =
        top && (std::find(g.inputs.begin(), g.inputs.end(), name) != g.inputs.end() ||
                std::find(g.outputs.begin(), g.outputs.end(), name) != g.outputs.end());
    if (vt.dtype == DType::f16 && !boundary) vt.dtype = DType::f32;
  }
  return changed;
}

}  // namespace

int promote_f16_to_f32(Model& model) {
  const int changed = promote(model.graph, true);
  debug_verify(model);
  return changed;
}

}  // namespace tailor::graph
