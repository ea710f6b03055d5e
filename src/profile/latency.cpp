#include "tailor/profile/latency.h"

#include <fmt/format.h>
#include <time.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <regex>

#include "tailor/core/error.h"
#include "tailor/core/rng.h"
#include "tailor/core/warning.h"
#include "tailor/graph/passes.h"
#include "tailor/graph/passes/promote_f16.h"
#include "tailor/graph/shape_inference.h"
#include "tailor/graph/weight_forms.h"
#include "tailor/graph/weights.h"
#include "tailor/linalg/threads.h"
#include "tailor/runtime/executor.h"
#include "tailor/runtime/pass_options.h"
#include "tailor/schemes/registry.h"

namespace tailor {
namespace {

double cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) * 1e-6;
}

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/// linalg threads set to 1 for the scope, restored after.
struct OneThread {
  int before = linalg::threads();
  OneThread() { linalg::set_threads(1); }
  ~OneThread() { linalg::set_threads(before); }
};

Tensor uniform(const Shape& shape, Rng& rng) {
  Tensor x = Tensor::zeros(DType::f32, shape);
  float* p = x.mutable_data<float>();
  for (int64_t i = 0; i < x.numel(); ++i) p[i] = static_cast<float>(rng.uniform(-1.0, 1.0));
  return x;
}

/// One op of the main graph that reads a profiled weight as input 1.
struct LayerOp {
  const graph::Node* node = nullptr;
  Shape input;  // concrete shape of input 0
};

/// The op reading weight `name` as input 1 (MatMul, Gemm, Conv), with a
/// concrete input shape; nullopt when there is none or it is read twice.
std::optional<LayerOp> layer_op(const graph::Model& typed, const std::string& name) {
  std::optional<LayerOp> found;
  for (const graph::Node& n : typed.graph.nodes) {
    const bool reads = std::find(n.inputs.begin(), n.inputs.end(), name) != n.inputs.end();
    if (!reads) continue;
    if (found || n.inputs.size() < 2 || n.inputs[1] != name || !n.domain.empty() ||
        (n.op_type != "MatMul" && n.op_type != "Gemm" && n.op_type != "Conv"))
      return std::nullopt;
    const graph::ValueType* t = typed.graph.type_of(n.inputs[0]);
    if (!t || !t->shape || t->dtype != DType::f32) return std::nullopt;
    const std::optional<Shape> s = graph::concrete_shape(*t->shape);
    if (!s) return std::nullopt;
    found = LayerOp{&n, *s};
  }
  return found;
}

/// Weights by name: initializers and Constant values (graph::weights).
using Constants = std::map<std::string, graph::WeightView>;

/// A one-node model: `op` reading its input 0 of `shape`, its other inputs the
/// weights of `constants` they name; nullopt when one is not a weight.
std::optional<graph::Model> one_op(const graph::Model& source, const Constants& constants,
                                   graph::Node op, const Shape& shape) {
  graph::Model m;
  m.opset = source.opset;
  m.other_opsets = source.other_opsets;
  m.other_opsets["ai.tailor"] = 1;
  m.source = "latency of " + op.label();
  graph::Graph& g = m.graph;
  const std::string x = op.inputs[0];
  g.inputs = {x};
  g.types[x] = graph::ValueType{DType::f32, graph::sym_shape_of(shape)};
  for (size_t i = 1; i < op.inputs.size(); ++i) {
    if (op.inputs[i].empty() || g.initializers.count(op.inputs[i])) continue;
    const auto it = constants.find(op.inputs[i]);
    if (it == constants.end()) return std::nullopt;
    g.add_initializer(op.inputs[i], it->second.tensor);
  }
  g.outputs = {op.outputs.at(0)};
  op.outputs.resize(1);
  g.nodes.push_back(std::move(op));
  return m;
}

/// The encoded weight whose kernel tailor runs for `label`: a low-rank label
/// from seeded random factors of its shapes, int8-a8 itself (its own W8A8
/// kernel), any other its stored form encoded from W [out, in]; nullptr when
/// the encoder refuses W.
std::shared_ptr<const schemes::Encoded> kernel_weight(const std::string& label, const Tensor& w,
                                                      Rng& rng) {
  static const std::regex lowrank(R"(^lowrank-r(\d+)$)");
  std::smatch m;
  const int64_t out = w.dim(0), in = w.dim(1);
  try {
    if (std::regex_match(label, m, lowrank)) {
      const int64_t r = std::stoll(m[1]);
      return schemes::encoded_from_factors(
          label, out, in, {{"A", uniform({out, r}, rng)}, {"B", uniform({r, in}, rng)}});
    }
    // int8-a8's kernel differs from its stored form's (int8): W8A8.
    return schemes::parse_scheme(label == "int8-a8" ? label : schemes::stored_form(label))
        .encode(w);
  } catch (const Error&) {
    return nullptr;
  }
}

