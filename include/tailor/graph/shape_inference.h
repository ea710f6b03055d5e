// Shape inference over the graph IR: element types and shapes of every value,
// symbolic dims propagated, shape computations folded. The one inference of
// the project: the passes read types through infer_types. The rules live
// beside their op family (src/graph/shape_rules_<family>.cpp), one registry
// looked up by (domain, op_type).
#pragma once

#include <functional>
#include <string>
#include <unordered_map>

#include "tailor/graph/graph.h"

namespace tailor::graph {

/// Fills `model.graph.types` for every node output of the main graph whose
/// type follows from its inputs (ONNX operator semantics, opset-aware), in
/// node order. Known dims stay numbers, symbolic dims (ONNX dim_param) are
/// carried through ops that keep them (elementwise broadcasting, Conv/pool
/// batch and channels, Transpose, MatMul, Concat, Reshape...), and dims that
/// cannot be known become unknown ("?"). Small int64 tensors that hold shapes
/// (Shape, and what Gather/Slice/Concat/Squeeze/Unsqueeze/Cast/arithmetic
/// make of them and of constants) are tracked element by element, symbols
/// included, so the target of Reshape/Expand/ConstantOfShape is known as far
/// as its elements are (the PP-OCR recogniser's attention Reshape keeps the
/// batch symbol). An existing type is replaced only by a more specific one,
/// and recorded types of intermediate values (ONNX value_info) feed the
/// rules downstream. Ops it has no rule for (has_shape_rule) keep their
/// outputs' recorded types, or leave them untyped. tailor's own ops (domain
/// ai.tailor) have rules too; subgraphs are not descended into (If and Loop
/// outputs follow what their subgraphs declare). Never throws for a
/// valid graph; an inconsistent graph (e.g. Concat of mismatched ranks) is an
/// Error naming the node.
void infer_shapes(Model& model);

/// The types infer_shapes would give the values of graph `g` (a main graph or
/// a subgraph) without changing it: every recorded type (g.types) and
/// initializer, and every node output whose type follows from its inputs by
/// the op's rule, the recorded type refined by the rule's. Values read from an
/// enclosing scope are known only when `g` records their type. Values of
/// which nothing is known are absent. Throws Error naming the node for an
/// inconsistent graph, as infer_shapes does.
std::unordered_map<std::string, ValueType> infer_types(const Graph& g, int64_t opset);

/// Receives one value's name and type (both movable) from for_each_inferred_type.
using TypeSink = std::function<void(std::string&& name, ValueType&& type)>;
/// infer_types without building its map: hands each known value to `sink`
/// once, in no particular order (for views that keep less, as the passes'
/// dtype/rank map does).
void for_each_inferred_type(const Graph& g, int64_t opset, const TypeSink& sink);

/// True when shape inference has a rule for op `op_type` of `domain` ("" for
/// the default ONNX domain, "ai.tailor" for tailor's ops); the outputs of ops
/// without one keep only their recorded types.
bool has_shape_rule(const std::string& domain, const std::string& op_type);

/// Sets the declared shape of graph input `name` to concrete `shape` (e.g.
/// fixing a symbolic batch), then re-infers. Throws Error naming the input
/// when it does not exist or the rank or a known dim disagrees.
void specialize_input(Model& model, const std::string& name, const Shape& shape);

/// Replaces every node whose outputs are all compile-time constants (shape
/// computations on static shapes: Shape, Gather, Slice, Concat, Cast,
/// Unsqueeze, Squeeze, arithmetic on them, Constant) by initializers, and
/// removes nodes left without consumers. Runs infer_shapes first. Returns the
/// number of nodes removed. The model computes the same outputs.
int fold_shape_constants(Model& model);

}  // namespace tailor::graph
