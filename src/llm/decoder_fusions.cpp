// Fusions for decoder graphs (decoder_fusions.h).
#include "llm/decoder_fusions.h"

#include <algorithm>
#include <array>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "tailor/graph/shape_inference.h"

namespace tailor::llm {
namespace {

using graph::Node;

/// Per value: the node producing it, how often it is read, and its first
/// reader. One hashed entry per value, keyed by views of the graph's names
/// (the graph is not changed while an index of it is read): a decoder graph
/// has a few thousand values, and this runs once per fusion.
class Index {
 public:
  static constexpr size_t kNone = static_cast<size_t>(-1);

  explicit Index(const graph::Graph& g) {
    entries_.reserve(g.nodes.size() * 3);
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      for (const std::string& o : g.nodes[i].outputs) entries_[o].producer = i;
      for (const std::string& in : g.nodes[i].inputs) {
        Entry& e = entries_[in];
        if (e.uses++ == 0) e.first_reader = i;
      }
    }
    for (const std::string& o : g.outputs) entries_[o].uses += 2;  // never an intermediate
  }

  /// The node producing `v`, or nullopt.
  std::optional<size_t> producer(std::string_view v) const {
    const Entry* e = find(v);
    return e && e->producer != kNone ? std::optional(e->producer) : std::nullopt;
  }
  /// How often `v` is read (a graph output counts 2 more).
  int uses(std::string_view v) const {
    const Entry* e = find(v);
    return e ? e->uses : 0;
  }
  /// The first node reading `v` (kNone when none does).
  size_t first_reader(std::string_view v) const {
    const Entry* e = find(v);
    return e ? e->first_reader : kNone;
  }

 private:
  struct Entry {
    size_t producer = kNone;
    int uses = 0;
    size_t first_reader = kNone;
  };
  const Entry* find(std::string_view v) const {
    auto it = entries_.find(v);
    return it == entries_.end() ? nullptr : &it->second;
  }
  std::unordered_map<std::string_view, Entry> entries_;
};

Index index_of(const graph::Graph& g) {
  return Index(g);
}

/// The default-domain node of `op` producing `value`, read only once; nullopt otherwise.
std::optional<size_t> single_use_producer(const graph::Graph& g, const Index& ix,
                                          const std::string& value, const char* op) {
  const std::optional<size_t> p = ix.producer(value);
  if (!p) return std::nullopt;
  const Node& n = g.nodes[*p];
  if (n.op_type != op || !n.domain.empty() || n.outputs.size() != 1) return std::nullopt;
  if (ix.uses(value) != 1) return std::nullopt;
  return p;
}

/// The value of a scalar f32 initializer, or nullopt.
std::optional<float> scalar(const graph::Graph& g, const std::string& name) {
  auto it = g.initializers.find(name);
  if (it == g.initializers.end() || it->second.dtype() != DType::f32 || it->second.numel() != 1)
    return std::nullopt;
  return it->second.contiguous().data<float>()[0];
}

/// The values of an i64 initializer, or nullopt.
std::optional<std::vector<int64_t>> ints(const graph::Graph& g, const std::string& name) {
  auto it = g.initializers.find(name);
  if (it == g.initializers.end() || it->second.dtype() != DType::i64) return std::nullopt;
  const Tensor t = it->second.contiguous();
  return std::vector<int64_t>(t.data<int64_t>(), t.data<int64_t>() + t.numel());
}

/// The node producing `value` when it is `op` (default domain, one output)
/// and `value` is read exactly `uses` times; nullopt otherwise.
std::optional<size_t> producer_used(const graph::Graph& g, const Index& ix,
                                    const std::string& value, const char* op, int uses) {
  const std::optional<size_t> p = ix.producer(value);
  if (!p) return std::nullopt;
  const Node& n = g.nodes[*p];
  if (n.op_type != op || !n.domain.empty() || n.outputs.size() != 1) return std::nullopt;
  if (ix.uses(value) != uses) return std::nullopt;
  return p;
}

/// The single reader of `value` when it is `op` (default domain); nullopt otherwise.
std::optional<size_t> single_consumer(const graph::Graph& g, const Index& ix,
                                      const std::string& value, const char* op) {
  if (ix.uses(value) != 1) return std::nullopt;
  const size_t i = ix.first_reader(value);
  const Node& n = g.nodes[i];
  if (n.op_type != op || !n.domain.empty() || n.outputs.size() != 1) return std::nullopt;
  return i;
}

/// g.nodes without `dead`, with `fused` at their positions.
void splice(graph::Model& model, const std::set<size_t>& dead, std::map<size_t, Node>& fused) {
  graph::Graph& g = model.graph;
  std::vector<Node> nodes;
  nodes.reserve(g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (auto it = fused.find(i); it != fused.end())
      nodes.push_back(std::move(it->second));
    else if (!dead.count(i))
      nodes.push_back(std::move(g.nodes[i]));
  }
  g.nodes = std::move(nodes);
  model.other_opsets["ai.tailor"] = 1;
}

}  // namespace

