// Invariant hoisting out of Loop/Scan bodies and If branches. See passes.h.
#include <algorithm>

#include "pass_util.h"
#include "tailor/graph/passes.h"

namespace tailor::graph {
namespace {

using namespace passes;

std::set<std::string> defined_in(const Graph& g) {
  std::set<std::string> d(g.inputs.begin(), g.inputs.end());
  for (const auto& [name, t] : g.initializers) d.insert(name);
  for (const auto& n : g.nodes) d.insert(n.outputs.begin(), n.outputs.end());
  return d;
}

/// Moves body node `j` (and the body initializers it reads) out to `out`.
void take(Graph& body, size_t j, Graph& parent, std::vector<Node>& out) {
  Node n = body.nodes[j];
  for (const auto& in : n.inputs)
    if (const Tensor* t = constant(body, in)) {
      parent.add_initializer(in, *t);
      remove_initializer(body, in);
    }
  for (const auto& o : n.outputs)
    if (auto it = body.types.find(o); it != body.types.end()) parent.types[o] = it->second;
  body.nodes.erase(body.nodes.begin() + static_cast<std::ptrdiff_t>(j));
  out.push_back(std::move(n));
}

/// Loop/Scan body: every node over outer values and constants.
std::vector<Node> hoist_loop(Graph& body, Graph& parent,
                             const std::set<std::string>& parent_consts) {
  std::vector<Node> out;
  std::set<std::string> local(body.inputs.begin(), body.inputs.end());
  for (size_t j = 0; j < body.nodes.size();) {
    const Node& n = body.nodes[j];
    bool inv = !has_subgraph(n) && node_key(n).has_value() &&
               !(n.inputs.empty() && n.op_type != "Constant");
    for (const auto& in : n.inputs)
      if (!in.empty() && local.count(in)) inv = false;
    // Body outputs must stay defined in the body (they are per-iteration values).
    for (const auto& o : n.outputs)
      if (std::find(body.outputs.begin(), body.outputs.end(), o) != body.outputs.end()) inv = false;
    if (inv) {
      take(body, j, parent, out);
      continue;
    }
    local.insert(n.outputs.begin(), n.outputs.end());
    ++j;
  }
  (void)parent_consts;
  return out;
}

/// If: constant-only nodes of either branch, and nodes both branches share.
std::vector<Node> hoist_if(Graph& then_g, Graph& else_g, Graph& parent,
                           const std::set<std::string>& consts) {
  std::vector<Node> out;
  for (Graph* b : {&then_g, &else_g}) {
    std::set<std::string> c = consts;
    for (const auto& [name, t] : b->initializers) c.insert(name);
    for (size_t j = 0; j < b->nodes.size();) {
      const Node& n = b->nodes[j];
      bool ok = !has_subgraph(n) && node_key(n).has_value() &&
                !(n.inputs.empty() && n.op_type != "Constant");
      for (const auto& in : n.inputs)
        if (!in.empty() && !c.count(in)) ok = false;
      for (const auto& o : n.outputs)
        if (std::find(b->outputs.begin(), b->outputs.end(), o) != b->outputs.end()) ok = false;
      if (ok) {
        c.insert(n.outputs.begin(), n.outputs.end());
        take(*b, j, parent, out);
        continue;
      }
      ++j;
    }
  }
  // Shared nodes: same key, inputs not defined in their branch.
  for (size_t j = 0; j < then_g.nodes.size();) {
    const std::set<std::string> tdef = defined_in(then_g), edef = defined_in(else_g);
    const Node& n = then_g.nodes[j];
    auto key = node_key(n);
    bool outer =
        key.has_value() && !has_subgraph(n) && !(n.inputs.empty() && n.op_type != "Constant");
    for (const auto& in : n.inputs)
      if (!in.empty() && tdef.count(in)) outer = false;
    std::optional<size_t> match;
    if (outer)
      for (size_t e = 0; e < else_g.nodes.size() && !match; ++e) {
        const Node& m = else_g.nodes[e];
        bool ok = node_key(m) == key;
        for (const auto& in : m.inputs)
          if (!in.empty() && edef.count(in)) ok = false;
        if (ok) match = e;
      }
    if (!match) {
      ++j;
      continue;
    }
    const std::vector<std::string> t_out = n.outputs, e_out = else_g.nodes[*match].outputs;
    else_g.nodes.erase(else_g.nodes.begin() + static_cast<std::ptrdiff_t>(*match));
    for (size_t k = 0; k < e_out.size(); ++k)
      if (!e_out[k].empty()) {
        if (t_out[k].empty()) continue;
        replace_uses(else_g, e_out[k], t_out[k]);
      }
    take(then_g, j, parent, out);
  }
  return out;
}

void hoist(Graph& g, const std::set<std::string>& outer_consts) {
  std::set<std::string> consts = outer_consts;
  for (const auto& [name, t] : g.initializers) consts.insert(name);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    Node& n = g.nodes[i];
    if (!n.domain.empty() || !has_subgraph(n)) continue;
    for (auto& [an, a] : n.attributes) {
      if (a.kind == Attribute::Kind::g && a.g) hoist(*a.g, consts);
      for (auto& sub : a.graphs)
        if (sub) hoist(*sub, consts);
    }
    std::vector<Node> moved;
    if (n.op_type == "Loop" || n.op_type == "Scan") {
      Attribute* body = nullptr;
      for (auto& [an, a] : n.attributes)
        if (an == "body" && a.kind == Attribute::Kind::g && a.g) body = &a;
      if (body) moved = hoist_loop(*body->g, g, consts);
    } else if (n.op_type == "If") {
      Attribute *t = nullptr, *e = nullptr;
      for (auto& [an, a] : n.attributes) {
        if (an == "then_branch" && a.kind == Attribute::Kind::g && a.g) t = &a;
        if (an == "else_branch" && a.kind == Attribute::Kind::g && a.g) e = &a;
      }
      if (t && e) moved = hoist_if(*t->g, *e->g, g, consts);
    }
    g.nodes.insert(g.nodes.begin() + static_cast<std::ptrdiff_t>(i), moved.begin(), moved.end());
    i += moved.size();
  }
}

}  // namespace

Model hoist_invariants(Model model, const PassOptions&) {
  Model out = std::move(model);
  detach_subgraphs(out.graph);
  hoist(out.graph, {});
  prune_types(out.graph);
  return out;
}

}  // namespace tailor::graph
