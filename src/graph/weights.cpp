// Weight orientation from the graph: the consumers of each initializer and
// Constant decide its [out, in] view.
#include "tailor/graph/weights.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <span>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "tailor/core/error.h"

namespace tailor {

const char* layout_name(WeightLayout layout) {
  switch (layout) {
    case WeightLayout::out_in:
      return "out_in";
    case WeightLayout::in_out:
      return "in_out";
    case WeightLayout::conv:
      return "conv";
    case WeightLayout::conv_transpose:
      return "conv_transpose";
    case WeightLayout::none:
      return "none";
  }
  return "none";
}

namespace graph {

Shape WeightView::out_in_shape() const {
  const Shape& s = tensor.shape();
  if (layout == WeightLayout::none || s.size() < 2) return {};
  int64_t rest = 1;
  for (size_t i = 2; i < s.size(); ++i) rest *= s[i];
  switch (layout) {
    case WeightLayout::in_out:
    case WeightLayout::conv_transpose:
      return {s[1], s[0] * rest};
    default:
      return {s[0], s[1] * rest};
  }
}

Tensor WeightView::out_in() const {
  const Shape view = out_in_shape();
  if (view.empty()) throw Error(name, "weight has no [out, in] view (layout none)");
  Tensor t = tensor;
  if (layout == WeightLayout::in_out || layout == WeightLayout::conv_transpose)
    t = t.transpose(0, 1);
  return t.to(DType::f32).reshape(view);
}

const WeightView* find_weight(const std::vector<WeightView>& all, const std::string& name) {
  for (const WeightView& w : all)
    if (w.name == name) return &w;
  return nullptr;
}

namespace {

/// Consumer roles of a value, as a bit set.
enum Role : uint8_t {
  kMatMulB = 1,      // MatMul input 1, Gemm input 1 with transB = 0: stored [in, out]
  kGemmBT = 2,       // Gemm input 1 with transB = 1: stored [out, in]
  kConvW = 4,        // Conv input 1
  kConvTransW = 8,   // ConvTranspose input 1
  kGatherData = 16,  // Gather input 0: an embedding table [rows, cols], viewed [out, in] as stored
  kConsumed = 32     // any input of any node
};
using Uses = std::unordered_map<std::string, uint8_t>;

/// Layout from the roles of a weight's direct consumers; conflicting roles
/// resolve in the order conv, conv_transpose, in_out, out_in. A weight that no
/// node consumes follows the model's convention.
WeightLayout layout_for(const Tensor& t, uint8_t roles, WeightConvention convention) {
  if (!is_floating(t.dtype()) || t.rank() < 2) return WeightLayout::none;
  if ((roles & kConvW) && t.rank() >= 3) return WeightLayout::conv;
  if ((roles & kConvTransW) && t.rank() >= 3) return WeightLayout::conv_transpose;
  if ((roles & kMatMulB) && t.rank() == 2) return WeightLayout::in_out;
  if (roles & (kGemmBT | kGatherData | kMatMulB)) return WeightLayout::out_in;
  if (roles & kConsumed) return WeightLayout::none;
  switch (convention) {
    case WeightConvention::pytorch:
      return t.rank() >= 3 ? WeightLayout::conv : WeightLayout::out_in;
    case WeightConvention::out_in:
      return WeightLayout::out_in;
    case WeightConvention::onnx:
      break;
  }
  return WeightLayout::none;
}

void note_roles(const Node& node, Uses& uses) {
  for (const std::string& in : node.inputs)
    if (!in.empty()) uses[in] |= kConsumed;
  if (!node.domain.empty() || node.inputs.size() < 2) return;
  const std::string& op = node.op_type;
  if (op == "Gather") uses[node.inputs[0]] |= kGatherData;
  uint8_t role = 0;
  if (op == "MatMul") {
    role = kMatMulB;
  } else if (op == "Gemm") {
    const Attribute* a = node.find("transB");
    const int64_t trans_b = a && a->kind == Attribute::Kind::i ? a->i : 0;
    role = trans_b ? kGemmBT : kMatMulB;
  } else if (op == "Conv") {
    role = kConvW;
  } else if (op == "ConvTranspose") {
    role = kConvTransW;
  }
  if (role) uses[node.inputs[1]] |= role;
}

/// The value of a Constant node as a tensor, or nullopt for a string constant.
std::optional<Tensor> constant_value(const Node& node) {
  for (const auto& [name, a] : node.attributes) {
    if (name == "value" && a.kind == Attribute::Kind::t) return a.t;
    if (name == "value_float" && a.kind == Attribute::Kind::f)
      return Tensor::from_f32({}, std::span<const float>(&a.f, 1));
    if (name == "value_floats" && a.kind == Attribute::Kind::floats)
      return Tensor::from_f32({static_cast<int64_t>(a.floats.size())}, a.floats);
    const bool scalar = name == "value_int" && a.kind == Attribute::Kind::i;
    if (scalar || (name == "value_ints" && a.kind == Attribute::Kind::ints)) {
      const int64_t n = scalar ? 1 : static_cast<int64_t>(a.ints.size());
      Tensor t = Tensor::zeros(DType::i64, scalar ? Shape{} : Shape{n});
      if (n)
        std::memcpy(t.mutable_raw(), scalar ? &a.i : a.ints.data(), static_cast<size_t>(n) * 8);
      return t;
    }
  }
  return std::nullopt;
}

class Analysis {
 public:
  explicit Analysis(WeightConvention convention) : convention_(convention) {}

