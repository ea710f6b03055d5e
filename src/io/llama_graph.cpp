// A llama checkpoint as a decoder graph with a KV cache (llama_graph.h).
#include "tailor/io/llama_graph.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unordered_set>

#include "tailor/core/error.h"
#include "tailor/graph/verify.h"
#include "tailor/graph/weight_forms.h"
#include "tailor/io/gguf.h"
#include "tailor/io/load_model.h"

namespace tailor {
namespace {

using graph::Attribute;
using graph::Dim;
using graph::Node;

constexpr int64_t kOpset = 17;

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

std::string layer_name(const NameScheme& n, int64_t i, const std::string& suffix) {
  return n.layer_prefix + std::to_string(i) + suffix;
}

/// The most elements of one RoPE table: 2^27 (512 MiB of f32); a 128k
/// context at head_dim 128 is 2^24.
constexpr int64_t kMaxRopeElements = int64_t{1} << 27;

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
  // The RoPE tables (cos and sin, f32 [context, 1, head_dim]) are built with
  // the graph: a context whose tables pass kMaxRopeElements (512 MiB each) is
  // refused before anything is allocated (a context of 2^31 − 1 asked for
  // 64 GiB per table).
  check(static_cast<int64_t>(c.seq_len) * c.head_dim() <= kMaxRopeElements, source,
        fmt::format("context length {} is too large: its RoPE tables would hold {} × {} "
                    "elements each, more than {} (a context of at most {} at head_dim {})",
                    c.seq_len, c.seq_len, c.head_dim(), kMaxRopeElements,
                    kMaxRopeElements / c.head_dim(), c.head_dim()));
  check(std::isfinite(c.rms_norm_eps) && c.rms_norm_eps >= 0, source,
        "rms_norm_eps must be finite and non-negative");
  check(std::isfinite(c.rope_theta) && c.rope_theta > 0, source,
        "rope_theta must be finite and positive");
}

/// The weight `name` of `shape` as an f32 initializer: the stored view when it
/// already is contiguous aligned f32 (zero-copy), a widened copy otherwise.
Tensor weight(const std::map<std::string, Tensor>& weights, const std::string& name,
              const Shape& shape, const std::string& source) {
  auto it = weights.find(name);
  check(it != weights.end(), source, "llama tensor '" + name + "' is missing");
  const Tensor& t = it->second;
  check(is_floating(t.dtype()) && t.dtype() != DType::f64, source,
        "llama tensor '" + name + "' has dtype " + std::string(dtype_name(t.dtype())) +
            ", expected f32, f16 or bf16");
  check(t.shape() == shape, source,
        "llama tensor '" + name + "' has shape " + shape_to_string(t.shape()) + ", expected " +
            shape_to_string(shape));
  if (t.dtype() == DType::f32 && t.is_contiguous() && t.is_aligned()) return t;
  return t.to(DType::f32).contiguous();
}

/// Appends nodes and initializers to one graph under unique names; as a
/// FormSink it takes a packed weight's standard form.
class Builder final : public graph::FormSink {
 public:
  explicit Builder(graph::Model& m) : m_(m) {}

  /// A value name from `base`, unique in the graph.
  std::string fresh(const std::string& base) override {
    std::string name = base;
    for (int i = 1; !names_.insert(name).second; ++i) name = base + "_" + std::to_string(i);
    return name;
  }
  /// An initializer under exactly `name` (a checkpoint weight).
  std::string weight(const std::string& name, Tensor t) {
    if (names_.insert(name).second) m_.graph.add_initializer(name, std::move(t));
    return name;
  }
  /// A constant of the builder, named kLlamaConstantPrefix + base.
  std::string own(const std::string& base, Tensor t) {
    return constant(kLlamaConstantPrefix + base, std::move(t));
  }
  std::string ints(const std::string& base, const std::vector<int64_t>& v) {
    Tensor t = Tensor::zeros(DType::i64, {static_cast<int64_t>(v.size())});
    std::copy(v.begin(), v.end(), t.mutable_data<int64_t>());
    return own(base, std::move(t));
  }
  std::string int_scalar(const std::string& base, int64_t v) {
    Tensor t = Tensor::zeros(DType::i64, {});
    t.mutable_data<int64_t>()[0] = v;
    return own(base, std::move(t));
  }
  std::string scalar(const std::string& base, float v) {
    return own(base, Tensor::from_f32({}, std::vector<float>{v}));
  }
  /// One node of `op_type` reading `inputs`; returns its output, named from `out`
  /// (exactly `out` when `exact`).
  std::string op(const std::string& op_type, std::vector<std::string> inputs,
                 const std::string& out, std::vector<std::pair<std::string, Attribute>> attrs = {},
                 bool exact = false) {
    Node n;
    n.op_type = op_type;
    n.outputs = {exact ? out : fresh(out)};
    if (exact) names_.insert(out);
    n.name = fresh(n.outputs[0] + "/" + op_type);
    n.inputs = std::move(inputs);
    n.attributes = std::move(attrs);
    m_.graph.nodes.push_back(std::move(n));
    return m_.graph.nodes.back().outputs[0];
  }
  void declare(const std::string& name) { names_.insert(name); }

