// The graph IR: a model as a list of nodes over named values, as ONNX describes
// it (https://github.com/onnx/onnx/blob/main/docs/IR.md), with constants and
// weights held by reference (tailor::Tensor views, never copies of mapped data).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "tailor/core/tensor.h"

namespace onnx {
class ModelProto;
}

namespace tailor::schemes {
class Encoded;
}

namespace tailor::graph {

/// One dimension of a value's shape: a known size (elements, ≥ 0), a named
/// symbol (ONNX dim_param, e.g. "batch"), or unknown (neither).
struct Dim {
  /// Size in elements; -1 when not known.
  int64_t value = -1;
  /// Symbol name when the size is symbolic; empty otherwise.
  std::string symbol;

  static Dim known(int64_t v) { return Dim{v, {}}; }
  static Dim named(std::string s) { return Dim{-1, std::move(s)}; }
  static Dim unknown() { return Dim{}; }
  bool is_known() const { return value >= 0; }
  bool is_symbolic() const { return value < 0 && !symbol.empty(); }
  bool operator==(const Dim& o) const { return value == o.value && symbol == o.symbol; }
  /// "3", "batch" or "?".
  std::string to_string() const;
};

/// Shape of a value with possibly symbolic dimensions, outermost first.
using SymShape = std::vector<Dim>;

/// "[batch, 3, 48, ?]".
std::string sym_shape_to_string(const SymShape& s);
/// The SymShape of a concrete shape.
SymShape sym_shape_of(const Shape& s);
/// The concrete shape when every dimension is known, else nullopt.
std::optional<Shape> concrete_shape(const SymShape& s);

/// Type of a value: element type and shape, either of which may be unknown
/// (an unknown shape means the rank is unknown too).
struct ValueType {
  std::optional<DType> dtype;
  std::optional<SymShape> shape;
  bool operator==(const ValueType& o) const { return dtype == o.dtype && shape == o.shape; }
  /// "f32[batch, 3, 48, ?]", "?" parts for unknowns.
  std::string to_string() const;
};

class Graph;

/// A node attribute (onnx AttributeProto): exactly one kind of payload. Kind
/// `encoded` is tailor's own: a compressed weight in a scheme's stored form
/// (schemes::Encoded, shared, never copied), held by CompressedLinear and
/// CompressedConv nodes; export writes it as its label, shape and factor tensors.
struct Attribute {
  enum class Kind { f, i, s, t, g, floats, ints, strings, graphs, encoded };
  Kind kind = Kind::i;
  float f = 0;
  int64_t i = 0;
  std::string s;
  Tensor t;
  std::shared_ptr<Graph> g;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  std::vector<std::shared_ptr<Graph>> graphs;
  std::shared_ptr<const schemes::Encoded> encoded;

  static Attribute of_float(float v);
  static Attribute of_int(int64_t v);
  static Attribute of_string(std::string v);
  static Attribute of_tensor(Tensor v);
  static Attribute of_graph(std::shared_ptr<Graph> v);
  static Attribute of_floats(std::vector<float> v);
  static Attribute of_ints(std::vector<int64_t> v);
  static Attribute of_strings(std::vector<std::string> v);
  static Attribute of_encoded(std::shared_ptr<const schemes::Encoded> v);
  /// "float", "int", "string", "tensor", "graph", "floats", "ints", "strings", "graphs", "encoded".
  static const char* kind_name(Kind k);
};

/// An operation: op type in a domain, named inputs and outputs (an empty input
/// name is an omitted optional input), attributes in file order.
struct Node {
  std::string name;
  std::string op_type;
  /// "" is the default ONNX domain ("ai.onnx" is normalised to "").
  std::string domain;
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
  std::vector<std::pair<std::string, Attribute>> attributes;

