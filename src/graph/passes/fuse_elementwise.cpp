#include "fuse_elementwise.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string_view>

#include "tailor/graph/fused_ops.h"

namespace tailor::graph::passes {
namespace {

/// How an ONNX op becomes a program step.
enum class Form : uint8_t {
  unary,   ///< one input, step `op` (parameters: the ONNX attributes kFusedActivations names)
  binary,  ///< two f32 inputs, step `op`
  clip,    ///< Clip with constant bounds: step clip(min, max)
  pow,     ///< Pow: by a one-element constant, or by an f32 value (step pow)
};

struct StepOp {
  std::string_view onnx_op;
  ElementwiseOp op;
  Form form;
};

/// Every ONNX op a group can hold.
constexpr StepOp kStepOps[] = {
    {"Relu", ElementwiseOp::relu, Form::unary},
    {"Sigmoid", ElementwiseOp::sigmoid, Form::unary},
    {"Tanh", ElementwiseOp::tanh, Form::unary},
    {"Exp", ElementwiseOp::exp, Form::unary},
    {"Log", ElementwiseOp::log, Form::unary},
    {"Sqrt", ElementwiseOp::sqrt, Form::unary},
    {"Reciprocal", ElementwiseOp::reciprocal, Form::unary},
    {"Neg", ElementwiseOp::neg, Form::unary},
    {"Abs", ElementwiseOp::abs, Form::unary},
    {"HardSigmoid", ElementwiseOp::hard_sigmoid, Form::unary},
    {"HardSwish", ElementwiseOp::hard_swish, Form::unary},
    {"LeakyRelu", ElementwiseOp::leaky_relu, Form::unary},
    {"Add", ElementwiseOp::add, Form::binary},
    {"Sub", ElementwiseOp::sub, Form::binary},
    {"Mul", ElementwiseOp::mul, Form::binary},
    {"Div", ElementwiseOp::div, Form::binary},
    {"Max", ElementwiseOp::max, Form::binary},
    {"Min", ElementwiseOp::min, Form::binary},
    {"Clip", ElementwiseOp::clip, Form::clip},
    {"Pow", ElementwiseOp::pow, Form::pow},
};

const StepOp* step_op(std::string_view op_type) {
  for (const auto& s : kStepOps)
    if (s.onnx_op == op_type) return &s;
  return nullptr;
}

/// Parameters of a unary step: the ONNX attributes its activation row names
/// (HardSigmoid's alpha and beta, LeakyRelu's alpha), 0 otherwise.
std::pair<float, float> attribute_params(const Node& n) {
  const FusedActivationInfo* a = fused_activation_for_op(n.op_type);
  if (!a) return {0.f, 0.f};
  const auto read = [&](std::string_view attribute, float fallback) {
    return attribute.empty() ? 0.f : n.attr_float(std::string(attribute), fallback);
  };
  return {read(a->alpha_attribute, a->alpha_default), read(a->beta_attribute, a->beta_default)};
}

/// Node `i` can join a group.
bool eligible(const FusionScope& s, size_t i) {
  const Node& n = s.g.nodes[i];
  if (!n.domain.empty() || n.outputs.size() != 1 || n.inputs.empty() || !s.is_f32(n.outputs[0]))
    return false;
  const StepOp* step = step_op(n.op_type);
  if (!step) return false;
  const bool any_operand = step->form == Form::clip || step->form == Form::pow;
  for (const auto& in : n.inputs)
    if (!in.empty() && !s.is_f32(in) && !any_operand) return false;
  switch (step->form) {
    case Form::unary:
      return n.inputs.size() == 1;
    case Form::binary:
      return n.inputs.size() == 2 && s.is_f32(n.inputs[0]) && s.is_f32(n.inputs[1]);
    case Form::clip:
      return s.is_f32(n.inputs[0]) && s.clip(n).has_value();
    case Form::pow:
      return n.inputs.size() == 2 && s.is_f32(n.inputs[0]) &&
             (s.scalar(n.inputs[1]) || s.is_f32(n.inputs[1]));
  }
  return false;
}

/// The integer factors (along H, W) of node `i` when it is a nearest
/// upsampling a group can read its input through: a default-domain Resize
/// (opset ≥ 11) of a rank-4 f32 value, mode nearest, coordinate
/// transformation asymmetric, nearest_mode floor, constant scales [1, 1, fh,
/// fw] of whole numbers ≥ 1 (not both 1) and no sizes, so output pixel (y,
/// x) is input pixel (y / fh, x / fw), a copy (the detector's FPN: Resize ─►
/// Add). Program::build takes one only into a group of a rank-4 output that
/// does not compute the Resize's input itself.
std::optional<std::pair<int64_t, int64_t>> upsampling(const FusionScope& s, size_t i) {
  const Node& n = s.g.nodes[i];
  if (!n.domain.empty() || n.op_type != "Resize" || s.opset < 11 || n.outputs.size() != 1 ||
      n.inputs.size() < 3 || (n.inputs.size() > 3 && !n.inputs[3].empty()))
    return std::nullopt;
  if (!s.is_f32(n.inputs[0]) || s.rank(n.inputs[0]) != 4u || !s.is_f32(n.outputs[0]))
    return std::nullopt;
  if (n.attr_string("mode", "nearest") != "nearest" ||
      n.attr_string("coordinate_transformation_mode", "half_pixel") != "asymmetric" ||
      n.attr_string("nearest_mode", "round_prefer_floor") != "floor")
    return std::nullopt;
  const Tensor* sc = s.constant(n.inputs[2]);
  if (!sc || sc->dtype() != DType::f32 || sc->numel() != 4) return std::nullopt;
  const std::vector<float> f = sc->to_f32_vector();
  const auto whole = [](float v) { return v >= 1.f && v <= 1024.f && v == std::floor(v); };
  if (f[0] != 1.f || f[1] != 1.f || !whole(f[2]) || !whole(f[3]) || f[2] * f[3] == 1.f)
    return std::nullopt;
  return std::make_pair(static_cast<int64_t>(f[2]), static_cast<int64_t>(f[3]));
}

/// A one-element f32 constant that can be an immediate operand (its rank
/// does not exceed the other operand's).
std::optional<float> immediate(const FusionScope& s, const std::string& v,
                               const std::string& partner) {
  const Tensor* t = s.constant(v);
  if (!t || t->numel() != 1 || t->dtype() != DType::f32) return std::nullopt;
  if (t->rank() > 0) {
    const auto r = s.rank(partner);
    if (!r || *r < t->rank()) return std::nullopt;
  }
  return t->to_f32_vector()[0];
}

/// The FusedElementwise program of one group.
class Program {
 public:
  explicit Program(const FusionScope& s) : s_(s) {}

