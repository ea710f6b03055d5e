// The output objective's profiling, shared by compress and profile (output_profile.h).
#include "tailor/compress/output_profile.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <numeric>
#include <utility>

#include "compress/verify.h"
#include "tailor/compress/damage_fit.h"
#include "tailor/compress/gguf_out.h"
#include "tailor/core/error.h"
#include "tailor/graph/passes/promote_f16.h"
#include "tailor/graph/weights.h"
#include "tailor/io/sha256.h"
#include "tailor/llm/kld.h"
#include "tailor/llm/llama.h"
#include "tailor/plan/sweep.h"
#include "tailor/runtime/calibration.h"

namespace tailor::compress {

namespace {

std::string regex_escape(const std::string& s) {
  static const std::string special = R"(\^$.|?*+()[]{})";
  std::string r;
  for (char c : s) {
    if (special.find(c) != std::string::npos) r += '\\';
    r += c;
  }
  return r;
}

/// The calibration inputs of a llama decoder graph: `sequences` sampled from
/// the model with seed + 2 (verification samples with seed + 1, the inputs
/// given with `verification`), each fed whole (its tokens but the last) with
/// empty pasts; KL of the logits.
Calibration llama_calibration(const graph::Model& llama, const CompressOptions& o,
                              bool verification = false) {
  llm::CompareOptions co;
  co.seed = o.seed + (verification ? 1 : 2);
  co.sequences = o.kld_sequences;
  co.length = kld_length(o, llama);
  const auto seqs = llm::sample_sequences(llama, co);
  const llm::DecoderSignature sig = llm::decoder_signature(llama);
  Calibration c;
  c.metric = DamageMetric::kl_logits;
  c.outputs = {sig.logits};
  for (const auto& seq : seqs) {
    const auto n = static_cast<int64_t>(seq.size()) - 1;
    Tensor ids = Tensor::zeros(DType::i64, {1, n});
    for (int64_t i = 0; i < n; ++i) ids.mutable_data<int64_t>()[i] = seq[static_cast<size_t>(i)];
    std::map<std::string, Tensor> in = llm::empty_pasts(llama);
    in[sig.input_ids] = std::move(ids);
    c.inputs.push_back(std::move(in));
  }
  c.description = fmt::format("{} sequences × {} tokens sampled from the model (seed {})",
                              co.sequences, co.length, co.seed);
  return c;
}

/// SHA-256 of the calibration inputs (names, dtypes, shapes, bytes) and metric.
std::string calibration_key(const Calibration& c) {
  std::string text = damage_metric_name(c.metric);
  for (const std::string& name : c.outputs) text += "|" + name;
  for (const auto& in : c.inputs)
    for (const auto& [name, t] : in) {
      const Tensor x = t.contiguous();
      text += fmt::format("|{}:{}:{}:", name, dtype_name(x.dtype()), shape_to_string(x.shape()));
      text += sha256_hex(std::string_view(reinterpret_cast<const char*>(x.raw()), x.nbytes()));
    }
  return sha256_hex(text);
}

/// Elements of the weights profile_model would profile under `po` (is_profiled).
int64_t profiled_params(const graph::Model& model, const ProfileOptions& po) {
  int64_t n = 0;
  for (const graph::WeightView& w : graph::weights(model))
    if (is_profiled(w, po)) n += w.tensor.numel();
  return n;
}

}  // namespace

std::optional<graph::Model> llama_decoder(const graph::Model& model, const std::string& path,
                                          std::optional<LlamaCheckpoint>* checkpoint) {
  if (model.format == "onnx") return std::nullopt;
  LlamaCheckpoint ck = llama_checkpoint(model);  // the file read once
  graph::Model g = llama_graph(ck.weights, ck.config, ck.pairing, path);
  if (checkpoint) *checkpoint = std::move(ck);
  return g;
}

int32_t kld_length(const CompressOptions& o, const graph::Model& llama) {
  const int64_t context = llm::decoder_signature(llama).context;
  return context > 0 ? static_cast<int32_t>(std::min<int64_t>(o.kld_length, context - 1))
                     : o.kld_length;
}

ProfileOptions compress_profile_options(const CompressOptions& o, const graph::Model* llama,
                                        const std::string& calib_path) {
  ProfileOptions po;
  // --uniform LABEL without --schemes: dense and LABEL, all its plan takes
  // (the whole catalog made ISNet's --uniform int8 profile every scheme and
  // its Grams: 35 min unfinished, against 3.5 for int8 alone).
  po.schemes = !o.schemes.empty()   ? o.schemes
               : !o.uniform.empty() ? std::vector<std::string>{"dense", o.uniform}
               : o.gguf             ? gguf_schemes()
                                    : default_schemes();
  // A latency budget on an ONNX model without --schemes: also int8-a8, the
  // W8A8 kernel (int8's bytes, more damage, less time) a latency budget needs.
  const bool latency_budget = !llama && (o.max_latency || o.max_latency_fraction);
  if (o.schemes.empty() && o.uniform.empty() && !o.gguf && latency_budget)
    po.schemes.push_back("int8-a8");
  // Under a latency budget every weight layer: small weights can hold the
  // big activations (CompressOptions::min_params).
  po.min_params = o.min_params.value_or(latency_budget ? 0 : 4096);
  po.threads = o.threads;
  po.progress = true;
  po.calib = calib_path;
  if (llama) {
    std::string re;
    for (const std::string& n : llm::linear_weights(*llama))
      re += (re.empty() ? "" : "|") + regex_escape(n);
    po.layer_regex = "^(" + re + ")$";
  }
  return po;
}

OutputObjective prepare_output_objective(const graph::Model& model, const graph::Model* llama,
                                         const CompressOptions& o, ProfileOptions& po,
                                         bool lazy_grams) {
  OutputObjective out;
  if (o.damage != "auto" && o.damage != "measured" && o.damage != "fitted")
    throw Error("--damage", "unknown damage mode '" + o.damage + "' (auto, measured, fitted)");
  out.fitted = o.damage == "fitted" ||
               (o.damage == "auto" && profiled_params(model, po) > kFittedDamageAboveParams);
  out.calibration = llama ? llama_calibration(*llama, o) : onnx_calibration(model, o);
  po.damage_key =
      std::string(out.fitted ? "fitted+" : "") +
      fmt::format("grams+damage+folds{}:", cross_fit_folds(out.calibration.inputs.size())) +
      calibration_key(out.calibration);
  // Only GPTQ reads a Gram (XᵀX, in² doubles per layer: 39 GB for 70,000
  // inputs); without a -gptq label none is computed. An empty list profiles
  // every scheme, GPTQ's included.
  const bool gptq = po.schemes.empty() ||
                    std::any_of(po.schemes.begin(), po.schemes.end(), [](const std::string& s) {
                      return s.find("gptq") != std::string::npos;
                    });
  if (gptq)
    out.grams = GramSource(llama ? *llama : model, out.calibration.inputs, out.calibration.labels);
  if (!lazy_grams) {
    // Every Gram now, held as a fixed set: the source keeps no pointer to a
    // model the caller may move (tailor profile moves its decoder graph).
    po.grams = out.grams.all();
    out.grams = GramSource(po.grams, out.grams.seconds());
  }
  return out;
}

Grams calibration_grams(const graph::Model& model,
                        const std::vector<std::map<std::string, Tensor>>& inputs,
                        const std::set<std::string>* weights,
                        const std::vector<std::string>* labels) {
  graph::Model promoted = model;
  graph::promote_f16_to_f32(promoted);
  Grams out;
  for (auto& [name, g] : runtime::gram(promoted, inputs, weights, labels))
    out[name] = std::make_shared<const schemes::Gram>(std::move(g));
  return out;
}

struct GramSource::State {
  const graph::Model* model = nullptr;
  std::vector<std::map<std::string, Tensor>> inputs;
  std::vector<std::string> labels;
  Grams grams;
  /// Weights asked for that no layer reads (never computed again).
  std::set<std::string> none;
  bool complete = false;
  double seconds = 0;
};

GramSource::GramSource(Grams grams, double seconds) : state_(std::make_shared<State>()) {
  state_->grams = std::move(grams);
  state_->complete = true;
  state_->seconds = seconds;
}

GramSource::GramSource(const graph::Model& model, std::vector<std::map<std::string, Tensor>> inputs,
                       std::vector<std::string> labels)
    : state_(std::make_shared<State>()) {
  state_->model = &model;
  state_->inputs = std::move(inputs);
  state_->labels = std::move(labels);
}

const Grams& GramSource::get(const std::set<std::string>& weights) const {
  static const Grams kNone;
  if (!state_) return kNone;
  State& s = *state_;
  if (s.complete) return s.grams;  // every Gram there is, or a fixed set
  std::set<std::string> missing;
  for (const std::string& w : weights)
    if (!s.grams.count(w) && !s.none.count(w)) missing.insert(w);
  if (missing.empty()) return s.grams;
  const auto t0 = std::chrono::steady_clock::now();
  Grams got = calibration_grams(*s.model, s.inputs, &missing, &s.labels);
  s.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (const std::string& w : missing)
    if (!got.count(w)) s.none.insert(w);
  s.grams.merge(got);
  return s.grams;
}

const Grams& GramSource::all() const {
  static const Grams kNone;
  if (!state_) return kNone;
  State& s = *state_;
  if (s.complete) return s.grams;
  std::set<std::string> missing;
  for (const runtime::LayerInput& l : runtime::layer_inputs(*s.model))
    if (!s.grams.count(l.weight)) missing.insert(l.weight);
  get(missing);
  s.complete = true;
  return s.grams;
}

double GramSource::seconds() const {
  return state_ ? state_->seconds : 0.0;
}

void GramSource::clear() {
  if (!state_ || !state_->model) return;  // a fixed set is all there is
  state_->grams.clear();
  state_->none.clear();
  state_->complete = false;
}

std::set<std::string> gram_weights(const plan::Plan& plan) {
  std::set<std::string> out;
  for (const plan::PlanChoice& ch : plan.choices)
    if (reads_gram(ch.label)) out.insert(ch.layer);
  return out;
}

Calibration verification_inputs(const graph::Model& model, const graph::Model* llama,
                                const CompressOptions& o) {
  return llama ? llama_calibration(*llama, o, true) : onnx_calibration(model, o, true);
}

DamageOptions damage_options(const OutputObjective& objective, const ProfileOptions& po,
                             const ModelProfile& profile) {
  const Calibration& c = objective.calibration;
  DamageOptions d;
  d.metric = c.metric;
  d.outputs = c.outputs;
  d.input_labels = c.labels;
  d.scheme_defaults = po.scheme_defaults;
  std::set<std::string> names;
  for (const LayerProfile& l : profile.layers) names.insert(l.name);
  d.grams = objective.grams.get(names);
  d.threads = po.threads;
  return d;
}

void measure_profile_damage(const graph::Model& run_model, const OutputObjective& objective,
                            const ProfileOptions& po, ModelProfile& part,
                            const std::vector<size_t>& indices, size_t count,
                            std::function<void(size_t, const LayerProfile&)> layer_done) {
  if (indices.size() != part.layers.size())
    throw Error("output damage", fmt::format("{} layer indices for a profile of {} layers",
                                             indices.size(), part.layers.size()));
  const Calibration& c = objective.calibration;
  part.output_metric = damage_metric_name(c.metric);
  part.calibration = c.description;
  if (indices.empty()) return;
  DamageOptions d = damage_options(objective, po, part);
  d.fitted = objective.fitted;
  d.layer_done = std::move(layer_done);
  // A whole-length profile: layer l keeps its place, so its candidates are
  // encoded with seed split l; the layers of other parts are names alone,
  // never measured.
  ModelProfile whole;
  whole.layers.resize(count);
  for (size_t k = 0; k < indices.size(); ++k) {
    if (indices[k] >= count || (k > 0 && indices[k] <= indices[k - 1]))
      throw Error("output damage", fmt::format("layer index {} is not one of the {} profiled "
                                               "layers in ascending order",
                                               indices[k], count));
    whole.layers[indices[k]] = std::move(part.layers[k]);
  }
  if (indices.size() < count) d.layers = indices;
  // The layers go back to `part` whether or not the pass throws.
  auto put_back = [&] {
    for (size_t k = 0; k < indices.size(); ++k)
      part.layers[k] = std::move(whole.layers[indices[k]]);
  };
  try {
    measure_output_damage(run_model, c.inputs, whole, d);
  } catch (...) {
    put_back();
    throw;
  }
  put_back();
}

namespace {

/// Per layer index, the candidates `plan` picks whose D is fitted; their Σ D.
std::map<size_t, std::vector<size_t>> fitted_picks(const ModelProfile& profile,
                                                   const plan::Plan& plan, double* fitted_sum) {
  const std::vector<int> picked =
      plan::find_candidates(profile, plan, "measuring the plan's picks");
  std::map<size_t, std::vector<size_t>> out;
  for (size_t l = 0; l < picked.size(); ++l) {
    const Candidate& c = profile.layers[l].candidates[static_cast<size_t>(picked[l])];
    if (!c.output_damage_fitted) continue;
    if (fitted_sum) *fitted_sum += c.output_damage.value_or(0.0);
    out[l].push_back(static_cast<size_t>(picked[l]));
  }
  return out;
}

}  // namespace

MeasuredPicks measure_fitted_picks(const graph::Model& run_model, const OutputObjective& objective,
                                   const ProfileOptions& po, const GramSource& grams,
                                   ModelProfile& profile, plan::Plan plan,
                                   const std::function<plan::Plan()>& solve, int max_rounds) {
  MeasuredPicks out;
  for (int round = 0; round < max_rounds; ++round) {
    PickRound pr;
    pr.objective_before = plan.objective_value;
    DamageOptions d;
    d.only = fitted_picks(profile, plan, &pr.fitted_sum);
    if (d.only.empty()) break;
    for (const auto& [l, candidates] : d.only) pr.fitted_picks += candidates.size();
    d.metric = objective.calibration.metric;
    d.outputs = objective.calibration.outputs;
    d.scheme_defaults = po.scheme_defaults;
    std::set<std::string> gptq;
    for (const auto& [l, candidates] : d.only)
      for (size_t c : candidates)
        if (reads_gram(profile.layers[l].candidates[c].label)) gptq.insert(profile.layers[l].name);
    d.grams = grams.get(gptq);  // its time counts as the Grams', not the round's
    d.threads = po.threads;
    const auto t0 = std::chrono::steady_clock::now();
    d.input_labels = objective.calibration.labels;
    measure_output_damage(run_model, objective.calibration.inputs, profile, d);
    for (const auto& [l, candidates] : d.only)
      for (size_t c : candidates) pr.measured_sum += *profile.layers[l].candidates[c].output_damage;
    pr.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    plan = solve();
    pr.objective_after = plan.objective_value;
    out.rounds.push_back(pr);
  }
  for (const auto& [l, candidates] : fitted_picks(profile, plan, nullptr))
    out.fitted_left += candidates.size();
  out.plan = std::move(plan);
  return out;
}

}  // namespace tailor::compress
