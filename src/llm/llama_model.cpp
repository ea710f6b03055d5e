// Loading a llama model from llama2.c, Hugging Face and GGUF files, and
// swapping its Linears for compressed ones.
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tailor/core/error.h"
#include "tailor/io/load_model.h"
#include "tailor/llm/llama.h"
#include "tailor/schemes/registry.h"

namespace tailor::llm {
namespace {

// Weight names of one file family. Layer names are prefix + i + suffix.
struct NameScheme {
  std::string embed, final_norm, classifier;
  std::string layer_prefix;
  std::string attn_norm, ffn_norm;
  // q, k, v, o, gate (w1), down (w2), up (w3)
  std::string proj[7];
};

const NameScheme kHfNames{
    "model.embed_tokens.weight",
    "model.norm.weight",
    "lm_head.weight",
    "model.layers.",
    ".input_layernorm.weight",
    ".post_attention_layernorm.weight",
    {".self_attn.q_proj.weight", ".self_attn.k_proj.weight", ".self_attn.v_proj.weight",
     ".self_attn.o_proj.weight", ".mlp.gate_proj.weight", ".mlp.down_proj.weight",
     ".mlp.up_proj.weight"}};

const NameScheme kGgufNames{
    "token_embd.weight",
    "output_norm.weight",
    "output.weight",
    "blk.",
    ".attn_norm.weight",
    ".ffn_norm.weight",
    {".attn_q.weight", ".attn_k.weight", ".attn_v.weight", ".attn_output.weight",
     ".ffn_gate.weight", ".ffn_down.weight", ".ffn_up.weight"}};

std::string layer_name(const NameScheme& n, int i, const std::string& suffix) {
  return n.layer_prefix + std::to_string(i) + suffix;
}

/// The initializer `name` of a weights-only model, or nullptr.
const Tensor* find(const graph::Model& file, const std::string& name) {
  const auto it = file.graph.initializers.find(name);
  return it == file.graph.initializers.end() ? nullptr : &it->second;
}

const Tensor& require(const graph::Model& file, const std::string& name, const Shape& shape) {
  const Tensor* w = find(file, name);
  check(w != nullptr, file.source, "llama tensor '" + name + "' is missing");
  check(is_floating(w->dtype()) && w->dtype() != DType::f64, file.source,
        "llama tensor '" + name + "' has dtype " + std::string(dtype_name(w->dtype())) +
            ", expected f32, f16 or bf16");
  check(w->shape() == shape, file.source,
        "llama tensor '" + name + "' has shape " + shape_to_string(w->shape()) + ", expected " +
            shape_to_string(shape));
  return *w;
}

// The weight as a contiguous f32 [out, in] tensor: the stored view when it
// already is one (zero-copy), a converted copy otherwise.
Tensor matrix(const graph::Model& file, const std::string& name, int64_t out, int64_t in) {
  const Tensor& t = require(file, name, {out, in});
  if (t.dtype() == DType::f32 && t.is_contiguous() && t.is_aligned()) return t;
  return t.to(DType::f32);
}

std::vector<float> vector_of(const graph::Model& file, const std::string& name, int64_t n) {
  return require(file, name, {n}).to_f32_vector();
}

void validate(const LlamaConfig& c, const std::string& source) {
  check(c.dim > 0 && c.hidden_dim > 0 && c.n_layers > 0 && c.n_heads > 0 && c.n_kv_heads > 0 &&
            c.vocab_size > 0 && c.seq_len > 0,
        source, "llama configuration has a size that is not positive");
  check(
      c.dim % c.n_heads == 0, source,
      "dim " + std::to_string(c.dim) + " is not divisible by n_heads " + std::to_string(c.n_heads));
  check(c.n_heads % c.n_kv_heads == 0, source,
        "n_heads " + std::to_string(c.n_heads) + " is not divisible by n_kv_heads " +
            std::to_string(c.n_kv_heads));
  check(c.head_dim() % 2 == 0, source, "head_dim " + std::to_string(c.head_dim()) + " is odd");
  check(std::isfinite(c.rms_norm_eps) && c.rms_norm_eps >= 0, source,
        "rms_norm_eps must be finite and non-negative");
  check(std::isfinite(c.rope_theta) && c.rope_theta > 0, source,
        "rope_theta must be finite and positive");
}

int64_t parse_int(const graph::Model& file, const std::string& key, const std::string& text) {
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  check(errno == 0 && end != text.c_str() && *end == '\0' && v > 0 && v <= INT32_MAX, file.source,
        "metadata '" + key + "' = '" + text + "' is not a positive 32-bit integer");
  return v;
}

double parse_float(const graph::Model& file, const std::string& key, const std::string& text) {
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  check(errno == 0 && end != text.c_str() && *end == '\0' && std::isfinite(v), file.source,
        "metadata '" + key + "' = '" + text + "' is not a finite number");
  return v;
}

const std::string& meta(const graph::Model& file, const std::string& key) {
  auto it = file.metadata.find(key);
  check(it != file.metadata.end(), file.source, "metadata '" + key + "' is missing");
  return it->second;
}

LlamaConfig config_from_llama2c(const graph::Model& file) {
  LlamaConfig c;
  c.dim = parse_int(file, "dim", meta(file, "dim"));
  c.hidden_dim = parse_int(file, "hidden_dim", meta(file, "hidden_dim"));
  c.n_layers = parse_int(file, "n_layers", meta(file, "n_layers"));
  c.n_heads = parse_int(file, "n_heads", meta(file, "n_heads"));
  c.n_kv_heads = parse_int(file, "n_kv_heads", meta(file, "n_kv_heads"));
  c.vocab_size = parse_int(file, "vocab_size", meta(file, "vocab_size"));
  c.seq_len = parse_int(file, "seq_len", meta(file, "seq_len"));
  c.shared_classifier = meta(file, "shared_classifier") == "true";
  return c;  // llama2.c fixes eps 1e-5 and theta 10000 (the defaults)
}

LlamaConfig config_from_gguf(const graph::Model& file) {
  auto it = file.metadata.find("general.architecture");
  check(it != file.metadata.end() && it->second == "llama", file.source,
        "GGUF general.architecture is '" +
            (it == file.metadata.end() ? std::string("(missing)") : it->second) +
            "', expected 'llama'");
  auto get_int = [&](const std::string& key) {
    return static_cast<int32_t>(parse_int(file, key, meta(file, key)));
  };
  LlamaConfig c;
  c.dim = get_int("llama.embedding_length");
  c.hidden_dim = get_int("llama.feed_forward_length");
  c.n_layers = get_int("llama.block_count");
  c.n_heads = get_int("llama.attention.head_count");
  c.n_kv_heads = file.metadata.count("llama.attention.head_count_kv")
                     ? get_int("llama.attention.head_count_kv")
                     : c.n_heads;
  c.seq_len = get_int("llama.context_length");
  c.rms_norm_eps =
      static_cast<float>(parse_float(file, "llama.attention.layer_norm_rms_epsilon",
                                     meta(file, "llama.attention.layer_norm_rms_epsilon")));
  if (file.metadata.count("llama.rope.freq_base"))
    c.rope_theta = static_cast<float>(
        parse_float(file, "llama.rope.freq_base", meta(file, "llama.rope.freq_base")));
  const Tensor* embed = find(file, kGgufNames.embed);
  check(embed != nullptr && embed->rank() == 2, file.source,
        "llama tensor 'token_embd.weight' is missing or not a matrix");
  c.vocab_size = static_cast<int32_t>(embed->dim(0));
  c.shared_classifier = find(file, kGgufNames.classifier) == nullptr;
  if (file.metadata.count("llama.rope.dimension_count") && c.n_heads > 0 && c.dim % c.n_heads == 0)
    check(get_int("llama.rope.dimension_count") == c.dim / c.n_heads, file.source,
          "llama.rope.dimension_count differs from head_dim (partial rotary is not supported)");
  return c;
}

LlamaConfig config_from_hf(const graph::Model& file, const std::string& config_path) {
  std::ifstream in(config_path, std::ios::binary);
  check(static_cast<bool>(in), config_path, "cannot open the HF config (config.json)");
  std::stringstream ss;
  ss << in.rdbuf();
  nlohmann::json j = nlohmann::json::parse(ss.str(), nullptr, false);
  check(!j.is_discarded() && j.is_object(), config_path, "not a JSON object");
  auto int_field = [&](const char* key, const int32_t* fallback) -> int32_t {
    if (!j.contains(key)) {
      check(fallback != nullptr, config_path, std::string("field '") + key + "' is missing");
      return *fallback;
    }
    const auto& v = j[key];
    check(v.is_number_integer() && v.get<int64_t>() > 0 && v.get<int64_t>() <= INT32_MAX,
          config_path, std::string("field '") + key + "' is not a positive integer");
    return static_cast<int32_t>(v.get<int64_t>());
  };
  auto float_field = [&](const char* key, double fallback) -> double {
    if (!j.contains(key)) return fallback;
    check(j[key].is_number(), config_path, std::string("field '") + key + "' is not a number");
    return j[key].get<double>();
  };
  const std::string model_type = j.contains("model_type") && j["model_type"].is_string()
                                     ? j["model_type"].get<std::string>()
                                     : "";
  check(model_type == "llama", config_path, "model_type is '" + model_type + "', expected 'llama'");
  check(!j.contains("rope_scaling") || j["rope_scaling"].is_null(), config_path,
        "rope_scaling is not supported");
  LlamaConfig c;
  c.dim = int_field("hidden_size", nullptr);
  c.hidden_dim = int_field("intermediate_size", nullptr);
  c.n_layers = int_field("num_hidden_layers", nullptr);
  c.n_heads = int_field("num_attention_heads", nullptr);
  c.n_kv_heads = int_field("num_key_value_heads", &c.n_heads);
  c.vocab_size = int_field("vocab_size", nullptr);
  const int32_t default_positions = 2048;  // HF LlamaConfig's default
  c.seq_len = int_field("max_position_embeddings", &default_positions);
  c.rms_norm_eps = static_cast<float>(float_field("rms_norm_eps", 1e-6));  // HF default
  c.rope_theta = static_cast<float>(float_field("rope_theta", 10000.0));
  bool tied = false;  // HF LlamaConfig's default
  if (j.contains("tie_word_embeddings")) {
    check(j["tie_word_embeddings"].is_boolean(), config_path,
          "field 'tie_word_embeddings' is not a boolean");
    tied = j["tie_word_embeddings"].get<bool>();
  }
  // A checkpoint with lm_head.weight uses it even when the config says tied.
  c.shared_classifier = tied && find(file, kHfNames.classifier) == nullptr;
  return c;
}

}  // namespace

std::shared_ptr<const Linear>& LlamaModel::slot(const std::pair<int, int>& at) {
  if (at.first < 0) return classifier_;
  LlamaLayer& l = layers_.at(static_cast<size_t>(at.first));
  std::shared_ptr<const Linear>* slots[7] = {&l.wq, &l.wk, &l.wv, &l.wo, &l.w1, &l.w2, &l.w3};
  return *slots[at.second];
}

LlamaModel LlamaModel::from_weights(const graph::Model& file, const LlamaConfig& config,
                                    RopePairing pairing) {
  return attribute_errors(file.source, [&] {
    validate(config, file.source);
    const NameScheme& names = find(file, kGgufNames.embed) ? kGgufNames : kHfNames;
    LlamaModel m;
    m.config_ = config;
    m.pairing_ = pairing;
    const int64_t dim = config.dim, hidden = config.hidden_dim;
    const int64_t kv_dim = static_cast<int64_t>(config.n_kv_heads) * config.head_dim();
    m.embedding_ = matrix(file, names.embed, config.vocab_size, dim);
    const int64_t shapes[7][2] = {{dim, dim},    {kv_dim, dim}, {kv_dim, dim}, {dim, dim},
                                  {hidden, dim}, {dim, hidden}, {hidden, dim}};
    for (int i = 0; i < config.n_layers; ++i) {
      LlamaLayer l;
      l.attn_norm = vector_of(file, layer_name(names, i, names.attn_norm), dim);
      l.ffn_norm = vector_of(file, layer_name(names, i, names.ffn_norm), dim);
      m.layers_.push_back(std::move(l));
      for (int s = 0; s < 7; ++s) {
        const std::string name = layer_name(names, i, names.proj[s]);
        m.slot({i, s}) =
            std::make_shared<DenseLinear>(matrix(file, name, shapes[s][0], shapes[s][1]));
        m.linear_index_[name] = {i, s};
        m.linear_order_.push_back(name);
      }
    }
    m.final_norm_ = vector_of(file, names.final_norm, dim);
    const std::string classifier_name = config.shared_classifier ? names.embed : names.classifier;
    m.classifier_ =
        config.shared_classifier
            ? std::make_shared<DenseLinear>(m.embedding_)
            : std::make_shared<DenseLinear>(matrix(file, names.classifier, config.vocab_size, dim));
    m.linear_index_[classifier_name] = {-1, 0};
    m.linear_order_.push_back(classifier_name);
    return m;
  });
}

LlamaModel LlamaModel::load(const std::string& path) {
  return attribute_errors(path, [&] {
    const graph::Model file = load_model(path);
    if (file.format == "llama2c")
      return from_weights(file, config_from_llama2c(file), RopePairing::interleaved);
    if (file.format == "gguf")
      return from_weights(file, config_from_gguf(file), RopePairing::interleaved);
    if (file.format == "safetensors") {
      namespace fs = std::filesystem;
      const fs::path folder =
          fs::is_directory(path) ? fs::path(path) : fs::path(path).parent_path();
      const std::string config_path = (folder / "config.json").string();
      return from_weights(file, config_from_hf(file, config_path), RopePairing::rotate_half);
    }
    throw Error(path, "not a llama checkpoint (format " + file.format +
                          "; expected llama2.c, a HF folder or GGUF)");
  });
}

std::vector<std::string> LlamaModel::linear_names() const {
  return linear_order_;
}

const Linear& LlamaModel::linear(const std::string& name) const {
  auto it = linear_index_.find(name);
  check(it != linear_index_.end(), name, "not a linear layer of the llama model");
  return *const_cast<LlamaModel*>(this)->slot(it->second);
}

void LlamaModel::replace_linear(const std::string& name,
                                std::shared_ptr<const schemes::Encoded> encoded) {
  auto it = linear_index_.find(name);
  check(it != linear_index_.end(), name, "not a linear layer of the llama model");
  check(encoded != nullptr, name, "no encoded weight given");
  std::shared_ptr<const Linear>& s = slot(it->second);
  check(encoded->out() == s->out() && encoded->in() == s->in(), name,
        "encoded weight is [" + std::to_string(encoded->out()) + ", " +
            std::to_string(encoded->in()) + "], expected [" + std::to_string(s->out()) + ", " +
            std::to_string(s->in()) + "]");
  if (it->second.first < 0 && config_.shared_classifier) {
    embedding_ = encoded->decode().contiguous();
  }
  s = std::make_shared<EncodedLinear>(std::move(encoded));
}

std::shared_ptr<const Linear> LlamaModel::linear_ptr(const std::string& name) const {
  auto it = linear_index_.find(name);
  check(it != linear_index_.end(), name, "not a linear layer of the llama model");
  return const_cast<LlamaModel*>(this)->slot(it->second);
}

void LlamaModel::wrap_linear(const std::string& name, std::shared_ptr<const Linear> linear) {
  auto it = linear_index_.find(name);
  check(it != linear_index_.end(), name, "not a linear layer of the llama model");
  check(linear != nullptr, name, "no linear given");
  std::shared_ptr<const Linear>& s = slot(it->second);
  check(linear->out() == s->out() && linear->in() == s->in(), name,
        "linear is [" + std::to_string(linear->out()) + ", " + std::to_string(linear->in()) +
            "], expected [" + std::to_string(s->out()) + ", " + std::to_string(s->in()) + "]");
  s = std::move(linear);
}

const Tensor& LlamaModel::dense_weight(const std::string& name) const {
  const auto* dense = dynamic_cast<const DenseLinear*>(&linear(name));
  check(dense != nullptr, name, "weight is already compressed (" + linear(name).label() + ")");
  return dense->weight();
}

void apply_schemes(LlamaModel& model, const std::map<std::string, std::string>& labels,
                   const schemes::SchemeParams& defaults) {
  for (const auto& [name, label] : labels) {
    if (label == "dense") {
      model.linear(name);  // the name must still exist
      continue;
    }
    try {
      const schemes::Scheme scheme = schemes::parse_scheme(label, defaults);
      const Tensor& w = model.dense_weight(name);
      check(scheme.applicable(w.shape()), name,
            "scheme " + label + " does not apply to shape " + shape_to_string(w.shape()));
      model.replace_linear(name, std::shared_ptr<const schemes::Encoded>(scheme.encode(w)));
    } catch (const Error& e) {
      if (e.source() == name) throw;
      throw Error(name, e.what());  // e.g. the catalog's "int9: unknown ... label"
    }
  }
}

uint64_t LlamaModel::bytes() const {
  uint64_t total = 0;
  for (const std::string& name : linear_order_) total += linear(name).bytes();
  if (!config_.shared_classifier) total += embedding_.nbytes();
  const uint64_t norm_floats =
      static_cast<uint64_t>(config_.dim) * (2 * static_cast<uint64_t>(config_.n_layers) + 1);
  return total + 4 * norm_floats;
}

std::span<const float> LlamaModel::embedding(int32_t token) const {
  check(token >= 0 && token < config_.vocab_size, "llama",
        "token " + std::to_string(token) + " is outside the vocabulary of " +
            std::to_string(config_.vocab_size));
  return {embedding_.data<float>() + static_cast<int64_t>(token) * config_.dim,
          static_cast<size_t>(config_.dim)};
}

}  // namespace tailor::llm
