// Test helper: GGUF files built byte by byte after the format description
// (https://github.com/ggml-org/ggml/blob/master/docs/gguf.md, version 3 unless
// told), independently of tailor's writer: key/value pairs, tensor infos and
// data (GgufSpec), and the llama test model, stories260K under llama.cpp's
// names (llama_gguf_bytes, stories_as_gguf).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "llm/stories.h"
#include "tailor/core/dtype.h"
#include "tailor/io/llama2c.h"
#include "tailor/io/load_model.h"

namespace tailor::testing {

template <class T>
void put(std::string& out, T v) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  out.append(b, sizeof(T));
}
inline void put_str(std::string& out, const std::string& s) {
  put<uint64_t>(out, s.size());
  out += s;
}

// Encoded key/value pairs (value types 8 string, 4 uint32, 6 float32, 7 bool,
// 9 array).
inline std::string kv_string(const std::string& key, const std::string& v) {
  std::string o;
  put_str(o, key);
  put<uint32_t>(o, 8);
  put_str(o, v);
  return o;
}
inline std::string kv_u32(const std::string& key, uint32_t v) {
  std::string o;
  put_str(o, key);
  put<uint32_t>(o, 4);
  put<uint32_t>(o, v);
  return o;
}
inline std::string kv_f32(const std::string& key, float v) {
  std::string o;
  put_str(o, key);
  put<uint32_t>(o, 6);
  put<float>(o, v);
  return o;
}
inline std::string kv_bool(const std::string& key, bool v) {
  std::string o;
  put_str(o, key);
  put<uint32_t>(o, 7);
  put<uint8_t>(o, v ? 1 : 0);
  return o;
}
inline std::string kv_i32_array(const std::string& key, const std::vector<int32_t>& v) {
  std::string o;
  put_str(o, key);
  put<uint32_t>(o, 9);
  put<uint32_t>(o, 5);
  put<uint64_t>(o, v.size());
  for (int32_t x : v) put<int32_t>(o, x);
  return o;
}
inline std::string kv_string_array(const std::string& key, const std::vector<std::string>& v) {
  std::string o;
  put_str(o, key);
  put<uint32_t>(o, 9);
  put<uint32_t>(o, 8);
  put<uint64_t>(o, v.size());
  for (const std::string& s : v) put_str(o, s);
  return o;
}
// An array nested `depth` levels deep around one u8 (depth 1 = array of u8).
inline std::string kv_nested_array(const std::string& key, int depth) {
  std::string o;
  put_str(o, key);
  put<uint32_t>(o, 9);
  for (int i = 1; i < depth; ++i) {
    put<uint32_t>(o, 9);
    put<uint64_t>(o, 1);
  }
  put<uint32_t>(o, 0);
  put<uint64_t>(o, 1);
  put<uint8_t>(o, 42);
  return o;
}

struct TensorSpec {
  std::string name;
  std::vector<uint64_t> ne;  // ggml order: ne[0] varies fastest
  uint32_t type = 0;         // ggml_type: 0 F32, 1 F16, 2 Q4_0, 8 Q8_0, 30 BF16
  uint64_t offset = 0;       // relative to the data section
  std::string data;
};

struct GgufSpec {
  uint32_t version = 3;
  std::vector<std::string> kvs;
  std::vector<TensorSpec> tensors;
  uint64_t alignment = 32;    // for the padding only; set general.alignment in kvs
  int64_t tensor_count = -1;  // override when ≥ 0
  int64_t kv_count = -1;

  // Bytes of the file; the data section starts at *data_start.
  std::string build(size_t* data_start = nullptr) const {
    std::string o = "GGUF";
    put<uint32_t>(o, version);
    put<uint64_t>(o, tensor_count >= 0 ? static_cast<uint64_t>(tensor_count) : tensors.size());
    put<uint64_t>(o, kv_count >= 0 ? static_cast<uint64_t>(kv_count) : kvs.size());
    for (const std::string& kv : kvs) o += kv;
    for (const TensorSpec& t : tensors) {
      put_str(o, t.name);
      put<uint32_t>(o, static_cast<uint32_t>(t.ne.size()));
      for (uint64_t d : t.ne) put<uint64_t>(o, d);
      put<uint32_t>(o, t.type);
      put<uint64_t>(o, t.offset);
    }
    while (o.size() % alignment) o += '\0';
    const size_t start = o.size();
    if (data_start) *data_start = start;
    for (const TensorSpec& t : tensors) {
      const size_t end = start + t.offset + t.data.size();
      if (o.size() < end) o.resize(end, '\0');
      std::memcpy(o.data() + start + t.offset, t.data.data(), t.data.size());
    }
    return o;
  }
};

inline std::string f32_bytes(const std::vector<float>& v) {
  std::string o;
  for (float x : v) put<float>(o, x);
  return o;
}
inline std::string u16_bytes(const std::vector<uint16_t>& v) {
  std::string o;
  for (uint16_t x : v) put<uint16_t>(o, x);
  return o;
}

// --- The llama test model --------------------------------------------------

/// One tensor of a llama GGUF: row-major [out, in] (ggml's ne is the reverse).
struct LlamaTensor {
  std::string name;
  Shape shape;
  std::vector<float> values;
};