  // FormSink: a form's factors under "<weight>.<factor>", its nodes in order.
  std::string constant(const std::string& base, Tensor t) override {
    const std::string n = fresh(base);
    m_.graph.add_initializer(n, std::move(t));
    return n;
  }
  void emit(Node n) override {
    for (const std::string& o : n.outputs) names_.insert(o);
    names_.insert(n.name);
    m_.graph.nodes.push_back(std::move(n));
  }
  int64_t opset() const override { return m_.opset; }

 private:
  graph::Model& m_;
  std::unordered_set<std::string> names_;
};

Attribute attr_i(int64_t v) {
  return Attribute::of_int(v);
}
Attribute attr_is(std::vector<int64_t> v) {
  return Attribute::of_ints(std::move(v));
}

}  // namespace

graph::Model llama_graph(
    const std::map<std::string, Tensor>& weights, const LlamaConfig& c, RopePairing pairing,
    const std::string& source,
    const std::map<std::string, std::shared_ptr<const schemes::Encoded>>& packed) {
  return attribute_errors(source, [&] {
    validate(c, source);
    const NameScheme& names = weights.count(kGgufNames.embed) ? kGgufNames : kHfNames;
    const int64_t dim = c.dim, hd = c.head_dim(), n_heads = c.n_heads, n_kv = c.n_kv_heads;
    const int64_t hidden = c.hidden_dim, vocab = c.vocab_size, seq_len = c.seq_len;
    const int64_t group = n_heads / n_kv, half = hd / 2, kv_dim = n_kv * hd;
    graph::Model m;
    m.opset = kOpset;
    m.ir_version = 8;
    m.producer_name = "tailor";
    m.source = source;
    Builder b(m);

    // Inputs.
    const graph::ValueType f32_cache{
        DType::f32, graph::SymShape{Dim::known(1), Dim::known(n_kv), Dim::named("past_sequence"),
                                    Dim::known(hd)}};
    const graph::ValueType f32_present{
        DType::f32, graph::SymShape{Dim::known(1), Dim::known(n_kv), Dim::named("total_sequence"),
                                    Dim::known(hd)}};
    const std::string ids = "input_ids";
    b.declare(ids);
    m.graph.inputs = {ids};
    m.graph.types[ids] =
        graph::ValueType{DType::i64, graph::SymShape{Dim::known(1), Dim::named("sequence")}};
    for (int64_t l = 0; l < c.n_layers; ++l)
      for (const char* kv : {"key", "value"}) {
        const std::string name = fmt::format("past_key_values.{}.{}", l, kv);
        b.declare(name);
        m.graph.inputs.push_back(name);
        m.graph.types[name] = f32_cache;
      }

    // Weights, under their names in the file.
    auto matrix = [&](const std::string& name, int64_t out, int64_t in) {
      const auto p = packed.find(name);
      if (p == packed.end()) return b.weight(name, weight(weights, name, {out, in}, source));
      const schemes::Encoded& e = *p->second;
      check(e.out() == out && e.in() == in, source,
            fmt::format("llama tensor '{}' has shape [{}, {}], expected [{}, {}]", name, e.out(),
                        e.in(), out, in));
      b.declare(name);
      std::string form;
      graph::emit_weight_form(b, {name, WeightLayout::out_in, {out, in}, DType::f32}, e, form);
      return name;
    };
    auto vec = [&](const std::string& name) {
      return b.weight(name, weight(weights, name, {dim}, source));
    };
    const std::string embedding = matrix(names.embed, vocab, dim);
    const std::string classifier =
        c.shared_classifier ? embedding : matrix(names.classifier, vocab, dim);

    // RoPE tables [seq_len, 1, hd]: each pair's angle pos·theta^(−2p/hd), in
    // double, on both of its dimensions; the pair rotation R.
    const bool interleaved = pairing == RopePairing::interleaved;
    auto pair_dims = [&](int64_t p) {
      return interleaved ? std::pair{2 * p, 2 * p + 1} : std::pair{p, p + half};
    };
    std::vector<float> cos_t(static_cast<size_t>(seq_len * hd)), sin_t(cos_t.size());
    for (int64_t p = 0; p < half; ++p) {
      const double freq =
          std::pow(static_cast<double>(c.rope_theta), -2.0 * p / static_cast<double>(hd));
      const auto [a, bb] = pair_dims(p);
      for (int64_t pos = 0; pos < seq_len; ++pos) {
        const double angle = static_cast<double>(pos) * freq;
        const auto cv = static_cast<float>(std::cos(angle)),
                   sv = static_cast<float>(std::sin(angle));
        cos_t[pos * hd + a] = cos_t[pos * hd + bb] = cv;
        sin_t[pos * hd + a] = sin_t[pos * hd + bb] = sv;
      }
    }
    // (t·R)[a] = −t[b], (t·R)[b] = t[a]: t·cos + (t·R)·sin is the pair rotation.
    std::vector<float> rot(static_cast<size_t>(hd * hd), 0.0f);
    for (int64_t p = 0; p < half; ++p) {
      const auto [a, bb] = pair_dims(p);
      rot[bb * hd + a] = -1.0f;
      rot[a * hd + bb] = 1.0f;
    }
    const std::string cos_all = b.own("rope.cos", Tensor::from_f32({seq_len, 1, hd}, cos_t));
    const std::string sin_all = b.own("rope.sin", Tensor::from_f32({seq_len, 1, hd}, sin_t));
    const std::string rot_m = b.own("rope.rotation", Tensor::from_f32({hd, hd}, rot));

    // Positions: P from the first past, S from the ids; the tables sliced to P … T − 1.
    const std::string zero = b.ints("zero", {0}), one = b.ints("one", {1}),
                      two = b.ints("two", {2});
    const std::string ids_shape = b.op("Shape", {ids}, "input_shape");
    const std::string past_shape = b.op("Shape", {m.graph.inputs[1]}, "past_shape");
    const std::string s_1 = b.op("Slice", {ids_shape, one, two}, "sequence_length");
    const std::string p_1 = b.op("Slice", {past_shape, two, b.ints("three", {3})}, "past_length");
    const std::string t_1 = b.op("Add", {p_1, s_1}, "total_length");
    const std::string cos_s = b.op("Slice", {cos_all, p_1, t_1, zero}, "rope.cos_s");
    const std::string sin_s = b.op("Slice", {sin_all, p_1, t_1, zero}, "rope.sin_s");
    // Mask [group·S, T]: −inf where key position j > query position P + i, else 0;
    // rows repeated for the `group` query heads stacked per KV head.
    const std::string p_0 = b.op("Squeeze", {p_1, zero}, "past_length_scalar");
    const std::string t_0 = b.op("Squeeze", {t_1, zero}, "total_length_scalar");
    const std::string one_0 = b.int_scalar("step", 1);
    const std::string q_pos = b.op("Range", {p_0, t_0, one_0}, "query_positions");
    const std::string k_pos =
        b.op("Range", {b.int_scalar("start", 0), t_0, one_0}, "key_positions");
    const std::string later = b.op("Greater",
                                   {b.op("Unsqueeze", {k_pos, zero}, "key_row"),
                                    b.op("Unsqueeze", {q_pos, one}, "query_column")},
                                   "key_after_query");
    std::string mask = b.op("Where",
                            {later, b.scalar("minus_inf", -std::numeric_limits<float>::infinity()),
                             b.scalar("zero_f", 0.0f)},
                            "causal_mask");
    if (group > 1)
      mask = b.op("Tile", {mask, b.ints("mask_repeats", {group, 1})}, "causal_mask_heads");

    const std::string eps = b.scalar("rms_norm_eps", c.rms_norm_eps);
    const std::string att_scale =
        b.scalar("attention_scale", static_cast<float>(1.0 / std::sqrt(static_cast<double>(hd))));
    const std::string shape_q = b.ints("shape.q", {1, -1, n_heads, hd});
    const std::string shape_kv = b.ints("shape.kv", {1, -1, n_kv, hd});
    const std::string shape_q_groups = b.ints("shape.q_groups", {1, n_kv, -1, hd});
    const std::string shape_x = b.ints("shape.x", {-1, dim});
    const std::vector<int64_t> swap12 = {0, 2, 1, 3};

    auto rms_norm = [&](const std::string& x, const std::string& gain, const std::string& at) {
      const std::string sq = b.op("Mul", {x, x}, at + "/square");
      const std::string ms = b.op("ReduceMean", {sq}, at + "/mean_square",
                                  {{"axes", attr_is({-1})}, {"keepdims", attr_i(1)}});
      const std::string rms = b.op("Sqrt", {b.op("Add", {ms, eps}, at + "/plus_eps")}, at + "/rms");
      return b.op("Mul", {b.op("Div", {x, rms}, at + "/normalized"), gain}, at + "/out");
    };
    auto linear = [&](const std::string& x, const std::string& w, const std::string& out) {
      return b.op("Gemm", {x, w}, out, {{"transB", attr_i(1)}});
    };
    // t [1, S, heads, hd] → t·cos + (t·R)·sin, cos/sin [S, 1, hd].
    auto rope = [&](const std::string& t, const std::string& at) {
      const std::string turned = b.op("MatMul", {t, rot_m}, at + "/rotated");
      return b.op("Add",
                  {b.op("Mul", {t, cos_s}, at + "/cos"), b.op("Mul", {turned, sin_s}, at + "/sin")},
                  at + "/rope");
    };

    const std::string flat_ids = b.op("Reshape", {ids, b.ints("shape.ids", {-1})}, "token_ids");
    std::string x = b.op("Gather", {embedding, flat_ids}, "embedded", {{"axis", attr_i(0)}});
    for (int64_t l = 0; l < c.n_layers; ++l) {
      const std::string at = fmt::format("layers.{}", l);
      const int64_t shapes[7][2] = {{dim, dim},    {kv_dim, dim}, {kv_dim, dim}, {dim, dim},
                                    {hidden, dim}, {dim, hidden}, {hidden, dim}};
      std::string w[7];
      for (int s = 0; s < 7; ++s)
        w[s] = matrix(layer_name(names, l, names.proj[s]), shapes[s][0], shapes[s][1]);
      const std::string attn_norm = vec(layer_name(names, l, names.attn_norm));
      const std::string ffn_norm = vec(layer_name(names, l, names.ffn_norm));
      const std::string past_k = m.graph.inputs[static_cast<size_t>(1 + 2 * l)];
      const std::string past_v = m.graph.inputs[static_cast<size_t>(2 + 2 * l)];

      const std::string h = rms_norm(x, attn_norm, at + "/attn_norm");
      // q [1, S, H, hd] → [1, H, S, hd] = [1, KV, group·S, hd].
      const std::string q = b.op("Reshape", {linear(h, w[0], at + "/q"), shape_q}, at + "/q_heads");
      const std::string q_t =
          b.op("Transpose", {rope(q, at + "/q")}, at + "/q_hsd", {{"perm", attr_is(swap12)}});
      const std::string q_g = b.op("Reshape", {q_t, shape_q_groups}, at + "/q_groups");
      // k, v [1, S, KV, hd] → [1, KV, S, hd], appended to the cache.
      const std::string k =
          b.op("Reshape", {linear(h, w[1], at + "/k"), shape_kv}, at + "/k_heads");
      const std::string v =
          b.op("Reshape", {linear(h, w[2], at + "/v"), shape_kv}, at + "/v_heads");
      const std::string k_new =
          b.op("Transpose", {rope(k, at + "/k")}, at + "/k_new", {{"perm", attr_is(swap12)}});
      const std::string v_new = b.op("Transpose", {v}, at + "/v_new", {{"perm", attr_is(swap12)}});
      const std::string present_k = b.op(
          "Concat", {past_k, k_new}, fmt::format("present.{}.key", l), {{"axis", attr_i(2)}}, true);
      const std::string present_v =
          b.op("Concat", {past_v, v_new}, fmt::format("present.{}.value", l), {{"axis", attr_i(2)}},
               true);
      const std::string k_t = b.op("Transpose", {present_k}, at + "/k_transposed",
                                   {{"perm", attr_is({0, 1, 3, 2})}});  // [1, KV, hd, T]
      const std::string scores =
          b.op("Mul", {b.op("MatMul", {q_g, k_t}, at + "/qk"), att_scale}, at + "/scores");
      const std::string probs = b.op("Softmax", {b.op("Add", {scores, mask}, at + "/masked")},
                                     at + "/probs", {{"axis", attr_i(-1)}});
      const std::string ctx =
          b.op("MatMul", {probs, present_v}, at + "/context");  // [1, KV, group·S, hd]
      const std::string ctx_h =
          b.op("Reshape", {ctx, b.ints("shape.context", {1, n_heads, -1, hd})},
               at + "/context_heads");  // [1, H, S, hd]
      const std::string merged = b.op(
          "Reshape",
          {b.op("Transpose", {ctx_h}, at + "/context_shd", {{"perm", attr_is(swap12)}}), shape_x},
          at + "/attention");
      x = b.op("Add", {x, linear(merged, w[3], at + "/o")}, at + "/residual_attn");
      const std::string f = rms_norm(x, ffn_norm, at + "/ffn_norm");
      const std::string gate = linear(f, w[4], at + "/gate");
      const std::string silu =
          b.op("Mul", {gate, b.op("Sigmoid", {gate}, at + "/gate_sigmoid")}, at + "/silu");
      const std::string act = b.op("Mul", {silu, linear(f, w[6], at + "/up")}, at + "/swiglu");
      x = b.op("Add", {x, linear(act, w[5], at + "/down")}, at + "/residual_ffn");
    }
    const std::string out = rms_norm(x, vec(names.final_norm), "final_norm");
    const std::string logits2 = linear(out, classifier, "logits_2d");
    const std::string logits =
        b.op("Unsqueeze", {logits2, b.ints("axis0", {0})}, "logits", {}, true);
    m.graph.outputs = {logits};
    m.graph.types[logits] = graph::ValueType{
        DType::f32, graph::SymShape{Dim::known(1), Dim::named("sequence"), Dim::known(vocab)}};
    for (int64_t l = 0; l < c.n_layers; ++l)
      for (const char* kv : {"key", "value"}) {
        const std::string name = fmt::format("present.{}.{}", l, kv);
        m.graph.outputs.push_back(name);
        m.graph.types[name] = f32_present;
      }
    graph::verify(m);
    return m;
  });
}

