#include "fusion_scope.h"

namespace tailor::graph::passes {

namespace {

/// What infer_value_info finds in a graph whose node outputs infer_shapes
/// has typed: each initializer's dtype and rank, else the recorded type
/// (infer_shapes's merge is idempotent: inferring again keeps every dtype and
/// rank it recorded).
std::unordered_map<std::string, ValueInfo> recorded_value_info(const Graph& g) {
  std::unordered_map<std::string, ValueInfo> info;
  info.reserve(g.types.size() + g.initializers.size());
  for (const auto& [name, t] : g.initializers) info.emplace(name, ValueInfo{t.dtype(), t.rank()});
  for (const auto& [name, t] : g.types)
    if (t.dtype || t.shape)
      info.try_emplace(name,
                       ValueInfo{t.dtype, t.shape ? std::optional(t.shape->size()) : std::nullopt});
  return info;
}

}  // namespace

FusionScope::FusionScope(const Graph& graph, int64_t opset_, NameGen& names_, bool types_inferred)
    : g(graph),
      opset(opset_),
      names(names_),
      uses(compute_uses(graph)),
      producers(passes::producers(graph)),
      info(types_inferred ? recorded_value_info(graph) : infer_value_info(graph, opset_)) {}

std::optional<size_t> FusionScope::sole(const std::string& v) const {
  auto r = uses.sole_reader(v);
  if (!r || claimed.count(*r) || !g.nodes[*r].domain.empty()) return std::nullopt;
  return r;
}

}  // namespace tailor::graph::passes
