// Runs a half-precision graph in single precision.
#pragma once

#include "tailor/graph/graph.h"

namespace tailor::graph {

/// Rewrites `model` (main graph and subgraphs) so that it computes in f32
/// where it computed in f16: f16 initializers and Constant tensors become f32
/// (exact conversion, owned copies), Cast to FLOAT16 becomes Cast to FLOAT,
/// ConstantOfShape values likewise, and recorded f16 value types become f32 —
/// except graph inputs and outputs, whose declared types stay recorded (an f16
/// graph output is then produced as f32; tailor run writes what it gets, and
/// the executor does not check output types). The outputs differ from an f16 runtime's by f16
/// rounding of intermediates (tailor's kernels are f32). Returns the number of
/// tensors and nodes changed; 0 leaves the model untouched.
int promote_f16_to_f32(Model& model);

}  // namespace tailor::graph
