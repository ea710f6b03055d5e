// A llama-architecture language model on the CPU (f32): RMSNorm, rotary
// position embeddings, grouped-query attention with a KV cache, SwiGLU FFN
// (Touvron et al., 2023, "LLaMA"; reference implementations: llama2.c run.c,
// HF transformers modeling_llama.py). Every projection runs through a Linear
// that is either a dense weight or a compressed one (schemes::Encoded), so a
// plan can be applied without forming dense weights.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "tailor/core/tensor.h"
#include "tailor/graph/graph.h"
#include "tailor/io/llama2c.h"
#include "tailor/schemes/scheme.h"

namespace tailor::llm {

/// Which dimensions of a head RoPE rotates together.
enum class RopePairing {
  /// Pairs (2i, 2i+1): Meta's original order, llama2.c checkpoints and GGUF
  /// (llama.cpp's convert_hf_to_gguf.py permutes HF's q/k rows back to it).
  interleaved,
  /// Pairs (i, i + head_dim/2): HF transformers' rotate_half order.
  rotate_half,
};

/// A linear map y = W·x with W [out, in] (DESIGN.md orientation).
class Linear {
 public:
  virtual ~Linear() = default;
  virtual int64_t out() const = 0;
  virtual int64_t in() const = 0;
  /// Y [batch, out] = X [batch, in]·Wᵀ, both row-major f32; `y` is overwritten.
  virtual void forward(const float* x, int64_t batch, float* y) const = 0;
  /// Stored bytes of the weight (f32 dense: 4·out·in; encoded: Encoded::bytes()).
  virtual uint64_t bytes() const = 0;
  /// "dense" or the scheme's label.
  virtual std::string label() const = 0;
};

/// A dense f32 weight [out, in] (owned or a view of a mapped file).
class DenseLinear final : public Linear {
 public:
  /// `w`: f32 [out, in], contiguous. Throws Error otherwise.
  explicit DenseLinear(Tensor w);
  int64_t out() const override { return w_.dim(0); }
  int64_t in() const override { return w_.dim(1); }
  void forward(const float* x, int64_t batch, float* y) const override;
  uint64_t bytes() const override { return w_.nbytes(); }
  std::string label() const override { return "dense"; }
  const Tensor& weight() const { return w_; }

 private:
  Tensor w_;
};

/// A compressed weight: forward is Encoded::matmul (no dense weight formed).
class EncodedLinear final : public Linear {
 public:
  explicit EncodedLinear(std::shared_ptr<const schemes::Encoded> encoded);
  int64_t out() const override { return e_->out(); }
  int64_t in() const override { return e_->in(); }
  void forward(const float* x, int64_t batch, float* y) const override;
  uint64_t bytes() const override { return e_->bytes(); }
  std::string label() const override { return e_->label(); }
  const schemes::Encoded& encoded() const { return *e_; }

 private:
  std::shared_ptr<const schemes::Encoded> e_;
};

/// Weights of one transformer block. Projections are [out, in]: wq [dim, dim],
/// wk and wv [kv_dim, dim], wo [dim, dim], w1 (gate) and w3 (up)
/// [hidden, dim], w2 (down) [dim, hidden]; norms [dim].
struct LlamaLayer {
  std::vector<float> attn_norm, ffn_norm;
  std::shared_ptr<const Linear> wq, wk, wv, wo, w1, w2, w3;
};

/// A llama model: configuration and weights. Copies share the weights;
/// replace_linear on a copy leaves the original as it was (so a compressed
/// variant is `LlamaModel c = original; apply_schemes(c, ...)`).
class LlamaModel {
 public:
  /// Loads a llama2.c checkpoint (.bin, RoPE interleaved), a Hugging Face
  /// folder (config.json with LlamaForCausalLM fields + model.safetensors;
  /// rotate_half) or a GGUF file with general.architecture "llama" and
  /// llama.cpp tensor names (token_embd, blk.N.attn_norm, attn_q, attn_k,
  /// attn_v, attn_output, ffn_norm, ffn_gate, ffn_down, ffn_up, output_norm,
  /// optional output; F32/F16/BF16; interleaved). Half-precision weights are
  /// widened to f32. Throws Error naming the file for a model that is not a
  /// llama, a missing or misshapen tensor, or an inconsistent configuration.
  static LlamaModel load(const std::string& path);

  /// Builds the model from weights already read. `file` holds weights named
  /// as in HF (llama2.c's reader) or as in llama.cpp (GGUF); `config` gives
  /// the sizes; `pairing` how q/k rows pair for RoPE.
  static LlamaModel from_weights(const graph::Model& file, const LlamaConfig& config,
                                 RopePairing pairing);

  const LlamaConfig& config() const { return config_; }
  RopePairing rope_pairing() const { return pairing_; }

