// Helpers shared by the graph passes: copies, use counts, renaming, constants,
// a dtype/rank view of the shape inference, fresh names.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tailor/graph/graph.h"

namespace tailor::graph::passes {

/// Replaces every subgraph pointer of `g` (recursively) with a fresh copy, so
/// `g` can be changed without touching a model it was copied from.
void detach_subgraphs(Graph& g);

/// Calls fn(Graph&) on every subgraph held by the nodes of `g` (one level).
template <class F>
void for_each_subgraph(Graph& g, F&& fn) {
  for (auto& n : g.nodes)
    for (auto& [name, a] : n.attributes) {
      if (a.kind == Attribute::Kind::g && a.g) fn(*a.g);
      for (auto& sub : a.graphs)
        if (sub) fn(*sub);
    }
}

/// True when the node holds a subgraph attribute.
bool has_subgraph(const Node& n);

/// Uses of the values of one graph: node inputs, reads by subgraphs of a node
/// (implicit inputs) and graph outputs.
struct Uses {
  /// value → indices of the nodes reading it (explicitly or through a subgraph),
  /// one entry per reading node.
  std::unordered_map<std::string, std::vector<size_t>> readers;
  std::set<std::string> graph_outputs;
  size_t count(const std::string& v) const {
    auto it = readers.find(v);
    return (it == readers.end() ? 0 : it->second.size()) + graph_outputs.count(v);
  }
  /// The only node reading `v` when it has exactly one reader and is no graph output.
  std::optional<size_t> sole_reader(const std::string& v) const;
};
Uses compute_uses(const Graph& g);

/// Replaces reads of `from` by `to` in node inputs of `g` and in subgraphs
/// (outer-scope reads). A graph output named `from` stays: an Identity node
/// to → from is appended instead (the caller keeps node order valid by
/// calling this before erasing `from`'s producer; the Identity is appended at
/// the end, which is after every definition).
void replace_uses(Graph& g, const std::string& from, const std::string& to);

/// Index of the node producing each value of `g`.
std::unordered_map<std::string, size_t> producers(const Graph& g);

/// The initializer named `v` of `g`, or nullptr.
const Tensor* constant(const Graph& g, const std::string& v);

/// The single value of an f32/f64/integer constant whose elements are all
/// equal (converted to double), or nullopt.
std::optional<double> uniform_value(const Tensor& t);

/// Element type and rank of a value: a view of the graph's one inference
/// (infer_types in tailor/graph/shape_inference.h); no rules of its own.
struct ValueInfo {
  std::optional<DType> dtype;
  std::optional<size_t> rank;
};
/// Element type and rank of every value of `g` whose type infer_types knows
/// (unknown: absent from the map).
std::unordered_map<std::string, ValueInfo> infer_value_info(const Graph& g, int64_t opset);

/// The rank of value `v` in `info` (infer_value_info), or nullopt when unknown.
inline std::optional<size_t> rank_of(const std::unordered_map<std::string, ValueInfo>& info,
                                     const std::string& v) {
  auto it = info.find(v);
  return it == info.end() ? std::nullopt : it->second.rank;
}

/// The element type of value `v` in `info`, or nullopt when unknown.
inline std::optional<DType> dtype_of(const std::unordered_map<std::string, ValueInfo>& info,
                                     const std::string& v) {
  auto it = info.find(v);
  return it == info.end() ? std::nullopt : it->second.dtype;
}

/// Fresh value/node names: never one already used in the model (any graph).
class NameGen {
 public:
  explicit NameGen(const Graph& root);
  /// base, or base_1, base_2, ... whichever is unused; reserves it.
  std::string fresh(const std::string& base);

 private:
  void collect(const Graph& g);
  std::set<std::string> used_;
};

/// Removes nodes whose index is in `dead` (sorted or not) keeping order.
void erase_nodes(Graph& g, const std::set<size_t>& dead);

/// Axis normalised to [0, rank); nullopt when out of range.
std::optional<int64_t> norm_axis(int64_t axis, int64_t rank);

/// Reads the axes of a reduction node: attribute "axes" or, from the opset
/// where they became an input (ReduceSum 13, others 18), a constant input 1.
/// nullopt when they are not constant.
std::optional<std::vector<int64_t>> reduce_axes(const Graph& g, const Node& n, int64_t opset);

/// Makes a node.
Node make_node(std::string op, std::string name, std::vector<std::string> inputs,
               std::vector<std::string> outputs, std::string domain = "");

}  // namespace tailor::graph::passes

namespace tailor::graph::passes {
/// Removes initializer `name` (tensor, order entry, type).
void remove_initializer(Graph& g, const std::string& name);
}  // namespace tailor::graph::passes

namespace tailor::graph::passes {
/// Drops recorded types of values `g` no longer defines (recursively in
/// subgraphs), so the verifier finds no dangling typed value.
void prune_types(Graph& g);
/// Renames reads of `from` to `to` inside `nodes` (and their subgraphs).
void rename_reads(std::vector<Node>& nodes, const std::string& from, const std::string& to);
}  // namespace tailor::graph::passes

namespace tailor::graph::passes {
/// dtype, shape and bytes of a tensor as one string (equal for equal contents).
std::string tensor_key(const Tensor& t);
/// A key equal for nodes computing the same values from the same inputs (op,
/// domain, inputs in order, attributes); nullopt for nodes never merged
/// (subgraph attributes, random generators).
std::optional<std::string> node_key(const Node& n);
}  // namespace tailor::graph::passes

namespace tailor::graph::passes {
/// True for a node of the default ONNX domain with op type `op`.
inline bool is_op(const Node& n, std::string_view op) {
  return n.domain.empty() && n.op_type == op;
}
/// The other input of the two-input node `n` when one input is `v`: input 1
/// when input 0 is `v`, and (when `commutative`) input 0 when input 1 is `v`;
/// nullopt otherwise, and when both inputs are `v`.
std::optional<std::string> other_input(const Node& n, const std::string& v, bool commutative);
/// The value of `v` when it is a one-element initializer of `g` (any dtype
/// uniform_value reads), or nullopt.
std::optional<double> scalar_constant(const Graph& g, const std::string& v);
/// The bounds (min, max) of Clip node `n`: attributes `min`, `max` before
/// opset 11, one-element constant inputs 1 and 2 from opset 11; an absent
/// bound is ∓∞. nullopt when an input bound is not a one-element constant.
std::optional<std::pair<float, float>> clip_bounds(const Graph& g, const Node& n, int64_t opset);
}  // namespace tailor::graph::passes
