// Output damage per layer and candidate (output_damage.h).
#include "tailor/compress/output_damage.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <mutex>
#include <numeric>
#include <thread>

#include "compress/rewrite_util.h"
#include "tailor/compress/damage_fit.h"
#include "tailor/compress/rewrite.h"
#include "tailor/core/error.h"
#include "tailor/core/finite.h"
#include "tailor/graph/passes/promote_f16.h"
#include "tailor/graph/weight_forms.h"
#include "tailor/graph/weights.h"
#include "tailor/linalg/threads.h"
#include "tailor/llm/kld.h"
#include "tailor/runtime/calibration.h"
#include "tailor/runtime/executor.h"
#include "tailor/schemes/matmul_into.h"
#include "tailor/schemes/registry.h"

namespace tailor::compress {

namespace detail {

void for_each_input(size_t count, size_t workers, const std::function<void(size_t)>& f) {
  std::atomic<size_t> next{0};
  std::exception_ptr failure;
  std::mutex mu;
  auto work = [&](int inner) {
    const linalg::ThreadLimit limit(inner);
    for (size_t k; (k = next++) < count;) {
      try {
        f(k);
      } catch (...) {
        std::lock_guard lock(mu);
        if (!failure) failure = std::current_exception();
      }
    }
  };
  std::vector<std::thread> pool;
  for (size_t t = 1; t < workers; ++t) pool.emplace_back(work, 1);
  work(workers > 1 ? 1 : linalg::threads());
  for (auto& t : pool) t.join();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace detail

using detail::for_each_input;

namespace {

const char* kSource = "output damage";

const graph::Node* producer(const graph::Graph& g, const std::string& value) {
  for (const graph::Node& n : g.nodes)
    if (std::find(n.outputs.begin(), n.outputs.end(), value) != n.outputs.end()) return &n;
  return nullptr;
}

/// KL(P ‖ Q) of probability rows, Q floored at 1e-30.
double kl_probability_row(const float* p, const float* q, int64_t n) {
  double kl = 0;
  for (int64_t v = 0; v < n; ++v) {
    const double pv = p[v];
    if (pv > 0 || std::isnan(pv))
      kl += pv * (std::log(pv) - std::log(std::max(static_cast<double>(q[v]), 1e-30)));
    if (std::isnan(q[v])) return std::numeric_limits<double>::quiet_NaN();
  }
  return kl;
}

const Tensor& output_of(const std::map<std::string, Tensor>& m, const std::string& name,
                        const char* which) {
  auto it = m.find(name);
  if (it == m.end()) throw Error("output '" + name + "'", std::string("missing from the ") + which);
  return it->second;
}

/// The layer's op as the runtime runs it on `e` alone (graph::compressed_op
/// on the weight's one reader, input 0 and any non-initializer bias fed as
/// inputs), when e's scheme changes the arithmetic (int8-a8: the rows of X
/// are rounded to int8, which no replaced weight can show) and the runtime
/// runs it compressed; nullopt otherwise (the decoded weight stands in).
std::optional<graph::Model> own_arithmetic_op(const graph::Model& model, const graph::Node& reader,
                                              const EncodedLayer& e) {
  if (!schemes::w8a8_view(*e.encoded) || !reader.domain.empty() || reader.inputs.size() < 2 ||
      reader.inputs[1] != e.name || reader.outputs.size() != 1)
    return std::nullopt;
  if (reader.op_type != "Conv" && reader.op_type != "MatMul" && reader.op_type != "Gemm")
    return std::nullopt;
  for (const graph::Node& n : model.graph.nodes)
    if (&n != &reader && std::find(n.inputs.begin(), n.inputs.end(), e.name) != n.inputs.end())
      return std::nullopt;  // several readers: the weight stays a dense value
  std::optional<graph::Node> op =
      graph::compressed_op(model.graph, reader, e.layout, e.stored_shape, e.encoded);
  if (!op) return std::nullopt;
  graph::Model m;
  m.opset = model.opset;
  m.other_opsets = model.other_opsets;
  m.other_opsets.emplace("ai.tailor", 1);
  for (size_t i = 0; i < op->inputs.size(); ++i) {
    const std::string& v = op->inputs[i];
    if (v.empty()) continue;
    if (const auto t = model.graph.initializers.find(v);
        i > 0 && t != model.graph.initializers.end())
      m.graph.add_initializer(v, t->second);
    else
      m.graph.inputs.push_back(v);
  }
  m.graph.outputs = op->outputs;
  m.graph.nodes.push_back(std::move(*op));
  return m;
}

}  // namespace

const char* damage_metric_name(DamageMetric metric) {
  return metric == DamageMetric::relative_error ? "relative_error" : "kl";
}

DamageMetric detect_damage_metric(const graph::Model& model, const std::string& output) {
  const graph::Graph& g = model.graph;
  const graph::ValueType* t = g.type_of(output);
  if (!t || !t->shape || t->shape->empty()) return DamageMetric::relative_error;
  const auto rank = static_cast<int64_t>(t->shape->size());
  const graph::Node* n = producer(g, output);
  for (int hops = 0; n && hops < 4 && (n->op_type == "Cast" || n->op_type == "Identity"); ++hops)
    n = n->inputs.empty() ? nullptr : producer(g, n->inputs[0]);
  if (!n || n->op_type != "Softmax" || !n->domain.empty()) return DamageMetric::relative_error;
  // Before opset 13 Softmax flattens from `axis` (default 1) on; the last
  // axis alone is a distribution only when axis = rank − 1.
  int64_t axis = n->attr_int("axis", model.opset >= 13 ? -1 : 1);
  if (axis < 0) axis += rank;
  return axis == rank - 1 ? DamageMetric::kl_probabilities : DamageMetric::relative_error;
}

DamageMeter::DamageMeter(DamageMetric metric, std::vector<std::string> outputs)
    : metric_(metric), outputs_(std::move(outputs)) {
  if (outputs_.empty()) throw Error(kSource, "no output to compare");
  if (metric_ != DamageMetric::relative_error && outputs_.size() != 1)
    throw Error(kSource, fmt::format("a KL metric compares one output, not {}", outputs_.size()));
  dd_.assign(outputs_.size(), 0.0);
  yy_.assign(outputs_.size(), 0.0);
}

void DamageMeter::add(const std::map<std::string, Tensor>& reference,
                      const std::map<std::string, Tensor>& compressed) {
  for (size_t i = 0; i < outputs_.size(); ++i) {
    const std::string& name = outputs_[i];
    const Tensor& y = output_of(reference, name, "reference run");
    const Tensor& h = output_of(compressed, name, "compressed run");
    if (y.shape() != h.shape())
      throw Error("output '" + name + "'",
                  fmt::format("compressed shape {} differs from the original's {}",
                              shape_to_string(h.shape()), shape_to_string(y.shape())));
    const std::vector<float> a = y.to_f32_vector(), b = h.to_f32_vector();
    if (metric_ == DamageMetric::relative_error) {
      for (size_t k = 0; k < a.size(); ++k) {
        const double d = double(a[k]) - double(b[k]);
        dd_[i] += d * d;
        yy_[i] += double(a[k]) * a[k];
      }
      continue;
    }
    const int64_t width = y.rank() == 0 ? 1 : y.shape().back();
    if (width == 0) continue;
    const int64_t rows = static_cast<int64_t>(a.size()) / width;
    for (int64_t r = 0; r < rows; ++r) {
      const float* p = a.data() + r * width;
      const float* q = b.data() + r * width;
      kl_sum_ += metric_ == DamageMetric::kl_probabilities
                     ? kl_probability_row(p, q, width)
                     : llm::kl_divergence({p, static_cast<size_t>(width)},
                                          {q, static_cast<size_t>(width)});
    }
    rows_ += rows;
  }
}

void DamageMeter::merge(const DamageMeter& other) {
  if (other.metric_ != metric_ || other.outputs_ != outputs_)
    throw Error(kSource, "merging damage of another metric or other outputs");
  for (size_t i = 0; i < outputs_.size(); ++i) {
    dd_[i] += other.dd_[i];
    yy_[i] += other.yy_[i];
  }
  kl_sum_ += other.kl_sum_;
  rows_ += other.rows_;
}

double DamageMeter::value() const {
  // A KL is ≥ 0; f32 rows that do not sum exactly to 1 can give −1e-9.
  // std::max(0.0, NaN) is 0.0: a NaN row is tested first, so NaN stays NaN.
  if (metric_ != DamageMetric::relative_error)
    return rows_ == 0            ? 0.0
           : std::isnan(kl_sum_) ? kl_sum_
                                 : std::max(0.0, kl_sum_ / static_cast<double>(rows_));
  double sum = 0;
  for (size_t i = 0; i < outputs_.size(); ++i) sum += yy_[i] > 0 ? dd_[i] / yy_[i] : dd_[i];
  return sum / static_cast<double>(outputs_.size());
}

Interval damage_interval(const std::vector<DamageMeter>& per_input, uint64_t seed) {
  if (per_input.empty()) return {};
  return bootstrap_interval(
      per_input.size(),
      [&](const std::vector<size_t>& drawn) {
        DamageMeter m = per_input[drawn[0]];
        for (size_t i = 1; i < drawn.size(); ++i) m.merge(per_input[drawn[i]]);
        return m.value();
      },
      seed);
}

size_t cross_fit_folds(size_t inputs, int folds) {
  return inputs >= 2 && folds >= 2 ? std::min(static_cast<size_t>(folds), inputs) : 1;
}

bool reads_gram(const std::string& label) {
  return label != "dense" && schemes::parse_scheme(label).kind() == schemes::SchemeKind::quant_gptq;
}

void check_finite_inputs(const std::map<std::string, Tensor>& inputs, const std::string& source) {
  for (const auto& [name, t] : inputs)
    if (const NonFinite bad = find_non_finite(t); bad.count > 0)
      throw Error(source, fmt::format("calibration input '{}' holds {} non-finite value{} (element "
                                      "{} is {}); calibration inputs must be finite",
                                      name, bad.count, bad.count == 1 ? "" : "s", bad.first,
                                      bad.first_value));
}

namespace {

/// Sets weight `name` of `m`, an initializer or a Constant node's output of
/// the main graph, to `t`. Throws Error naming it when it is neither.
void set_weight_value(graph::Model& m, const std::string& name, const Tensor& t) {
  if (auto it = m.graph.initializers.find(name); it != m.graph.initializers.end()) {
    it->second = t;
    return;
  }
  for (graph::Node& node : m.graph.nodes)
    if (node.op_type == "Constant" && node.outputs.size() == 1 && node.outputs[0] == name) {
      node.set("value", graph::Attribute::of_tensor(t));
      return;
    }
  throw Error(name,
              "output damage in context: not an initializer or Constant output of the "
              "model's main graph");
}

}  // namespace

void measure_output_damage(const graph::Model& model,
                           const std::vector<std::map<std::string, Tensor>>& inputs,
                           ModelProfile& profile, const DamageOptions& o) {
  if (inputs.empty()) throw Error(kSource, "no calibration inputs");
  // A non-finite input makes every KL NaN or 0 and every candidate look free.
  for (size_t k = 0; k < inputs.size(); ++k)
    check_finite_inputs(inputs[k], fmt::format("{} input {}", kSource, k));
  graph::Model promoted = model;
  graph::promote_f16_to_f32(promoted);
  const std::vector<graph::WeightView> weights = graph::weights(model);
  const std::vector<graph::WeightView> run_weights = graph::weights(promoted);
  runtime::Executor ex(std::move(promoted));
  std::vector<std::string> outputs = o.outputs;
  if (outputs.empty()) {
    outputs = ex.output_names();
    if (o.metric != DamageMetric::relative_error) outputs.resize(1);
  }

  // In context (DamageOptions::context): the runs use the model holding the
  // context's weights, one per fold, loaded (its kernels packed) as any
  // model; same graph, so the same schedule and cuts.
  std::vector<std::unique_ptr<runtime::Executor>> context;
  for (const std::vector<EncodedLayer>& layers : o.context) {
    graph::Model in_context = ex.model();
    for (const EncodedLayer& e : layers) {
      const graph::WeightView* w = graph::find_weight(run_weights, e.name);
      if (!w)
        throw Error(e.name, "output damage in context: not a weight of the model's main graph");
      set_weight_value(
          in_context, e.name,
          detail::to_stored(e.encoded->decode(), e.layout, e.stored_shape, w->tensor.dtype()));
    }
    context.push_back(std::make_unique<runtime::Executor>(std::move(in_context)));
  }

  // One run per input held at a cut; the reference outputs from the full schedule.
  // In context, also the original's runs: the cross-fitted candidates are
  // encoded against the original's activations, as the context's own -gptq
  // layers are, so a layer's pick measured in context is the context itself.
  std::vector<runtime::CutRun> runs, originals;
  originals.reserve(context.empty() ? 0 : inputs.size());
  std::vector<std::map<std::string, Tensor>> reference;
  runs.reserve(inputs.size());
  for (size_t k = 0; k < inputs.size(); ++k) {
    const std::string label = k < o.input_labels.size()
                                  ? o.input_labels[k]
                                  : fmt::format("calibration input {} of {}", k, inputs.size());
    try {
      if (context.empty()) {
        runs.emplace_back(ex, inputs[k]);
        reference.push_back(runs.back().finish());
      } else {  // the run in the context's model, against the original's outputs
        runs.emplace_back(*context[k % context.size()], inputs[k]);
        originals.emplace_back(ex, inputs[k]);
        reference.push_back(originals.back().finish());
      }
    } catch (const Error& e) {  // a node's error on this input: name the input too
      throw Error(label, e.what());
    }
    // A non-finite output makes every damage NaN (no plan can be chosen on it).
    for (const std::string& name : outputs)
      if (const auto it = reference.back().find(name); it != reference.back().end())
        if (const NonFinite bad = find_non_finite(it->second); bad.count > 0)
          throw Error(name, fmt::format("the original model's output holds {} non-finite value{} "
                                        "(element {} is {}) on {}; no output damage can be "
                                        "measured from it",
                                        bad.count, bad.count == 1 ? "" : "s", bad.first,
                                        bad.first_value, label));
  }

  // Layers in the order of their first reader, so every cut moves forward.
  std::vector<size_t> order;
  if (!o.only.empty()) {
    for (const auto& [l, candidates] : o.only) {  // ascending: a map's order
      if (l >= profile.layers.size())
        throw Error(kSource, fmt::format("layer index {} is not one of the {} profiled layers", l,
                                         profile.layers.size()));
      for (size_t c : candidates)
        if (c >= profile.layers[l].candidates.size())
          throw Error(profile.layers[l].name, fmt::format("output damage: candidate {} of its {}",
                                                          c, profile.layers[l].candidates.size()));
      order.push_back(l);
    }
  } else if (o.layers) {
    order = *o.layers;
    for (size_t k = 0; k < order.size(); ++k)
      if (order[k] >= profile.layers.size() || (k > 0 && order[k] <= order[k - 1]))
        throw Error(kSource, fmt::format("layer index {} is not one of the {} profiled layers in "
                                         "ascending order",
                                         order[k], profile.layers.size()));
  } else {
    order.resize(profile.layers.size());
    std::iota(order.begin(), order.end(), size_t{0});
  }
  const size_t n = order.size();
  std::vector<size_t> cut(profile.layers.size());
  for (size_t l : order) {
    const std::string& name = profile.layers[l].name;
    if (!graph::find_weight(run_weights, name) || !ex.plan().slot_of.count(name))
      throw Error(name, "output damage: the weight is not a value of the model's main graph");
    cut[l] = runs.front().first_reader(name);
  }
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return cut[a] < cut[b]; });

