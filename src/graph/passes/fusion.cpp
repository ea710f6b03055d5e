// The fusion pass: runs the fusion rules (fuse_*.h) over every graph in one
// fixed order and applies the matches the options select. See passes.h.
#include <algorithm>

#include "fuse_conv_bias_activation.h"
#include "fuse_elementwise.h"
#include "fuse_gemm_activation.h"
#include "fuse_layer_norm.h"
#include "fuse_matmul_bias_activation.h"
#include "fuse_softmax.h"
#include "fuse_squeeze_excite.h"
#include "fusion_scope.h"
#include "tailor/graph/passes.h"
#include "tailor/graph/shape_inference.h"

namespace tailor::graph {
namespace {

using namespace passes;

/// One sweep over the nodes trying rules at each unclaimed node; the first
/// match taken claims its nodes.
struct Sweep {
  /// From the last node to the first (else first to last).
  bool backwards;
  std::vector<FusionRule> rules;
};

/// The sweeps, in the order they claim nodes:
/// 1. layer_norm, softmax and squeeze_excite: their patterns hold Sub, Mul,
///    Add, Div and Exp nodes (squeeze_excite two Convs and their activations)
///    the epilogue and elementwise rules would otherwise take piecemeal;
/// 2. the kernel epilogues (roots Conv, Gemm, MatMul): a bias and activation
///    folded into the kernel's output loop cost no pass over the output, so
///    they go before the elementwise groups that could take the same nodes;
/// 3. elementwise groups, grown from the last node backwards so each group
///    ends at the latest node it can.
const std::vector<Sweep>& sweeps() {
  static const std::vector<Sweep> s = {
      {false, {&match_layer_norm, &match_softmax, &match_squeeze_excite}},
      {false,
       {&match_conv_bias_activation, &match_conv_transpose_bias_activation, &match_gemm_activation,
        &match_matmul_bias_activation}},
      {true, {&match_elementwise}},
  };
  return s;
}

/// A match taken, as the candidate the tuner sees.
struct Proposal {
  FusionCandidate cand;
  FusionMatch match;
  /// Index of the last member: where the fused node goes.
  size_t sink = 0;
};

/// Takes `m` unless one of its nodes is claimed: names the candidate and the
/// fused node, claims the nodes.
void claim(FusionScope& s, FusionMatch m, std::vector<Proposal>& out) {
  std::sort(m.members.begin(), m.members.end());
  for (size_t i : m.members)
    if (s.claimed.count(i)) return;
  Proposal p;
  p.sink = m.members.back();
  p.cand.kind = m.kind;
  for (size_t i : m.members) p.cand.nodes.push_back(s.g.node_label(i));
  p.cand.id = m.kind + ":" + m.fused.outputs[0];
  // The fused node takes the name of its first member (the Conv, Gemm or
  // MatMul of an epilogue), which it replaces: errors at run time name the
  // model's node. An unnamed first member gets a fresh name.
  const std::string& first = s.g.nodes[m.members.front()].name;
  m.fused.name = !first.empty() ? first : s.names.fresh(m.kind + "_" + m.fused.outputs[0]);
  s.claimed.insert(m.members.begin(), m.members.end());
  p.match = std::move(m);
  out.push_back(std::move(p));
}

/// Every match in `g` (main graph only), in graph order of their sinks;
/// `types_inferred` as FusionScope's.
std::vector<Proposal> find(const Graph& g, int64_t opset, NameGen& names,
                           bool types_inferred = false) {
  FusionScope s(g, opset, names, types_inferred);
  std::vector<Proposal> out;
  const size_t n = g.nodes.size();
  for (const Sweep& sweep : sweeps())
    for (size_t k = 0; k < n; ++k) {
      const size_t i = sweep.backwards ? n - 1 - k : k;
      if (s.claimed.count(i)) continue;
      for (FusionRule rule : sweep.rules)
        if (auto m = rule(s, i)) {
          claim(s, std::move(*m), out);
          break;
        }
    }
  std::sort(out.begin(), out.end(),
            [](const Proposal& a, const Proposal& b) { return a.sink < b.sink; });
  return out;
}

void collect(const Graph& g, int64_t opset, NameGen& names, std::vector<FusionCandidate>& out) {
  for (auto& p : find(g, opset, names)) out.push_back(p.cand);
  for (const auto& n : g.nodes)
    for (const auto& [an, a] : n.attributes) {
      if (a.kind == Attribute::Kind::g && a.g) collect(*a.g, opset, names, out);
      for (const auto& sub : a.graphs)
        if (sub) collect(*sub, opset, names, out);
    }
}

/// Applies the selected matches in `g` and its subgraphs; `types_inferred`
/// (for `g` only) as FusionScope's.
void apply(Graph& g, int64_t opset, NameGen& names, const PassOptions& o,
           bool types_inferred = false) {
  for_each_subgraph(g, [&](Graph& sub) { apply(sub, opset, names, o); });
  const std::vector<Proposal> props = find(g, opset, names, types_inferred);
  std::map<size_t, const Proposal*> at_sink;
  std::set<size_t> removed;
  for (const auto& p : props) {
    if (o.fusion_candidates && !o.fusion_candidates->count(p.cand.id)) continue;
    at_sink[p.sink] = &p;
    removed.insert(p.match.members.begin(), p.match.members.end());
    for (const auto& [name, t] : p.match.inits) g.add_initializer(name, t);
  }
  if (removed.empty()) return;
  std::vector<Node> nodes;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (auto it = at_sink.find(i); it != at_sink.end())
      nodes.push_back(it->second->match.fused);
    else if (!removed.count(i))
      nodes.push_back(std::move(g.nodes[i]));
  }
  g.nodes = std::move(nodes);
}

}  // namespace

std::vector<FusionCandidate> fusion_candidates(const Model& model) {
  std::vector<FusionCandidate> out;
  NameGen names(model.graph);
  collect(model.graph, model.opset, names, out);
  return out;
}

Model fuse(Model model, const PassOptions& options) {
  Model out = std::move(model);
  detach_subgraphs(out.graph);
  infer_shapes(out);  // ranks and dtypes the rewrites check (main graph)
  NameGen names(out.graph);
  apply(out.graph, out.opset, names, options, /*types_inferred=*/true);
  if (!out.other_opsets.count("ai.tailor")) out.other_opsets["ai.tailor"] = 1;
  prune_types(out.graph);
  return out;
}

}  // namespace tailor::graph
