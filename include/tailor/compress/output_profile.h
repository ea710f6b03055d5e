// The profiling half of `tailor compress` under the output objective (DESIGN.md,
// "Output damage"), in parts, so that `tailor profile --objective output` — in
// one process, as a shard (`--shard I/N`) or as an MPI rank — measures the same
// candidates on the same calibration inputs, stores the same profile and keys
// the profile cache as compress_model does (a later compress reuses it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "tailor/compress/compress.h"
#include "tailor/compress/output_damage.h"
#include "tailor/core/tensor.h"
#include "tailor/graph/graph.h"
#include "tailor/io/llama_graph.h"
#include "tailor/plan/plan.h"
#include "tailor/profile/model_profile.h"
#include "tailor/profile/profiler.h"

namespace tailor::compress {

/// The calibration inputs of the output objective.
struct Calibration {
  std::vector<std::map<std::string, Tensor>> inputs;
  DamageMetric metric = DamageMetric::relative_error;
  /// The outputs compared (KL: the distribution alone).
  std::vector<std::string> outputs;
  /// What the inputs are, for the output and profile.json.
  std::string description;
  /// What each input is, for its errors (a file path, "random-K"); may be
  /// empty (then "calibration input K of N").
  std::vector<std::string> labels;
  /// Whether the inputs are random draws whose shape was guessed (no --calib,
  /// no task fixtures, a symbolic dim past the first set to 64): not the
  /// shape the model runs on, as far as compress knows.
  bool guessed_shape = false;
};

/// The decoder graph compress_model runs for a llama checkpoint `model`
/// (load_model of `path`; any format but ONNX): llama_checkpoint, then
/// llama_graph of its weights (the checkpoint itself in `checkpoint` when
/// given). nullopt for an ONNX model, which runs as it is. Throws Error naming
/// `path` as llama_checkpoint does for a file that is neither.
std::optional<graph::Model> llama_decoder(const graph::Model& model, const std::string& path,
                                          std::optional<LlamaCheckpoint>* checkpoint = nullptr);

/// Tokens sampled per llama sequence: options.kld_length, within the context.
int32_t kld_length(const CompressOptions& options, const graph::Model& llama);

/// The ProfileOptions compress_model profiles with: options.schemes (empty:
/// "dense" and options.uniform under a uniform baseline, gguf_schemes() under
/// options.gguf, else default_schemes(), plus "int8-a8" under a latency
/// budget, max_latency or max_latency_fraction, on an ONNX model), min_params
/// (unset: 4096, or 0 under that latency budget),
/// threads, a progress bar, the activation statistics file `calib_path`
/// (empty: none) and, for a llama checkpoint (`llama`: its decoder graph, else
/// nullptr), only the decoder's linear weights (an anchored regex of their names).
ProfileOptions compress_profile_options(const CompressOptions& options, const graph::Model* llama,
                                        const std::string& calib_path = "");

/// The calibration Grams XᵀX of one model's weight layers over one input set
/// (calibration_grams), each computed on its first request and kept: a
/// compress run whose profile comes from the cache computes only the Grams of
/// the -gptq layers its plans encode (ISNet: all 119 layers on two 1024²
/// images take 150 s on 2 cores, none for a round-to-nearest --uniform
/// reads one). Copies share the
/// Grams computed; the model must outlive them. Not thread-safe.
class GramSource {
 public:
  /// No Grams: every request gives none (a catalog without a -gptq label).
  GramSource() = default;
  /// Exactly `grams`, nothing computed (a test's or a bench's own set);
  /// `seconds`: what computing them took, for seconds().
  explicit GramSource(Grams grams, double seconds = 0);
  /// Grams of `model`'s layers over `inputs` (copied), computed on request;
  /// `labels` (Calibration::labels, may be empty) name a failing input.
  GramSource(const graph::Model& model, std::vector<std::map<std::string, Tensor>> inputs,
             std::vector<std::string> labels = {});

  /// The Grams held once those of `weights` (weight names) are: the missing
  /// ones computed in one pass over the inputs (a weight no layer reads as
  /// runtime::layer_inputs defines gets none). Throws Error as runtime::gram
  /// does; a node's error names the first input the model cannot run, by its label.
  const Grams& get(const std::set<std::string>& weights) const;
  /// The same for every layer.
  const Grams& all() const;
  /// Seconds spent computing Grams so far.
  double seconds() const;
  /// Drops the Grams computed (a later request computes them again).
  void clear();

