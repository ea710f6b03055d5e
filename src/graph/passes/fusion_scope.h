// What a fusion rule (the fuse_*.h files) sees of the graph fuse() sweeps,
// and the match it proposes; src/graph/passes/fusion.cpp runs the rules.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "pass_util.h"

namespace tailor::graph::passes {

/// A fusion a rule proposes: the nodes it replaces and the one node replacing them.
struct FusionMatch {
  /// FusionCandidate::kind ("conv_epilogue", "layer_norm", ...).
  std::string kind;
  /// Indices of the replaced nodes in the graph, in any order; none claimed.
  std::vector<size_t> members;
  /// The fused node, producing the value the last member (in graph order)
  /// produced; fuse() names it.
  Node fused;
  /// Initializers the rule created for the fused node (name, value).
  std::vector<std::pair<std::string, Tensor>> inits;
};

/// One graph during a fusion sweep: the graph, its uses, producers and value
/// types (computed once, before any rule runs), the nodes earlier matches
/// claimed, and the model's name generator (a rule creating an initializer
/// reserves its name there). Rules read it; fusion.cpp adds to `claimed`.
struct FusionScope {
  /// `graph` must outlive the scope; `opset` is the model's default-domain
  /// opset. With `types_inferred` (infer_shapes has just recorded its types
  /// in `graph`), the value types are read from graph.types and the
  /// initializers, which hold what inferring them again would find.
  FusionScope(const Graph& graph, int64_t opset, NameGen& names, bool types_inferred = false);

  const Graph& g;
  const int64_t opset;
  NameGen& names;
  const Uses uses;
  const std::unordered_map<std::string, size_t> producers;
  const std::unordered_map<std::string, ValueInfo> info;
  /// Nodes taken by earlier matches.
  std::set<size_t> claimed;

  /// The node reading `v` when it is `v`'s only reader, `v` is no graph
  /// output, and the node is unclaimed and in the default domain.
  std::optional<size_t> sole(const std::string& v) const;
  /// The initializer `v`, or nullptr.
  const Tensor* constant(const std::string& v) const { return passes::constant(g, v); }
  /// The value of the one-element initializer `v` (scalar_constant).
  std::optional<double> scalar(const std::string& v) const { return scalar_constant(g, v); }
  /// The rank of `v`, when known.
  std::optional<size_t> rank(const std::string& v) const { return rank_of(info, v); }
  /// True when `v` is known to be f32.
  bool is_f32(const std::string& v) const { return dtype_of(info, v) == DType::f32; }
  /// Clip node `n`'s bounds (passes::clip_bounds at this scope's opset).
  std::optional<std::pair<float, float>> clip(const Node& n) const {
    return clip_bounds(g, n, opset);
  }
};

/// A fusion rule: the match rooted at node `root` of `scope.g`, or nullopt.
using FusionRule = std::optional<FusionMatch> (*)(const FusionScope& scope, size_t root);

}  // namespace tailor::graph::passes
