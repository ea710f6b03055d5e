// Fusions for decoder graphs (decoder_fusions.h).
#include "llm/decoder_fusions.h"

#include <map>
#include <optional>
#include <set>

namespace tailor::llm {
namespace {

using graph::Node;

struct Index {
  std::map<std::string, size_t> producer;
  std::map<std::string, int> uses;
};

Index index_of(const graph::Graph& g) {
  Index ix;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    for (const std::string& o : g.nodes[i].outputs) ix.producer[o] = i;
    for (const std::string& in : g.nodes[i].inputs) ++ix.uses[in];
  }
  for (const std::string& o : g.outputs) ix.uses[o] += 2;  // never an intermediate
  return ix;
}

/// The default-domain node of `op` producing `value`, read only once; nullopt otherwise.
std::optional<size_t> single_use_producer(const graph::Graph& g, const Index& ix,
                                          const std::string& value, const char* op) {
  auto it = ix.producer.find(value);
  if (it == ix.producer.end()) return std::nullopt;
  const Node& n = g.nodes[it->second];
  if (n.op_type != op || !n.domain.empty() || n.outputs.size() != 1) return std::nullopt;
  auto u = ix.uses.find(value);
  if (u == ix.uses.end() || u->second != 1) return std::nullopt;
  return it->second;
}

/// The value of a scalar f32 initializer, or nullopt.
std::optional<float> scalar(const graph::Graph& g, const std::string& name) {
  auto it = g.initializers.find(name);
  if (it == g.initializers.end() || it->second.dtype() != DType::f32 || it->second.numel() != 1)
    return std::nullopt;
  return it->second.contiguous().data<float>()[0];
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

}  // namespace tailor::llm
