#include "fusion_scope.h"

namespace tailor::graph::passes {

FusionScope::FusionScope(const Graph& graph, int64_t opset_, NameGen& names_)
    : g(graph),
      opset(opset_),
      names(names_),
      uses(compute_uses(graph)),
      producers(passes::producers(graph)),
      info(infer_value_info(graph, opset_)) {}

std::optional<size_t> FusionScope::sole(const std::string& v) const {
  auto r = uses.sole_reader(v);
  if (!r || claimed.count(*r) || !g.nodes[*r].domain.empty()) return std::nullopt;
  return r;
}

}  // namespace tailor::graph::passes
