// llama2.c checkpoints and tokenizers (https://github.com/karpathy/llama2.c,
// run.c: "legacy" version 0 format).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tailor/io/model.h"

namespace tailor {

/// Hyper-parameters of a llama-architecture model, as in HF's LlamaConfig.
struct LlamaConfig {
  int32_t dim = 0;         ///< hidden size
  int32_t hidden_dim = 0;  ///< FFN intermediate size
  int32_t n_layers = 0;
  int32_t n_heads = 0;
  int32_t n_kv_heads = 0;
  int32_t vocab_size = 0;
  int32_t seq_len = 0;            ///< max position embeddings
  bool shared_classifier = true;  ///< lm_head tied to the token embedding
  float rms_norm_eps = 1e-5f;
  float rope_theta = 10000.0f;
  int32_t head_dim() const { return n_heads ? dim / n_heads : 0; }
};

/// Reads a llama2.c checkpoint: 7 little-endian int32 (dim, hidden_dim,
/// n_layers, n_heads, n_kv_heads, vocab_size, seq_len; negative vocab_size
/// means a separate classifier), then f32 arrays token embedding, attention
/// norms, wq, wk, wv, wo, FFN norms, w1, w2, w3, final norm, two RoPE tables,
/// and [vocab, dim] classifier when not shared. Weights are exposed per layer
/// with HF names (model.embed_tokens.weight, model.layers.{i}.input_layernorm.weight,
/// model.layers.{i}.self_attn.{q,k,v,o}_proj.weight,
/// model.layers.{i}.post_attention_layernorm.weight,
/// model.layers.{i}.mlp.{gate,down,up}_proj.weight (w1, w2, w3), model.norm.weight,
/// lm_head.weight only when not shared), every matrix [out, in], in llama2.c's
/// interleaved-pair RoPE order (see convert_llama2c_to_hf). `config` receives
/// the header. Throws Error naming the file for a header that is not positive
/// and consistent (dim divisible by n_heads, n_heads by n_kv_heads) or a file
/// size that disagrees with it.
ModelFile read_llama2c(const std::string& path, LlamaConfig* config = nullptr);

/// Writes a llama2.c checkpoint as a Hugging Face folder: `out_dir/config.json`
/// (LlamaForCausalLM) and `out_dir/model.safetensors` (f32), the q_proj and
/// k_proj rows permuted from interleaved pairs to HF's rotate-half order
/// (per head, row 2i → i and 2i+1 → i + head_dim/2), as HF's
/// convert_llama_weights_to_hf.py does. Creates out_dir; files written atomically.
void convert_llama2c_to_hf(const std::string& checkpoint, const std::string& out_dir);

/// A llama2.c tokenizer (tokenizer.bin): int32 max_token_length, then per
/// token f32 score, int32 length, bytes.
struct Llama2cTokenizer {
  std::vector<std::string> vocab;
  std::vector<float> scores;
  int32_t max_token_length = 0;

  /// Reads `path` for a vocabulary of `vocab_size` tokens. Throws Error naming
  /// the file when truncated or a length is negative or beyond the file.
  static Llama2cTokenizer load(const std::string& path, int32_t vocab_size);
  /// Encodes as run.c does: optional BOS (1), a leading space token (" ") when
  /// text is non-empty, UTF-8 code points looked up (byte fallback + 3 when
  /// absent), then greedy merges of the best-scoring adjacent pair.
  std::vector<int32_t> encode(const std::string& text, bool bos, bool eos) const;
  /// Text of `token` following `prev` as run.c's decode does (a leading space
  /// stripped after BOS, "<0xAB>" byte tokens turned into the byte).
  std::string decode(int32_t prev, int32_t token) const;
};

}  // namespace tailor
