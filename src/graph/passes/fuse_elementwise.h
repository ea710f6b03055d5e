// Fuses a connected group of f32 elementwise nodes into one program run in one
// pass over the output:
//
//   x0..x3 ─► Add | Sub | Mul | Div | Max | Min | Pow | Relu | Sigmoid | Tanh | Exp | Log | Sqrt
//             | Reciprocal | Neg | Abs | Clip | HardSigmoid | HardSwish | LeakyRelu  (2..24 nodes)
//          ─►   ai.tailor.FusedElementwise(x0..x3){program, params, constants}
#pragma once

#include "fusion_scope.h"

namespace tailor::graph::passes {

/// The group ending at node `sink` of `scope.g`, grown backwards from it: a
/// producer joins when it is an eligible unclaimed node (default domain, f32
/// output and operands; Clip with constant bounds; Pow by a one-element
/// constant or an f32 value), its output is no graph output and is read only
/// by the group, and the program stays within kFusedElementwiseMaxInputs
/// run-time inputs and kFusedElementwiseMaxSteps steps. One-element f32
/// constants that cannot raise the other operand's rank become immediates.
/// Kind "elementwise"; the fused node's attributes follow
/// tailor/graph/fused_ops.h (Pow by 2, 3, 1, 0.5 becomes square, cube,
/// identity, sqrt, as the runtime's Pow computes them). nullopt for fewer than
/// two nodes. Runs inside fuse(), last, from the last node backwards.
std::optional<FusionMatch> match_elementwise(const FusionScope& scope, size_t sink);

}  // namespace tailor::graph::passes
