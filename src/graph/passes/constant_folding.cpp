// Constant folding: nodes over constants become initializers; If with a
// constant condition becomes the branch it takes. See passes.h.
#include <algorithm>

#include "pass_util.h"
#include "tailor/core/error.h"
#include "tailor/graph/passes.h"
#include "tailor/graph/shape_inference.h"

namespace tailor::graph {
namespace {

using namespace passes;

/// Initializers visible in a graph: its own, then the enclosing graphs'.
struct ConstScope {
  const ConstScope* parent = nullptr;
  const Graph* graph = nullptr;
  const Tensor* find(const std::string& v) const {
    for (const ConstScope* s = this; s; s = s->parent)
      if (const Tensor* t = constant(*s->graph, v)) return t;
    return nullptr;
  }
};

/// Elements a node would produce, when cheaply known before running it
/// (ConstantOfShape, Expand, Tile); nullopt otherwise.
std::optional<int64_t> predicted_elements(const Node& n, const std::vector<Tensor>& in) {
  auto product = [](const Tensor& t) -> std::optional<int64_t> {
    if (t.dtype() != DType::i64) return std::nullopt;
    const Tensor c = t.contiguous();
    int64_t p = 1;
    for (int64_t i = 0; i < c.numel(); ++i) {
      const int64_t d = c.data<int64_t>()[i];
      if (d < 0) return std::nullopt;
      if (d > 0 && p > (int64_t{1} << 40) / d) return int64_t{1} << 40;
      p *= d;
    }
    return p;
  };
  if (n.op_type == "ConstantOfShape" && !in.empty() && in[0].defined()) return product(in[0]);
  if (n.op_type == "Expand" && in.size() > 1 && in[1].defined()) {
    auto p = product(in[1]);
    if (p) return std::max(*p, in[0].numel());
  }
  if (n.op_type == "Tile" && in.size() > 1 && in[1].defined()) {
    auto p = product(in[1]);
    if (p) return *p * in[0].numel();
  }
  return std::nullopt;
}

class Folder {
 public:
  Folder(const PassOptions& o, int64_t opset, NameGen& names)
      : o_(o), opset_(opset), names_(names) {}

  void graph(Graph& g, const ConstScope* parent) {
    ConstScope scope{parent, &g};
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      Node& n = g.nodes[i];
      if (!n.domain.empty()) continue;
      if (n.op_type == "If") {
        if (inline_if(g, i, scope)) {
          --i;  // the spliced nodes start at i
          continue;
        }
      }
      if (has_subgraph(n)) continue;
      if (n.inputs.empty() && n.op_type != "Constant") continue;  // random generators and the like
      if (n.op_type.find("Random") != std::string::npos || n.op_type == "Multinomial") continue;
      std::vector<Tensor> in;
      bool all_const = true;
      for (const auto& v : n.inputs) {
        if (v.empty()) {
          in.emplace_back();
          continue;
        }
        const Tensor* t = scope.find(v);
        if (!t) {
          all_const = false;
          break;
        }
        in.push_back(*t);
      }
      if (!all_const) continue;
      if (auto p = predicted_elements(n, in); p && *p > o_.fold_max_elements) continue;
      std::vector<Tensor> out;
      try {
        out = o_.evaluate(n, in, opset_);
      } catch (const Error&) {
        continue;  // the node stays; it fails (or works) at run time as before
      }
      if (out.size() < n.outputs.size()) continue;
      bool fits = true;
      for (size_t k = 0; k < n.outputs.size(); ++k)
        if (!n.outputs[k].empty() && (!out[k].defined() || out[k].numel() > o_.fold_max_elements))
          fits = false;
      if (!fits) continue;
      const std::vector<std::string> outs = n.outputs;
      for (size_t k = 0; k < outs.size(); ++k)
        if (!outs[k].empty()) g.add_initializer(outs[k], out[k].contiguous());
      g.nodes.erase(g.nodes.begin() + static_cast<std::ptrdiff_t>(i));
      --i;
    }
    for_each_subgraph(g, [&](Graph& sub) { graph(sub, &scope); });
  }

 private:
  /// Replaces If node `i` by its taken branch when the condition is constant.
  bool inline_if(Graph& g, size_t i, const ConstScope& scope) {
    const Node& n = g.nodes[i];
    if (n.inputs.empty()) return false;
    const Tensor* c = scope.find(n.inputs[0]);
    if (!c || c->dtype() != DType::boolean || c->numel() != 1) return false;
    const bool take = *reinterpret_cast<const uint8_t*>(c->contiguous().raw()) != 0;
    const Attribute* a = n.find(take ? "then_branch" : "else_branch");
    if (!a || a->kind != Attribute::Kind::g || !a->g) return false;
    const Graph& branch = *a->g;
    if (!branch.inputs.empty() || branch.outputs.size() != n.outputs.size()) return false;
    std::vector<Node> spliced = branch.nodes;
    std::set<std::string> produced;
    for (const auto& bn : spliced) produced.insert(bn.outputs.begin(), bn.outputs.end());
    std::vector<Node> tail;
    std::set<std::string> renamed;
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      const std::string& bo = branch.outputs[k];
      const std::string& io = n.outputs[k];
      if (io.empty()) continue;
      if (produced.count(bo) && !renamed.count(bo)) {
        rename_reads(spliced, bo, io);
        for (auto& bn : spliced)
          for (auto& o : bn.outputs)
            if (o == bo) o = io;
        renamed.insert(bo);  // a later output naming bo again reads io (below)
      } else {
        const std::string src =
            renamed.count(bo) ? n.outputs[static_cast<size_t>(
                                    std::find(branch.outputs.begin(), branch.outputs.end(), bo) -
                                    branch.outputs.begin())]
                              : bo;
        tail.push_back(make_node("Identity", names_.fresh(io + "_from_branch"), {src}, {io}));
      }
    }
    for (const auto& name : branch.initializer_order)
      if (auto it = branch.initializers.find(name); it != branch.initializers.end())
        g.add_initializer(name, it->second);
    for (const auto& [v, t] : branch.types)
      if (!g.types.count(v) && !branch.initializers.count(v)) g.types[v] = t;
    spliced.insert(spliced.end(), tail.begin(), tail.end());
    g.nodes.erase(g.nodes.begin() + static_cast<std::ptrdiff_t>(i));
    g.nodes.insert(g.nodes.begin() + static_cast<std::ptrdiff_t>(i), spliced.begin(),
                   spliced.end());
    return true;
  }

  const PassOptions& o_;
  int64_t opset_;
  NameGen& names_;
};

}  // namespace

Model fold_constants(Model model, const PassOptions& options) {
  if (!options.evaluate)
    throw Error("fold_constants",
                "PassOptions::evaluate is not set (runtime::default_pass_options() sets it)");
  Model out = std::move(model);
  detach_subgraphs(out.graph);
  NameGen names(out.graph);
  Folder(options, out.opset, names).graph(out.graph, nullptr);
  // Shape computations on dims that are static (Shape → Gather → Concat ...).
  if (fold_shape_constants(out) > 0) Folder(options, out.opset, names).graph(out.graph, nullptr);
  prune_types(out.graph);
  return out;
}

}  // namespace tailor::graph
