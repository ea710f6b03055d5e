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
  // Grouped by dtype and shape first; within a group the bytes are compared
  // directly (distinct weights differ in their first bytes, so this costs far
  // less than keying every tensor by a copy of its bytes: 1.8 s on ISNet).
  std::map<std::string, std::vector<std::string>> by_shape;
  std::vector<std::string> dup_inits;
  for (const auto& name : g.initializer_order) {
    const Tensor& t = g.initializers.at(name);
    if (std::find(g.outputs.begin(), g.outputs.end(), name) != g.outputs.end()) continue;
    auto& group = by_shape[std::string(dtype_name(t.dtype())) + shape_to_string(t.shape())];
    const Tensor c = t.contiguous();
    const auto same = std::find_if(group.begin(), group.end(), [&](const std::string& rep) {
      const Tensor r = g.initializers.at(rep).contiguous();
      return r.nbytes() == c.nbytes() && std::memcmp(r.raw(), c.raw(), c.nbytes()) == 0;
    });
    if (same == group.end()) {
      group.push_back(name);
    } else {
      replace_uses(g, name, *same);
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

Model eliminate_common_subexpressions(Model model, const PassOptions&) {
  Model out = std::move(model);
  detach_subgraphs(out.graph);
  cse(out.graph);
  prune_types(out.graph);
  return out;
}

}  // namespace tailor::graph
