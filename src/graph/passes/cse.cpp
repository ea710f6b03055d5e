// Common-subexpression elimination over nodes and initializers. See passes.h.
#include <algorithm>
#include <cstring>
#include <functional>
#include <map>

#include "pass_util.h"
#include "tailor/graph/passes.h"

namespace tailor::graph {
namespace {

using namespace passes;

void cse(Graph& g) {
  // Initializers with equal contents (one representative each, in file order).
  std::map<std::string, std::string> by_content;
  std::vector<std::string> dup_inits;
  for (const auto& name : g.initializer_order) {
    const Tensor& t = g.initializers.at(name);
    if (std::find(g.outputs.begin(), g.outputs.end(), name) != g.outputs.end()) continue;
    auto [it, fresh] = by_content.emplace(tensor_key(t), name);
    if (!fresh) {
      replace_uses(g, name, it->second);
      dup_inits.push_back(name);
    }
  }
  for (const auto& name : dup_inits) remove_initializer(g, name);

  std::map<std::string, size_t> seen;
  std::set<size_t> dead;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const auto key = node_key(g.nodes[i]);
    if (!key) continue;
    auto [it, fresh] = seen.emplace(*key, i);
    if (fresh) continue;
    const std::vector<std::string> from = g.nodes[i].outputs;
    const std::vector<std::string> to = g.nodes[it->second].outputs;
    dead.insert(i);
    for (size_t k = 0; k < from.size(); ++k)
      if (!from[k].empty()) {
        if (to[k].empty()) {
          dead.erase(i);  // the first node drops an output the second one has
          break;
        }
      }
    if (!dead.count(i)) continue;
    for (size_t k = 0; k < from.size(); ++k)
      if (!from[k].empty()) replace_uses(g, from[k], to[k]);
  }
  erase_nodes(g, dead);
  for_each_subgraph(g, [](Graph& sub) { cse(sub); });
}

}  // namespace

Model eliminate_common_subexpressions(const Model& model, const PassOptions&) {
  Model out = model;
  detach_subgraphs(out.graph);
  cse(out.graph);
  prune_types(out.graph);
  return out;
}

}  // namespace tailor::graph
