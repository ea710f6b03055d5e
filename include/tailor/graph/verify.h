// Structural checks of a graph: the invariants every transformation keeps.
#pragma once

#include "tailor/graph/graph.h"

namespace tailor::graph {

/// Checks `model.graph` and its subgraphs (If/Loop/Scan bodies, with the
/// enclosing graphs' values in scope):
/// - SSA: every value is defined once (graph input, initializer or node output);
/// - every non-empty node input is defined before its use (in node order, or in
///   an enclosing scope);
/// - every graph output is defined;
/// - no dangling values: every typed value (value_info) is defined;
/// - types consistent: an initializer's recorded type is its tensor's; a node
///   output's recorded dtype/rank agree with each other across records;
/// - nodes have an op type, graph attributes hold graphs.
/// Throws Error naming `model.source` (or "graph") and the offending node and
/// value. Returns normally when every check holds.
void verify(const Model& model);

/// verify() in builds without NDEBUG (debug builds); nothing otherwise. Called
/// after every transformation.
inline void debug_verify([[maybe_unused]] const Model& model) {
#ifndef NDEBUG
  verify(model);
#endif
}

}  // namespace tailor::graph
