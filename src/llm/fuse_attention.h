// The attention of a decoder graph as one ai.tailor Attention node
// (graph/fused_ops.h), so a decoder step runs one kernel where the standard
// form runs five (and copies the transposed key cache). Matched pattern, each
// intermediate read once:
//
//   K ──Transpose(perm 0,1,3,2)──┐
//   Q ─────────────────────────MatMul──Mul(scalar c)──Add(mask)──Softmax(last axis)──┐
//   V ─────────────────────────────────────────────────────────────────────────────MatMul── Y
//
//   → Y = Attention(Q, K, V, mask), scale = c
//
// Anything else is left as it is (a graph without the pattern is returned unchanged).
#pragma once

#include "tailor/graph/graph.h"

namespace tailor::llm {

/// The rewrite above on the main graph of `model`; returns the count of
/// attentions fused. Adds the ai.tailor opset import when it fuses one.
int fuse_attention(graph::Model& model);

}  // namespace tailor::llm