int fuse_rms_norm(graph::Model& model) {
  graph::Graph& g = model.graph;
  const Index ix = index_of(g);
  std::set<size_t> dead;
  std::map<size_t, Node> fused;  // at the position of the final Mul
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& out = g.nodes[i];
    if (out.op_type != "Mul" || !out.domain.empty() || out.inputs.size() != 2) continue;
    auto gain = g.initializers.find(out.inputs[1]);
    if (gain == g.initializers.end() || gain->second.rank() != 1) continue;
    const auto div = single_use_producer(g, ix, out.inputs[0], "Div");
    if (!div || g.nodes[*div].inputs.size() != 2) continue;
    const std::string& x = g.nodes[*div].inputs[0];
    const auto sqrt = single_use_producer(g, ix, g.nodes[*div].inputs[1], "Sqrt");
    if (!sqrt) continue;
    const auto add = single_use_producer(g, ix, g.nodes[*sqrt].inputs[0], "Add");
    if (!add || g.nodes[*add].inputs.size() != 2) continue;
    const std::optional<float> eps = scalar(g, g.nodes[*add].inputs[1]);
    if (!eps) continue;
    const auto mean = single_use_producer(g, ix, g.nodes[*add].inputs[0], "ReduceMean");
    if (!mean || g.nodes[*mean].inputs.size() != 1 ||
        g.nodes[*mean].attr_ints("axes", {}) != std::vector<int64_t>{-1} ||
        g.nodes[*mean].attr_int("keepdims", 1) != 1)
      continue;
    const auto sq = single_use_producer(g, ix, g.nodes[*mean].inputs[0], "Mul");
    if (!sq || g.nodes[*sq].inputs != std::vector<std::string>{x, x}) continue;
    Node n;
    n.op_type = "RMSNormalization";
    n.domain = "ai.tailor";
    n.name =
        out.name.empty() ? out.outputs[0] + "/RMSNormalization" : out.name + "/RMSNormalization";
    n.inputs = {x, out.inputs[1]};
    n.outputs = out.outputs;
    n.set("epsilon", graph::Attribute::of_float(*eps));
    for (size_t d : {*div, *sqrt, *add, *mean, *sq}) dead.insert(d);
    fused[i] = std::move(n);
  }
  if (fused.empty()) return 0;
  splice(model, dead, fused);
  return static_cast<int>(fused.size());
}

