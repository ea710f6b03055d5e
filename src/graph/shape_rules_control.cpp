// Shape rules of the control-flow family, from the types the subgraphs
// declare for their outputs (the engine does not descend into subgraphs):
// - If: output i is what both branches declare for their output i (dtype when
//   they agree, dims where they agree; the rank only when both give it).
// - Loop: the N loop-carried outputs have the dtype of their initial values
//   (inputs 2..N+1; the shape may change across iterations), the scan outputs
//   the body's declared dtype with a leading unknown (iteration) dim.
// Scan is left unknown: the runtime does not run it.
#include "shape_rules.h"

namespace tailor::graph::shape_rules {
namespace {

const Graph* subgraph(const Node& n, const char* name) {
  const Attribute* a = n.find(name);
  return a && a->kind == Attribute::Kind::g ? a->g.get() : nullptr;
}

/// What `g` declares for its output i (empty when it declares nothing).
ValueType declared_output(const Graph& g, size_t i) {
  if (i >= g.outputs.size()) return {};
  const ValueType* t = g.type_of(g.outputs[i]);
  return t ? *t : ValueType{};
}

std::vector<Info> if_op(const NodeContext& c) {
  const Graph* then_g = subgraph(c.node, "then_branch");
  const Graph* else_g = subgraph(c.node, "else_branch");
  if (!then_g || !else_g) return {};
  std::vector<Info> outs(c.node.outputs.size());
  for (size_t i = 0; i < outs.size(); ++i) {
    const ValueType a = declared_output(*then_g, i);
    const ValueType b = declared_output(*else_g, i);
    if (a.dtype && (!b.dtype || a.dtype == b.dtype)) outs[i].dtype = a.dtype;
    if (!a.dtype) outs[i].dtype = b.dtype;
    if (a.shape && b.shape && a.shape->size() == b.shape->size()) {
      SymShape s = *a.shape;
      for (size_t d = 0; d < s.size(); ++d)
        if (!(s[d] == (*b.shape)[d])) s[d] = Dim::unknown();
      outs[i].shape = s;
    }
  }
  return outs;
}

std::vector<Info> loop(const NodeContext& c) {
  const Graph* body = subgraph(c.node, "body");
  const size_t carried = c.node.inputs.size() >= 2 ? c.node.inputs.size() - 2 : 0;
  std::vector<Info> outs(c.node.outputs.size());
  for (size_t i = 0; i < outs.size(); ++i) {
    if (i < carried) {
      if (const Info* v = c.in(2 + i)) outs[i].dtype = v->dtype;
    } else if (body) {
      const ValueType t = declared_output(*body, 1 + i);  // body output 0 is the condition
      outs[i].dtype = t.dtype;
      if (t.shape) {
        SymShape s{Dim::unknown()};
        s.insert(s.end(), t.shape->begin(), t.shape->end());
        outs[i].shape = s;
      }
    }
  }
  return outs;
}

const RuleEntry kControlRules[] = {
    {"", "If", if_op},
    {"", "Loop", loop},
};

}  // namespace

std::span<const RuleEntry> control_rules() {
  return kControlRules;
}

}  // namespace tailor::graph::shape_rules