namespace {

int64_t parse_int(const std::string& path, const std::string& key, const std::string& text) {
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  check(errno == 0 && end != text.c_str() && *end == '\0' && v > 0 && v <= INT32_MAX, path,
        "metadata '" + key + "' = '" + text + "' is not a positive 32-bit integer");
  return v;
}

double parse_float(const std::string& path, const std::string& key, const std::string& text) {
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  check(errno == 0 && end != text.c_str() && *end == '\0' && std::isfinite(v), path,
        "metadata '" + key + "' = '" + text + "' is not a finite number");
  return v;
}

const std::string& meta(const graph::Model& file, const std::string& key) {
  auto it = file.metadata.find(key);
  check(it != file.metadata.end(), file.source, "metadata '" + key + "' is missing");
  return it->second;
}

LlamaConfig config_from_llama2c(const graph::Model& file) {
  auto get = [&](const char* key) {
    return static_cast<int32_t>(parse_int(file.source, key, meta(file, key)));
  };
  LlamaConfig c;
  c.dim = get("dim");
  c.hidden_dim = get("hidden_dim");
  c.n_layers = get("n_layers");
  c.n_heads = get("n_heads");
  c.n_kv_heads = get("n_kv_heads");
  c.vocab_size = get("vocab_size");
  c.seq_len = get("seq_len");
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
    return static_cast<int32_t>(parse_int(file.source, key, meta(file, key)));
  };
  auto get_float = [&](const std::string& key) {
    return static_cast<float>(parse_float(file.source, key, meta(file, key)));
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
  c.rms_norm_eps = get_float("llama.attention.layer_norm_rms_epsilon");
  if (file.metadata.count("llama.rope.freq_base")) c.rope_theta = get_float("llama.rope.freq_base");
  const auto embed = file.graph.initializers.find(kGgufNames.embed);
  check(embed != file.graph.initializers.end() && embed->second.rank() == 2, file.source,
        "llama tensor 'token_embd.weight' is missing or not a matrix");
  c.vocab_size = static_cast<int32_t>(embed->second.dim(0));
  c.shared_classifier = file.graph.initializers.count(kGgufNames.classifier) == 0;
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
  c.shared_classifier = tied && file.graph.initializers.count(kHfNames.classifier) == 0;
  return c;
}

/// Layers the weights hold: 1 + the largest i of a name "<prefix>{i}.…" (0 when none).
int64_t layers_held(const std::map<std::string, Tensor>& weights, const std::string& prefix) {
  int64_t n = 0;
  for (auto it = weights.lower_bound(prefix); it != weights.end(); ++it) {
    const std::string& name = it->first;
    if (!name.starts_with(prefix)) break;
    const size_t dot = name.find('.', prefix.size());
    const std::string index = name.substr(prefix.size(), dot - prefix.size());
    if (dot == std::string::npos || index.empty() || index.size() > 9 ||
        index.find_first_not_of("0123456789") != std::string::npos)
      continue;
    n = std::max<int64_t>(n, std::stoll(index) + 1);
  }
  return n;
}

/// The configuration's layer count must be the file's: a config declaring
/// fewer layers would run on part of the model, more would miss tensors.
void check_layer_count(const LlamaCheckpoint& ck, const NameScheme& names,
                       const std::string& config_file, const std::string& key,
                       const std::string& weights_file) {
  const int64_t held = layers_held(ck.weights, names.layer_prefix);
  const std::string& p = names.layer_prefix;
  check(
      held == ck.config.n_layers, config_file,
      fmt::format("{} declares {} layers but {} holds {}{}", key, ck.config.n_layers, weights_file,
                  held, held > 0 ? fmt::format(" ({}0 … {}{})", p, p, held - 1) : std::string()));
}

}  // namespace

