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
//
// fuse_skip_rms_norm (after fuse_rms_norm), A and B of one shape:
//
//   A ──Add(A, B)──RMSNormalization(·, gain)── Y      (S = the sum, read on)
//
//   → Y, S = RMSNormalization(A, gain, B), epsilon kept  (the residual Add
//     and the norm of the next block in one node)
//
// fuse_group_query_attention (after fuse_attention), RoPE(t) being
// Add(Mul(t, cos), Mul(MatMul(t, R), sin)) as io/llama_graph.h writes it:
//
//   Q ──Reshape[1,−1,H,d]──RoPE──Transpose(0,2,1,3)──Reshape[1,KV,−1,d]──┐
//   K ──Reshape[1,−1,KV,d]──RoPE──Transpose(0,2,1,3)──Concat(past_k, ·, axis 2)── present_k
//   V ──Reshape[1,−1,KV,d]────────Transpose(0,2,1,3)──Concat(past_v, ·, axis 2)── present_v
//   Attention(·, present_k, present_v, mask)──Reshape[1,H,−1,d]──Transpose(0,2,1,3)
//     ──Reshape[−1,H·d]── Y
//
//   → Y, present_k, present_v = GroupQueryAttention(Q, K, V, past_k, past_v, cos, sin, R,
//     mask), num_heads H, kv_num_heads KV, the scale    (one node for seventeen; the
//     presents are still graph outputs, read by nothing else)
//   and when cos and sin are Slice(table, P, P + S, axes 0), P = the past's
//   length (Slice(Shape(past), 2, 3)), and the mask is the builder's causal
//   Where(Greater(key positions, query positions), −inf, 0) (tiled H/KV ×):
//   → the whole tables as cos and sin, no mask, rope_tables 1, causal 1 (the
//     position nodes fall to dce)
#pragma once

#include "tailor/graph/graph.h"

namespace tailor::llm {

/// The rewrite above on the main graph of `model`; returns the count of
/// attentions fused. Adds the ai.tailor opset import when it fuses one.
int fuse_attention(graph::Model& model);

/// The second rewrite above; returns the count of norms fused.
int fuse_rms_norm(graph::Model& model);

/// The rewrite after it (run fuse_rms_norm first); returns the count of
/// residual Adds absorbed. Infers the graph's types to prove A and B alike.
int fuse_skip_rms_norm(graph::Model& model);
/// The fourth rewrite above (run fuse_attention first); returns the count of
/// attention blocks fused.
int fuse_group_query_attention(graph::Model& model);

}  // namespace tailor::llm