/// Times every candidate of `layer` (op `op`, weight `view`) as
/// measure_latencies describes; returns the dense op's latency, or 0 when
/// the op cannot run alone (no latency then).
double measure_layer(const graph::Model& typed, const Constants& views, const LayerOp& op,
                     const graph::WeightView& view, LayerProfile& layer, Rng& rng,
                     const LatencyOptions& options) {
  const Tensor w = view.out_in();
  Rng in_rng(0);
  const std::map<std::string, Tensor> feed{{op.node->inputs[0], uniform(op.input, in_rng)}};
  std::optional<graph::Model> dense = one_op(typed, views, *op.node, op.input);
  if (!dense) return 0;
  // Every candidate's op, timed in interleaved rounds; index 0 is dense.
  std::vector<graph::Model> ops{runnable_model(*dense)};
  std::vector<int> model_of(layer.candidates.size(), -1);
  for (size_t c = 0; c < layer.candidates.size(); ++c) {
    const std::string& label = layer.candidates[c].label;
    if (label == "dense") {
      model_of[c] = 0;
      continue;
    }
    std::shared_ptr<const schemes::Encoded> e = kernel_weight(label, w, rng);
    if (!e) continue;
    // The node recognise_compressed_weights would make, judged on the
    // one-op model (which holds the bias as an initializer).
    const std::optional<graph::Node> node = graph::compressed_op(
        dense->graph, dense->graph.nodes.at(0), view.layout, view.tensor.shape(), std::move(e));
    std::optional<graph::Model> m;
    if (node) m = one_op(typed, views, *node, op.input);
    if (!m) {
      model_of[c] = 0;
      continue;
    }
    model_of[c] = static_cast<int>(ops.size());
    ops.push_back(std::move(*m));
  }
  std::vector<const graph::Model*> ptrs;
  for (const graph::Model& m : ops) ptrs.push_back(&m);
  const std::vector<double> ms = interleaved_latency_ms(ptrs, feed, options);
  for (size_t c = 0; c < layer.candidates.size(); ++c)
    if (model_of[c] >= 0) layer.candidates[c].latency_ms = ms[static_cast<size_t>(model_of[c])];
  return ms[0];
}

}  // namespace

graph::Model runnable_model(const graph::Model& model) {
  graph::Model m = graph::recognise_compressed_weights(model, {});
  graph::promote_f16_to_f32(m);
  return graph::run_passes(std::move(m), graph::parse_pass_list("all"),
                           runtime::default_pass_options());
}

std::vector<double> interleaved_latency_ms(const std::vector<const graph::Model*>& models,
                                           const std::map<std::string, Tensor>& inputs,
                                           const LatencyOptions& options) {
  if (options.repeats < 1 || options.warmup < 0)
    throw Error("latency", "needs repeats >= 1 and warmup >= 0");
  const OneThread one;
  std::vector<std::unique_ptr<runtime::Executor>> ex;
  for (const graph::Model* m : models) {
    runtime::ExecutorOptions eo;
    eo.verify = false;
    ex.push_back(std::make_unique<runtime::Executor>(*m, eo));
  }
  for (auto& e : ex)
    for (int i = 0; i < options.warmup; ++i) e->run(inputs);
  std::vector<std::vector<double>> times(ex.size());
  for (int r = 0; r < options.repeats; ++r)
    for (size_t k = 0; k < ex.size(); ++k) {
      const size_t i = (k + static_cast<size_t>(r)) % ex.size();
      const double t0 = cpu_ms();
      ex[i]->run(inputs);
      times[i].push_back(cpu_ms() - t0);
    }
  std::vector<double> out;
  for (auto& t : times) out.push_back(median_of(std::move(t)));
  return out;
}

std::string latency_key(const std::map<std::string, Tensor>& inputs,
                        const LatencyOptions& options) {
  std::string s;
  for (const auto& [name, t] : inputs)
    s += fmt::format("{}{} {}", s.empty() ? "" : ", ", name, shape_to_string(t.shape()));
  return fmt::format("{}; cpu time, 1 thread, median of {} after {}", s, options.repeats,
                     options.warmup);
}

void measure_latencies(const graph::Model& model, const std::map<std::string, Tensor>& inputs,
                       ModelProfile& profile, const LatencyOptions& options) {
  graph::Model typed = model;
  graph::promote_f16_to_f32(typed);
  for (const auto& [name, t] : inputs) graph::specialize_input(typed, name, t.shape());
  Constants views;
  for (graph::WeightView& w : graph::weights(typed)) views.emplace(w.name, std::move(w));
  double dense_sum = 0;
  Rng rng(0);
  for (LayerProfile& layer : profile.layers) {
    const std::optional<LayerOp> op = layer_op(typed, layer.name);
    const auto view = views.find(layer.name);
    if (!op || view == views.end()) continue;
    try {
      dense_sum += measure_layer(typed, views, *op, view->second, layer, rng, options);
    } catch (const Error& e) {
      // The layer's op alone did not run: its time stays in the rest.
      for (Candidate& c : layer.candidates) c.latency_ms.reset();
      warn(layer.name, std::string("latency not measured: ") + e.what());
    }
  }
  const graph::Model whole = runnable_model(model);
  const double total = interleaved_latency_ms({&whole}, inputs, options)[0];
  profile.latency_model_ms = total;
  profile.latency_rest_ms = std::max(0.0, total - dense_sum);
  profile.latency_input = latency_key(inputs, options);
}

}  // namespace tailor