  // Cross-fitting (DamageOptions::folds): where each weight reads its rows.
  const size_t folds = cross_fit_folds(inputs.size(), o.folds);
  std::map<std::string, std::vector<runtime::LayerInput>> reads;
  if (folds > 1)
    for (runtime::LayerInput& li : runtime::layer_inputs(ex.model()))
      reads[li.weight].push_back(std::move(li));
  // Whether no step at or after `step` computes `value` (an input, or computed before it).
  auto computed_before = [&](const std::string& value, size_t step) {
    const auto& steps = ex.plan().steps;
    for (size_t i = step; i < steps.size(); ++i)
      if (steps[i].node && std::find(steps[i].node->outputs.begin(), steps[i].node->outputs.end(),
                                     value) != steps[i].node->outputs.end())
        return false;
    return true;
  };

  // Each worker takes whole inputs: advances its run to the cut and runs
  // every candidate's suffix on it, into that input's own meters.
  const size_t workers =
      std::min(static_cast<size_t>(linalg::resolve_threads(o.threads)), runs.size());
  for (size_t done = 0; done < n; ++done) {
    const size_t l = order[done];
    LayerProfile& layer = profile.layers[l];
    const graph::WeightView* w = graph::find_weight(weights, layer.name);
    const DType run_dtype = graph::find_weight(run_weights, layer.name)->tensor.dtype();
    schemes::SchemeParams params = o.scheme_defaults;
    if (const auto g = o.grams.find(layer.name); g != o.grams.end()) params.gram = g->second;
    std::vector<Tensor> stored(layer.candidates.size());
    // Dense is 0 by definition; the fitted mode measures only the probes.
    std::vector<bool> measured(layer.candidates.size(), !o.fitted && o.only.empty());
    if (const auto picked = o.only.find(l); picked != o.only.end()) {
      for (size_t c : picked->second) measured[c] = true;
    } else {
      for (size_t c = 0; c < layer.candidates.size(); ++c)
        if (layer.candidates[c].label == "dense") measured[c] = true;
      if (o.fitted)
        for (size_t c : damage_probes(layer)) measured[c] = true;
    }
    // Candidates that change the arithmetic: their op alone, run on the
    // layer's inputs at the cut; its output replaces the layer's one step later.
    std::vector<std::optional<graph::Model>> ops(layer.candidates.size());
    const graph::Node* reader =
        cut[l] < ex.plan().steps.size() ? ex.plan().steps[cut[l]].node : nullptr;
    // The cross-fitted candidates: fold_stored[f][c], encoded with the Gram
    // of the inputs outside fold f, accumulated in input order as
    // runtime::gram of those inputs accumulates it (the guard's Grams). Only
    // where the rows are computed before the cut: not a tied embedding,
    // whose first reader is the Gather at the start.
    std::vector<bool> crossfit(layer.candidates.size(), false);
    const auto read = reads.find(layer.name);
    if (read != reads.end() && read->second.size() == 1 &&
        computed_before(read->second.front().value, cut[l]))
      for (size_t c = 0; c < layer.candidates.size(); ++c)
        crossfit[c] = measured[c] && reads_gram(layer.candidates[c].label);
    std::vector<std::vector<Tensor>> fold_stored;
    if (std::find(crossfit.begin(), crossfit.end(), true) != crossfit.end()) {
      for_each_input(runs.size(), workers, [&](size_t k) {
        runs[k].advance(cut[l]);
        if (!originals.empty()) originals[k].advance(cut[l]);
      });
      const runtime::LayerInput& li = read->second.front();
      fold_stored.assign(folds, std::vector<Tensor>(layer.candidates.size()));
      // The folds are independent (their own Gram, their own slots): one
      // worker per fold. GPTQ's encodings are most of an ISNet damage pass,
      // and serially they left the other workers idle.
      for_each_input(folds, std::min(workers, folds), [&](size_t f) {
        runtime::InputStats outside({li}, true);
        for (size_t k = 0; k < runs.size(); ++k)
          if (k % folds != f)
            outside.add({{li.value, (originals.empty() ? runs[k] : originals[k]).value(li.value)}});
        schemes::SchemeParams fp = params;
        fp.gram = std::make_shared<const schemes::Gram>(outside.take_grams().at(layer.name));
        for (size_t c = 0; c < layer.candidates.size(); ++c) {
          if (!crossfit[c]) continue;
          const EncodedLayer e = encode_layer(*w, layer.candidates[c].label, fp, o.seed, l);
          fold_stored[f][c] =
              detail::to_stored(e.encoded->decode(), e.layout, e.stored_shape, run_dtype);
        }
      });
    }
    for (size_t c = 0; c < layer.candidates.size(); ++c) {
      if (o.only.empty() || measured[c]) {
        layer.candidates[c].output_damage.reset();
        layer.candidates[c].output_damage_fitted = false;
      }
      if (layer.candidates[c].label == "dense" && !o.context.empty() && measured[c]) {
        // In context, dense puts the original weight back in the context's model.
        stored[c] = graph::find_weight(run_weights, layer.name)->tensor;
        continue;
      }
      if (layer.candidates[c].label == "dense" || !measured[c] || crossfit[c]) continue;
      const EncodedLayer e = encode_layer(*w, layer.candidates[c].label, params, o.seed, l);
      if (reader && (ops[c] = own_arithmetic_op(ex.model(), *reader, e))) {
        // The run moves one step past the cut for it: no later layer may share the cut.
        for (size_t later = done + 1; later < n; ++later)
          if (cut[order[later]] == cut[l])
            throw Error(layer.name, "output damage of " + layer.candidates[c].label +
                                        ": its reader also reads weight '" +
                                        profile.layers[order[later]].name + "'");
        continue;
      }
      stored[c] = detail::to_stored(e.encoded->decode(), e.layout, e.stored_shape, run_dtype);
    }
    const bool any_op =
        std::any_of(ops.begin(), ops.end(), [](const auto& m) { return m.has_value(); });
    std::vector<std::vector<DamageMeter>> meters(runs.size());  // [input][candidate]
    for (auto& m : meters) m.assign(stored.size(), DamageMeter(o.metric, outputs));
    for_each_input(runs.size(), workers, [&](size_t k) {
      runs[k].advance(cut[l]);
      for (size_t c = 0; c < stored.size(); ++c) {
        const Tensor& weight = crossfit[c] ? fold_stored[k % folds][c] : stored[c];
        if (weight.defined())
          meters[k][c].add(reference[k], runs[k].finish({{layer.name, weight}}));
      }
      if (!any_op) return;
      std::vector<std::pair<size_t, Tensor>> replaced;  // candidate, the layer's output
      for (size_t c = 0; c < ops.size(); ++c) {
        if (!ops[c]) continue;
        std::map<std::string, Tensor> feeds;
        for (const std::string& v : ops[c]->graph.inputs) feeds[v] = runs[k].value(v);
        runtime::Executor op(*ops[c]);  // per input: kernels keep per-run state
        replaced.emplace_back(c, op.run(feeds).at(reader->outputs[0]));
      }
      runs[k].advance(cut[l] + 1);
      for (auto& [c, y] : replaced)
        meters[k][c].add(reference[k], runs[k].finish({{reader->outputs[0], y}}));
    });
    for (size_t c = 0; c < stored.size(); ++c) {
      if (!measured[c]) continue;
      if (!stored[c].defined() && !ops[c] && !crossfit[c]) {
        layer.candidates[c].output_damage = 0.0;
        continue;
      }
      DamageMeter total(o.metric, outputs);
      for (const auto& m : meters) total.merge(m[c]);
      layer.candidates[c].output_damage = total.value();
    }
    if (o.only.empty() ? o.fitted : !layer.damage_fits.empty()) fit_layer_damage(layer);
    if (o.layer_done) o.layer_done(l, layer);
    if (o.progress) o.progress(done + 1, n);
  }
  profile.output_metric = damage_metric_name(o.metric);
}

}  // namespace tailor::compress

