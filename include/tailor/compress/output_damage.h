// Output damage (DESIGN.md, "Output damage"): how much the model's output
// moves, on calibration inputs, when only one layer's weight is replaced by a
// candidate's decoded stored form. The per-layer numbers D(ℓ, c) the `output`
// objective sums, and the same metric measured on a whole compressed model.
//
// Fast by construction: each input's run is held at a cut in the schedule
// (runtime::CutRun) just before the layer's first reader, so the prefix runs
// once per input for all layers and only the suffix runs per candidate.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tailor/compress/rewrite.h"
#include "tailor/core/bootstrap.h"
#include "tailor/core/tensor.h"
#include "tailor/graph/graph.h"
#include "tailor/profile/model_profile.h"
#include "tailor/schemes/scheme.h"

namespace tailor::compress {

/// Per weight name, its calibration Gram XᵀX (runtime::gram): what a -gptq
/// label quantizes against.
using Grams = std::map<std::string, std::shared_ptr<const schemes::Gram>>;

/// How a compressed run's outputs are compared with the original's.
enum class DamageMetric {
  /// Mean over rows (every index but the last axis) and inputs of
  /// KL(P ‖ Q) = Σ_v P_v·(log P_v − log Q_v) in nats, P the original's row, Q
  /// the compressed one's, both already probabilities (a Softmax output); Q_v
  /// is floored at 1e-30 so an underflowed probability gives a large finite term.
  kl_probabilities,
  /// The same with P = softmax(original logits), Q = softmax(compressed
  /// logits) (llm::kl_divergence per row): a language model's next token.
  kl_logits,
  /// Σ_inputs ‖y − ŷ‖² / Σ_inputs ‖y‖² per output (‖y − ŷ‖² when y = 0),
  /// the mean over the compared outputs: mean squared relative output error.
  relative_error,
};

/// "kl" (both KL kinds) or "relative_error": the profile's output_metric.
const char* damage_metric_name(DamageMetric metric);

/// kl_probabilities when graph output `output` of `model` is computed by a
/// Softmax (default domain, through Identity / Cast nodes) over the last axis
/// of a declared-rank tensor; relative_error otherwise (a map, a score, a
/// feature: not a distribution).
DamageMetric detect_damage_metric(const graph::Model& model, const std::string& output);

/// Accumulates the damage of compressed outputs against reference outputs,
/// input by input, under one metric.
class DamageMeter {
 public:
  /// `outputs`: the graph outputs compared (KL metrics: exactly one).
  /// Throws Error (source "output damage") for an empty list, or a KL metric
  /// with more than one output.
  DamageMeter(DamageMetric metric, std::vector<std::string> outputs);
  /// Adds one input's outputs. Throws Error naming the output when either map
  /// lacks it or the shapes differ.
  void add(const std::map<std::string, Tensor>& reference,
           const std::map<std::string, Tensor>& compressed);
  /// Adds what `other` (same metric and outputs) accumulated, as if its
  /// inputs had been added here after this meter's: sums combine in call order.
  void merge(const DamageMeter& other);
  /// The damage so far (0 before any add; NaN when an output held NaN; a KL
  /// below 0 by rounding, as f32 probability rows need not sum to exactly 1,
  /// is 0).
  double value() const;