int fuse_skip_rms_norm(graph::Model& model) {
  graph::Graph& g = model.graph;
  const Index ix = index_of(g);
  // The norms reading a residual Add, by the nodes alone; then the types of
  // the addends (inferred once, only those kept).
  std::vector<std::pair<size_t, size_t>> found;  // (norm, add)
  std::unordered_set<std::string_view> addends;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& norm = g.nodes[i];
    if (norm.op_type != "RMSNormalization" || norm.domain != "ai.tailor" ||
        norm.inputs.size() != 2 || norm.outputs.size() != 1 ||
        !g.initializers.count(norm.inputs[1]))
      continue;
    const std::optional<size_t> at = ix.producer(norm.inputs[0]);
    if (!at) continue;
    const Node& add = g.nodes[*at];
    if (add.op_type != "Add" || !add.domain.empty() || add.inputs.size() != 2 ||
        add.outputs.size() != 1)
      continue;
    found.emplace_back(i, *at);
    addends.insert(add.inputs.begin(), add.inputs.end());
  }
  if (found.empty()) return 0;
  std::unordered_map<std::string, graph::ValueType> types;
  graph::for_each_inferred_type(g, model.opset, [&](std::string&& name, graph::ValueType&& t) {
    if (addends.count(name)) types.emplace(std::move(name), std::move(t));
  });
  // Both addends of the same shape, every dim known or the same symbol (no
  // broadcast: the fused op adds element by element).
  auto same_shape = [&](const std::string& a, const std::string& b) {
    auto ta = types.find(a), tb = types.find(b);
    if (ta == types.end() || tb == types.end() || !ta->second.shape || !tb->second.shape)
      return false;
    for (const graph::Dim& d : *ta->second.shape)
      if (!d.is_known() && !d.is_symbolic()) return false;
    return *ta->second.shape == *tb->second.shape;
  };
  std::set<size_t> dead;
  std::map<size_t, Node> fused;  // at the position of the Add
  for (const auto& [i, at] : found) {
    const Node& norm = g.nodes[i];
    const Node& add = g.nodes[at];
    if (fused.count(at) || !same_shape(add.inputs[0], add.inputs[1])) continue;
    Node n = norm;
    n.inputs = {add.inputs[0], norm.inputs[1], add.inputs[1]};
    n.outputs = {norm.outputs[0], add.outputs[0]};
    dead.insert(i);
    fused[at] = std::move(n);
  }
  if (fused.empty()) return 0;
  splice(model, dead, fused);
  return static_cast<int>(fused.size());
}

int fuse_attention(graph::Model& model) {
  graph::Graph& g = model.graph;
  const Index ix = index_of(g);
  std::set<size_t> dead;
  std::map<size_t, Node> fused;  // at the position of the final MatMul
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& out = g.nodes[i];
    if (out.op_type != "MatMul" || !out.domain.empty() || out.inputs.size() != 2) continue;
    const auto soft = single_use_producer(g, ix, out.inputs[0], "Softmax");
    if (!soft) continue;
    const Node& sm = g.nodes[*soft];
    const int64_t axis = sm.attr_int("axis", -1);
    if ((axis != -1 && axis != 3) || sm.inputs.size() != 1) continue;
    const auto add = single_use_producer(g, ix, sm.inputs[0], "Add");
    if (!add || g.nodes[*add].inputs.size() != 2) continue;
    const auto mul = single_use_producer(g, ix, g.nodes[*add].inputs[0], "Mul");
    if (!mul || g.nodes[*mul].inputs.size() != 2) continue;
    const Node& mn = g.nodes[*mul];
    const std::optional<float> c = scalar(g, mn.inputs[1]);
    if (!c) continue;
    const auto qk = single_use_producer(g, ix, mn.inputs[0], "MatMul");
    if (!qk || g.nodes[*qk].inputs.size() != 2) continue;
    const auto tr = single_use_producer(g, ix, g.nodes[*qk].inputs[1], "Transpose");
    if (!tr || g.nodes[*tr].attr_ints("perm", {}) != std::vector<int64_t>{0, 1, 3, 2}) continue;
    Node a;
    a.op_type = "Attention";
    a.domain = "ai.tailor";
    a.name = out.name.empty() ? out.outputs[0] + "/Attention" : out.name + "/Attention";
    a.inputs = {g.nodes[*qk].inputs[0], g.nodes[*tr].inputs[0], out.inputs[1],
                g.nodes[*add].inputs[1]};
    a.outputs = out.outputs;
    a.set("scale", graph::Attribute::of_float(*c));
    for (size_t d : {*soft, *add, *mul, *qk, *tr}) dead.insert(d);
    fused[i] = std::move(a);
  }
  if (fused.empty()) return 0;
  splice(model, dead, fused);
  return static_cast<int>(fused.size());
}