/// A GGUF v3 llama: general.architecture "llama", the llama.* hyper-parameters
/// of `c` (llama.block_count = `block_count` when ≥ 0, else c.n_layers), the
/// tensors as F32 (type 0) or F16 (type 1), each at the next 32-byte offset.
inline std::string llama_gguf_bytes(const LlamaConfig& c, const std::vector<LlamaTensor>& tensors,
                                    bool f16, int64_t block_count = -1) {
  GgufSpec s;
  s.kvs = {kv_string("general.architecture", "llama"),
           kv_u32("llama.embedding_length", c.dim),
           kv_u32("llama.feed_forward_length", c.hidden_dim),
           kv_u32("llama.block_count",
                  static_cast<uint32_t>(block_count >= 0 ? block_count : c.n_layers)),
           kv_u32("llama.attention.head_count", c.n_heads),
           kv_u32("llama.attention.head_count_kv", c.n_kv_heads),
           kv_u32("llama.context_length", c.seq_len),
           kv_u32("llama.rope.dimension_count", c.head_dim()),
           kv_f32("llama.attention.layer_norm_rms_epsilon", c.rms_norm_eps),
           kv_f32("llama.rope.freq_base", c.rope_theta)};
  uint64_t offset = 0;
  for (const LlamaTensor& t : tensors) {
    TensorSpec spec{t.name, {}, f16 ? 1u : 0u, offset, {}};
    for (auto it = t.shape.rbegin(); it != t.shape.rend(); ++it)
      spec.ne.push_back(static_cast<uint64_t>(*it));
    for (float v : t.values) {
      if (f16)
        put<uint16_t>(spec.data, f32_to_f16(v));
      else
        put<float>(spec.data, v);
    }
    offset += (spec.data.size() + 31) / 32 * 32;
    s.tensors.push_back(std::move(spec));
  }
  return s.build();
}

// llama.cpp's convert_hf_to_gguf.py LlamaModel.permute on the rows of an HF
// q/k weight [heads·hd, in]: reshape(heads, 2, hd/2, in).swapaxes(1, 2), i.e.
// the row of (head h, half a, index j) moves to (h, j, a): rotate-half order
// back to interleaved pairs.
inline std::vector<float> llama_cpp_permute(const std::vector<float>& w, int64_t heads,
                                            int64_t in) {
  const int64_t rows = static_cast<int64_t>(w.size()) / in, hd = rows / heads;
  std::vector<float> out(w.size());
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t a = 0; a < 2; ++a)
      for (int64_t j = 0; j < hd / 2; ++j)
        std::copy_n(w.begin() + (h * hd + a * (hd / 2) + j) * in, in,
                    out.begin() + (h * hd + 2 * j + a) * in);
  return out;
}

// The stories260K weights under llama.cpp's names. With `hf_folder` they are
// read from the `tailor convert` copy and q/k go through llama_cpp_permute,
// as llama.cpp's converter does; otherwise they come from the llama2.c file,
// whose rows already pair (2i, 2i+1). `round16` rounds every value to f16;
// `separate_output` adds output.weight (a copy of the embedding) so the
// classifier is untied.
inline std::vector<LlamaTensor> stories_as_gguf(bool round16, bool separate_output,
                                                const std::string& hf_folder = "") {
  const graph::Model f = load_model(hf_folder.empty() ? stories_path() : hf_folder);
  auto get = [&](const std::string& hf, const std::string& gg) {
    const auto it = f.graph.initializers.find(hf);
    EXPECT_NE(it, f.graph.initializers.end()) << hf;
    const Tensor& w = it->second;
    std::vector<float> v = w.to_f32_vector();
    if (!hf_folder.empty() && hf.find("q_proj") != std::string::npos)
      v = llama_cpp_permute(v, 8, 64);
    if (!hf_folder.empty() && hf.find("k_proj") != std::string::npos)
      v = llama_cpp_permute(v, 4, 64);
    if (round16)
      for (float& x : v) x = round_to_f16(x);
    return LlamaTensor{gg, w.shape(), std::move(v)};
  };
  std::vector<LlamaTensor> t;
  t.push_back(get("model.embed_tokens.weight", "token_embd.weight"));
  const char* hf[9] = {"input_layernorm",  "self_attn.q_proj", "self_attn.k_proj",
                       "self_attn.v_proj", "self_attn.o_proj", "post_attention_layernorm",
                       "mlp.gate_proj",    "mlp.down_proj",    "mlp.up_proj"};
  const char* gg[9] = {"attn_norm", "attn_q",   "attn_k",   "attn_v", "attn_output",
                       "ffn_norm",  "ffn_gate", "ffn_down", "ffn_up"};
  for (int i = 0; i < 5; ++i)
    for (int k = 0; k < 9; ++k)
      t.push_back(get("model.layers." + std::to_string(i) + "." + hf[k] + ".weight",
                      "blk." + std::to_string(i) + "." + gg[k] + ".weight"));
  t.push_back(get("model.norm.weight", "output_norm.weight"));
  if (separate_output) t.push_back(get("model.embed_tokens.weight", "output.weight"));
  return t;
}

}  // namespace tailor::testing