 private:
  DamageMetric metric_;
  std::vector<std::string> outputs_;
  std::vector<double> dd_, yy_;
  double kl_sum_ = 0;
  int64_t rows_ = 0;
};

/// The damage's 95% percentile bootstrap interval over its inputs
/// (bootstrap_interval, kBootstrapResamples draws with Rng(seed)):
/// `per_input` holds one meter per input, each draw's value is that of the
/// drawn inputs' meters merged (so KL stays the mean over every drawn output
/// row, relative error the pooled Σ‖y − ŷ‖² / Σ‖y‖²). NaN, NaN for fewer than
/// two inputs or a NaN damage.
Interval damage_interval(const std::vector<DamageMeter>& per_input, uint64_t seed);

/// Folds the data-aware candidates are cross-fitted in by default
/// (DamageOptions::folds, and the uniform guard's whole plans).
inline constexpr int kCrossFitFolds = 8;

/// K = min(folds, inputs) folds when inputs ≥ 2 and folds ≥ 2, else 1 (no
/// cross-fitting): input k belongs to fold k mod K.
size_t cross_fit_folds(size_t inputs, int folds = kCrossFitFolds);

/// Whether `label` is a data-aware quantizer (a -gptq label, which reads a
/// Gram): the candidates cross-fitting encodes once per fold.
bool reads_gram(const std::string& label);

/// Settings of measure_output_damage.
struct DamageOptions {
  DamageMetric metric = DamageMetric::relative_error;
  /// Outputs compared; empty: every graph output (KL metrics: the first).
  std::vector<std::string> outputs;
  /// What each input is (Calibration::labels), naming it in errors; may be empty.
  std::vector<std::string> input_labels;
  /// Scheme parameters and seed the candidates are encoded with (as
  /// compress's encode_plan encodes them: layer i's SVDs Rng(seed).split(i)).
  schemes::SchemeParams scheme_defaults;
  uint64_t seed = 0x7a11;
  /// Per layer name, the Gram its -gptq candidates are encoded with (as
  /// encode_plan's `grams`) when they are not cross-fitted; a -gptq candidate
  /// of a layer not found: Error.
  Grams grams;
  /// Cross-fitting of the data-aware (-gptq) candidates: with N ≥ 2 inputs
  /// they fall in K = min(folds, N) folds (input k in fold k mod K), and input
  /// k's damage is measured on the candidate encoded with the Gram XᵀX of the
  /// inputs outside its fold (computed here from the layer's activations at
  /// the cut, accumulated in input order as runtime::gram of those inputs
  /// would), so D never scores a quantizer on the
  /// inputs it was fitted to (ISNet's int8-gptq with H from two 1024²
  /// images, fewer rows than a deep conv's 4,608 inputs: damage 5.0e-6 on
  /// them, 2.5e-4 on two held-out images; round-to-nearest int8 2.9e-4 and
  /// 7.9e-4). 1, one input, a weight read by several nodes, or one whose rows
  /// are not computed before its first reader (a tied embedding's Gather):
  /// the Gram of `grams`, no cross-fitting.
  int folds = kCrossFitFolds;
  /// Workers (0: all cores): the inputs' suffix runs of a layer run in
  /// parallel, one input per worker; each input's damage is summed on its
  /// own and the sums are combined in input order, so D does not depend on
  /// the count.
  int threads = 0;
  /// Called after each layer: (layers done, layers).
  std::function<void(size_t, size_t)> progress;
  /// Called after each layer with its index into profile.layers and the
  /// layer, its candidates' output_damage set (to keep finished layers, e.g.
  /// in the profile cache, while the pass goes on).
  std::function<void(size_t, const LayerProfile&)> layer_done;
  /// When set, only these layers (indices into profile.layers, ascending) are
  /// measured and the others' candidates are left as they are: a shard of the
  /// pass (layer l's candidates are encoded with seed split l whichever layers
  /// are measured, so the shards' parts together equal one whole pass).
  std::optional<std::vector<size_t>> layers;
  /// Scalable mode (damage_fit.h): only each layer's damage_probes are
  /// measured; the other candidates' damage is fit_layer_damage's α · e².
  bool fitted = false;
  /// When not empty, per layer index (into profile.layers), the only
  /// candidates measured (indices into its candidates), each as a probe is
  /// measured; `layers` is ignored, every other candidate keeps its damage,
  /// and a layer with a fit (LayerProfile::damage_fits) is refitted to all of
  /// its measured members (fit_layer_damage). measure_fitted_picks measures
  /// a plan's fitted picks so. An index out of range: Error.
  std::map<size_t, std::vector<size_t>> only;
  /// Damage in context (damage_context.h): when not empty, input k runs the
  /// model holding the decoded stored factors of the layers of context[k mod
  /// size] (in the run's dtype) in place of their weights, and
  /// D(ℓ, c) is the metric of that context's model with weight ℓ then
  /// replaced by candidate c, against the original model's outputs. The
  /// "dense" candidate is measured too (weight ℓ back to the original). A
  /// -gptq candidate is cross-fitted against the original model's
  /// activations, as encode_plan encodes the context's own -gptq layers, so
  /// that layer ℓ's pick of the context measures the context itself. Memory:
  /// one loaded model per fold, and one more run per input. A context layer
  /// whose weight is not an initializer or Constant output of the main
  /// graph: Error naming it.
  std::vector<std::vector<EncodedLayer>> context;
};

/// Sets output_damage of every candidate of every layer of `profile` (made
/// from `model`): D(ℓ, c) = the metric between the original model's outputs
/// and the outputs with only weight ℓ replaced by candidate c's decoded stored
/// factors (encode_layer, then the weight's stored layout), over `inputs`
/// (each a map of every graph input). A "dense" candidate is 0 by definition
/// (in context, DamageOptions::context, it is measured).
/// A candidate that changes the arithmetic (int8-a8: the rows of the
/// layer's input rounded to int8) is measured on the arithmetic the runtime
/// runs: its compressed op (graph::compressed_op, run alone on the layer's
/// inputs at the cut) gives the layer's output, which replaces the original
/// one step later (a weight with several readers, or an op the runtime does
/// not run compressed, falls back to the decoded weight, as the file does).
/// f16 models run in f32 (graph::promote_f16_to_f32), as verification runs them.
/// Sets profile.output_metric. Cost: one prefix per input and layer cut plus one
/// suffix run per input and non-dense candidate (options.fitted: per probe, the
/// rest predicted and marked). Throws Error (source "output
/// damage") for no inputs, naming the layer for a weight not in the main graph,
/// and as the executor and the encoders throw.
void measure_output_damage(const graph::Model& model,
                           const std::vector<std::map<std::string, Tensor>>& inputs,
                           ModelProfile& profile, const DamageOptions& options);

/// The output damage of whole compressed models on fixed inputs (compress's
/// uniform guard): the original's outputs are computed once, then every
/// measure() runs each input with all of its layers replaced at once.
class PlanDamage {
 public:
  /// `model` as measure_output_damage takes it (f16 runs in f32); `inputs`
  /// checked finite; `outputs` empty: every graph output (KL metrics: the
  /// first). `threads` workers take whole inputs (0: all cores); the sums are
  /// combined in input order, so the value does not depend on the count.
  /// Throws Error (source "output damage") for no inputs or a non-finite one.
  PlanDamage(const graph::Model& model, std::vector<std::map<std::string, Tensor>> inputs,
             DamageMetric metric, std::vector<std::string> outputs, int threads);
  ~PlanDamage();
  PlanDamage(const PlanDamage&) = delete;
  PlanDamage& operator=(const PlanDamage&) = delete;
  /// The metric between the original's outputs and the outputs with every
  /// weight of `layers` replaced by its decoded stored factors (in the run's
  /// dtype; with an int8-a8 layer, the plan's model as the runtime runs it,
  /// rewrite_tailor); 0 for no layers. `per_input`, when given, receives each input's
  /// own damage (the metric over that input alone), in input order, and
  /// `meters`, when given, each input's meter (damage_interval's). Throws
  /// Error naming a layer the model lacks.
  double measure(const std::vector<EncodedLayer>& layers, std::vector<double>* per_input = nullptr,
                 std::vector<DamageMeter>* meters = nullptr) const;
  /// The same, cross-fitted: input k runs with the layers of
  /// `folds[k mod folds.size()]` (each fold's plan encoded against the Gram
  /// of the inputs outside that fold). Throws Error for no fold.
  double measure_cross_fitted(const std::vector<std::vector<EncodedLayer>>& folds,
                              std::vector<double>* per_input = nullptr,
                              std::vector<DamageMeter>* meters = nullptr) const;

 private:
  struct State;
  std::unique_ptr<State> s_;
};

/// Throws Error naming `source` (and the input) when a floating tensor of
/// `inputs` holds NaN or ±Inf: calibration inputs must be finite.
void check_finite_inputs(const std::map<std::string, Tensor>& inputs, const std::string& source);

}  // namespace tailor::compress