  /// The node computing `group` (sink = its last member), or nullopt when it
  /// needs more inputs than the op takes.
  std::optional<Node> build(const std::set<size_t>& group) {
    collect_inputs(group);
    if (inputs_.size() > kFusedElementwiseMaxInputs || inputs_.empty()) return std::nullopt;
    // With an upsampled input: an output of rank 4 (the kernel's planes), and
    // no upsampled input the group itself computes (it would be removed).
    const bool upsamples =
        std::any_of(factors_.begin(), factors_.end(), [](int64_t v) { return v != 1; });
    if (upsamples && s_.rank(s_.g.nodes[*group.rbegin()].outputs[0]) != 4u) return std::nullopt;
    for (size_t k = 0; k < inputs_.size(); ++k) {
      if (factors_[2 * k] == 1 && factors_[2 * k + 1] == 1) continue;
      const auto pit = s_.producers.find(inputs_[k]);
      if (pit != s_.producers.end() && group.count(pit->second)) return std::nullopt;
    }
    for (size_t k = 0; k < inputs_.size(); ++k) reg_[read_as_[k]] = static_cast<int64_t>(k);
    next_ = static_cast<int64_t>(inputs_.size());
    size_t steps = 0;
    for (size_t m : group) {
      const Node& n = s_.g.nodes[m];
      if (upsampling(s_, m)) continue;  // an input read through its factors
      if (!emit_node(n)) return std::nullopt;
      reg_[n.outputs[0]] = next_ - 1;
      ++steps;
    }
    if (steps == 0) return std::nullopt;
    Node f = make_node("FusedElementwise", "", inputs_, {s_.g.nodes[*group.rbegin()].outputs[0]},
                       "ai.tailor");
    f.set("program", Attribute::of_ints(prog_));
    f.set("params", Attribute::of_floats(params_));
    f.set("constants", Attribute::of_floats(consts_));
    if (upsamples) f.set("upsample", Attribute::of_ints(factors_));
    return f;
  }

 private:
  /// The run-time inputs: values produced outside the group that are not
  /// immediates, Clip bounds or a constant Pow exponent.
  /// An upsampling member's input is an input too, read through its factors
  /// (`factors_`, fh and fw per input), in the register of its output.
  void collect_inputs(const std::set<size_t>& group) {
    for (size_t m : group) {
      const Node& n = s_.g.nodes[m];
      if (const auto up = upsampling(s_, m)) {
        add_input(n.inputs[0], n.outputs[0], up->first, up->second);
        continue;
      }
      for (size_t k = 0; k < n.inputs.size(); ++k) {
        const std::string& in = n.inputs[k];
        if (in.empty()) continue;
        auto pit = s_.producers.find(in);
        if (pit != s_.producers.end() && group.count(pit->second)) continue;
        if ((n.op_type == "Clip" && k > 0) || (n.op_type == "Pow" && k == 1 && s_.scalar(in)))
          continue;
        const std::string partner = n.inputs.size() == 2 ? n.inputs[1 - k] : in;
        if (n.inputs.size() == 2 && immediate(s_, in, partner)) continue;
        add_input(in, in, 1, 1);
      }
    }
  }

  void add_input(const std::string& value, const std::string& read_as, int64_t fh, int64_t fw) {
    if (std::find(read_as_.begin(), read_as_.end(), read_as) != read_as_.end()) return;
    inputs_.push_back(value);
    read_as_.push_back(read_as);
    factors_.insert(factors_.end(), {fh, fw});
  }