  /// Names (as in the model file) of every weight that runs as a Linear, in
  /// layer order: per layer q, k, v, o, gate, down, up; then the classifier
  /// (the embedding's name when tied).
  std::vector<std::string> linear_names() const;
  /// The Linear called `name`; throws Error naming it when absent.
  const Linear& linear(const std::string& name) const;
  /// Replaces weight `name` by a compressed one of the same [out, in] shape.
  /// For a tied classifier (name of the token embedding) the classifier runs
  /// through `encoded`, and the embedding lookup reads rows of its decoded
  /// form (a lookup needs rows, which matmul does not give). Throws Error
  /// naming `name` when it is not a Linear of the model or the shapes differ.
  void replace_linear(const std::string& name, std::shared_ptr<const schemes::Encoded> encoded);
  /// The shared Linear called `name`; throws Error naming it when absent.
  std::shared_ptr<const Linear> linear_ptr(const std::string& name) const;
  /// Replaces Linear `name` by `linear` (any Linear of the same [out, in],
  /// e.g. a RecordingLinear wrapping the current one); the embedding lookup is
  /// left as it is. Throws Error naming `name` when it is not a Linear of the
  /// model, `linear` is null or the shapes differ.
  void wrap_linear(const std::string& name, std::shared_ptr<const Linear> linear);
  /// The dense f32 weight [out, in] of Linear `name` (a view, no copy). Throws
  /// Error naming it when absent or already replaced by a compressed weight.
  const Tensor& dense_weight(const std::string& name) const;
  /// Stored bytes of every weight: Linears as stored (Linear::bytes), the
  /// embedding (unless tied and replaced) and norms as f32.
  uint64_t bytes() const;

  /// Embedding row of `token` [dim]. Throws Error for a token outside the vocabulary.
  std::span<const float> embedding(int32_t token) const;
  /// The token embedding table, f32 [vocab, dim] (for a tied classifier
  /// replaced by a compressed weight: its decoded form, as embedding() reads).
  const Tensor& embedding_weight() const { return embedding_; }
  const std::vector<LlamaLayer>& layers() const { return layers_; }
  const std::vector<float>& final_norm() const { return final_norm_; }
  const Linear& classifier() const { return *classifier_; }

 private:
  LlamaConfig config_;
  RopePairing pairing_ = RopePairing::interleaved;
  Tensor embedding_;  // f32 [vocab, dim]
  std::vector<LlamaLayer> layers_;
  std::vector<float> final_norm_;
  std::shared_ptr<const Linear> classifier_;
  // file name → (layer index or -1 for the classifier, slot 0..6)
  std::map<std::string, std::pair<int, int>> linear_index_;
  std::vector<std::string> linear_order_;
  std::shared_ptr<const Linear>& slot(const std::pair<int, int>& at);
};

/// Encodes each weight named in `labels` (file name → scheme label, e.g.
/// "int4-g64", "lowrank-r16"; "dense" leaves it) with the scheme catalog and
/// replaces it in `model` (see replace_linear). Throws Error naming the weight
/// for a name that is not a Linear of the model, a label the catalog does not
/// know, or a scheme that does not apply to the weight's shape.
void apply_schemes(LlamaModel& model, const std::map<std::string, std::string>& labels,
                   const schemes::SchemeParams& defaults = {});

/// Runs a model over a growing token sequence, keeping keys and values of
/// earlier positions (the KV cache). Holds a reference to the model, which
/// must outlive it.
class LlamaSession {
 public:
  explicit LlamaSession(const LlamaModel& model);
  /// Processes `tokens` at positions pos() … pos() + n − 1 (causal attention
  /// over everything before) and returns their next-token logits, row-major
  /// [n, vocab]. Throws Error when a token is outside the vocabulary or the
  /// sequence would pass config().seq_len positions.
  std::vector<float> forward(std::span<const int32_t> tokens);
  /// Positions processed so far.
  int32_t pos() const { return pos_; }
  /// Forgets every position.
  void reset() { pos_ = 0; }

 private:
  const LlamaModel& model_;
  int32_t pos_ = 0;
  std::vector<float> k_cache_, v_cache_;  // [layer, capacity, kv_dim], grown on demand
};

/// Greedy decoding: feeds `prompt` (non-empty), then appends the argmax token
/// (lowest index on ties) `n_tokens` times, stopping early after `stop_token`
/// when it is ≥ 0. Returns only the generated tokens. Throws Error when the
/// prompt is empty or prompt + n_tokens passes seq_len.
std::vector<int32_t> generate_greedy(const LlamaModel& model, std::span<const int32_t> prompt,
                                     int32_t n_tokens, int32_t stop_token = -1);

}  // namespace tailor::llm
