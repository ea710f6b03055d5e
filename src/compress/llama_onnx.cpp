// The llama forward pass as a standard ONNX graph (llama_onnx.h).
#include "tailor/compress/llama_onnx.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <set>

#include "tailor/core/error.h"
#include "tailor/graph/verify.h"

namespace tailor::compress {
namespace {

using graph::Attribute;
using graph::Node;

constexpr int64_t kOpset = 17;

/// Appends nodes and initializers to one graph under unique names.
class Builder {
 public:
  explicit Builder(graph::Model& m) : m_(m) {}

  /// A value name from `base`, unique in the graph.
  std::string fresh(const std::string& base) {
    std::string name = base;
    for (int i = 1; !names_.insert(name).second; ++i) name = base + "_" + std::to_string(i);
    return name;
  }
  std::string init(const std::string& name, Tensor t) {
    const std::string n = fresh(name);
    m_.graph.add_initializer(n, std::move(t));
    return n;
  }
  std::string ints(const std::string& base, const std::vector<int64_t>& v) {
    Tensor t = Tensor::zeros(DType::i64, {static_cast<int64_t>(v.size())});
    std::copy(v.begin(), v.end(), t.mutable_data<int64_t>());
    return init(base, std::move(t));
  }
  std::string scalar(const std::string& base, float v) {
    return init(base, Tensor::from_f32({}, std::vector<float>{v}));
  }
  /// One node of `op` reading `inputs`; returns its output, named from `out`.
  std::string op(const std::string& op_type, std::vector<std::string> inputs,
                 const std::string& out,
                 std::vector<std::pair<std::string, Attribute>> attrs = {}) {
    Node n;
    n.op_type = op_type;
    n.outputs = {fresh(out)};
    n.name = fresh(n.outputs[0] + "/" + op_type);
    n.inputs = std::move(inputs);
    n.attributes = std::move(attrs);
    m_.graph.nodes.push_back(std::move(n));
    return m_.graph.nodes.back().outputs[0];
  }