  /// The attribute named `name`, or nullptr.
  const Attribute* find(const std::string& name) const;
  /// Typed attribute access with a default; throws Error naming the node when
  /// the attribute exists with another kind.
  int64_t attr_int(const std::string& name, int64_t fallback) const;
  float attr_float(const std::string& name, float fallback) const;
  std::string attr_string(const std::string& name, const std::string& fallback) const;
  std::vector<int64_t> attr_ints(const std::string& name, std::vector<int64_t> fallback) const;
  std::vector<float> attr_floats(const std::string& name, std::vector<float> fallback) const;
  /// Sets (replaces or appends) an attribute.
  void set(const std::string& name, Attribute a);
  /// "Conv 'conv1'" (or "Conv #12" style label given by the caller when unnamed).
  std::string label() const;
};

/// A computation graph (onnx GraphProto): nodes in topological order, graph
/// inputs and outputs, initializers (constant tensors by name, views of the
/// model's storage), and the known types of values. Subgraphs (If branches,
/// Loop/Scan bodies) are Graphs held by node attributes; they may read values
/// of enclosing graphs by name (outer scope).
class Graph {
 public:
  std::string name;
  std::vector<Node> nodes;
  /// Graph input value names (initializers are not listed here).
  std::vector<std::string> inputs;
  /// Graph output value names.
  std::vector<std::string> outputs;
  /// Initializers: name → tensor (weights and constants; never copied on import).
  std::map<std::string, Tensor> initializers;
  /// Initializer names in file order (export writes them in this order).
  std::vector<std::string> initializer_order;
  /// Known types of values (graph inputs, outputs, intermediates with
  /// value_info, initializers, and what shape inference adds).
  std::map<std::string, ValueType> types;

  /// Type of a value, or nullptr.
  const ValueType* type_of(const std::string& value) const;
  /// Adds an initializer (replacing one of the same name).
  void add_initializer(const std::string& name, Tensor t);
  /// Label of node `i` for messages: "Op 'name'" or "Op #i" when unnamed.
  std::string node_label(size_t i) const;
};

/// Names graph `g` reads from enclosing scopes (its free names): node
/// inputs, graph outputs and, recursively, what its subgraphs read, less the
/// names `g` defines before the read (its inputs, initializers and the outputs
/// of earlier nodes). For a main graph in topological order this is empty; for
/// an If branch or Loop body it is the outer values the node implicitly reads.
std::set<std::string> free_names(const Graph& g);

/// The union of free_names over the subgraph attributes of `n`: the values of
/// the enclosing graph that `n` reads implicitly. Empty for nodes without
/// subgraphs.
std::set<std::string> subgraph_free_names(const Node& n);

/// How graph::weights (tailor/graph/weights.h) orients a weight that no node
/// consumes: the stored convention of the file it came from. Readers of
/// formats without a graph set it; ONNX needs none (its ops say).
enum class WeightConvention {
  /// No [out, in] view: ONNX, and models built in memory.
  onnx,
  /// PyTorch state dicts (safetensors, HF folders): floating rank 2 out_in, rank ≥ 3 conv.
  pytorch,
  /// llama2.c and GGUF matrices (ggml's ne order reversed): floating rank ≥ 2 out_in.
  out_in,
};

/// A model: the main graph with its opset versions and provenance. Every
/// reader gives one (tailor/io/load_model.h); a format without a graph
/// (safetensors, GGUF, llama2.c) gives a weights-only model: initializers in
/// file order and no nodes.
struct Model {
  Graph graph;
  /// Opset version of the default domain (9–17 accepted on import).
  int64_t opset = 0;
  /// Other opset imports (domain → version), e.g. "ai.tailor".
  std::map<std::string, int64_t> other_opsets;
  int64_t ir_version = 8;
  std::string producer_name;
  std::string producer_version;
  /// Where the model came from (a file path), for messages; may be empty.
  std::string source;
  /// The ModelProto the initializers may view (kept alive while they do).
  std::shared_ptr<const onnx::ModelProto> proto;
  /// The file format read: "onnx", "safetensors", "gguf" or "llama2c"; empty
  /// for a model built in memory.
  std::string format;
  /// Key/value metadata of the file (ONNX "ir_version", "opset",
  /// "producer_name", "producer_version"; safetensors `__metadata__`; GGUF
  /// string/number keys; llama2.c header fields).
  std::map<std::string, std::string> metadata;
  /// Orientation of the weights no node consumes (see WeightConvention).
  WeightConvention weight_convention = WeightConvention::onnx;
};

}  // namespace tailor::graph
