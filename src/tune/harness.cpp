// Measurement harness: check against the reference, then time.
#include "tailor/tune/harness.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>

#include "tailor/core/error.h"
#include "tailor/core/finite.h"
#include "tailor/core/rng.h"
#include "tailor/linalg/threads.h"
#include "tailor/runtime/executor.h"
#include "tailor/schemes/registry.h"
#include "tailor/tune/cost_model.h"

namespace tailor::tune {

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// Process CPU time in milliseconds.
double cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) * 1e-6;
}

// Times one call of `f` in milliseconds on the harness's clock.
template <class F>
double time_ms(bool cpu, F&& f) {
  if (cpu) {
    const double t0 = cpu_ms();
    f();
    return cpu_ms() - t0;
  }
  const auto t0 = Clock::now();
  f();
  return ms_since(t0);
}

// Runs `ex` on `inputs` with the f32 outputs compared to `ref`; returns the
// largest scale-aware relative error over the outputs.
double compare(const std::map<std::string, Tensor>& out, const std::map<std::string, Tensor>& ref,
               bool mean) {
  double worst = 0;
  for (const auto& [name, r] : ref) {
    auto it = out.find(name);
    if (it == out.end())
      throw Error("output '" + name + "'", "missing from the candidate's outputs");
    const Tensor a = it->second.contiguous(), b = r.contiguous();
    if (a.shape() != b.shape() || a.dtype() != b.dtype())
      throw Error("output '" + name + "'", "shape or dtype differs from the reference");
    if (a.dtype() != DType::f32) {
      if (a.nbytes() != b.nbytes() || !std::equal(a.raw(), a.raw() + a.nbytes(), b.raw()))
        return INFINITY;
      continue;
    }
    const float* pa = a.data<float>();
    const float* pb = b.data<float>();
    double scale = 0, diff = 0;
    for (int64_t i = 0; i < a.numel(); ++i) {
      scale = std::max(scale, static_cast<double>(std::fabs(pb[i])));
      const double d = std::fabs(static_cast<double>(pa[i]) - pb[i]);
      diff = std::isnan(d) ? INFINITY : (mean ? diff + d : std::max(diff, d));
    }
    if (mean && a.numel() > 0) diff /= static_cast<double>(a.numel());
    worst = std::max(worst, diff / std::max(scale, 1e-12));
  }
  return worst;
}

}  // namespace

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double mad(const std::vector<double>& v) {
  const double m = median(v);
  std::vector<double> d;
  for (double x : v) d.push_back(std::fabs(x - m));
  return median(d);
}

std::map<std::string, Tensor> random_inputs(
    const graph::Model& model, const std::map<std::string, std::vector<int64_t>>& shapes,
    uint64_t seed) {
  Rng rng(seed);
  std::map<std::string, Tensor> out;
  for (const std::string& name : model.graph.inputs) {
    const graph::ValueType* t = model.graph.type_of(name);
    if (!t || t->dtype != DType::f32)
      throw Error("input '" + name + "'",
                  "the tuner feeds random f32 inputs; this input is not f32");
    Shape shape;
    if (auto it = shapes.find(name); it != shapes.end()) {
      shape = it->second;
    } else {
      if (!t->shape)
        throw Error("input '" + name + "'", "has no declared shape; give --input-shape");
      for (size_t i = 0; i < t->shape->size(); ++i) {
        const graph::Dim& d = (*t->shape)[i];
        if (d.is_known())
          shape.push_back(d.value);
        else if (i == 0)
          shape.push_back(1);
        else
          throw Error("input '" + name + "'", "has symbolic dims " +
                                                  graph::sym_shape_to_string(*t->shape) +
                                                  "; give --input-shape " + name + "=DIMS");
      }
    }
    Tensor x = Tensor::zeros(DType::f32, shape);
    float* p = x.mutable_data<float>();
    for (int64_t i = 0; i < x.numel(); ++i) p[i] = static_cast<float>(rng.uniform(-1.0, 1.0));
    out[name] = x;
  }
  return out;
}

ValueShapes observe_shapes(const graph::Model& model, const std::map<std::string, Tensor>& inputs) {
  graph::Model m = model;
  std::set<std::string> outs(m.graph.outputs.begin(), m.graph.outputs.end());
  for (const auto& n : m.graph.nodes)
    for (const auto& o : n.outputs)
      if (!o.empty() && outs.insert(o).second) m.graph.outputs.push_back(o);
  runtime::ExecutorOptions eo;
  eo.verify = false;
  runtime::Executor ex(std::move(m), eo);
  ValueShapes shapes;
  for (const auto& [name, t] : inputs) shapes[name] = t.shape();
  for (const auto& [name, t] : ex.run(inputs)) shapes[name] = t.shape();
  return shapes;
}

