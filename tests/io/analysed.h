// Test helper: a model as a reader gives it (graph::Model), with the weight
// analysis (graph::weights) the profiler and inspect see.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "tailor/graph/graph.h"
#include "tailor/graph/weights.h"

namespace tailor::testing {

struct Analysed {
  graph::Model model;
  std::vector<graph::WeightView> weights;
  // Copies of the model's provenance, for short assertions.
  std::string format;
  std::map<std::string, std::string> metadata;

  /// The weight named `name`, or nullptr.
  const graph::WeightView* find(const std::string& name) const {
    return graph::find_weight(weights, name);
  }
};

inline Analysed analysed(graph::Model m) {
  Analysed a;
  a.weights = graph::weights(m);
  a.format = m.format;
  a.metadata = m.metadata;
  a.model = std::move(m);
  return a;
}

}  // namespace tailor::testing
