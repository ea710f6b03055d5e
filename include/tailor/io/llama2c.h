// llama2.c checkpoints and tokenizers (https://github.com/karpathy/llama2.c,
// run.c: "legacy" version 0 format).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tailor/graph/graph.h"

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
/// norms, wq, wk, wv, wo, FFN norms, w1, w2, w3, final norm, two RoPE tables
/// [seq_len, head_dim/2] (not weights), and the [vocab, dim] classifier when
/// not shared. A weights-only graph::Model: initializers (zero-copy f32 views
/// of the mapped file, no nodes, weight_convention out_in) with HF names in
/// this order: model.embed_tokens.weight [vocab, dim]; per layer i
/// model.layers.{i}.input_layernorm.weight [dim],
/// model.layers.{i}.self_attn.{q,k,v,o}_proj.weight ([dim, dim], [kv_dim, dim]
/// twice, [dim, dim]; kv_dim = n_kv_heads · head_dim),
/// model.layers.{i}.post_attention_layernorm.weight [dim],
/// model.layers.{i}.mlp.{gate,down,up}_proj.weight (w1 [hidden, dim],
/// w2 [dim, hidden], w3 [hidden, dim]); model.norm.weight [dim];
/// lm_head.weight [vocab, dim] only when not shared. Every matrix is [out, in]
/// (graph::weights: out_in; norms none), q_proj and k_proj in llama2.c's
/// interleaved-pair RoPE order (see convert_llama2c_to_hf). Metadata: the
/// header fields by name (vocab_size positive), "shared_classifier"
/// ("true"/"false") and "architecture" = "llama"; format "llama2c". `config`,
/// when given, receives the header.
/// Throws Error naming the file for a file shorter than the header, a header
/// that is not positive and consistent (dim divisible by n_heads, n_heads by
/// n_kv_heads, head_dim even, sizes within 64 bits) or a file size that is not
/// exactly what the header implies (expected and found bytes in the message).
graph::Model read_llama2c(const std::string& path, LlamaConfig* config = nullptr);

/// Writes a llama2.c checkpoint as a Hugging Face folder: `out_dir/config.json`
/// (LlamaForCausalLM: sizes from the header, rms_norm_eps 1e-5, rope_theta
/// 10000, tie_word_embeddings when the classifier is shared, torch_dtype
/// float32, bos 1, eos 2) and `out_dir/model.safetensors` (every weight f32,
/// metadata {"format": "pt", "source": "llama2.c"}; no lm_head.weight when
/// tied), the q_proj and k_proj rows permuted from llama2.c's interleaved RoPE
/// pairs to HF's rotate-half order: per head of size hd, new row j = old row
/// 2j and new row j + hd/2 = old row 2j + 1 (j < hd/2), which is the `permute`
/// of HF's convert_llama_weights_to_hf.py (Meta order to HF order). Reads and
/// validates the checkpoint first (read_llama2c's errors), then writes both
/// files into a staging folder beside out_dir and moves them in only when both
/// are complete (out_dir itself is created by that move when absent), so a
/// failure leaves neither file behind. Throws Error naming out_dir when it is
/// empty, a file, or cannot be created, or naming a file that cannot be
/// written or moved into place (e.g. out_dir/config.json is a folder).
void convert_llama2c_to_hf(const std::string& checkpoint, const std::string& out_dir);

/// The llama2.c tokenizer of a checkpoint: `given` when not empty, else
/// llama2.c's convention beside the model (its folder, or the folder it is):
/// tok{vocab}.bin, then tokenizer.bin. Throws Error naming `model_path` when
/// neither exists ("... give --tokenizer").
std::string find_llama2c_tokenizer(const std::string& model_path, const std::string& given,
                                   int32_t vocab);

struct Llama2cTokenizer;

/// The tokenizer of a llama checkpoint of `vocab` tokens: the file `given`
/// when not empty; else, for a .gguf holding tokenizer.ggml.* metadata, that
/// vocabulary (read_gguf_tokenizer); else find_llama2c_tokenizer's file
/// beside the model. Throws Error naming the file whose vocabulary is not of
/// `vocab` tokens, and the errors of those readers.
Llama2cTokenizer load_llama_tokenizer(const std::string& model_path, const std::string& given,
                                      int32_t vocab);

/// A llama2.c tokenizer (tokenizer.bin): int32 max_token_length, then per
/// token f32 score, int32 length, bytes.
struct Llama2cTokenizer {
  std::vector<std::string> vocab;
  std::vector<float> scores;
  int32_t max_token_length = 0;

  /// Reads `path` for a vocabulary of `vocab_size` tokens (bytes after the
  /// last token are ignored, as run.c does). Throws Error naming the file when
  /// vocab_size is not positive, the file cannot be read or is truncated, or
  /// max_token_length or a token length is negative or beyond the file.
  static Llama2cTokenizer load(const std::string& path, int32_t vocab_size);
  /// Encodes as run.c does: optional BOS (1), a leading space token (" ") when
  /// text is non-empty, UTF-8 code points (a leading byte and at most 3
  /// continuation bytes) looked up whole, with byte fallback (token byte + 3)
  /// when absent, then repeatedly the adjacent pair whose concatenation is a
  /// token with the highest score (the first on ties; scores ≤ -1e10 never
  /// merge) is merged; optional EOS (2) last. Where run.c would push -1 for a
  /// vocabulary without " ", the byte token of ' ' is used. Throws Error when a
  /// byte token is outside the vocabulary (fewer than 259 tokens).
  std::vector<int32_t> encode(const std::string& text, bool bos, bool eos) const;
  /// Text of `token` following `prev` as run.c's decode does (a leading space
  /// stripped after BOS, a token spelled exactly "<0xHH>" turned into that
  /// byte). Throws Error for a token outside the vocabulary.
  std::string decode(int32_t prev, int32_t token) const;
};

}  // namespace tailor