Harness::Harness(const graph::Model& reference,
                 const std::map<std::string, std::vector<int64_t>>& input_shapes, uint64_t seed,
                 HarnessOptions options)
    : Harness(reference, seeded_inputs(reference, input_shapes, seed, options.check_inputs),
              options) {}

std::vector<std::map<std::string, Tensor>> Harness::seeded_inputs(
    const graph::Model& reference, const std::map<std::string, std::vector<int64_t>>& shapes,
    uint64_t seed, int count) {
  std::vector<std::map<std::string, Tensor>> out;
  for (int i = 0; i < count; ++i)
    out.push_back(random_inputs(reference, shapes, seed + static_cast<uint64_t>(i)));
  return out;
}

Harness::Harness(const graph::Model& reference, std::vector<std::map<std::string, Tensor>> inputs,
                 HarnessOptions options)
    : inputs_(std::move(inputs)), options_(options) {
  if (options_.check_inputs < 1 || options_.repeats < 1 || options_.warmup < 0)
    throw Error("harness", "check_inputs and repeats must be >= 1, warmup >= 0");
  if (inputs_.empty()) throw Error("harness", "needs at least one input set");
  for (const auto& in : inputs_)
    for (const auto& [name, t] : in)
      if (const NonFinite bad = find_non_finite(t); bad.count > 0)
        throw Error("input '" + name + "'",
                    "holds NaN or Inf: every output would be, and no check could pass");
  if (options_.statistic != "median" && options_.statistic != "min")
    throw Error("--statistic", "must be median or min, got '" + options_.statistic + "'");
  if (options_.clock != "wall" && options_.clock != "cpu")
    throw Error("--clock", "must be wall or cpu, got '" + options_.clock + "'");
  if (options_.error != "max" && options_.error != "mean")
    throw Error("--error", "must be max or mean, got '" + options_.error + "'");
  linalg::set_threads(std::max(1, options_.reference_threads));
  runtime::Executor ex(reference);
  for (const auto& in : inputs_) {
    reference_.push_back(ex.run(in));
    for (auto& [name, t] : reference_.back()) t = t.contiguous().clone();
  }
  int64_t fb = options_.flush_bytes > 0
                   ? options_.flush_bytes
                   : 2 * std::min<int64_t>(MachineInfo::detect().llc_bytes, int64_t{64} << 20);
  flush_buffer_.assign(static_cast<size_t>(fb), 0);
}

void Harness::flush() const {
  // Write every cache line of a buffer larger than the last-level cache.
  volatile char* p = flush_buffer_.data();
  for (size_t i = 0; i < flush_buffer_.size(); i += 64) p[i] = static_cast<char>(p[i] + 1);
}

Measurement Harness::check(const AppliedConfiguration& c) const {
  Measurement m;
  const auto t0 = Clock::now();
  try {
    linalg::set_threads(std::max(1, c.threads));
    runtime::Executor ex(c.model);
    for (size_t i = 0; i < inputs_.size(); ++i)
      m.max_rel_error = std::max(
          m.max_rel_error, compare(ex.run(inputs_[i]), reference_[i], options_.error == "mean"));
    m.ok = m.max_rel_error <= options_.tolerance;
    if (!m.ok)
      m.error = fmt::format("{} relative error {:.3g} > tolerance {:.3g}", options_.error,
                            m.max_rel_error, options_.tolerance);
  } catch (const std::exception& e) {
    m.ok = false;
    m.max_rel_error = INFINITY;
    m.error = e.what();
  }
  m.cost_s = ms_since(t0) / 1e3;
  return m;
}

Measurement Harness::measure(const AppliedConfiguration& c) const {
  Measurement m = check(c);
  if (!m.ok) return m;  // a wrong candidate is never timed
  const auto t0 = Clock::now();
  linalg::set_threads(std::max(1, c.threads));
  runtime::Executor ex(c.model);
  flush();
  for (int i = 0; i < options_.warmup; ++i) ex.run(inputs_.front());
  const bool cpu = options_.clock == "cpu";
  for (int i = 0; i < options_.repeats; ++i)
    m.times_ms.push_back(time_ms(cpu, [&] { ex.run(inputs_.front()); }));
  m.median_ms = median(m.times_ms);
  m.min_ms = *std::min_element(m.times_ms.begin(), m.times_ms.end());
  m.mad_ms = mad(m.times_ms);
  m.peak_bytes = static_cast<int64_t>(ex.peak_activation_bytes());
  m.cost_s += ms_since(t0) / 1e3;
  return m;
}

