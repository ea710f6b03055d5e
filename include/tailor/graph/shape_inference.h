// Shape inference over the graph IR: element types and shapes of every value,
// symbolic dims propagated, shape computations folded.
#pragma once

#include <string>

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
/// batch symbol). An existing type is replaced only by a more specific one.
/// Ops it has no rule for leave their outputs untyped. Never throws for a
/// valid graph; an inconsistent graph (e.g. Concat of mismatched ranks) is an
/// Error naming the node.
void infer_shapes(Model& model);

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
