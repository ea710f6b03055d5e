#include "tailor/runtime/pass_options.h"

#include "tailor/core/error.h"
#include "tailor/runtime/executor.h"

namespace tailor::runtime {

graph::NodeEvaluator node_evaluator() {
  return [](const graph::Node& node, const std::vector<Tensor>& inputs, int64_t opset) {
    graph::Graph g;
    g.name = "fold";
    graph::Node n = node;
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      if (n.inputs[i].empty()) continue;
      if (i >= inputs.size() || !inputs[i].defined())
        throw Error(node.label(), "input " + std::to_string(i) + " has no value");
      if (!g.initializers.count(n.inputs[i])) g.add_initializer(n.inputs[i], inputs[i]);
    }
    g.nodes.push_back(n);
    for (const auto& o : n.outputs)
      if (!o.empty()) g.outputs.push_back(o);
    auto plan = compile_plan(g, opset, "constant folding");
    Arena arena;
    std::vector<Tensor> outs = run_plan(*plan, {}, nullptr, arena);
    std::vector<Tensor> result;
    size_t k = 0;
    for (const auto& o : n.outputs)
      result.push_back(o.empty() ? Tensor() : outs[k++].contiguous().clone());
    return result;
  };
}

graph::PassOptions default_pass_options() {
  graph::PassOptions o;
  o.evaluate = node_evaluator();
  return o;
}

}  // namespace tailor::runtime
