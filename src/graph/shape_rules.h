// The rules of shape inference (internal to the graph module): what is known
// of a value, helpers shared by the rules, and one table of rules per op
// family (shape_rules_<family>.cpp), gathered into one registry looked up by
// (domain, op_type). The engine that walks a graph is shape_inference.cpp.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "tailor/graph/graph.h"

namespace tailor::graph::shape_rules {

/// What is known of a value: its type and, for small int64/int32 tensors of
/// rank ≤ 1 (shapes), its elements as Dims (numbers or symbols).
struct Info {
  std::optional<DType> dtype;
  std::optional<SymShape> shape;
  std::optional<std::vector<Dim>> value;
  /// The tensor itself when it is a constant (initializer or Constant node).
  Tensor constant;
};

/// The node an error names; its label ("Conv 'conv1'") is built only when
/// an error is thrown.
struct Who {
  const Node& node;
  std::string label() const { return node.label(); }
};

/// Tracked values hold at most this many elements.
inline constexpr int64_t kMaxTracked = 64;
/// Elements of tracked values are Dims too: a number (any int64, -1
/// included) with an empty symbol, a symbol, or unknown (kUnknownElem).
inline constexpr int64_t kUnknownElem = std::numeric_limits<int64_t>::min();

/// The Info of a constant tensor (dtype, shape, elements when tracked).
Info info_of_tensor(const Tensor& t);
inline Dim raw(int64_t v) {
  return Dim{v, {}};
}
inline Dim unknown_elem() {
  return Dim{kUnknownElem, {}};
}
inline bool is_number(const Dim& d) {
  return d.symbol.empty() && d.value != kUnknownElem;
}
/// A shape dim as a value element.
Dim elem_of_dim(const Dim& d);
/// A value element as a shape dim (negative numbers and unknowns: unknown).
Dim dim_of_elem(const Dim& e);
/// The shape a tracked value spells (dim_of_elem of each element).
SymShape dims_of(const std::vector<Dim>& elems);
/// Known integer elements of a value (all numbers), or nullopt.
std::optional<std::vector<int64_t>> numbers(const Info* i);
/// Multidirectional (numpy) broadcast of the inputs' shapes; nullopt when one
/// is unknown. Throws Error(who) when two known dims differ and neither is 1.
std::optional<SymShape> bcast(const std::vector<const Info*>& ins, Who who);
/// Axis `a` normalised to [0, r); throws Error(who) when out of range.
int64_t norm_axis(int64_t a, int64_t r, Who who);
/// Product of dims [a, b) of `s`: a number when all are known, the dim itself
/// when the range holds one dim, else unknown.
Dim product(const SymShape& s, int64_t a, int64_t b);
/// A shape of `rank` unknown dims.
SymShape unknown_dims(size_t rank);

/// What a rule sees of one node: the node, the opset of the default domain
/// and what is known of its inputs.
class NodeContext {
 public:
  NodeContext(const Node& n, int64_t opset, const std::unordered_map<std::string, Info>& known)
      : node(n), opset(opset), known_(known) {}
  /// What is known of input i; nullptr when it is absent, omitted or unknown.
  const Info* in(size_t i) const;
  /// The node, for messages.
  Who who() const { return Who{node}; }
  /// Dtype and shape of input i (value and constant dropped), optionally
  /// with another dtype; an empty Info (but `dt`) when input i is unknown.
  Info same(size_t i, std::optional<DType> dt = std::nullopt) const;

  const Node& node;
  const int64_t opset;

 private:
  const std::unordered_map<std::string, Info>& known_;
};

/// A rule: what is known of each output of a node (fewer entries than
/// outputs, or empty, when nothing is known). Throws Error naming the node for
/// an inconsistent node (mismatched ranks, axis out of range).
using Rule = std::vector<Info> (*)(const NodeContext&);

/// The rule of ops whose output has input 0's type (unary elementwise ops).
std::vector<Info> same_as_input(const NodeContext& c);

/// One row of a family's table.
struct RuleEntry {
  const char* domain;  ///< "" for the default ONNX domain, "ai.tailor" for tailor's ops
  const char* op_type;
  Rule rule;
};

/// The family tables (one file each).
std::span<const RuleEntry> elementwise_rules();  ///< unary, binary, comparison, Where, Cast
std::span<const RuleEntry> shape_op_rules();     ///< Shape, Reshape, Transpose, Constant, ...
std::span<const RuleEntry> indexing_rules();     ///< Gather, Slice, Concat, Split, Pad, Tile
std::span<const RuleEntry> nn_rules();           ///< MatMul, Gemm, Conv, pools, Resize, LSTM
std::span<const RuleEntry> reduce_rules();       ///< Reduce*, ArgMax/ArgMin, Softmax
std::span<const RuleEntry> control_rules();      ///< If, Loop
std::span<const RuleEntry> tailor_rules();       ///< ai.tailor fused, layout, compressed ops

/// The rule for (domain, op_type) from every family table, or nullptr.
Rule find_rule(const std::string& domain, const std::string& op_type);

/// Output spatial size of a sliding window along one axis (ONNX Conv/pool
/// formula, floor or ceil mode); an unknown input stays unknown unless the
/// window is the identity.
Dim window_out(const Dim& in, int64_t k, int64_t s, int64_t d, int64_t pb, int64_t pe,
               bool ceil_mode = false);

/// The shared nn shapes (shape_rules_nn.cpp), used by tailor's fused ops too.
/// MatMul of a [..., m, k] and b [..., k, n] (batch dims broadcast); nullopt
/// when either is unknown or of rank < 2.
std::optional<SymShape> matmul_shape(const Info* a, const Info* b, Who who);
/// Gemm of node inputs 0 and 1 (attributes transA, transB): [m, n]; unknown
/// dims when an input shape is unknown.
SymShape gemm_shape(const NodeContext& c);
/// Output of a sliding window (Conv, ConvTranspose, pools) over xs [N, C,
/// spatial...]: [N, channels, spatial out...], from the node's strides,
/// dilations, pads, auto_pad, ceil_mode (and output_padding, output_shape
/// when `transposed`), kernel `ks` (one per spatial dim; else the spatial
/// dims are unknown). Throws Error(who) when an attribute's length does not
/// match the spatial rank.
SymShape window_shape(const Node& n, const SymShape& xs, Dim channels,
                      const std::vector<int64_t>& ks, bool transposed, Who who);
/// The kernel's spatial size: attribute kernel_shape, else dims 2.. of the
/// weight `w` when its rank is `rank`.
std::vector<int64_t> kernel_of(const Node& n, const Info* w, size_t rank);
/// Conv, ConvTranspose (and tailor's FusedConvTranspose), MaxPool,
/// AveragePool: [N, channels, spatial out...] by window_shape.
std::vector<Info> window(const NodeContext& c);

}  // namespace tailor::graph::shape_rules
