// What `tailor profile` measures and `tailor plan` reads: for every layer to
// plan, one candidate per applicable compression scheme with its measured
// error and cost. Plain data plus its JSON form (schema in docs/formats.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tailor {

/// One way to store one layer: a scheme (with its parameters) applied to the
/// layer's [out, in] view, measured on the factors actually stored.
struct Candidate {
  /// Scheme label as in DESIGN.md's table: "dense", "int4-g64", "lowrank-r32", ...
  std::string label;
  /// ‖W − Ŵ‖ / ‖W‖ (Frobenius; 0 when ‖W‖ = 0). Finite and ≥ 0.
  double rel_error = 0;
  /// Every stored byte: values, scales, indices, factors. ≥ 0.
  int64_t bytes = 0;
  /// Multiply-accumulates per input row (one vector through the layer). ≥ 0.
  int64_t macs = 0;
  /// Stored parameters (elements of all stored tensors; 0 when not recorded).
  int64_t params = 0;
  /// Wall-clock seconds the encoding took (0 when not recorded): shown in the
  /// log, never written to profile.json (artifacts are byte-reproducible).
  double encode_seconds = 0;
  /// Activation-aware relative error (DESIGN.md: the calibration-weighted
  /// norm), present only when the profile was made with calibration data.
  std::optional<double> rel_error_activation;
  /// Output damage D(ℓ, c) (DESIGN.md): the divergence of the model's output,
  /// on calibration inputs, when only this layer is replaced by this
  /// candidate's decoded stored weight, in the profile's output_metric;
  /// present only when the profile was measured with calibration inputs.
  std::optional<double> output_damage;
  /// Whether output_damage is predicted by the layer's damage fit
  /// (DamageFit: α · rel_error²) rather than measured; profile.json's
  /// optional "output_damage_fitted" (absent: measured).
  bool output_damage_fitted = false;
  /// Measured latency of the layer's op with this candidate's kernel, in
  /// milliseconds of CPU time at 1 thread (median of repeats after a warm-up,
  /// profile/latency.h); present only when the profile measured latencies.
  std::optional<double> latency_ms;
};

/// The scalable output damage of one layer and scheme family
/// (compress/damage_fit.h): D(ℓ, c) ≈ alpha · rel_error(c)², alpha fitted to
/// the family's measured probe candidates; profile.json's "damage_fits".
struct DamageFit {
  /// "rtn", "mse", "gptq", "lowrank", "lowrank-q" or "int+r".
  std::string family;
  /// exp(mean over the measured members of ln(D / rel_error²)); ≥ 0.
  double alpha = 0;
  /// Labels of the measured candidates the fit is made from: the probes, and
  /// any the plan picked and compress then measured (measure_fitted_picks).
  std::vector<std::string> probes;
  /// The largest factor by which α · rel_error² misses a measured member's D
  /// (max of max(fit / D, D / fit)); 1 for an exact fit, ≥ 1.
  double fit_factor = 1;
};

/// One layer to plan: a weight of rank ≥ 2 with its candidates.
struct LayerProfile {
  /// Weight name as in the model file.
  std::string name;
  /// Shape of the [out, in] view: {out, in}.
  std::vector<int64_t> shape_out_in;
  /// Elements of the weight (out · in).
  int64_t numel = 0;
  /// Bytes of the weight stored dense in f32 (4 · numel).
  int64_t dense_bytes = 0;
  /// At least one candidate; labels unique within the layer.
  std::vector<Candidate> candidates;
  /// Why the layer has only its dense candidate: its weights hold values the
  /// encoders cannot take (NaN, ±Inf, a scale past f16's range), with the
  /// first problem found. Empty for a layer profiled with every scheme;
  /// profile.json's optional "kept_dense".
  std::string kept_dense;
  /// Schemes asked for that the layer's shape cannot hold, one line each
  /// (e.g. ggml's q8_0 / q4_0 on a row length that is not a multiple of 32);
  /// profile.json's optional "notes".
  std::vector<std::string> notes;
  /// Under fitted output damage: one fit per scheme family whose other
  /// candidates' damage it predicts (output_damage_fitted); empty otherwise.
  std::vector<DamageFit> damage_fits;
};

/// A model's profile.
struct ModelProfile {
  /// The model path the profile was made from.
  std::string model;
  /// Bytes of every weight of the model stored dense in f32 (planned layers
  /// and everything else): the base of a `25%` budget.
  int64_t dense_bytes = 0;
  /// Bytes of what is not planned (small tensors, biases, norms), kept as
  /// they are; every plan's total includes them.
  int64_t fixed_bytes = 0;
  /// The metric of every candidate's output_damage ("kl" or "relative_error",
  /// compress/output_damage.h); empty when no damage was measured.
  std::string output_metric;
  /// What the damage was measured on, e.g. "19 OCR fixture lines (even-numbered)".
  std::string calibration;
  /// With measured latencies (profile/latency.h): CPU milliseconds at 1 thread
  /// of everything but the ops of the measured layers (the whole model's
  /// median minus their dense ops' latencies, at least 0); a plan's predicted
  /// latency is this plus its chosen candidates' latency_ms.
  std::optional<double> latency_rest_ms;
  /// The whole model's measured latency (ms, the same clock), and the input
  /// shapes it was measured on, e.g. "x [1,3,48,320]".
  std::optional<double> latency_model_ms;
  std::string latency_input;
  /// The layers to plan; names unique.
  std::vector<LayerProfile> layers;
};

/// Reads and validates a profile.json. Throws Error naming `path` for
/// unreadable or malformed JSON, missing or mistyped fields, negative bytes,
/// numel or MACs, non-finite or negative errors, a shape whose product is not
/// numel, empty candidate lists, duplicate layer names and duplicate labels
/// within a layer; the message names the layer (and candidate) at fault.
ModelProfile read_profile(const std::string& path);

/// read_profile of JSON text already in memory; errors name `source`.
ModelProfile parse_profile(const std::string& text, const std::string& source);

/// Writes `profile` to `path` atomically (write_file_atomic), in the schema
/// read_profile reads. Throws Error naming `path` on I/O failure.
void write_profile(const std::string& path, const ModelProfile& profile);

/// The profile as JSON text (2-space indented), as write_profile writes it.
std::string profile_to_json(const ModelProfile& profile);

}  // namespace tailor
