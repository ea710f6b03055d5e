// Shared machinery of the two rewrites: fresh value names, the consumers of a
// weight, removing a weight's source, and the node list rebuilt at the end.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "tailor/compress/rewrite.h"
#include "tailor/graph/graph.h"
#include "tailor/graph/weight_forms.h"

namespace tailor::compress::detail {

/// Where a value is read: node index in the main graph and input slot.
struct Use {
  size_t node = 0;
  size_t input = 0;
};

/// Edits one model: new names never collide with existing ones; structural
/// replacements and weight-producing nodes are collected and applied by
/// finish() so node indices stay valid while layers are processed.
class GraphEditor final : public graph::FormSink {
 public:
  explicit GraphEditor(graph::Model& model);

  graph::Graph& graph() { return model_.graph; }
  int64_t opset() const override { return model_.opset; }

  /// A value name starting with `base` not used anywhere in the model.
  std::string fresh(const std::string& base) override;
  /// Adds initializer `t` under a fresh name from `base`; returns the name.
  std::string constant(const std::string& base, Tensor t) override;
  /// An i64 1-D initializer.
  std::string ints(const std::string& base, const std::vector<int64_t>& v);
  /// An f32 initializer of shape [1] holding `v`.
  std::string scalar(const std::string& base, float v);

  /// Main-graph uses of `value`; `in_subgraph` set when a subgraph reads it.
  std::vector<Use> uses(const std::string& value, bool& in_subgraph) const;
  /// Removes the initializer or Constant node defining `value`. Throws Error
  /// naming `value` when it is neither.
  void remove_source(const std::string& value);
  /// The stored tensor of weight `value` (initializer or Constant), or nullptr.
  const Tensor* weight(const std::string& value) const;

  /// Appends a node (to the nodes computing weights, placed first).
  void emit_front(graph::Node n) { front_.push_back(std::move(n)); }
  /// FormSink: the same as emit_front.
  void emit(graph::Node n) override { emit_front(std::move(n)); }
  /// Replaces node `index` by `nodes` (same outputs at the end).
  void replace(size_t index, std::vector<graph::Node> nodes);
  bool replaced(size_t index) const { return replacements_.count(index) > 0; }

  /// Rebuilds the node list: weight nodes first, then the graph with the
  /// replacements, and drops the removed Constant nodes.
  void finish();

  /// A node of `op` reading `inputs`, writing `outputs`.
  static graph::Node make(const std::string& op, const std::string& name,
                          std::vector<std::string> inputs, std::vector<std::string> outputs);

  // ONNX operators whose form depends on the opset.
  /// Unsqueeze(x, axes) → out.
  graph::Node unsqueeze(const std::string& x, std::vector<int64_t> axes, const std::string& out);
  /// Slice(x) along `axis` from `start` to `end` → out.
  graph::Node slice(const std::string& x, int64_t axis, int64_t start, int64_t end,
                    const std::string& out);

 private:
  graph::Model& model_;
  std::set<std::string> names_;
  std::vector<graph::Node> front_;
  std::map<size_t, std::vector<graph::Node>> replacements_;
  std::set<size_t> removed_;
};

/// `t` (f32 [out, in], Ŵ's view) as the weight is stored: reshaped to
/// `stored_shape`, transposed back for in_out / conv_transpose, converted to
/// `dtype`.
Tensor to_stored(const Tensor& out_in, WeightLayout layout, const Shape& stored_shape, DType dtype);

/// ONNX TensorProto element type code of `dtype` (Cast's `to`).
int64_t onnx_type_code(DType dtype);

/// Runs f(k) for k = 0 … count − 1, one k at a time per worker (`workers`
/// threads, this one included); a worker's linalg calls take one thread, or
/// all of them when it is the only worker. The first exception is rethrown
/// once every worker is done. (Defined in output_damage.cpp.)
void for_each_input(size_t count, size_t workers, const std::function<void(size_t)>& f);

}  // namespace tailor::compress::detail
