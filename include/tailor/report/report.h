// The compression report: what was chosen, what it costs and loses, how the
// solvers compare, and (when measured) how the compressed model verifies;
// written as report.json and as one self-contained report.html with plots.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "tailor/core/bootstrap.h"
#include "tailor/plan/plan.h"
#include "tailor/plan/sweep.h"
#include "tailor/profile/model_profile.h"

namespace tailor::report {

/// Error of one model output, compressed vs. original, over the verification
/// inputs: rel_error = ‖y − ŷ‖ / ‖y‖ (Frobenius over all inputs), cosine =
/// ⟨y, ŷ⟩ / (‖y‖·‖ŷ‖).
struct OutputError {
  std::string name;
  double rel_error = 0;
  double cosine = 0;
};

/// A task metric (e.g. OCR character accuracy) of the original and the
/// compressed model on the same inputs.
struct TaskMetric {
  std::string name;
  double original = 0;
  double compressed = 0;
};

/// Saliency-mask agreement on one verification input (tasks::compare_masks):
/// the compressed model's mask against the original's.
struct MaskScore {
  /// The input's name (calibration file stem, or "random-<k>").
  std::string input;
  /// Mean absolute error (mask units, masks in [0, 1]).
  double mae = 0;
  /// IoU of the masks thresholded at SaliencyCheck::threshold.
  double iou = 0;
};

/// The saliency task check of a model whose output is one N×1×H×W map.
struct SaliencyCheck {
  /// The model output holding the mask.
  std::string output;
  double threshold = 0.5;
  /// One score per verification input, in input order.
  std::vector<MaskScore> inputs;
  /// Means over the inputs.
  double mae = 0;
  double iou = 0;
};

/// Verification numbers, measured by running both models (`tailor compress`
/// fills them; `tailor report --verify verify.json` reads them; schema in
/// docs/formats.md).
struct Verification {
  /// Inputs the models were run on (0 when not recorded).
  int64_t inputs = 0;
  std::vector<OutputError> outputs;
  std::optional<TaskMetric> metric;
  /// Saliency models: mask MAE and IoU per input (absent otherwise).
  std::optional<SaliencyCheck> saliency;
  /// The error the plan predicts from the per-layer errors (Σ over layers, in
  /// the unit the verifier states) and the error measured on the outputs; NaN
  /// when not recorded.
  double predicted_error = std::numeric_limits<double>::quiet_NaN();
  double measured_error = std::numeric_limits<double>::quiet_NaN();
  /// Output damage (DESIGN.md) on the verification inputs: its metric ("kl"
  /// or "relative_error"; empty when not measured), the plan's predicted
  /// Σ_ℓ D(ℓ, c_ℓ) from the calibration inputs (NaN when the profile has no
  /// output damage) and the damage measured on the whole compressed model.
  std::string damage_metric;
  double predicted_damage = std::numeric_limits<double>::quiet_NaN();
  double measured_damage = std::numeric_limits<double>::quiet_NaN();
  /// measured_damage's 95% percentile bootstrap interval over the
  /// verification inputs (llama: over the sampled sequences); NaN, NaN for
  /// one input.
  Interval measured_interval = {};
  /// The written plan's damage run whole on the calibration inputs (compress's
  /// uniform guard, or its fit step for a --uniform -gptq plan: -gptq layers
  /// cross-fitted), with its 95% bootstrap interval over those inputs: the
  /// prediction of the written file in which the layers' damages need not
  /// add up; NaN where no whole plan was measured.
  double calibration_damage = std::numeric_limits<double>::quiet_NaN();
  Interval calibration_interval = {};
};

/// Reads verify.json. Throws Error naming `path` for malformed JSON, a missing
/// or mistyped field, or a non-finite number.
Verification read_verification(const std::string& path);

/// One point of the error-vs-budget curve (plan::sweep_budgets).
using CurvePoint = plan::SweepPoint;

/// One solver at the chosen budget.
struct SolverRow {
  std::string solver;
  double objective = 0;
  int64_t total_bytes = 0;
  /// objective − exact's objective (objective units; 0 for exact itself).
  double gap_to_exact = 0;
  double seconds = 0;
  int64_t nodes = 0;
  bool proven_optimal = false;
};

/// One planned layer: its chosen candidate and every candidate's error.
struct LayerRow {
  std::string name;
  std::vector<int64_t> shape_out_in;
  /// Bytes dense f32 (before) and under the chosen candidate (after).
  int64_t dense_bytes = 0;
  int64_t bytes = 0;
  std::string label;
  double rel_error = 0;
  /// rel_error of every scheme of Report::schemes for this layer, NaN where
  /// the scheme was not profiled for the layer (it does not apply).
  std::vector<double> scheme_errors;
};

/// A whole plan measured on compress's calibration inputs (its uniform
/// guard): tailor's solver plan or one uniform scheme.
struct MeasuredPlan {
  /// "plan (<solver>)" or "uniform <label>".
  std::string name;
  int64_t bytes = 0;
  /// Output damage on the calibration inputs (Report::measured_metric).
  double damage = std::numeric_limits<double>::quiet_NaN();
  /// The plan compress kept (the lowest damage within the budget).
  bool kept = false;
  /// Why its -gptq layers were fitted to the calibration inputs themselves
  /// (compress::GuardPoint::in_sample); empty when cross-fitted as the rest.
  std::string in_sample;
  /// damage's 95% bootstrap interval over the calibration inputs
  /// (compress::GuardPoint::interval); NaN, NaN for one input.
  Interval interval = {};
};

/// Everything the report shows; report.json and report.html hold the same numbers.
struct Report {
  std::string model;
  int64_t dense_bytes = 0;
  int64_t fixed_bytes = 0;
  /// The chosen plan.
  plan::Plan plan;
  /// Exact optima at evenly spaced total budgets from the smallest feasible
  /// (fixed bytes + every layer's smallest candidate) to dense_bytes
  /// (plan::PlanStudy::curve).
  std::vector<CurvePoint> curve;
  /// Every solver (plan::solver_names order) at the chosen plan's budget,
  /// objective and seed (plan::PlanStudy::solvers).
  std::vector<SolverRow> solvers;
  /// Every candidate label of the profile: the columns of the per-layer map,
  /// in first-seen order with the low-rank labels last, by ascending rank.
  std::vector<std::string> schemes;
  std::vector<LayerRow> layers;
  std::optional<Verification> verification;
  /// Tailor's plan and every uniform scheme measured on the calibration
  /// inputs, and their metric ("kl" or "relative_error"); empty when not measured.
  std::string measured_metric;
  std::vector<MeasuredPlan> measured;
  /// compress under --max-latency: the original's and the written model's
  /// measured latency (CPU ms, 1 thread, interleaved medians); NaN when not
  /// measured. report.json's "measured_latency".
  double latency_original_ms = std::numeric_limits<double>::quiet_NaN();
  double latency_compressed_ms = std::numeric_limits<double>::quiet_NaN();
};

/// The report of `plan` (made from `profile`), presenting what the planner
/// computed: the curve and the solver comparison of `study`
/// (plan::study_plan; gap_to_exact against study.solvers' first, exact, row),
/// and the per-layer rows. Computes no plan. `plan_source` names the plan in
/// errors. Throws Error naming `plan_source` when the plan does not match the
/// profile (plan::find_candidates: another layer count, order or name, or a
/// label the layer was not profiled with).
Report make_report(const ModelProfile& profile, const plan::Plan& plan,
                   const std::string& plan_source, const plan::PlanStudy& study,
                   std::optional<Verification> verification = std::nullopt);

/// report.json text (schema in docs/formats.md; NaN written as null).
std::string report_to_json(const Report& report);

/// report.html: one self-contained page (no external resources) with three
/// SVG plots drawn by gnuplot (error vs. budget with the chosen plan marked;
/// layer × scheme map coloured by log10 rel_error with the chosen scheme
/// circled; bytes per layer before and after) and tables of the solver
/// comparison, the verification and the plan. Text from the profile is
/// escaped for gnuplot and for HTML. Throws Error (source "gnuplot") when
/// gnuplot is missing or fails.
std::string report_to_html(const Report& report);

/// Writes `out_dir`/report.html and `out_dir`/report.json, each atomically
/// (the folder is created when missing). Throws Error naming the file on I/O
/// failure, and what report_to_html throws (before either file is written).
void write_report(const std::string& out_dir, const Report& report);

}  // namespace tailor::report