 private:
  graph::Model& m_;
  std::set<std::string> names_;
};

Tensor copy_f32(const Tensor& t) {
  return t.to(DType::f32).contiguous().clone();
}

Tensor vector_tensor(const std::vector<float>& v) {
  return Tensor::from_f32({static_cast<int64_t>(v.size())}, v);
}

/// The dense weight [out, in] of Linear `name` (DenseLinear), copied.
Tensor dense_of(const llm::LlamaModel& model, const std::string& name) {
  return copy_f32(model.dense_weight(name));
}

}  // namespace

graph::Model llama_to_onnx(const llm::LlamaModel& model) {
  const LlamaConfig& c = model.config();
  const int64_t dim = c.dim, hd = c.head_dim(), n_heads = c.n_heads, n_kv = c.n_kv_heads;
  const int64_t group = n_heads / n_kv, seq_len = c.seq_len, half = hd / 2;
  graph::Model m;
  m.opset = kOpset;
  m.ir_version = 8;
  m.producer_name = "tailor";
  m.source = "llama";
  Builder b(m);
  auto attr_i = [](int64_t v) { return Attribute::of_int(v); };
  auto attr_is = [](std::vector<int64_t> v) { return Attribute::of_ints(std::move(v)); };

  // The input (the output is added last).
  const std::string ids = b.fresh("input_ids");
  m.graph.inputs = {ids};
  m.graph.types[ids] = graph::ValueType{
      DType::i64, graph::SymShape{graph::Dim::known(1), graph::Dim::named("sequence")}};

  // Weights: every Linear under its file name (the plan's layer names).
  const std::vector<std::string> names = model.linear_names();
  for (const std::string& name : names) b.init(name, dense_of(model, name));
  const std::string classifier = names.back();
  const std::string embedding = c.shared_classifier
                                    ? classifier
                                    : b.init("token_embedding", copy_f32(model.embedding_weight()));

  // Constants: RoPE tables [seq_len, 1, hd] (each pair's angle on both of its
  // dimensions, as llm::LlamaSession computes it) and the pair rotation R.
  const bool interleaved = model.rope_pairing() == llm::RopePairing::interleaved;
  auto pair_dims = [&](int64_t p) {
    return interleaved ? std::pair{2 * p, 2 * p + 1} : std::pair{p, p + half};
  };
  std::vector<float> cos_t(static_cast<size_t>(seq_len * hd)), sin_t(cos_t.size());
  for (int64_t pos = 0; pos < seq_len; ++pos)
    for (int64_t p = 0; p < half; ++p) {
      const double freq =
          std::pow(static_cast<double>(c.rope_theta), -2.0 * p / static_cast<double>(hd));
      const double angle = static_cast<double>(pos) * freq;
      const auto [a, bb] = pair_dims(p);
      const float cv = static_cast<float>(std::cos(angle)),
                  sv = static_cast<float>(std::sin(angle));
      cos_t[pos * hd + a] = cos_t[pos * hd + bb] = cv;
      sin_t[pos * hd + a] = sin_t[pos * hd + bb] = sv;
    }
  // (t·R)[a] = −t[b], (t·R)[b] = t[a]: t·cos + (t·R)·sin is the pair rotation.
  std::vector<float> rot(static_cast<size_t>(hd * hd), 0.0f);
  for (int64_t p = 0; p < half; ++p) {
    const auto [a, bb] = pair_dims(p);
    rot[bb * hd + a] = -1.0f;
    rot[a * hd + bb] = 1.0f;
  }
  const std::string cos_all = b.init("rope.cos", Tensor::from_f32({seq_len, 1, hd}, cos_t));
  const std::string sin_all = b.init("rope.sin", Tensor::from_f32({seq_len, 1, hd}, sin_t));
  const std::string rot_m = b.init("rope.rotation", Tensor::from_f32({hd, hd}, rot));

  // Sequence length S as a 1-D i64 [1], and the tables sliced to it.
  const std::string shape = b.op("Shape", {ids}, "input_shape");
  const std::string zero = b.ints("const.zero", {0});
  const std::string seq =
      b.op("Slice", {shape, b.ints("const.one", {1}), b.ints("const.two", {2})}, "sequence_length");
  const std::string cos_s = b.op("Slice", {cos_all, zero, seq, zero}, "rope.cos_s");
  const std::string sin_s = b.op("Slice", {sin_all, zero, seq, zero}, "rope.sin_s");
  const std::string axis1 = b.ints("const.axis1", {1});
  // Causal mask [S, S]: −inf where key position j > query position i, else 0.
  auto i64_scalar = [&](const std::string& base, int64_t v) {
    Tensor t = Tensor::zeros(DType::i64, {});
    t.mutable_data<int64_t>()[0] = v;
    return b.init(base, std::move(t));
  };
  const std::string seq_scalar = b.op("Gather", {shape, i64_scalar("const.index1", 1)},
                                      "sequence_length_scalar", {{"axis", attr_i(0)}});
  const std::string positions =
      b.op("Range", {i64_scalar("const.start", 0), seq_scalar, i64_scalar("const.step", 1)},
           "positions");
  const std::string later = b.op("Greater",
                                 {b.op("Unsqueeze", {positions, zero}, "key_positions"),
                                  b.op("Unsqueeze", {positions, axis1}, "query_positions")},
                                 "key_after_query");
  const std::string mask_s =
      b.op("Where",
           {later, b.scalar("const.minus_inf", -std::numeric_limits<float>::infinity()),
            b.scalar("const.zero_f", 0.0f)},
           "causal_mask");
  const std::string eps = b.scalar("rms_norm_eps", c.rms_norm_eps);
  const std::string att_scale =
      b.scalar("attention_scale", static_cast<float>(1.0 / std::sqrt(static_cast<double>(hd))));
  const std::string shape_q = b.ints("shape.q", {-1, n_heads, hd});
  const std::string shape_kv = b.ints("shape.kv", {-1, n_kv, hd});
  const std::string shape_x = b.ints("shape.x", {-1, dim});
  const std::string shape_k_heads = b.ints("shape.k_heads", {n_heads, hd, -1});
  const std::string shape_v_heads = b.ints("shape.v_heads", {n_heads, -1, hd});
  const std::string repeats = b.ints("kv_repeats", {1, group, 1, 1});

  auto rms_norm = [&](const std::string& x, const std::vector<float>& gain,
                      const std::string& gain_name, const std::string& at) {
    const std::string g = b.init(gain_name, vector_tensor(gain));
    const std::string sq = b.op("Mul", {x, x}, at + "/square");
    const std::string ms = b.op("ReduceMean", {sq}, at + "/mean_square",
                                {{"axes", attr_is({-1})}, {"keepdims", attr_i(1)}});
    const std::string rms = b.op("Sqrt", {b.op("Add", {ms, eps}, at + "/plus_eps")}, at + "/rms");
    return b.op("Mul", {b.op("Div", {x, rms}, at + "/normalized"), g}, at + "/out");
  };
  auto linear = [&](const std::string& x, const std::string& w, const std::string& out) {
    return b.op("Gemm", {x, w}, out, {{"transB", attr_i(1)}});
  };
  auto rope = [&](const std::string& t, const std::string& at) {
    const std::string turned = b.op("MatMul", {t, rot_m}, at + "/rotated");
    return b.op("Add",
                {b.op("Mul", {t, cos_s}, at + "/cos"), b.op("Mul", {turned, sin_s}, at + "/sin")},
                at + "/rope");
  };
  // [KV, a, b] → [H, a, b]: every KV head repeated for the `group` query heads reading it.
  auto repeat_kv = [&](const std::string& t, const std::string& heads_shape,
                       const std::string& at) {
    if (group == 1) return t;
    const std::string u = b.op("Unsqueeze", {t, axis1}, at + "/unsqueeze");
    const std::string tiled = b.op("Tile", {u, repeats}, at + "/tile");
    return b.op("Reshape", {tiled, heads_shape}, at + "/heads");
  };

  const std::string flat_ids = b.op("Reshape", {ids, b.ints("shape.ids", {-1})}, "token_ids");
  std::string x = b.op("Gather", {embedding, flat_ids}, "embedded", {{"axis", attr_i(0)}});
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const llm::LlamaLayer& layer = model.layers()[static_cast<size_t>(l)];
    const std::string at = fmt::format("layers.{}", l);
    auto w = [&](int slot) { return names[static_cast<size_t>(l * 7 + slot)]; };
    const std::string h = rms_norm(x, layer.attn_norm, at + ".attn_norm", at + "/attn_norm");
    const std::string q = b.op("Reshape", {linear(h, w(0), at + "/q"), shape_q}, at + "/q_heads");
    const std::string k = b.op("Reshape", {linear(h, w(1), at + "/k"), shape_kv}, at + "/k_heads");
    const std::string v = b.op("Reshape", {linear(h, w(2), at + "/v"), shape_kv}, at + "/v_heads");
    const std::string qh = b.op("Transpose", {rope(q, at + "/q")}, at + "/q_hsd",
                                {{"perm", attr_is({1, 0, 2})}});  // [H, S, hd]
    const std::string kt = b.op("Transpose", {rope(k, at + "/k")}, at + "/k_hds",
                                {{"perm", attr_is({1, 2, 0})}});  // [KV, hd, S]
    const std::string vh = b.op("Transpose", {v}, at + "/v_hsd", {{"perm", attr_is({1, 0, 2})}});
    const std::string scores =
        b.op("Mul",
             {b.op("MatMul", {qh, repeat_kv(kt, shape_k_heads, at + "/k")}, at + "/qk"), att_scale},
             at + "/scores");
    const std::string probs = b.op("Softmax", {b.op("Add", {scores, mask_s}, at + "/masked")},
                                   at + "/probs", {{"axis", attr_i(-1)}});
    const std::string ctx = b.op("MatMul", {probs, repeat_kv(vh, shape_v_heads, at + "/v")},
                                 at + "/context");  // [H, S, hd]
    const std::string merged = b.op(
        "Reshape",
        {b.op("Transpose", {ctx}, at + "/context_shd", {{"perm", attr_is({1, 0, 2})}}), shape_x},
        at + "/attention");
    x = b.op("Add", {x, linear(merged, w(3), at + "/o")}, at + "/residual_attn");
    const std::string f = rms_norm(x, layer.ffn_norm, at + ".ffn_norm", at + "/ffn_norm");
    const std::string gate = linear(f, w(4), at + "/gate");
    const std::string silu =
        b.op("Mul", {gate, b.op("Sigmoid", {gate}, at + "/gate_sigmoid")}, at + "/silu");
    const std::string act = b.op("Mul", {silu, linear(f, w(6), at + "/up")}, at + "/swiglu");
    x = b.op("Add", {x, linear(act, w(5), at + "/down")}, at + "/residual_ffn");
  }
  const std::string out = rms_norm(x, model.final_norm(), "final_norm", "final_norm");
  const std::string logits2 = linear(out, classifier, "logits_2d");
  const std::string logits = b.fresh("logits");
  {
    Node n;
    n.op_type = "Unsqueeze";
    n.name = b.fresh("logits/Unsqueeze");
    n.inputs = {logits2, b.ints("const.axis0", {0})};
    n.outputs = {logits};
    m.graph.nodes.push_back(std::move(n));
  }
  m.graph.outputs = {logits};
  m.graph.types[logits] = graph::ValueType{
      DType::f32, graph::SymShape{graph::Dim::known(1), graph::Dim::named("sequence"),
                                  graph::Dim::known(c.vocab_size)}};
  graph::verify(m);
  return m;
}

graph::Model llama_to_onnx(const llm::LlamaModel& model, const std::vector<EncodedLayer>& layers,
                           std::vector<LayerRewrite>* log) {
  std::vector<EncodedLayer> as_stored = layers;
  for (EncodedLayer& l : as_stored) {
    const llm::Linear& lin = model.linear(l.name);  // throws naming a non-Linear
    check(l.encoded != nullptr, l.name, "no encoded weight");
    check(l.encoded->out() == lin.out() && l.encoded->in() == lin.in(), l.name,
          fmt::format("encoded weight is [{}, {}], the model's is [{}, {}]", l.encoded->out(),
                      l.encoded->in(), lin.out(), lin.in()));
    // The graph holds every Linear as an f32 [out, in] initializer.
    l.layout = WeightLayout::out_in;
    l.stored_shape = {lin.out(), lin.in()};
    l.stored_dtype = DType::f32;
  }
  return rewrite_standard(llama_to_onnx(model), as_stored, log);
}

}  // namespace tailor::compress
