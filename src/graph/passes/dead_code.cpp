// Dead-code elimination: nodes whose outputs reach no graph output, unused
// initializers. See passes.h.
#include <string_view>
#include <unordered_set>

#include "pass_util.h"
#include "tailor/graph/passes.h"

namespace tailor::graph {
namespace {

using namespace passes;

void sweep(Graph& g) {
  // Live names are views of the graph's own strings (graph outputs, inputs of
  // live nodes and the free names of their subgraphs, held in `outer`), read
  // before any node is erased.
  std::unordered_set<std::string_view> live(g.outputs.begin(), g.outputs.end());
  std::vector<std::set<std::string>> outer;
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
        outer.push_back(free_names(sub));
        live.insert(outer.back().begin(), outer.back().end());
      };
      if (a.kind == Attribute::Kind::g && a.g) visit(*a.g);
      for (auto& sub : a.graphs)
        if (sub) visit(*sub);
    }
  }
  std::vector<std::string> unused;
  for (const auto& [name, t] : g.initializers)
    if (!live.count(name)) unused.push_back(name);
  erase_nodes(g, dead);
  if (unused.empty()) return;
  // Tensors, order entries and types of the unused initializers, each list once.
  const std::unordered_set<std::string_view> gone(unused.begin(), unused.end());
  std::erase_if(g.initializer_order, [&](const std::string& name) { return gone.count(name) > 0; });
  for (const auto& name : unused) {
    g.initializers.erase(name);
    g.types.erase(name);
  }
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