namespace {

/// RoPE as the llama builder writes it: Add(Mul(t, cos), Mul(MatMul(t, R), sin))
/// producing `value`, t read by those two nodes only and R a square f32
/// initializer. Adds the matched nodes to `nodes`; returns t, cos, sin, R.
std::optional<std::array<std::string, 4>> match_rope(const graph::Graph& g, const Index& ix,
                                                     const std::string& value,
                                                     std::vector<size_t>& nodes) {
  const auto add = single_use_producer(g, ix, value, "Add");
  if (!add || g.nodes[*add].inputs.size() != 2) return std::nullopt;
  const auto by_cos = single_use_producer(g, ix, g.nodes[*add].inputs[0], "Mul");
  const auto by_sin = single_use_producer(g, ix, g.nodes[*add].inputs[1], "Mul");
  if (!by_cos || !by_sin || g.nodes[*by_cos].inputs.size() != 2 ||
      g.nodes[*by_sin].inputs.size() != 2)
    return std::nullopt;
  const std::string& t = g.nodes[*by_cos].inputs[0];
  const auto turn = single_use_producer(g, ix, g.nodes[*by_sin].inputs[0], "MatMul");
  if (!turn || g.nodes[*turn].inputs.size() != 2 || g.nodes[*turn].inputs[0] != t)
    return std::nullopt;
  if (ix.uses(t) != 2) return std::nullopt;
  const std::string& r = g.nodes[*turn].inputs[1];
  auto rot = g.initializers.find(r);
  if (rot == g.initializers.end() || rot->second.dtype() != DType::f32 || rot->second.rank() != 2 ||
      rot->second.dim(0) != rot->second.dim(1))
    return std::nullopt;
  nodes.insert(nodes.end(), {*add, *by_cos, *by_sin, *turn});
  return std::array<std::string, 4>{t, g.nodes[*by_cos].inputs[1], g.nodes[*by_sin].inputs[1], r};
}

/// The Reshape producing `value` (read `uses` times) to the constant shape
/// `want` (−1 where any size); its data input, or nullopt.
std::optional<std::string> match_reshape(const graph::Graph& g, const Index& ix,
                                         const std::string& value, const std::vector<int64_t>& want,
                                         int uses, std::vector<size_t>& nodes) {
  const auto r = producer_used(g, ix, value, "Reshape", uses);
  if (!r || g.nodes[*r].inputs.size() != 2 || g.nodes[*r].attr_int("allowzero", 0) != 0)
    return std::nullopt;
  if (ints(g, g.nodes[*r].inputs[1]) != want) return std::nullopt;
  nodes.push_back(*r);
  return g.nodes[*r].inputs[0];
}

/// The Transpose(perm 0, 2, 1, 3) producing `value`, read once; its input.
std::optional<std::string> match_swap12(const graph::Graph& g, const Index& ix,
                                        const std::string& value, std::vector<size_t>& nodes) {
  const auto t = single_use_producer(g, ix, value, "Transpose");
  if (!t || g.nodes[*t].attr_ints("perm", {}) != std::vector<int64_t>{0, 2, 1, 3})
    return std::nullopt;
  nodes.push_back(*t);
  return g.nodes[*t].inputs[0];
}

/// The present of a cache: Concat(past, new, axis 2) producing `value`, a
/// graph output read by the attention only; returns past and new.
std::optional<std::pair<std::string, std::string>> match_append(const graph::Graph& g,
                                                                const Index& ix,
                                                                const std::string& value,
                                                                std::vector<size_t>& nodes) {
  const auto c = producer_used(g, ix, value, "Concat", 3);  // the output counts 2
  if (!c || g.nodes[*c].inputs.size() != 2 || g.nodes[*c].attr_int("axis", 0) != 2 ||
      std::find(g.outputs.begin(), g.outputs.end(), value) == g.outputs.end())
    return std::nullopt;
  nodes.push_back(*c);
  return std::pair{g.nodes[*c].inputs[0], g.nodes[*c].inputs[1]};
}

/// The node producing `value` when it is `op` (default domain, one output),
/// however often read; nullopt otherwise.
const Node* made_by(const graph::Graph& g, const Index& ix, const std::string& value,
                    const char* op) {
  const std::optional<size_t> p = ix.producer(value);
  if (!p) return nullptr;
  const Node& n = g.nodes[*p];
  return n.op_type == op && n.domain.empty() && n.outputs.size() == 1 ? &n : nullptr;
}

/// Dim 2 of graph input `value` (rank 4), or nullopt when it is not one.
std::optional<graph::Dim> past_dim(const graph::Graph& g, const std::string& value) {
  if (std::find(g.inputs.begin(), g.inputs.end(), value) == g.inputs.end()) return std::nullopt;
  const graph::ValueType* t = g.type_of(value);
  if (!t || !t->shape || t->shape->size() != 4) return std::nullopt;
  return (*t->shape)[2];
}

/// `value` = Slice(Shape(X), [2], [3]) with X the past `past` or a graph
/// input whose dim 2 is the same symbol (the same past length, by the names
/// of the inputs' dims).
bool is_past_length(const graph::Graph& g, const Index& ix, const std::string& value,
                    const std::string& past) {
  const Node* sl = made_by(g, ix, value, "Slice");
  if (!sl || sl->inputs.size() < 3 || ints(g, sl->inputs[1]) != std::vector<int64_t>{2} ||
      ints(g, sl->inputs[2]) != std::vector<int64_t>{3} ||
      (sl->inputs.size() > 3 && ints(g, sl->inputs[3]) != std::vector<int64_t>{0}) ||
      sl->inputs.size() > 4)
    return false;
  const Node* shape = made_by(g, ix, sl->inputs[0], "Shape");
  if (!shape || shape->inputs.size() != 1 || !shape->attributes.empty()) return false;
  if (shape->inputs[0] == past) return true;
  const auto a = past_dim(g, shape->inputs[0]), b = past_dim(g, past);
  return a && b && a->is_symbolic() && *a == *b;
}

/// The table of Slice(table, P, P + S, axes [0]) producing `value`, table a
/// f32 [n, 1, d] initializer and P `start`; nullopt otherwise.
std::optional<std::string> table_of(const graph::Graph& g, const Index& ix,
                                    const std::string& value, const std::string& start,
                                    const std::string& end) {
  const Node* sl = made_by(g, ix, value, "Slice");
  if (!sl || sl->inputs.size() != 4 || sl->inputs[1] != start || sl->inputs[2] != end ||
      ints(g, sl->inputs[3]) != std::vector<int64_t>{0})
    return std::nullopt;
  auto t = g.initializers.find(sl->inputs[0]);
  if (t == g.initializers.end() || t->second.dtype() != DType::f32 || t->second.rank() != 3 ||
      t->second.dim(1) != 1)
    return std::nullopt;
  return sl->inputs[0];
}

/// i64 Range(start, Squeeze(end, [0]), 1) producing `value`, start the
/// Squeeze(from, [0]) of `from` or, when from is empty, the constant 0.
bool is_range(const graph::Graph& g, const Index& ix, const std::string& value,
              const std::string& from, const std::string& end) {
  auto squeezed = [&](const std::string& v, const std::string& of) {
    const Node* sq = made_by(g, ix, v, "Squeeze");
    return sq && sq->inputs.size() == 2 && sq->inputs[0] == of &&
           ints(g, sq->inputs[1]) == std::vector<int64_t>{0};
  };
  const Node* r = made_by(g, ix, value, "Range");
  if (!r || r->inputs.size() != 3 || ints(g, r->inputs[2]) != std::vector<int64_t>{1} ||
      !squeezed(r->inputs[1], end))
    return false;
  return from.empty() ? ints(g, r->inputs[0]) == std::vector<int64_t>{0}
                      : squeezed(r->inputs[0], from);
}

/// `mask` is the causal mask the llama builder writes for `group` query heads
/// per KV head: Where(Greater(Unsqueeze(Range(0, T), [0]), Unsqueeze(Range(P,
/// T), [1])), −inf, 0), tiled [group, 1] when group > 1, P `start`, T `end`.
bool is_causal_mask(const graph::Graph& g, const Index& ix, std::string mask, int64_t group,
                    const std::string& start, const std::string& end) {
  if (group > 1) {
    const Node* tile = made_by(g, ix, mask, "Tile");
    if (!tile || tile->inputs.size() != 2 ||
        ints(g, tile->inputs[1]) != std::vector<int64_t>{group, 1})
      return false;
    mask = tile->inputs[0];
  }
  const Node* where = made_by(g, ix, mask, "Where");
  if (!where || where->inputs.size() != 3) return false;
  const std::optional<float> masked = scalar(g, where->inputs[1]),
                             kept = scalar(g, where->inputs[2]);
  if (!masked || !kept || *masked != -std::numeric_limits<float>::infinity() || *kept != 0.0f)
    return false;
  const Node* later = made_by(g, ix, where->inputs[0], "Greater");
  if (!later || later->inputs.size() != 2) return false;
  const Node* row = made_by(g, ix, later->inputs[0], "Unsqueeze");
  const Node* col = made_by(g, ix, later->inputs[1], "Unsqueeze");
  return row && col && row->inputs.size() == 2 && col->inputs.size() == 2 &&
         ints(g, row->inputs[1]) == std::vector<int64_t>{0} &&
         ints(g, col->inputs[1]) == std::vector<int64_t>{1} &&
         is_range(g, ix, row->inputs[0], "", end) && is_range(g, ix, col->inputs[0], start, end);
}

/// GroupQueryAttention node `n` (inputs as fused above) reading the RoPE
/// tables and the causal mask from its own past length: when cos and sin are
/// the builder's slices of whole tables at P … P + S − 1 (P the length of n's
/// past) and the mask is its causal mask, n takes the tables (rope_tables 1)
/// and builds the mask (causal 1), so the slicing and mask nodes fall to dce.
void read_positions_in_kernel(const graph::Graph& g, const Index& ix, Node& n, int64_t group) {
  const Node* cos_slice = made_by(g, ix, n.inputs[5], "Slice");
  if (!cos_slice || cos_slice->inputs.size() != 4) return;
  const std::string &start = cos_slice->inputs[1], &end = cos_slice->inputs[2];
  const Node* total = made_by(g, ix, end, "Add");
  if (!total || total->inputs.size() != 2 || total->inputs[0] != start ||
      !is_past_length(g, ix, start, n.inputs[3]))
    return;
  const auto cos = table_of(g, ix, n.inputs[5], start, end);
  const auto sin = table_of(g, ix, n.inputs[6], start, end);
  if (!cos || !sin || g.initializers.at(*sin).shape() != g.initializers.at(*cos).shape() ||
      !is_causal_mask(g, ix, n.inputs[8], group, start, end))
    return;
  n.inputs[5] = *cos, n.inputs[6] = *sin;
  n.inputs.pop_back();  // the mask
  n.set("rope_tables", graph::Attribute::of_int(1));
  n.set("causal", graph::Attribute::of_int(1));
}
}  // namespace