std::string llama_gguf_name(const std::string& name) {
  const NameScheme& hf = kHfNames;
  const NameScheme& gg = kGgufNames;
  for (const auto& [from, to] :
       {std::pair{&hf.embed, &gg.embed}, std::pair{&hf.final_norm, &gg.final_norm},
        std::pair{&hf.classifier, &gg.classifier}}) {
    if (name == *from) return *to;
    if (name == *to) return name;
  }
  for (const NameScheme* n : {&hf, &gg}) {
    if (!name.starts_with(n->layer_prefix)) continue;
    const std::string rest = name.substr(n->layer_prefix.size());
    const size_t dot = rest.find('.');
    if (dot == 0 || dot == std::string::npos || rest.find_first_not_of("0123456789") != dot)
      continue;
    const std::string index = rest.substr(0, dot), suffix = rest.substr(dot);
    const auto to = [&](const std::string& s) { return gg.layer_prefix + index + s; };
    if (suffix == n->attn_norm) return to(gg.attn_norm);
    if (suffix == n->ffn_norm) return to(gg.ffn_norm);
    for (int k = 0; k < 7; ++k)
      if (suffix == n->proj[k]) return to(gg.proj[k]);
  }
  return "";
}

LlamaCheckpoint llama_checkpoint(const graph::Model& file) {
  const std::string& path = file.source;
  return attribute_errors(path, [&] {
    LlamaCheckpoint ck;
    ck.weights = file.graph.initializers;
    if (file.format == "llama2c") {
      ck.config = config_from_llama2c(file);
    } else if (file.format == "gguf") {
      ck.config = config_from_gguf(file);
      check_layer_count(ck, kGgufNames, path, "llama.block_count", "the file");
      // Q8_0 / Q4_0 tensors also as stored (the file mapped again), to run packed.
      for (const GgufTensor& t : read_gguf_tensors(path))
        if (t.type == GgmlType::q8_0 || t.type == GgmlType::q4_0)
          if (t.shape.size() == 2) ck.packed.emplace(t.name, ggml_tensor_encoded(t));
    } else if (file.format == "safetensors") {
      namespace fs = std::filesystem;
      const fs::path folder =
          fs::is_directory(path) ? fs::path(path) : fs::path(path).parent_path();
      const std::string config = (folder / "config.json").string();
      ck.config = config_from_hf(file, config);
      ck.pairing = RopePairing::rotate_half;
      check_layer_count(ck, kHfNames, config, "num_hidden_layers", path);
    } else {
      throw Error(path, "not a llama checkpoint (format " + file.format +
                            "; expected llama2.c, a HF folder or GGUF)");
    }
    return ck;
  });
}

LlamaCheckpoint read_llama_checkpoint(const std::string& path) {
  return attribute_errors(path, [&] { return llama_checkpoint(load_model(path)); });
}

graph::Model load_llama_graph(const std::string& path) {
  const LlamaCheckpoint ck = read_llama_checkpoint(path);
  return llama_graph(ck.weights, ck.config, ck.pairing, path, ck.packed);
}

}  // namespace tailor
