// A llama checkpoint as a standard ONNX decoder graph with a KV cache, the
// form ONNX exports of decoder models take (Touvron et al., 2023, "LLaMA";
// reference implementations: llama2.c run.c, HF transformers modeling_llama.py).
//
// The graph (default domain, opset 17, batch 1, nothing outside the ONNX
// standard). S (`sequence`) is the number of new tokens, P (`past_sequence`,
// ≥ 0) the number of cached positions, T = P + S:
//
//   inputs   input_ids                   int64 [1, S]   token ids at positions P … T − 1
//            past_key_values.{i}.key     f32 [1, n_kv_heads, P, head_dim]   (i = 0 … n_layers − 1)
//            past_key_values.{i}.value   f32 [1, n_kv_heads, P, head_dim]
//   outputs  logits                      f32 [1, S, vocab]   next-token logits of each new position
//            present.{i}.key / .value    f32 [1, n_kv_heads, T, head_dim] = Concat(past, new, axis
//            2)
//
// A first step feeds empty pasts ([1, n_kv_heads, 0, head_dim]); each later
// step feeds the previous step's presents as its pasts.
//
//   x = Gather(embedding, Reshape(input_ids, [-1]))                    [S, dim]
//   per layer:
//     h = RMSNorm(x) = Mul(Div(x, Sqrt(Add(ReduceMean(Mul(x, x), -1), eps))), gain)
//     q, k, v = Gemm(h, W, transB = 1)       W [out, in] as the checkpoint stores it
//     RoPE at positions P … T − 1: t·cos + (t·R)·sin per head; cos/sin tables
//           [seq_len, 1, head_dim] sliced to rows P … T − 1 (each pair's angle on
//           both of its dimensions), R [head_dim, head_dim] the ±1 pair rotation of
//           the checkpoint's pairing
//     k, v appended to the cache (present); grouped-query attention without
//           copies of the KV heads: q as [1, n_kv_heads, group·S, head_dim]
//           (the `group` query heads of a KV head stacked), MatMul with the
//           cache broadcast over them
//     Softmax(q·kᵀ·head_dim^−½ + mask)·v, mask [group·S, T] computed in the
//           graph: −inf where the key position passes the query's, else 0
//     x = x + Gemm(attention, Wo);  x = x + Gemm(Mul(Mul(g, Sigmoid(g)), Gemm(h', W3)), W2),
//           g = Gemm(h', W1), h' = RMSNorm(x)     (SwiGLU)
//   logits = Unsqueeze(Gemm(RMSNorm(x), classifier, transB = 1), 0)
//            (the classifier is the embedding initializer itself when tied)
//
// Initializer names: every checkpoint weight under its name in the file (HF
// names for llama2.c and HF folders, llama.cpp names for GGUF), so a plan's
// layer names address them; the builder's own constants (RoPE tables, the
// rotation, eps, the attention scale, shapes) under names starting "llama.".
#pragma once

#include <map>
#include <memory>
#include <string>

#include "tailor/core/tensor.h"
#include "tailor/graph/graph.h"
#include "tailor/io/llama2c.h"
#include "tailor/schemes/scheme.h"

namespace tailor {

/// Which dimensions of a head RoPE rotates together.
enum class RopePairing {
  /// Pairs (2i, 2i+1): Meta's original order, llama2.c checkpoints and GGUF
  /// (llama.cpp's convert_hf_to_gguf.py permutes HF's q/k rows back to it).
  interleaved,
  /// Pairs (i, i + head_dim/2): HF transformers' rotate_half order.
  rotate_half,
};

/// Prefix of the builder's own initializer names (not checkpoint weights).
inline constexpr const char* kLlamaConstantPrefix = "llama.";

/// The decoder graph above from `weights` named as the readers name them:
/// HF names (model.embed_tokens.weight, model.layers.{i}.input_layernorm.weight,
/// .self_attn.{q,k,v,o}_proj.weight, .post_attention_layernorm.weight,
/// .mlp.{gate,down,up}_proj.weight, model.norm.weight, lm_head.weight) or
/// llama.cpp names (token_embd, blk.{i}.attn_norm, attn_q, attn_k, attn_v,
/// attn_output, ffn_norm, ffn_gate, ffn_down, ffn_up, output_norm, output;
/// each + ".weight"), chosen by whether token_embd.weight is present.
/// Matrices are [out, in]; f32 weights become initializers without a copy,
/// f16/bf16 ones are widened to f32. `config` gives the sizes (classifier
/// tied when config.shared_classifier), `pairing` how q/k rows pair for RoPE.
/// `source` names the checkpoint in messages. A matrix named in `packed`
/// (a GGUF's Q8_0 / Q4_0 tensors as schemes q8_0 / q4_0, LlamaCheckpoint::packed)
/// is taken from there instead of `weights`: its stored codes and f16 scales
/// become initializers "<name>.q" / "<name>.scale" computing the weight in
/// their standard form (graph/weight_forms.h, as `tailor compress` writes
/// model.onnx), which the runtime's compressed pass runs on the packed
/// kernels without forming the f32 matrix. Throws Error naming `source` for
/// an inconsistent configuration, or a missing, misshapen or non-float tensor.
graph::Model llama_graph(
    const std::map<std::string, Tensor>& weights, const LlamaConfig& config, RopePairing pairing,
    const std::string& source = "llama",
    const std::map<std::string, std::shared_ptr<const schemes::Encoded>>& packed = {});

/// A llama checkpoint read with its configuration.
struct LlamaCheckpoint {
  /// Every weight by its name in the file (views of the mapped file; a GGUF's
  /// Q8_0 / Q4_0 tensors decoded to f32 as read_gguf decodes them).
  std::map<std::string, Tensor> weights;
  /// A GGUF's Q8_0 / Q4_0 tensors as stored, by name: schemes q8_0 / q4_0
  /// (schemes::from_ggml_blocks); empty for the other formats.
  std::map<std::string, std::shared_ptr<const schemes::Encoded>> packed;
  LlamaConfig config;
  RopePairing pairing = RopePairing::interleaved;
};

/// The configuration of a llama checkpoint already read by load_model (see
/// read_llama_checkpoint) and its weights by name. Throws as read_llama_checkpoint does.
LlamaCheckpoint llama_checkpoint(const graph::Model& file);

/// Reads a llama2.c checkpoint (.bin, interleaved), a Hugging Face folder
/// (config.json with LlamaForCausalLM fields + model.safetensors; rotate_half)
/// or a GGUF file with general.architecture "llama" (llama.cpp names,
/// F32/F16/BF16, Q8_0 and Q4_0 (also in `packed`); interleaved). Throws Error naming the file for a
/// model that is not a llama, or an unreadable or inconsistent configuration.
LlamaCheckpoint read_llama_checkpoint(const std::string& path);

/// llama.cpp's GGUF name of a llama checkpoint tensor: Hugging Face / llama2.c
/// names (model.embed_tokens.weight, model.layers.{i}.self_attn.q_proj.weight,
/// ...) become token_embd.weight, blk.{i}.attn_q.weight, ...; GGUF names are
/// returned as they are; empty for a name of neither family.
std::string llama_gguf_name(const std::string& name);

/// llama_graph of read_llama_checkpoint(path), `source` = path, its packed
/// GGUF tensors kept packed.
graph::Model load_llama_graph(const std::string& path);

}  // namespace tailor
