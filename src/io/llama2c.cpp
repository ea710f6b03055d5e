// llama2.c checkpoints (https://github.com/karpathy/llama2.c, run.c's
// memory_map_weights: the "legacy" version 0 format) and their conversion to a
// Hugging Face LlamaForCausalLM folder.
#include "tailor/io/llama2c.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "io/byte_cursor.h"
#include "tailor/core/error.h"
#include "tailor/io/atomic_file.h"
#include "tailor/io/safetensors.h"

namespace tailor {
namespace {

using io_detail::checked_add;
using io_detail::checked_mul;

constexpr size_t kHeaderBytes = 7 * 4;

LlamaConfig parse_header(const std::string& path, const Storage& storage) {
  if (storage.size() < kHeaderBytes)
    throw Error(path, "file is " + std::to_string(storage.size()) +
                          " bytes, shorter than the 28-byte llama2.c header");
  int32_t h[7];
  std::memcpy(h, storage.data(), kHeaderBytes);
  static constexpr const char* names[7] = {"dim",        "hidden_dim", "n_layers", "n_heads",
                                           "n_kv_heads", "vocab_size", "seq_len"};
  LlamaConfig cfg;
  cfg.dim = h[0];
  cfg.hidden_dim = h[1];
  cfg.n_layers = h[2];
  cfg.n_heads = h[3];
  cfg.n_kv_heads = h[4];
  // A negative vocab_size marks a separate classifier (run.c); INT32_MIN has
  // no positive counterpart and fails the positivity check below.
  cfg.shared_classifier = h[5] > 0;
  cfg.vocab_size = h[5] < 0 && h[5] != INT32_MIN ? -h[5] : h[5];
  cfg.seq_len = h[6];
  const int32_t fields[7] = {cfg.dim,        cfg.hidden_dim, cfg.n_layers, cfg.n_heads,
                             cfg.n_kv_heads, cfg.vocab_size, cfg.seq_len};
  for (int i = 0; i < 7; ++i)
    if (fields[i] <= 0)
      throw Error(path, std::string("llama2.c header field ") + names[i] + " is " +
                            std::to_string(h[i]) + " (must be positive)");
  if (cfg.dim % cfg.n_heads != 0)
    throw Error(path, "llama2.c header: dim " + std::to_string(cfg.dim) +
                          " is not divisible by n_heads " + std::to_string(cfg.n_heads));
  if (cfg.n_heads % cfg.n_kv_heads != 0)
    throw Error(path, "llama2.c header: n_heads " + std::to_string(cfg.n_heads) +
                          " is not divisible by n_kv_heads " + std::to_string(cfg.n_kv_heads));
  if (cfg.head_dim() % 2 != 0)
    throw Error(path, "llama2.c header: head size " + std::to_string(cfg.head_dim()) +
                          " (dim / n_heads) is odd; RoPE rotates pairs");
  return cfg;
}

// The f32 arrays of the file, in order, with their element counts.
struct Section {
  uint64_t offset = 0;  // bytes from the start of the file
  uint64_t numel = 0;
};

struct FileLayout {
  Section embed, att_norm, wq, wk, wv, wo, ffn_norm, w1, w2, w3, final_norm, rope, classifier;
  uint64_t total_bytes = 0;
};

FileLayout layout_of(const LlamaConfig& c, const std::string& path) {
  const uint64_t dim = c.dim, hidden = c.hidden_dim, layers = c.n_layers;
  const uint64_t kv_dim = static_cast<uint64_t>(c.head_dim()) * c.n_kv_heads;
  auto mul = [&](uint64_t a, uint64_t b) { return checked_mul(a, b, path, "the checkpoint"); };
  FileLayout l;
  uint64_t pos = kHeaderBytes;
  auto next = [&](Section& s, uint64_t numel) {
    s.offset = pos;
    s.numel = numel;
    pos = checked_add(pos, mul(numel, 4), path, "the checkpoint");
  };
  next(l.embed, mul(c.vocab_size, dim));
  next(l.att_norm, mul(layers, dim));
  next(l.wq, mul(layers, mul(dim, dim)));
  next(l.wk, mul(layers, mul(kv_dim, dim)));
  next(l.wv, mul(layers, mul(kv_dim, dim)));
  next(l.wo, mul(layers, mul(dim, dim)));
  next(l.ffn_norm, mul(layers, dim));
  next(l.w1, mul(layers, mul(hidden, dim)));
  next(l.w2, mul(layers, mul(dim, hidden)));
  next(l.w3, mul(layers, mul(hidden, dim)));
  next(l.final_norm, dim);
  // freq_cis_real and freq_cis_imag, [seq_len, head_size / 2] each.
  next(l.rope, mul(c.seq_len, static_cast<uint64_t>(c.head_dim())));
  if (!c.shared_classifier) next(l.classifier, mul(c.vocab_size, dim));
  l.total_bytes = pos;
  return l;
}

std::string layer_name(int32_t i, const char* rest) {
  return "model.layers." + std::to_string(i) + "." + rest;
}

// q_proj or k_proj [n_heads · hd, in] from llama2.c's order to HF's.
//
// llama2.c (like Meta's original Llama) rotates adjacent pairs: within a head,
// rows 2j and 2j+1 form the pair with frequency θ^(-2j/hd). HF's LlamaAttention
// uses rotate_half: rows j and j + hd/2 form that pair. So, per head h:
//   new[h·hd + j]        = old[h·hd + 2j]
//   new[h·hd + hd/2 + j] = old[h·hd + 2j + 1]      (0 ≤ j < hd/2)
// This is exactly HF's convert_llama_weights_to_hf.py `permute`,
//   w.view(n_heads, hd // 2, 2, in).transpose(1, 2).reshape(n_heads · hd, in):
// element (h, j, p) of the view is old row h·hd + 2j + p; after the transpose
// it sits at (h, p, j), i.e. new row h·hd + p·hd/2 + j. (Its inverse,
// `permute_reverse` in llama2.c's export.py, takes HF weights back to this
// interleaved order, which is how llama2.c checkpoints of HF models are made.)
Tensor rope_pairs_to_halves(const Tensor& w, int32_t n_heads, int32_t hd) {
  const Tensor src = w.contiguous();
  const int64_t in = src.dim(1);
  Tensor dst = Tensor::zeros(DType::f32, src.shape());
  const float* s = src.data<float>();
  float* d = dst.mutable_data<float>();
  for (int64_t h = 0; h < n_heads; ++h) {
    for (int64_t j = 0; j < hd / 2; ++j) {
      const float* even = s + (h * hd + 2 * j) * in;
      const float* odd = s + (h * hd + 2 * j + 1) * in;
      std::copy(even, even + in, d + (h * hd + j) * in);
      std::copy(odd, odd + in, d + (h * hd + hd / 2 + j) * in);
    }
  }
  return dst;
}

}  // namespace

// Every Error leaving the reader names the file (see attribute_errors).
static graph::Model read_llama2c_unattributed(const std::string& path, LlamaConfig* config);

graph::Model read_llama2c(const std::string& path, LlamaConfig* config) {
  return attribute_errors(path, [&] { return read_llama2c_unattributed(path, config); });
}

static graph::Model read_llama2c_unattributed(const std::string& path, LlamaConfig* config) {
  const std::shared_ptr<Storage> storage = Storage::map_file(path);
  const LlamaConfig cfg = parse_header(path, *storage);
  const FileLayout l = layout_of(cfg, path);
  if (l.total_bytes != storage->size())
    throw Error(path, "llama2.c checkpoint size disagrees with its header: expected " +
                          std::to_string(l.total_bytes) + " bytes (" +
                          (cfg.shared_classifier ? "shared" : "separate") + " classifier), found " +
                          std::to_string(storage->size()));

  graph::Model m;
  m.source = path;
  m.format = "llama2c";
  m.weight_convention = graph::WeightConvention::out_in;
  const int64_t dim = cfg.dim, hidden = cfg.hidden_dim;
  const int64_t kv_dim = static_cast<int64_t>(cfg.head_dim()) * cfg.n_kv_heads;
  // The header is 28 bytes and everything after it f32, so every view is
  // 4-byte aligned in the page-aligned mapping: zero-copy.
  auto add = [&](std::string name, const Section& s, int64_t index, Shape shape) {
    const int64_t numel = shape_numel(shape);
    const size_t offset = static_cast<size_t>(s.offset) + static_cast<size_t>(index * numel) * 4;
    m.graph.add_initializer(name, Tensor::view(storage, offset, DType::f32, std::move(shape)));
  };
  add("model.embed_tokens.weight", l.embed, 0, {cfg.vocab_size, dim});
  for (int32_t i = 0; i < cfg.n_layers; ++i) {
    add(layer_name(i, "input_layernorm.weight"), l.att_norm, i, {dim});
    add(layer_name(i, "self_attn.q_proj.weight"), l.wq, i, {dim, dim});
    add(layer_name(i, "self_attn.k_proj.weight"), l.wk, i, {kv_dim, dim});
    add(layer_name(i, "self_attn.v_proj.weight"), l.wv, i, {kv_dim, dim});
    add(layer_name(i, "self_attn.o_proj.weight"), l.wo, i, {dim, dim});
    add(layer_name(i, "post_attention_layernorm.weight"), l.ffn_norm, i, {dim});
    add(layer_name(i, "mlp.gate_proj.weight"), l.w1, i, {hidden, dim});
    add(layer_name(i, "mlp.down_proj.weight"), l.w2, i, {dim, hidden});
    add(layer_name(i, "mlp.up_proj.weight"), l.w3, i, {hidden, dim});
  }
  add("model.norm.weight", l.final_norm, 0, {dim});
  if (!cfg.shared_classifier) add("lm_head.weight", l.classifier, 0, {cfg.vocab_size, dim});

  m.metadata = {{"architecture", "llama"},
                {"dim", std::to_string(cfg.dim)},
                {"hidden_dim", std::to_string(cfg.hidden_dim)},
                {"n_layers", std::to_string(cfg.n_layers)},
                {"n_heads", std::to_string(cfg.n_heads)},
                {"n_kv_heads", std::to_string(cfg.n_kv_heads)},
                {"vocab_size", std::to_string(cfg.vocab_size)},
                {"seq_len", std::to_string(cfg.seq_len)},
                {"shared_classifier", cfg.shared_classifier ? "true" : "false"}};
  if (config) *config = cfg;
  return m;
}

// Every Error leaving the reader names the file (see attribute_errors).
static void convert_llama2c_to_hf_unattributed(const std::string& checkpoint,
                                               const std::string& out_dir);

void convert_llama2c_to_hf(const std::string& checkpoint, const std::string& out_dir) {
  return attribute_errors(checkpoint,
                          [&] { return convert_llama2c_to_hf_unattributed(checkpoint, out_dir); });
}

static void convert_llama2c_to_hf_unattributed(const std::string& checkpoint,
                                               const std::string& out_dir) {
  LlamaConfig cfg;
  const graph::Model m = read_llama2c(checkpoint, &cfg);
  namespace fs = std::filesystem;
  if (out_dir.empty()) throw Error("(empty path)", "no output folder given");
  // Both files are written into a staging folder beside out_dir that replaces
  // it in one step (StagedFolder), so a failure or a kill leaves either the
  // previous folder or the new one, never new weights beside an old config.
  // An existing folder is replaced only when it holds nothing but what
  // convert writes.
  const fs::path dest = fs::absolute(out_dir);
  std::error_code ec;
  if (fs::exists(dest, ec) && !fs::is_directory(dest))
    throw Error(out_dir, "exists and is not a folder");
  static const std::set<std::string> ours = {"model.safetensors", "config.json"};
  for (const std::string& name : ours)
    if (fs::is_directory(dest / name)) throw Error((dest / name).string(), "is a folder");
  if (fs::is_directory(dest, ec))
    for (const auto& e : fs::directory_iterator(dest, ec))
      if (!ours.count(e.path().filename().string()))
        throw Error(out_dir, "the folder exists and holds '" + e.path().filename().string() +
                                 "', not only a previous convert output; give another folder");
  StagedFolder staging(out_dir);

  std::vector<NamedTensor> tensors;
  tensors.reserve(m.graph.initializer_order.size());
  const std::string q_suffix = "self_attn.q_proj.weight", k_suffix = "self_attn.k_proj.weight";
  for (const std::string& name : m.graph.initializer_order) {
    Tensor t = m.graph.initializers.at(name);
    if (name.ends_with(q_suffix))
      t = rope_pairs_to_halves(t, cfg.n_heads, cfg.head_dim());
    else if (name.ends_with(k_suffix))
      t = rope_pairs_to_halves(t, cfg.n_kv_heads, cfg.head_dim());
    tensors.push_back({name, std::move(t)});
  }
  // With a shared classifier there is no lm_head.weight: HF ties it to
  // model.embed_tokens.weight (tie_word_embeddings).
  write_safetensors(staging.file("model.safetensors"), tensors,
                    {{"format", "pt"}, {"source", "llama2.c"}});

  // rms_norm_eps and rope_theta are llama2.c's fixed values (run.c: 1e-5 and
  // 10000), written as exact decimal literals.
  const nlohmann::ordered_json config = {
      {"architectures", nlohmann::ordered_json::array({"LlamaForCausalLM"})},
      {"model_type", "llama"},
      {"hidden_size", cfg.dim},
      {"intermediate_size", cfg.hidden_dim},
      {"num_hidden_layers", cfg.n_layers},
      {"num_attention_heads", cfg.n_heads},
      {"num_key_value_heads", cfg.n_kv_heads},
      {"vocab_size", cfg.vocab_size},
      {"max_position_embeddings", cfg.seq_len},
      {"rms_norm_eps", 1e-5},
      {"rope_theta", 10000.0},
      {"tie_word_embeddings", cfg.shared_classifier},
      {"hidden_act", "silu"},
      {"torch_dtype", "float32"},
      {"bos_token_id", 1},
      {"eos_token_id", 2}};
  write_file_atomic(staging.file("config.json"), config.dump(2) + "\n");
  staging.commit();
}

}  // namespace tailor