int fuse_group_query_attention(graph::Model& model) {
  graph::Graph& g = model.graph;
  const Index ix = index_of(g);
  std::set<size_t> dead;
  std::map<size_t, Node> fused;  // at the position of the last Reshape
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& att = g.nodes[i];
    if (att.op_type != "Attention" || att.domain != "ai.tailor" || att.inputs.size() != 4 ||
        att.outputs.size() != 1)
      continue;
    std::vector<size_t> nodes{i};
    // Keys and values appended to the caches; heads and head_dim from the kv Reshapes.
    const auto k_app = match_append(g, ix, att.inputs[1], nodes);
    const auto v_app = match_append(g, ix, att.inputs[2], nodes);
    if (!k_app || !v_app) continue;
    const auto k_rope_out = match_swap12(g, ix, k_app->second, nodes);
    const auto v_heads = k_rope_out ? match_swap12(g, ix, v_app->second, nodes) : std::nullopt;
    if (!v_heads) continue;
    const std::optional<size_t> kv_shape_node = ix.producer(*v_heads);
    if (!kv_shape_node) continue;
    const Node& kv_reshape = g.nodes[*kv_shape_node];
    const auto kv_shape =
        kv_reshape.inputs.size() == 2 ? ints(g, kv_reshape.inputs[1]) : std::nullopt;
    if (!kv_shape || kv_shape->size() != 4 || (*kv_shape)[2] <= 0 || (*kv_shape)[3] <= 0) continue;
    const int64_t kv_heads = (*kv_shape)[2], hd = (*kv_shape)[3];
    const auto v = match_reshape(g, ix, *v_heads, {1, -1, kv_heads, hd}, 1, nodes);
    const auto k_rope = v ? match_rope(g, ix, *k_rope_out, nodes) : std::nullopt;
    const auto k =
        k_rope ? match_reshape(g, ix, (*k_rope)[0], {1, -1, kv_heads, hd}, 2, nodes) : std::nullopt;
    if (!k) continue;
    // Queries: Reshape to heads, RoPE, Transpose, Reshape to KV groups.
    const auto q_g = match_reshape(g, ix, att.inputs[0], {1, kv_heads, -1, hd}, 1, nodes);
    const auto q_rope_out = q_g ? match_swap12(g, ix, *q_g, nodes) : std::nullopt;
    const auto q_rope = q_rope_out ? match_rope(g, ix, *q_rope_out, nodes) : std::nullopt;
    if (!q_rope || (*q_rope)[1] != (*k_rope)[1] || (*q_rope)[2] != (*k_rope)[2] ||
        (*q_rope)[3] != (*k_rope)[3])
      continue;
    const std::optional<size_t> q_heads_node = ix.producer((*q_rope)[0]);
    if (!q_heads_node) continue;
    const Node& q_reshape = g.nodes[*q_heads_node];
    const auto q_shape = q_reshape.inputs.size() == 2 ? ints(g, q_reshape.inputs[1]) : std::nullopt;
    if (!q_shape || q_shape->size() != 4 || (*q_shape)[2] <= 0 || (*q_shape)[2] % kv_heads != 0)
      continue;
    const int64_t heads = (*q_shape)[2];
    const auto q = match_reshape(g, ix, (*q_rope)[0], {1, -1, heads, hd}, 2, nodes);
    if (!q || g.initializers.at((*q_rope)[3]).dim(0) != hd) continue;
    // The output back to rows: Reshape to heads, Transpose, Reshape to [rows, heads·hd].
    const auto ctx_h = single_consumer(g, ix, att.outputs[0], "Reshape");
    if (!ctx_h || g.nodes[*ctx_h].inputs[0] != att.outputs[0] ||
        match_reshape(g, ix, g.nodes[*ctx_h].outputs[0], {1, heads, -1, hd}, 1, nodes) !=
            att.outputs[0])
      continue;
    const auto tr = single_consumer(g, ix, g.nodes[*ctx_h].outputs[0], "Transpose");
    if (!tr || g.nodes[*tr].attr_ints("perm", {}) != std::vector<int64_t>{0, 2, 1, 3}) continue;
    const auto merged = single_consumer(g, ix, g.nodes[*tr].outputs[0], "Reshape");
    if (!merged || g.nodes[*merged].inputs[0] != g.nodes[*tr].outputs[0] ||
        ints(g, g.nodes[*merged].inputs[1]) != std::vector<int64_t>{-1, heads * hd})
      continue;
    nodes.insert(nodes.end(), {*tr, *merged});
    // Every matched node is fused once (no overlap with another match).
    if (std::any_of(nodes.begin(), nodes.end(), [&](size_t n) { return dead.count(n) > 0; }))
      continue;
    Node n;
    n.op_type = "GroupQueryAttention";
    n.domain = "ai.tailor";
    n.name = att.name.empty() ? att.outputs[0] + "/GroupQueryAttention"
                              : att.name + "/GroupQueryAttention";
    n.inputs = {*q,           *k,           *v,           k_app->first, v_app->first,
                (*q_rope)[1], (*q_rope)[2], (*q_rope)[3], att.inputs[3]};
    n.outputs = {g.nodes[*merged].outputs[0], att.inputs[1], att.inputs[2]};
    n.set("num_heads", graph::Attribute::of_int(heads));
    n.set("kv_num_heads", graph::Attribute::of_int(kv_heads));
    n.set("scale", graph::Attribute::of_float(att.attr_float("scale", 1.0f)));
    read_positions_in_kernel(g, ix, n, heads / kv_heads);
    dead.insert(nodes.begin(), nodes.end());
    dead.erase(*merged);
    fused[*merged] = std::move(n);
  }
  if (fused.empty()) return 0;
  splice(model, dead, fused);
  return static_cast<int>(fused.size());
}

}  // namespace tailor::llm