 private:
  struct State;
  std::shared_ptr<State> state_;
};

/// The weights whose pick in `plan` reads a Gram (reads_gram): what encoding
/// it needs of a GramSource.
std::set<std::string> gram_weights(const plan::Plan& plan);

/// What the output objective measures with.
struct OutputObjective {
  Calibration calibration;
  /// The Grams XᵀX over the calibration inputs, per weight name: what the
  /// -gptq candidates are encoded with (none without a -gptq label).
  GramSource grams;
  /// Scalable damage (damage_fit.h): measure only each layer's probes and
  /// predict the rest as α · e² (CompressOptions::damage).
  bool fitted = false;
};

/// Gathers the output objective's calibration inputs as compress_model does
/// (never the verification inputs): for a llama checkpoint (`llama` its decoder
/// graph) kld_sequences × kld_length tokens sampled with seed + 2, KL of the
/// logits; for an ONNX `model` the even-numbered OCR fixture lines of a
/// recogniser, the even-numbered calib_dir inputs, else random_inputs N(0, 1)
/// inputs seeded seed + 2 (metric: detect_damage_metric of the first output).
/// Its `grams` compute each layer's Gram XᵀX (runtime::gram, f16 run in f32)
/// on request, over those inputs (`model` or `llama` must outlive them);
/// unless `lazy_grams`, every layer's now, in `profile_options.grams` (what
/// profile_model encodes -gptq with) and in `grams` as a fixed set. Sets
/// `profile_options.damage_key` ("grams+damage+folds<K>:", K the cross-fitting
/// folds of the inputs, and the SHA-256 of the inputs
/// and metric; "fitted+" before it under the fitted mode). The fitted mode: options.damage
/// "fitted", or "auto" when the weights profile_options would profile (min_params, the layer regex)
/// hold more than kFittedDamageAboveParams elements. Throws Error naming the model for an input of
/// undeclared type without calib_dir, for a damage mode other than auto / measured / fitted, and as
/// the readers do.
OutputObjective prepare_output_objective(const graph::Model& model, const graph::Model* llama,
                                         const CompressOptions& options,
                                         ProfileOptions& profile_options, bool lazy_grams = false);

/// H = XᵀX per weight layer of `model` over `inputs` (runtime::gram), by
/// weight name: what the -gptq labels quantize against. f16 models run in
/// f32 (graph::promote_f16_to_f32), as the damage pass runs them; `weights`
/// and `labels` as runtime::gram's. Throws Error as runtime::gram does.
Grams calibration_grams(const graph::Model& model,
                        const std::vector<std::map<std::string, Tensor>>& inputs,
                        const std::set<std::string>* weights = nullptr,
                        const std::vector<std::string>* labels = nullptr);

/// The inputs compress_model verifies on, as a Calibration with the same
/// metric and outputs (the half prepare_output_objective never uses): for a
/// llama checkpoint (`llama` its decoder graph) kld_sequences × kld_length
/// tokens sampled with seed + 1, fed whole; for an ONNX model the
/// odd-numbered OCR lines or --calib inputs, else random inputs seeded
/// `seed`. For a bench measuring plans' damage on held-out inputs with
/// PlanDamage. Throws Error as prepare_output_objective does.
Calibration verification_inputs(const graph::Model& model, const graph::Model* llama,
                                const CompressOptions& options);

/// The settings the profile's damage pass measures `profile`'s layers with:
/// `objective`'s calibration metric, outputs and input labels,
/// `profile_options`' scheme settings and threads, and the Grams of those
/// layers (computed on request). Throws Error as GramSource::get does.
DamageOptions damage_options(const OutputObjective& objective,
                             const ProfileOptions& profile_options, const ModelProfile& profile);

/// Measures output damage D(ℓ, c) (measure_output_damage) of every candidate of
/// every layer of `part`, on `run_model` (the llama decoder graph, else the
/// model): part.layers[k] is layer `indices[k]` (ascending) of the `count`
/// layers profile_model lists. A layer's candidates are encoded with seed split
/// indices[k], whatever the other layers of the part, so the parts of a
/// sharded profile give the one-process values bit for bit. Sets
/// part.output_metric and part.calibration (also for an empty part); each
/// input's sums are combined in input order, so the values do not depend on
/// `profile_options.threads`. Throws Error (source "output damage") when
/// indices and part disagree, and as measure_output_damage does.
/// `layer_done`, when given, is called after each layer with its index (one of
/// `indices`) and the layer, its damage set (DamageOptions::layer_done).
void measure_profile_damage(const graph::Model& run_model, const OutputObjective& objective,
                            const ProfileOptions& profile_options, ModelProfile& part,
                            const std::vector<size_t>& indices, size_t count,
                            std::function<void(size_t, const LayerProfile&)> layer_done = {});

/// One round of measure_fitted_picks.
struct PickRound {
  /// The plan's picks whose D was fitted (α · e²), and their Σ fitted D.
  size_t fitted_picks = 0;
  double fitted_sum = 0;
  /// The same picks' Σ D as measured.
  double measured_sum = 0;
  /// The plan's objective (Σ D) before the round, and the re-solved plan's.
  double objective_before = 0;
  double objective_after = 0;
  /// Wall-clock seconds of the round's measurement (the log only).
  double seconds = 0;
};

/// What measure_fitted_picks returns.
struct MeasuredPicks {
  plan::Plan plan;
  std::vector<PickRound> rounds;
  /// The returned plan's picks whose D is still fitted (after max_rounds).
  size_t fitted_left = 0;
};

/// Measure what the plan picks (issue 13): under the fitted mode
/// (damage_fit.h) a candidate's α · e² can be far below its measured damage,
/// and an exact solver, minimising Σ D, picks exactly such candidates (ISNet
/// at int4-g32's bytes: 61 of the plan's 108 picks fitted, the plan measured
/// 39× its Σ D). While `plan` picks a candidate whose D is fitted, this
/// measures D of every such pick on `objective`'s calibration inputs, as a
/// probe is measured (measure_output_damage with DamageOptions::only, -gptq
/// cross-fitted; `grams` the Grams compress encodes with, those of the picks'
/// -gptq layers requested), refits the
/// picks' layers (fit_layer_damage), and takes `solve()`'s plan of the
/// updated `profile`; at most `max_rounds` rounds, one PickRound each.
/// Returns the last plan (`plan` itself when none of its picks is fitted).
/// Throws Error as plan::find_candidates does for a plan not of `profile`
/// (naming the layer and label), and as measure_output_damage does.
MeasuredPicks measure_fitted_picks(const graph::Model& run_model, const OutputObjective& objective,
                                   const ProfileOptions& profile_options, const GramSource& grams,
                                   ModelProfile& profile, plan::Plan plan,
                                   const std::function<plan::Plan()>& solve, int max_rounds);

}  // namespace tailor::compress
