// Dead-code elimination: nodes whose outputs reach no graph output, unused
// initializers. See passes.h.
#include "pass_util.h"
#include "tailor/graph/passes.h"

namespace tailor::graph {
namespace {

using namespace passes;

void sweep(Graph& g) {
  std::set<std::string> live(g.outputs.begin(), g.outputs.end());
  std::set<size_t> dead;
  for (size_t i = g.nodes.size(); i-- > 0;) {
    Node& n = g.nodes[i];
    bool needed = false;
    for (const auto& o : n.outputs)
      if (!o.empty() && live.count(o)) needed = true;
    if (!needed) {
      dead.insert(i);
      continue;
    }
    for (const auto& in : n.inputs)
      if (!in.empty()) live.insert(in);
    for (auto& [an, a] : n.attributes) {
      auto visit = [&](Graph& sub) {
        sweep(sub);
        for (const auto& v : free_names(sub)) live.insert(v);
      };
      if (a.kind == Attribute::Kind::g && a.g) visit(*a.g);
      for (auto& sub : a.graphs)
        if (sub) visit(*sub);
    }
  }
  erase_nodes(g, dead);
  std::vector<std::string> unused;
  for (const auto& [name, t] : g.initializers)
    if (!live.count(name)) unused.push_back(name);
  for (const auto& name : unused) remove_initializer(g, name);
}

}  // namespace

Model eliminate_dead_code(Model model, const PassOptions&) {
  Model out = std::move(model);
  detach_subgraphs(out.graph);
  sweep(out.graph);
  prune_types(out.graph);
  return out;
}

}  // namespace tailor::graph