std::vector<std::vector<double>> Harness::paired(
    const std::vector<AppliedConfiguration>& candidates, int rounds) const {
  std::vector<std::vector<double>> times(static_cast<size_t>(rounds),
                                         std::vector<double>(candidates.size()));
  const bool cpu = options_.clock == "cpu";
  for (int r = 0; r < rounds; ++r) {
    flush();
    for (size_t k = 0; k < candidates.size(); ++k) {
      const size_t i = (k + static_cast<size_t>(r)) % candidates.size();
      linalg::set_threads(std::max(1, candidates[i].threads));
      runtime::Executor ex(candidates[i].model);
      for (int w = 0; w < std::max(1, options_.warmup); ++w) ex.run(inputs_.front());
      times[static_cast<size_t>(r)][i] = time_ms(cpu, [&] { ex.run(inputs_.front()); });
    }
  }
  return times;
}

namespace {

// One conv layer x [1, c, hw, hw] → y [1, c, hw, hw] (k×k, pads k/2): a
// default-domain Conv on weight `w`, or a CompressedConv on its `label` form.
graph::Model probe_layer(int64_t c, int64_t hw, int64_t k, const char* label, uint64_t seed) {
  Rng rng(seed);
  Tensor w = Tensor::zeros(DType::f32, {c, c, k, k});
  for (int64_t i = 0; i < w.numel(); ++i)
    w.mutable_data<float>()[i] = static_cast<float>(rng.uniform(-1.0, 1.0) / std::sqrt(c * k * k));
  graph::Model m;
  m.opset = 13;
  m.source = "cost-model probe";
  m.graph.inputs = {"x"};
  m.graph.types["x"] = graph::ValueType{DType::f32, graph::sym_shape_of({1, c, hw, hw})};
  graph::Node n;
  n.name = "probe";
  n.inputs = {"x"};
  n.outputs = {"y"};
  n.attributes = {{"kernel_shape", graph::Attribute::of_ints({k, k})},
                  {"pads", graph::Attribute::of_ints({k / 2, k / 2, k / 2, k / 2})}};
  if (label) {
    n.domain = "ai.tailor";
    n.op_type = "CompressedConv";
    n.attributes.emplace_back("weight",
                              graph::Attribute::of_encoded(
                                  schemes::parse_scheme(label).encode(w.reshape({c, c * k * k}))));
  } else {
    n.op_type = "Conv";
    n.inputs.push_back("w");
    m.graph.add_initializer("w", w);
  }
  m.graph.nodes = {n};
  m.graph.outputs = {"y"};
  return m;
}

}  // namespace

CostModel measured_start(int repeats) {
  if (repeats < 1) throw Error("measured_start", "repeats must be >= 1");
  const std::vector<std::string>& names = feature_names();
  std::vector<double> coefficients(names.size(), 0.1);
  struct Probe {
    const char* term;
    int64_t c, hw, k;
    const char* label;
  };
  // 128 channels at 28²: a 1×1 conv of 12.8 M multiply-adds, a 3×3 (Winograd
  // by the runtime's rule) of 116 M.
  const Probe probes[] = {{"gemm_flops_1e7_per_thread", 128, 28, 1, nullptr},
                          {"winograd_flops_1e7_per_thread", 128, 28, 3, nullptr},
                          {"packed_weight_flops_1e7_per_thread", 128, 28, 1, "int8"},
                          {"w8a8_flops_1e7_per_thread", 128, 28, 1, "int8-a8"}};
  const int before = linalg::threads();
  linalg::set_threads(1);
  uint64_t seed = 1;
  for (const Probe& p : probes) {
    const graph::Model m = probe_layer(p.c, p.hw, p.k, p.label, seed);
    runtime::Executor ex(m);
    const std::map<std::string, Tensor> in = random_inputs(m, {}, seed++);
    ex.run(in);  // warm-up: packing, first touch
    double best = INFINITY;
    for (int r = 0; r < repeats; ++r) {
      const auto t0 = Clock::now();
      ex.run(in);
      best = std::min(best, ms_since(t0));
    }
    const double flops = 2.0 * static_cast<double>(p.c * p.c * p.k * p.k * p.hw * p.hw);
    const auto j =
        static_cast<size_t>(std::find(names.begin(), names.end(), p.term) - names.begin());
    coefficients[j] = std::clamp(best / (flops / 1e7), 1e-4, 10.0);
  }
  linalg::set_threads(before);
  return CostModel::from_coefficients(coefficients);
}

}  // namespace tailor::tune
