// model.gguf of a compressed llama checkpoint and llama-quantize's per-tensor
// type file (include/tailor/compress/gguf_out.h).
#include "tailor/compress/gguf_out.h"

#include <fmt/format.h>

#include <cctype>
#include <cstdio>
#include <cstring>
#include <map>

#include "tailor/core/error.h"
#include "tailor/io/atomic_file.h"
#include "tailor/schemes/ggml_blocks.h"

namespace tailor::compress {
namespace {

/// `bytes` as a u8 tensor.
Tensor u8_tensor(const std::vector<uint8_t>& bytes) {
  Tensor t = Tensor::zeros(DType::u8, {static_cast<int64_t>(bytes.size())});
  if (!bytes.empty()) std::memcpy(t.mutable_raw(), bytes.data(), bytes.size());
  return t;
}

/// Rows of `data` (out rows of equal size) reordered from rotate-half pairs
/// to interleaved ones per head of `head_dim` rows: new row h·hd + 2i + t =
/// old row h·hd + t·hd/2 + i (the inverse of llama2c.h's convert permutation).
Tensor interleave_rows(const Tensor& data, int64_t out, int64_t head_dim) {
  const auto n = static_cast<int64_t>(data.nbytes());
  const int64_t row = n / out;
  Tensor r = Tensor::zeros(DType::u8, {n});
  const auto* src = reinterpret_cast<const uint8_t*>(data.raw());
  auto* dst = reinterpret_cast<uint8_t*>(r.mutable_raw());
  const int64_t half = head_dim / 2;
  for (int64_t h = 0; h < out / head_dim; ++h)
    for (int64_t i = 0; i < half; ++i)
      for (int64_t t = 0; t < 2; ++t)
        std::memcpy(dst + (h * head_dim + 2 * i + t) * row,
                    src + (h * head_dim + t * half + i) * row, static_cast<size_t>(row));
  return r;
}

std::string escape_regex(const std::string& s) {
  std::string r;
  for (char c : s) {
    if (std::strchr(R"(\^$.|?*+()[]{})", c)) r += '\\';
    r += c;
  }
  return r;
}

std::vector<std::pair<std::string, GgufValue>> tokenizer_metadata(const Llama2cTokenizer& tok) {
  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  for (size_t id = 0; id < tok.vocab.size(); ++id) {
    std::string text = tok.vocab[id];
    int32_t type = 1;  // normal
    unsigned hex = 0;
    if (id == 0) {
      text = "<unk>";
      type = 2;  // unknown
    } else if (id == 1 || id == 2) {
      text = id == 1 ? "<s>" : "</s>";
      type = 3;  // control
    } else if (text.empty()) {
      type = 3;
    } else if (text.size() == 6 && std::sscanf(text.c_str(), "<0x%2X>", &hex) == 1) {
      type = 6;  // byte
    }
    std::string escaped;  // SentencePiece writes spaces as U+2581
    for (char c : text) escaped += c == ' ' ? std::string("\xE2\x96\x81") : std::string(1, c);
    tokens.push_back(std::move(escaped));
    types.push_back(type);
  }
  return {{"tokenizer.ggml.model", std::string("llama")},
          {"tokenizer.ggml.tokens", std::move(tokens)},
          {"tokenizer.ggml.scores", tok.scores},
          {"tokenizer.ggml.token_type", std::move(types)},
          {"tokenizer.ggml.bos_token_id", uint32_t{1}},
          {"tokenizer.ggml.eos_token_id", uint32_t{2}},
          {"tokenizer.ggml.unknown_token_id", uint32_t{0}}};
}

}  // namespace

std::optional<GgmlType> ggml_type_of(const std::string& label) {
  if (label == "dense") return GgmlType::f32;
  if (label == "q8_0") return GgmlType::q8_0;
  if (label == "q4_0") return GgmlType::q4_0;
  return std::nullopt;
}

const std::vector<std::string>& gguf_schemes() {
  static const std::vector<std::string> s{"dense", "q8_0", "q4_0"};
  return s;
}

void write_llama_gguf(const std::string& path, const LlamaCheckpoint& ck,
                      const std::vector<EncodedLayer>& layers, const Llama2cTokenizer& tokenizer) {
  const LlamaConfig& c = ck.config;
  if (static_cast<int64_t>(tokenizer.vocab.size()) != c.vocab_size)
    throw Error(path, fmt::format("the tokenizer has {} tokens, the model's vocabulary {}",
                                  tokenizer.vocab.size(), c.vocab_size));
  std::vector<std::pair<std::string, GgufValue>> meta{
      {"general.architecture", std::string("llama")},
      {"general.name", std::string("tailor")},
      {"llama.context_length", static_cast<uint32_t>(c.seq_len)},
      {"llama.embedding_length", static_cast<uint32_t>(c.dim)},
      {"llama.block_count", static_cast<uint32_t>(c.n_layers)},
      {"llama.feed_forward_length", static_cast<uint32_t>(c.hidden_dim)},
      {"llama.rope.dimension_count", static_cast<uint32_t>(c.head_dim())},
      {"llama.attention.head_count", static_cast<uint32_t>(c.n_heads)},
      {"llama.attention.head_count_kv", static_cast<uint32_t>(c.n_kv_heads)},
      {"llama.attention.layer_norm_rms_epsilon", c.rms_norm_eps},
      {"llama.rope.freq_base", c.rope_theta},
      {"llama.vocab_size", static_cast<uint32_t>(c.vocab_size)}};
  for (auto& kv : tokenizer_metadata(tokenizer)) meta.push_back(std::move(kv));

  std::map<std::string, const EncodedLayer*> planned;
  for (const EncodedLayer& l : layers) planned[l.name] = &l;
  std::vector<GgufTensor> tensors;
  for (const auto& [name, w] : ck.weights) {
    GgufTensor t;
    t.name = llama_gguf_name(name);
    if (t.name.empty()) throw Error(name, "--gguf: not a llama tensor (no llama.cpp name)");
    t.shape = w.shape();
    const auto it = planned.find(name);
    const std::string label = it == planned.end() ? "dense" : it->second->encoded->label();
    const std::optional<GgmlType> type = ggml_type_of(label);
    if (!type)
      throw Error(name,
                  fmt::format("--gguf: scheme '{}' has no ggml type (dense, q8_0, q4_0)", label));
    t.type = *type;
    if (*type == GgmlType::f32) {
      const Tensor f = w.to(DType::f32).contiguous();
      t.data = Tensor::view(f.storage(), f.offset(), DType::u8, {static_cast<int64_t>(f.nbytes())});
    } else {
      t.data = u8_tensor(schemes::to_ggml_blocks(*it->second->encoded));
    }
    const bool q = t.name.ends_with(".attn_q.weight"), k = t.name.ends_with(".attn_k.weight");
    if (ck.pairing == RopePairing::rotate_half && (q || k))
      t.data = interleave_rows(t.data, t.shape[0], c.head_dim());
    tensors.push_back(std::move(t));
  }
  write_gguf(path, meta, tensors);
}

void write_llama_tensor_types(const std::string& path, const plan::Plan& plan) {
  std::string text;
  for (const plan::PlanChoice& ch : plan.choices) {
    const std::string name = llama_gguf_name(ch.layer);
    if (name.empty())
      throw Error(ch.layer, "--llama-tensor-types: not a llama tensor (no llama.cpp name)");
    const std::optional<GgmlType> type = ggml_type_of(ch.label);
    if (!type)
      throw Error(ch.layer,
                  fmt::format("--llama-tensor-types: scheme '{}' has no ggml type (plan with "
                              "--schemes dense,q8_0,q4_0)",
                              ch.label));
    std::string t = ggml_type_name(*type);
    for (char& x : t) x = static_cast<char>(std::tolower(static_cast<unsigned char>(x)));
    text += '^';
    text += escape_regex(name);
    text += "$=";
    text += t;
    text += '\n';
  }
  write_file_atomic(path, text);
}

}  // namespace tailor::compress