namespace tailor::compress {

struct PlanDamage::State {
  State(graph::Model promoted) : ex(std::move(promoted)) {}
  runtime::Executor ex;
  std::vector<std::map<std::string, Tensor>> inputs, reference;
  std::map<std::string, DType> run_dtype;
  DamageMetric metric = DamageMetric::relative_error;
  std::vector<std::string> outputs;
  size_t workers = 1;
};

PlanDamage::PlanDamage(const graph::Model& model, std::vector<std::map<std::string, Tensor>> inputs,
                       DamageMetric metric, std::vector<std::string> outputs, int threads) {
  if (inputs.empty()) throw Error(kSource, "no calibration inputs");
  for (size_t k = 0; k < inputs.size(); ++k)
    check_finite_inputs(inputs[k], fmt::format("{} input {}", kSource, k));
  graph::Model promoted = model;
  graph::promote_f16_to_f32(promoted);
  std::map<std::string, DType> dtypes;
  for (const graph::WeightView& w : graph::weights(promoted)) dtypes[w.name] = w.tensor.dtype();
  s_ = std::make_unique<State>(std::move(promoted));
  s_->run_dtype = std::move(dtypes);
  s_->metric = metric;
  s_->outputs = std::move(outputs);
  if (s_->outputs.empty()) {
    s_->outputs = s_->ex.output_names();
    if (metric != DamageMetric::relative_error) s_->outputs.resize(1);
  }
  s_->inputs = std::move(inputs);
  for (const auto& in : s_->inputs) s_->reference.push_back(runtime::CutRun(s_->ex, in).finish());
  s_->workers = std::min(static_cast<size_t>(linalg::resolve_threads(threads)), s_->inputs.size());
}

PlanDamage::~PlanDamage() = default;

double PlanDamage::measure(const std::vector<EncodedLayer>& layers, std::vector<double>* per_input,
                           std::vector<DamageMeter>* meters) const {
  return measure_cross_fitted({layers}, per_input, meters);
}

double PlanDamage::measure_cross_fitted(const std::vector<std::vector<EncodedLayer>>& folds,
                                        std::vector<double>* per_input,
                                        std::vector<DamageMeter>* meters) const {
  if (folds.empty()) throw Error(kSource, "a plan measured in no fold");
  // A scheme that changes the arithmetic (int8-a8) cannot be shown by a
  // replaced weight: the plan's model as the runtime runs it instead
  // (rewrite_tailor), one executor per input.
  const size_t n_folds = folds.size();
  std::vector<std::optional<graph::Model>> compressed(n_folds);
  std::vector<std::map<std::string, Tensor>> replaced(n_folds);
  std::map<const schemes::Encoded*, Tensor> decoded;
  for (size_t f = 0; f < n_folds; ++f) {
    const std::vector<EncodedLayer>& layers = folds[f];
    if (std::any_of(layers.begin(), layers.end(), [](const EncodedLayer& e) {
          return schemes::w8a8_view(*e.encoded).has_value();
        })) {
      std::vector<EncodedLayer> f32_layers = layers;
      for (EncodedLayer& e : f32_layers) e.stored_dtype = DType::f32;  // the promoted model's
      compressed[f] = rewrite_tailor(s_->ex.model(), f32_layers);
      continue;
    }
    for (const EncodedLayer& e : layers) {
      const auto dt = s_->run_dtype.find(e.name);
      if (dt == s_->run_dtype.end() || !s_->ex.plan().slot_of.count(e.name))
        throw Error(e.name, "output damage: the weight is not a value of the model's main graph");
      // A layer the folds share (the same stored factors) is decoded once.
      Tensor& t = decoded[e.encoded.get()];
      if (!t.defined())
        t = detail::to_stored(e.encoded->decode(), e.layout, e.stored_shape, dt->second);
      replaced[f][e.name] = t;
    }
  }
  std::vector<DamageMeter> inputs_meters(s_->inputs.size(), DamageMeter(s_->metric, s_->outputs));
  for_each_input(s_->inputs.size(), s_->workers, [&](size_t k) {
    const size_t f = k % n_folds;
    if (compressed[f]) {
      runtime::Executor own(*compressed[f]);  // kernels keep per-run state
      inputs_meters[k].add(s_->reference[k], own.run(s_->inputs[k]));
      return;
    }
    // Replaced from the first step that reads one of the weights, as
    // measure_output_damage's cuts are: replaced from step 0, a run of
    // the classifier was seen to compute with the original weights.
    runtime::CutRun run(s_->ex, s_->inputs[k]);
    size_t cut = run.steps();
    for (const auto& [name, t] : replaced[f]) cut = std::min(cut, run.first_reader(name));
    run.advance(cut);
    inputs_meters[k].add(s_->reference[k], run.finish(replaced[f]));
  });
  DamageMeter total(s_->metric, s_->outputs);
  if (per_input) per_input->clear();
  for (const DamageMeter& m : inputs_meters) {
    total.merge(m);
    if (per_input) per_input->push_back(m.value());
  }
  if (meters) *meters = std::move(inputs_meters);
  return total.value();
}

}  // namespace tailor::compress
