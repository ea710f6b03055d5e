// Load-time rewrites that let the f32 runtime execute models stored the way
// some exporters write them: nodes out of topological order, and fp16
// weights with the compute cast to fp16 (ISNet "medium", fp16 weights).
#pragma once

#include "tailor/graph/graph.h"

namespace tailor::graph {

/// Reorders `g.nodes` (and every subgraph's) into a topological order: Kahn's
/// algorithm, taking at each step the ready node that comes first in the
/// current order, so an already topological graph is unchanged. Values no
/// node of the graph produces (inputs, initializers, outer-scope names) are
/// ready from the start. Throws Error(g.name, ...) naming a node of a cycle.
void sort_topologically(Graph& g);

/// Runs an fp16 model in f32 (ONNX semantics up to the fp16 rounding of
/// intermediates, which is not reproduced: results are the f32 computation,
/// what onnxruntime's CPU provider does for ops it has no fp16 kernel for).
/// In `model` and its subgraphs: f16 initializers and f16 Constant values
/// become f32 copies; Cast to f16 becomes Cast to f32; a Cast to f32 or f16
/// whose input is known (from `types`, initializers or earlier rewrites) to
/// be floating point is removed and its readers read its input (kept as
/// Cast when its output is a graph output); f16 types recorded for values
/// become f32. Graph inputs and outputs declared f16 keep their f16 type:
/// an f16 input is cast to f32 on entry, an f16 output cast back on exit.
/// Returns the number of tensors and nodes rewritten (0: nothing was f16).
int compute_f16_as_f32(Model& model);

}  // namespace tailor::graph
