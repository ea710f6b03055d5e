#include "compress/rewrite_util.h"

#include <algorithm>

#include "io/onnx_types.h"
#include "tailor/core/error.h"

namespace tailor::compress::detail {
namespace {

void collect_names(const graph::Graph& g, std::set<std::string>& names) {
  for (const auto& v : g.inputs) names.insert(v);
  for (const auto& v : g.outputs) names.insert(v);
  for (const auto& [n, t] : g.initializers) names.insert(n);
  for (const auto& [n, t] : g.types) names.insert(n);
  for (const graph::Node& n : g.nodes) {
    names.insert(n.name);
    for (const auto& v : n.inputs) names.insert(v);
    for (const auto& v : n.outputs) names.insert(v);
    for (const auto& [an, a] : n.attributes) {
      if (a.g) collect_names(*a.g, names);
      for (const auto& sub : a.graphs)
        if (sub) collect_names(*sub, names);
    }
  }
}

bool reads(const graph::Graph& g, const std::string& value) {
  for (const graph::Node& n : g.nodes) {
    if (std::find(n.inputs.begin(), n.inputs.end(), value) != n.inputs.end()) return true;
    for (const auto& [an, a] : n.attributes) {
      if (a.g && reads(*a.g, value)) return true;
      for (const auto& sub : a.graphs)
        if (sub && reads(*sub, value)) return true;
    }
  }
  return std::find(g.outputs.begin(), g.outputs.end(), value) != g.outputs.end();
}

}  // namespace

GraphEditor::GraphEditor(graph::Model& model) : model_(model) {
  collect_names(model.graph, names_);
}

std::string GraphEditor::fresh(const std::string& base) {
  std::string name = base;
  for (int i = 1; names_.count(name); ++i) name = base + "_" + std::to_string(i);
  names_.insert(name);
  return name;
}

std::string GraphEditor::constant(const std::string& base, Tensor t) {
  const std::string name = fresh(base);
  model_.graph.add_initializer(name, std::move(t));
  return name;
}

std::string GraphEditor::ints(const std::string& base, const std::vector<int64_t>& v) {
  Tensor t = Tensor::zeros(DType::i64, {static_cast<int64_t>(v.size())});
  std::copy(v.begin(), v.end(), t.mutable_data<int64_t>());
  return constant(base, std::move(t));
}

std::string GraphEditor::scalar(const std::string& base, float v) {
  return constant(base, Tensor::from_f32({1}, std::vector<float>{v}));
}

std::vector<Use> GraphEditor::uses(const std::string& value, bool& in_subgraph) const {
  std::vector<Use> out;
  in_subgraph = false;
  const graph::Graph& g = model_.graph;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const graph::Node& n = g.nodes[i];
    for (size_t j = 0; j < n.inputs.size(); ++j)
      if (n.inputs[j] == value) out.push_back({i, j});
    for (const auto& [an, a] : n.attributes) {
      if (a.g && reads(*a.g, value)) in_subgraph = true;
      for (const auto& sub : a.graphs)
        if (sub && reads(*sub, value)) in_subgraph = true;
    }
  }
  if (std::find(g.outputs.begin(), g.outputs.end(), value) != g.outputs.end()) in_subgraph = true;
  return out;
}

const Tensor* GraphEditor::weight(const std::string& value) const {
  const graph::Graph& g = model_.graph;
  if (auto it = g.initializers.find(value); it != g.initializers.end()) return &it->second;
  for (const graph::Node& n : g.nodes)
    if (n.op_type == "Constant" && n.domain.empty() && n.outputs.size() == 1 &&
        n.outputs[0] == value)
      if (const graph::Attribute* a = n.find("value"); a && a->kind == graph::Attribute::Kind::t)
        return &a->t;
  return nullptr;
}

void GraphEditor::remove_source(const std::string& value) {
  graph::Graph& g = model_.graph;
  g.types.erase(value);  // a node may define it again (weight-level rewrites)
  if (g.initializers.erase(value)) {
    g.initializer_order.erase(
        std::remove(g.initializer_order.begin(), g.initializer_order.end(), value),
        g.initializer_order.end());
    return;
  }
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const graph::Node& n = g.nodes[i];
    if (n.op_type == "Constant" && n.outputs.size() == 1 && n.outputs[0] == value) {
      removed_.insert(i);
      return;
    }
  }
  throw Error(value, "not an initializer or Constant output of the main graph");
}

void GraphEditor::replace(size_t index, std::vector<graph::Node> nodes) {
  replacements_[index] = std::move(nodes);
}

void GraphEditor::finish() {
  graph::Graph& g = model_.graph;
  std::vector<graph::Node> nodes = std::move(front_);
  front_.clear();
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (removed_.count(i)) continue;
    if (auto it = replacements_.find(i); it != replacements_.end()) {
      for (auto& n : it->second) nodes.push_back(std::move(n));
    } else {
      nodes.push_back(std::move(g.nodes[i]));
    }
  }
  g.nodes = std::move(nodes);
  replacements_.clear();
  removed_.clear();
}

graph::Node GraphEditor::make(const std::string& op, const std::string& name,
                              std::vector<std::string> inputs, std::vector<std::string> outputs) {
  graph::Node n;
  n.op_type = op;
  n.name = name;
  n.inputs = std::move(inputs);
  n.outputs = std::move(outputs);
  return n;
}

graph::Node GraphEditor::unsqueeze(const std::string& x, std::vector<int64_t> axes,
                                   const std::string& out) {
  if (opset() >= 13)
    return make("Unsqueeze", fresh(out + "/op"), {x, ints(out + ".axes", axes)}, {out});
  graph::Node n = make("Unsqueeze", fresh(out + "/op"), {x}, {out});
  n.set("axes", graph::Attribute::of_ints(std::move(axes)));
  return n;
}

graph::Node GraphEditor::slice(const std::string& x, int64_t axis, int64_t start, int64_t end,
                               const std::string& out) {
  if (opset() >= 10)
    return make("Slice", fresh(out + "/op"),
                {x, ints(out + ".starts", {start}), ints(out + ".ends", {end}),
                 ints(out + ".axes", {axis})},
                {out});
  graph::Node n = make("Slice", fresh(out + "/op"), {x}, {out});
  n.set("starts", graph::Attribute::of_ints({start}));
  n.set("ends", graph::Attribute::of_ints({end}));
  n.set("axes", graph::Attribute::of_ints({axis}));
  return n;
}

Tensor to_stored(const Tensor& out_in, WeightLayout layout, const Shape& stored_shape,
                 DType dtype) {
  Tensor t = out_in.contiguous();
  switch (layout) {
    case WeightLayout::in_out:
      t = t.transpose(0, 1).contiguous();
      break;
    case WeightLayout::conv_transpose: {
      Shape swapped = stored_shape;
      std::swap(swapped[0], swapped[1]);
      t = t.reshape(swapped).transpose(0, 1).contiguous();
      break;
    }
    default:
      t = t.reshape(stored_shape);
      break;
  }
  t = t.reshape(stored_shape);
  return dtype == DType::f32 ? t : t.to(dtype);
}

int64_t onnx_type_code(DType dtype) {
  return graph::onnx_of_dtype(dtype);
}

}  // namespace tailor::compress::detail