  /// The register of input k of `n`, or −(index + 1) of a new immediate.
  int64_t operand(const Node& n, size_t k) {
    const std::string& in = n.inputs[k];
    if (auto it = reg_.find(in); it != reg_.end()) return it->second;
    const std::string partner = n.inputs.size() == 2 ? n.inputs[1 - k] : in;
    const auto v = immediate(s_, in, partner);
    consts_.push_back(v ? *v : 0.f);
    return -static_cast<int64_t>(consts_.size());
  }

  void emit(ElementwiseOp op, int64_t a, int64_t b, float p0, float p1) {
    prog_.insert(prog_.end(), {static_cast<int64_t>(op), next_, a, b});
    params_.push_back(p0);
    params_.push_back(p1);
    ++next_;
  }

  bool emit_node(const Node& n) {
    const StepOp* step = step_op(n.op_type);
    if (!step) return false;
    const int64_t a = operand(n, 0);
    switch (step->form) {
      case Form::binary:
        emit(step->op, a, operand(n, 1), 0.f, 0.f);
        return true;
      case Form::unary: {
        const auto [p0, p1] = attribute_params(n);
        emit(step->op, a, 0, p0, p1);
        return true;
      }
      case Form::clip: {
        const auto b = s_.clip(n);
        emit(ElementwiseOp::clip, a, 0, b->first, b->second);
        return true;
      }
      case Form::pow:
        emit_pow(n, a);
        return true;
    }
    return false;
  }

  /// As the runtime's Pow: x·x, x·x·x, x, sqrt for 2, 3, 1, 0.5; else pow in double.
  void emit_pow(const Node& n, int64_t a) {
    const auto e = s_.scalar(n.inputs[1]);
    if (!e)
      emit(ElementwiseOp::pow, a, operand(n, 1), 0.f, 0.f);
    else if (*e == 2)
      emit(ElementwiseOp::square, a, 0, 0.f, 0.f);
    else if (*e == 3)
      emit(ElementwiseOp::cube, a, 0, 0.f, 0.f);
    else if (*e == 1)
      emit(ElementwiseOp::identity, a, 0, 0.f, 0.f);
    else if (*e == 0.5)
      emit(ElementwiseOp::sqrt, a, 0, 0.f, 0.f);
    else
      emit(ElementwiseOp::pow_const, a, 0, static_cast<float>(*e), 0.f);
  }

  const FusionScope& s_;
  std::vector<std::string> inputs_;
  std::vector<std::string> read_as_;  ///< per input: the value its register stands for
  std::vector<int64_t> factors_;      ///< per input: fh, fw (1, 1: read as it is)
  std::map<std::string, int64_t> reg_;
  std::vector<int64_t> prog_;
  std::vector<float> params_, consts_;
  int64_t next_ = 0;
};

/// The producer of `in` when it can join `group`: unclaimed, eligible, and
/// `in` is read only by the group (and no graph output).
std::optional<size_t> joining_producer(const FusionScope& s, const std::set<size_t>& group,
                                       const std::string& in) {
  const auto pit = s.producers.find(in);
  if (pit == s.producers.end() || group.count(pit->second) || s.claimed.count(pit->second))
    return std::nullopt;
  if ((!eligible(s, pit->second) && !upsampling(s, pit->second)) || s.uses.graph_outputs.count(in))
    return std::nullopt;
  const auto& readers = s.uses.readers.at(in);
  if (!std::all_of(readers.begin(), readers.end(), [&](size_t r) { return group.count(r); }))
    return std::nullopt;
  return pit->second;
}

/// One round of growth: the first member (in index order) one of whose
/// inputs' producers can join brings in every such producer among its inputs,
/// in input order, while the program stays buildable and the group not full.
/// False when no producer can join.
bool grow_round(const FusionScope& s, std::set<size_t>& group) {
  const std::vector<size_t> members(group.begin(), group.end());
  for (size_t m : members) {
    bool grew = false;
    // An upsampling member's input stays an input: the registers hold the
    // output's pixels, not its coarser ones.
    if (upsampling(s, m)) continue;
    for (const auto& in : s.g.nodes[m].inputs) {
      const auto p = joining_producer(s, group, in);
      if (!p) continue;
      std::set<size_t> trial = group;
      trial.insert(*p);
      if (!Program(s).build(trial)) continue;
      group = std::move(trial);
      grew = true;
      if (group.size() >= static_cast<size_t>(kFusedElementwiseMaxSteps)) return true;
    }
    if (grew) return true;
  }
  return false;
}

}  // namespace

std::optional<FusionMatch> match_elementwise(const FusionScope& scope, size_t sink) {
  if (!eligible(scope, sink)) return std::nullopt;
  std::set<size_t> group = {sink};
  while (group.size() < static_cast<size_t>(kFusedElementwiseMaxSteps) &&
         grow_round(scope, group)) {
  }
  if (group.size() < 2) return std::nullopt;
  auto fused = Program(scope).build(group);
  if (!fused) return std::nullopt;
  FusionMatch m;
  m.kind = "elementwise";
  m.members.assign(group.begin(), group.end());
  m.fused = std::move(*fused);
  return m;
}

}  // namespace tailor::graph::passes