  /// Adds the weights of `g` (initializers, Constant values, then the weights
  /// of subgraphs in node order) and returns the values `g` and its subgraphs
  /// consume from outside `g`, with their roles.
  Uses walk(const Graph& g, const std::string& prefix) {
    std::vector<std::pair<size_t, std::string>> local;  // (index in out_, name in graph)
    auto add = [&](const std::string& name, Tensor t) {
      std::string unique = name;
      if (names_.count(unique)) {
        // Only a subgraph's weight can meet an existing name here (the
        // reader refuses a name defined twice in one graph); "#2", "#3", ...
        // counted per name, so many repeats stay linear.
        const std::string base = prefix + name;
        unique = base;
        int& k = next_suffix_[base];
        while (names_.count(unique)) unique = base + "#" + std::to_string(k = std::max(k, 1) + 1);
      }
      names_.insert(unique);
      local.emplace_back(out_.size(), name);
      out_.push_back(WeightView{unique, std::move(t), WeightLayout::none});
    };
    for (const std::string& name : g.initializer_order) add(name, g.initializers.at(name));
    for (const Node& node : g.nodes) {
      if (node.op_type != "Constant" || !node.domain.empty() || node.outputs.empty()) continue;
      std::optional<Tensor> t = constant_value(node);
      if (t) add(node.outputs[0], std::move(*t));
    }

    Uses uses;
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      const Node& node = g.nodes[i];
      note_roles(node, uses);
      const std::string label =
          node.name.empty() ? node.op_type + "@" + std::to_string(i) : node.name;
      for (const auto& [name, a] : node.attributes) {
        if (a.kind == Attribute::Kind::g && a.g)
          merge_outer(*a.g, prefix + label + "/" + name + "/", uses);
        for (size_t k = 0; k < a.graphs.size(); ++k)
          merge_outer(*a.graphs[k], prefix + label + "/" + name + "." + std::to_string(k) + "/",
                      uses);
      }
    }
    for (const auto& [index, name] : local) {
      const auto it = uses.find(name);
      WeightView& w = out_[index];
      w.layout = layout_for(w.tensor, it == uses.end() ? 0 : it->second, convention_);
    }
    return uses;
  }

  std::vector<WeightView> take() { return std::move(out_); }

 private:
  /// Walks subgraph `sub` and adds to `uses` what it consumes from outer scopes.
  void merge_outer(const Graph& sub, const std::string& prefix, Uses& uses) {
    const Uses inner = walk(sub, prefix);
    std::unordered_set<std::string> defined(sub.inputs.begin(), sub.inputs.end());
    for (const auto& [name, t] : sub.initializers) defined.insert(name);
    for (const Node& n : sub.nodes) defined.insert(n.outputs.begin(), n.outputs.end());
    for (const auto& [name, roles] : inner)
      if (!defined.count(name)) uses[name] |= roles;
  }

  WeightConvention convention_;
  std::vector<WeightView> out_;
  std::unordered_set<std::string> names_;
  std::unordered_map<std::string, int> next_suffix_;
};

}  // namespace

std::vector<WeightView> weights(const Model& model) {
  Analysis a(model.weight_convention);
  a.walk(model.graph, "");
  return a.take();
}

}  // namespace graph
}  // namespace tailor
