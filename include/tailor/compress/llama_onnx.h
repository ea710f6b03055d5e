// A llama model (llm/llama.h) as a standard ONNX graph, dense or with a plan's
// compressed linears in rewrite_standard's forms, so onnxruntime (or any ONNX
// runtime) runs what `tailor compress` planned for a llama checkpoint.
//
// The graph (default domain, opset 17, batch 1, nothing outside the ONNX
// standard; the forward pass of llm::LlamaSession, Touvron et al. 2023):
//
//   input_ids  int64 [1, sequence]   token ids; `sequence` is symbolic,
//                                    1 ≤ sequence ≤ config.seq_len; positions
//                                    are 0 … sequence − 1 (no KV cache)
//   logits     f32 [1, sequence, vocab]   next-token logits at every position
//
//   x = Gather(embedding, Reshape(input_ids, [-1]))                  [S, dim]
//   per layer:
//     h = RMSNorm(x) = Mul(Div(x, Sqrt(Add(ReduceMean(Mul(x, x), -1), eps))), gain)
//     q, k, v = Gemm(h, W, transB = 1)          W [out, in] as stored in the file
//     RoPE: t·cos + (t·R)·sin per head, cos/sin [seq_len, 1, head_dim] initializers
//           sliced to S (each pair's angle repeated on both of its dimensions),
//           R [head_dim, head_dim] the ±1 pair rotation of the checkpoint's
//           pairing: (2i, 2i+1) for llama2.c and GGUF, (i, i + head_dim/2) for HF
//     grouped KV heads: Tile of k, v over the query heads of their group
//     Softmax(MatMul(q, kᵀ)·head_dim^−½ + mask) · v, mask [S, S] computed in the
//           graph: Where(Greater(key position, query position), −inf, 0) over
//           Range(0, S) (no [seq_len, seq_len] table in the file)
//     x = x + Gemm(attention, Wo);  x = x + Gemm(Mul(Mul(g, Sigmoid(g)), Gemm(h, W3)), W2),
//           g = Gemm(RMSNorm(x), W1)   (SwiGLU)
//   logits = Unsqueeze(Gemm(RMSNorm(x), classifier, transB = 1), 0)
//            (the classifier is the embedding initializer itself when tied)
//
// Initializer names: every Linear under its name in the model file
// (LlamaModel::linear_names, the tied embedding included), so a plan's layer
// names address them; norms "layers.{i}.attn_norm", "layers.{i}.ffn_norm",
// "final_norm"; an untied embedding "token_embedding".
#pragma once

#include <vector>

#include "tailor/compress/rewrite.h"
#include "tailor/graph/graph.h"
#include "tailor/llm/llama.h"

namespace tailor::compress {

/// The dense graph of `model` (see the file comment). Weights are copied into
/// f32 initializers (half-precision checkpoints are already f32 in the model).
/// Throws Error naming a Linear that is not dense (replaced by a compressed
/// weight): export the original model and pass the plan to llama_to_onnx below.
graph::Model llama_to_onnx(const llm::LlamaModel& model);

/// The graph of `model` with every planned layer of `layers` (encode_plan's
/// output for the model's file: names from LlamaModel::linear_names) in
/// rewrite_standard's form: low-rank → MatMul(MatMul(x, Bᵀ), Aᵀ) (a tied
/// embedding: MatMul(A, B) as the weight, read by Gather and the classifier),
/// int8/int4/int3/int4-g/ternary → Cast·Mul of the stored codes and f16 scales
/// feeding the Gemm (and Gather), other schemes as their decoded weight. Its
/// logits are those of `model` with the same layers replaced (replace_linear),
/// up to f32 rounding. `log` gets one entry per layer. Throws Error naming a
/// layer that is not a Linear of `model` or whose shape differs.
graph::Model llama_to_onnx(const llm::LlamaModel& model, const std::vector<EncodedLayer>& layers,
                           std::vector<LayerRewrite>* log = nullptr);

}  // namespace tailor::compress
