// Fusions for decoder graphs (io/llama_graph.h builds the standard form),
// run by llm::Decoder before the pass pipeline: a decoder step is small, so
// the executor's cost per node passes the arithmetic and fewer nodes is faster.
// Both emit ai.tailor ops (graph/fused_ops.h). Each intermediate of a matched
// pattern is read once; anything else is left as it is.
//
// fuse_attention:
//
//   K ──Transpose(perm 0,1,3,2)──┐
//   Q ─────────────────────────MatMul──Mul(scalar c)──Add(mask)──Softmax(last axis)──┐
//   V ─────────────────────────────────────────────────────────────────────────────MatMul── Y
//
//   → Y = Attention(Q, K, V, mask), scale = c    (one kernel for five, and no
//     transposed copy of the key cache)
//
// fuse_rms_norm:
//
//   X ──Mul(X, X)──ReduceMean(axes −1, keepdims)──Add(scalar ε)──Sqrt──┐
//   X ───────────────────────────────────────────────────────────────Div──Mul(gain [n])── Y
//
//   → Y = RMSNormalization(X, gain), epsilon = ε
#pragma once

#include "tailor/graph/graph.h"

namespace tailor::llm {

/// The rewrite above on the main graph of `model`; returns the count of
/// attentions fused. Adds the ai.tailor opset import when it fuses one.
int fuse_attention(graph::Model& model);

/// The second rewrite above; returns the count of norms fused.
int fuse_rms_norm(graph::Model& model);

}  // namespace tailor::llm
