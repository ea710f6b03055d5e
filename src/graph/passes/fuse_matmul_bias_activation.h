// Fuses a MatMul by a constant matrix with the bias Add and the activation after it:
//
//   MatMul(A, B) ─► [Add(·, bias)] ─► [act] ─►   ai.tailor.FusedMatMul(A, B, [bias]){act}
//
// (B a constant [k, n], bias a constant [n], act as epilogue_activation.h).
#pragma once

#include "fusion_scope.h"

namespace tailor::graph::passes {

/// The match rooted at node `matmul` of `scope.g`: a default-domain MatMul
/// with one output, an f32 input A and a constant f32 B of rank 2 ([k, n]);
/// then, when its output is read only by it, an Add of a constant f32 [n]
/// (bias over the last axis); then an activation (match_activation). Kind
/// "matmul_epilogue". nullopt when neither the Add nor an activation follows.
/// Runs inside fuse().
std::optional<FusionMatch> match_matmul_bias_activation(const FusionScope& scope, size_t matmul);

}  // namespace tailor::graph::passes
