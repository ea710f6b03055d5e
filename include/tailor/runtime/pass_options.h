// The runtime's side of the graph passes: constant folding evaluates nodes
// with the runtime's own op kernels.
#pragma once

#include "tailor/graph/passes.h"

namespace tailor::runtime {

/// Evaluates one node on constant inputs by compiling it as a one-node plan
/// (the registry's kernel for its op) and running it. Throws Error naming the
/// node for an op the runtime lacks or inputs the kernel refuses.
graph::NodeEvaluator node_evaluator();

/// PassOptions with `evaluate` = node_evaluator() and the other fields at
/// their defaults.
graph::PassOptions default_pass_options();

}  // namespace tailor::runtime
