// `tailor compress`: load → profile (cached) → plan → rewrite → write → verify
// → report, the whole job on one model. ONNX models are rewritten into a
// standard ONNX file (rewrite.h) and verified by running the original and
// the compressed graph (tailor's CompressedLinear/CompressedConv nodes) in
// tailor's runtime; llama checkpoints (llama2.c, HF folder, GGUF) are
// imported as a decoder graph with a KV cache (io/llama_graph.h), rewritten
// the same two ways and verified by KL divergence and top-1 agreement of
// next-token distributions (llm::compare_models, executor runs).
//
// Files in the output folder, all staged in a temporary folder beside it and
// moved into place by one rename at the end (a failure leaves no output
// folder and no partial file; an existing folder is replaced only on success):
//   model.onnx          standard ONNX: the rewritten graph of an ONNX model, or
//                       of the llama decoder graph (io/llama_graph.h, with its
//                       KV-cache inputs and outputs) for a llama checkpoint
//   weights.safetensors every planned layer's stored factors as
//                       `<layer>.<factor>` (q, scale, A, B, core, U0, ...; a
//                       layer planned dense as `<layer>.w`) and every other
//                       weight under its own name; `__metadata__`: format
//                       "tailor-compressed", model, plan (plan.json's text)
//   plan.json           the plan (schema in docs/formats.md)
//   report.html, report.json  with options.report (report.h), verification included
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tailor/compress/rewrite.h"
#include "tailor/core/bootstrap.h"
#include "tailor/llm/kld.h"
#include "tailor/plan/plan.h"
#include "tailor/profile/model_profile.h"
#include "tailor/report/report.h"

namespace tailor::compress {

/// The schemes profiled unless told otherwise: dense (kept as is), int8, int4,
/// int3, int4-g32, int4-g64, int4-g128, ternary, low-rank (the profiler's ranks)
/// and, where the output objective gives calibration Grams, the "gptq" family
/// (int8, int4, int3 and int4-g{32,64,128} quantized by GPTQ).
/// sparse-2:4, monarch, tt and tucker (each written at its planned bytes too,
/// rewrite.h) are left to --schemes: they cost more profiling time.
const std::vector<std::string>& default_schemes();

/// Settings of compress_model.
struct CompressOptions {
  /// Model file or HF folder (load_model).
  std::string model;
  /// `--budget` text (plan::parse_budget: 30%, 4.5bpw, 300MB, bytes).
  std::string budget;
  std::string solver = "exact";
  /// plan::parse_objective: output (default), numel, sum or activation.
  /// output measures every candidate's output damage D(ℓ, c)
  /// (output_damage.h) on calibration inputs that verification never sees:
  /// the even-numbered OCR fixture lines of a recogniser, the even-numbered
  /// --calib inputs, kld_sequences × kld_length tokens sampled from a llama
  /// with seed + 2, else random_inputs N(0, 1) inputs seeded seed + 2; the
  /// damages are stored in the profile (and its cache entry, keyed by the
  /// calibration inputs). The same inputs give each layer's Gram XᵀX
  /// (runtime::gram), which the -gptq candidates are profiled, measured and
  /// encoded with. activation on a llama checkpoint collects the
  /// calibration statistics itself (llm::collect_input_stats over the same
  /// sampled sequences); on an ONNX model it is an error (no calibration data).
  std::string objective = "output";
  /// How the output objective gets D(ℓ, c): "measured" (every candidate),
  /// "fitted" (damage_fit.h: 2–3 measured probes per layer and scheme
  /// family, the rest α · e²) or "auto" (fitted above
  /// kFittedDamageAboveParams profiled weight elements, else measured).
  std::string damage = "auto";
  /// A scheme label: plan that scheme at every layer whose profile has it,
  /// dense elsewhere (a uniform baseline; no budget then). Empty: solve.
  std::string uniform;
  uint64_t seed = 0;
  /// Output folder; empty: "<model file stem>.tailor" beside the working directory.
  std::string out_dir;
  /// Folder of .npy (or, for one image input [1, 3, H, W], .png)
  /// calibration inputs (see compress_model); empty: none. ONNX models only:
  /// compress_model refuses it for a llama checkpoint ("--calib").
  std::string calib_dir;
  /// Task check of the verification: "auto" (OCR for a PaddleOCR
  /// recogniser, saliency for a model whose first output is an N×1×H×W map
  /// made by a Sigmoid), "saliency" (first output must be N×1×H×W), "ocr", or
  /// "none".
  std::string task = "auto";
  /// Per-channel (R, G, B) normalisation of .png calibration images,
  /// x = (pixel − mean) / std, pixels 0–255; default IMG.LY's ISNet one.
  std::array<float, 3> image_mean{128.f, 128.f, 128.f};
  std::array<float, 3> image_std{256.f, 256.f, 256.f};
  /// Write report.html and report.json.
  bool report = false;
  /// Also write model.gguf (gguf_out.h: write_llama_gguf) for a llama
  /// checkpoint; the profile then takes only the schemes a GGUF holds
  /// (gguf_schemes(); --schemes must be among them).
  bool gguf = false;
  /// The llama2.c tokenizer for model.gguf (empty: find_llama2c_tokenizer's
  /// default); refused without `gguf` ("--tokenizer").
  std::string tokenizer;
  /// Schemes to profile (ProfileOptions::schemes); empty: as
  /// compress_profile_options says (default_schemes(), and int8-a8 under a
  /// latency budget).
  std::vector<std::string> schemes;
  /// Weights of fewer elements stay dense (ProfileOptions::min_params);
  /// unset: 4096, or 0 under a latency budget on an ONNX model. A conv's
  /// time follows its activations, not its weight: the detector's 3→16 stem
  /// holds 432 weights and runs 1.8 ms of its 49 at 640², so a latency
  /// budget plans every weight layer.
  std::optional<int64_t> min_params;
  /// Worker threads of profile, encoding and solvers (0: all cores).
  int threads = 0;
  /// Reuse / store the profile in the profile cache (profile_cache.h).
  bool cache = true;
  /// OCR fixture folder (labels.tsv + PNG lines); empty: the fixtures shipped
  /// with tailor (share/tailor/ocr beside the installed executable, else the
  /// source tree's tests/fixtures/ocr), never the working folder. A folder
  /// given here without labels.tsv is an Error naming it.
  std::string ocr_lines;
  /// PaddleOCR key file; empty: ppocr_keys_v1.txt beside the model. Given
  /// (or --ocr-lines given) for a model the OCR check cannot run on: Error.
  std::string ocr_keys;
  /// Random inputs when there are no calibration inputs and no task fixtures.
  int random_inputs = 4;
  /// llama: sequences and tokens per sequence for compare_models, each side
  /// (calibration, seed + 2; verification, seed + 1). 32 × 64 tokens: GPTQ's
  /// Grams from 2,048 tokens. stories260K's uniform int4-gptq, held-out KL
  /// against uniform int4's: 0.61× with 8 × 64, 0.50× with 32 × 64.
  int32_t kld_sequences = 32;
  int32_t kld_length = 64;
  /// With calibration inputs (the output objective) and a budget: before
  /// writing, run on the calibration inputs the solver's plan and every
  /// uniform plan of a profiled quantizer label (int*, ternary, q8_0, q4_0,
  /// their -mse / -gptq forms; not a rank or decomposition label), and keep
  /// the best uniform within the budget unless the plan holds against it
  /// (plan_holds: lower with paired 95% confidence on the mean or by rank, or
  /// below kPlanMargin × its damage with the uniform not lower by rank). Costs
  /// one encode of the model and one run per calibration input per label.
  bool uniform_guard = true;
  /// Second budget (plan/two_budget.h; exact solver, ONNX models): the whole
  /// model's latency in CPU ms at 1 thread (every candidate's latency is then
  /// measured, profile/latency.h, on the first calibration input), or the
  /// summed MACs of the planned layers. The uniform guard does not run then.
  /// A latency budget is held by measurement: each round's plan is timed
  /// whole against the original and the solver's budget re-mapped
  /// (plan::latency_calibrated_plan; ONNX models).
  std::optional<double> max_latency;
  /// The latency budget as a fraction of the original's whole-model latency
  /// measured in the profile (--max-latency P%: P/100), on the same clock as
  /// the plans it is held to; not with max_latency.
  std::optional<double> max_latency_fraction;
  std::optional<int64_t> max_macs;
  /// Seconds per solver run in the report's curve and comparison (0: none).
  double report_time_limit = 10;
  /// Called at the start and end of each stage: (stage, message).
  std::function<void(const std::string&, const std::string&)> progress;
};

/// A plan the uniform guard measured on the calibration inputs.
struct GuardPoint {
  /// "plan (<solver>)" for the solver's plan, "uniform <label>" otherwise.
  std::string name;
  int64_t bytes = 0;
  /// Output damage of the whole plan on the calibration inputs (its metric,
  /// over all inputs together: what verification measures).
  double damage = 0;
  /// Each calibration input's own damage (PlanDamage::measure's per_input);
  /// empty when not measured per input.
  std::vector<double> per_input = {};
  /// `damage`'s 95% percentile bootstrap interval over the calibration inputs
  /// (damage_interval, seeded CompressOptions::seed); NaN, NaN for one input.
  Interval interval = {};
  /// Why a plan with -gptq layers was measured with its GPTQ fitted to the
  /// calibration inputs themselves (which flatters it: on the recogniser's
  /// 19 fixture lines, uniform int4-g32-gptq fitted sequentially at α = 1
  /// read 0.00052 in-sample and 0.0399 cross-fitted) instead of cross-fitted: "over the budget"
  /// (the guard cannot keep it; its point is for the report); empty when measured as the rest.
  std::string in_sample = {};
  /// How its -gptq layers were fitted (gptq_fit_name): the lower of the two
  /// fits where cross-fitted; empty for a plan without -gptq layers.
  std::string fit = {};
};

/// Student's t one-sided 95% quantile t_{0.95, df} (df ≥ 1): a table to 3
/// decimals for df ≤ 30, the Cornish-Fisher expansion above. Throws Error
/// (source "guard") for df < 1.
double student_t95(int64_t df);

/// The one-sided 95% upper confidence bound of the mean paired difference
/// d_i = a_i − b_i over the calibration inputs (per_input, in the damage's
/// own units): d̄ + t_{0.95, n−1} · s / √n, s the sample standard deviation
/// of the d_i (the paired t-test). Below 0: `a`'s mean damage is lower than
/// `b`'s with 95% confidence. NaN unless both hold the same n ≥ 2 values, or
/// when one of them is NaN.
double difference_bound(const GuardPoint& a, const GuardPoint& b);

/// One-sided p-value of the Wilcoxon signed-rank test (Wilcoxon, 1945) that
/// `a`'s per-input damage tends to be lower than `b`'s: d_i = a_i − b_i over
/// the calibration inputs, zero differences dropped, |d_i| ranked from 1
/// with ties at their average rank, W⁺ the sum of the ranks of the positive
/// d_i, and p = P(W⁺ ≤ observed) when each sign is independently ± with
/// probability ½: counted exactly over the 2^m sign patterns of the m
/// non-zero differences when m ≤ kSignedRankExactMax, else the normal
/// approximation (mean m(m+1)/4, variance m(m+1)(2m+1)/24 − Σ(t³ − t)/48
/// over groups of t tied |d_i|, continuity ½). 1 when every d_i is 0; NaN
/// unless both hold the same n ≥ 1 values, or when one is NaN. It needs
/// m ≥ 5 to fall below 0.05 (all five lower: 1/32).
double signed_rank_p(const GuardPoint& a, const GuardPoint& b);

/// How many calibration inputs `a` damages strictly less than `b` (0 unless
/// both hold the same number of per-input values).
size_t lower_count(const GuardPoint& a, const GuardPoint& b);

/// The signed-rank test's level (signed_rank_p below it: lower by rank).
inline constexpr double kSignedRankLevel = 0.05;
/// Up to this many non-zero differences signed_rank_p counts exactly.
inline constexpr size_t kSignedRankExactMax = 300;
/// A plan whose calibration damage is below kPlanMargin × the best
/// uniform's holds without paired evidence, unless the uniform is lower by
/// rank (plan_holds).
inline constexpr double kPlanMargin = 0.8;

/// Whether the solver's `plan` keeps its place against the best uniform
/// point. With per-input values for both (n ≥ 2) it holds on any of:
/// difference_bound(plan, uniform) < 0 (its mean damage lower with 95%
/// confidence, the paired t-test); its `damage` lower and
/// signed_rank_p(plan, uniform) < kSignedRankLevel (lower by rank); its
/// `damage` below kPlanMargin × the uniform's and the uniform not lower by
/// rank (signed_rank_p(uniform, plan) ≥ kSignedRankLevel). Without them,
/// unless the uniform's `damage` is strictly lower (ties keep the plan). A
/// NaN uniform never wins; a NaN plan never holds against a finite one.
///
/// Why three: per-input KL is heavy-tailed, one or two inputs hold most of a
/// mean's spread, and the plan is chosen on the inputs it is measured on.
/// On the recogniser's 19 lines at int4's bytes the t bound (+0.0071) and
/// the rank test (p 0.22; lower on 11 of 19 lines) both kept uniform
/// int4-gptq (held out 0.1275) over a plan at 0.622× its calibration mean
/// that measured 0.0606 held out: the margin keeps that plan. At int8's
/// bytes on 40 + 40 lines the margin alone (stops 36–37) kept a plan at
/// 0.585× uniform int8-gptq that was lower on only 5 of the 40 calibration
/// lines (two lines made its mean; int8-gptq lower by rank, p 0.0003) and
/// measured 1.69× it held out, lower on 4 of 40 there: the rank veto keeps
/// int8-gptq (docs/benchmarks.md, stop 38).
bool plan_holds(const GuardPoint& plan, const GuardPoint& uniform);

/// The index of the lowest `damage` (the statistic verification and the
/// report print: for KL the mean over every output row of the calibration
/// inputs) among points[1..] at no more than `budget` bytes, NaN ones left
/// out, the first of equal ones; 0 when there is none.
size_t best_uniform(const std::vector<GuardPoint>& points, int64_t budget);

/// The point the guard keeps: the solver's plan (the first point) when there
/// is no uniform point within the budget or plan_holds against the best one
/// (best_uniform); that uniform otherwise. The plan is chosen on the same
/// calibration inputs it is measured on, with a free choice per layer, so
/// its calibration damage flatters it more than a uniform scheme's: it has to
/// win on paired evidence or by a margin (plan_holds). The detector at int8's bytes (4 calibration
/// canvases): the plan's calibration damage close to uniform int8-gptq's
/// (per-input geometric means 0.000346 and 0.000310), and 12× int8-gptq's
/// damage on the held-out canvases. Both the ranking and
/// the test use the mean, not a per-input geometric mean: on the recogniser
/// at int4-g128's bytes a geometric-mean rule picked uniform int4-gptq
/// (higher mean, 1.3× int4-g128-gptq's held-out KL) and refused a plan whose
/// mean calibration KL was 4.4× below every uniform's. Throws Error (source
/// "guard") for no points.
size_t guard_pick(const std::vector<GuardPoint>& points, int64_t budget);

/// The guard's one-line verdict, as compress prints it: which point it kept
/// (`kept`, an index of `points`, points[0] the solver's plan) and on what
/// evidence (its calibration `metric`, e.g. "kl (mean)", the best uniform
/// within `budget` bytes and the paired bound of plan − it), how many uniform
/// plans were within the budget and over it, the `folds` -gptq plans were
/// cross-fitted in (said when > 1). When a uniform is kept over a plan of
/// lower calibration damage, it says that more calibration inputs narrow the
/// bound (the plan's per_input: one value per input). Throws Error (source
/// "guard") when `kept` is not an index of `points`.
std::string guard_verdict(const std::vector<GuardPoint>& points, size_t kept, int64_t budget,
                          const std::string& metric, size_t folds);

/// What compress_model did and measured.
struct CompressResult {
  /// "onnx" or "llama".
  std::string kind;
  std::string out_dir;
  ModelProfile profile;
  bool profile_cached = false;
  /// Seconds spent measuring output damage (0 when cached or not measured).
  double damage_seconds = 0;
  /// Seconds spent computing the calibration Grams (0 without the output
  /// objective, or without a -gptq scheme: only GPTQ reads them): every
  /// layer's for a profile not in the cache, else only those of the -gptq
  /// layers the plans pick (the guard's uniform -gptq plans: every layer's).
  double gram_seconds = 0;
  plan::Plan plan;
  /// The uniform guard's points (empty when it did not run) and the index kept.
  std::vector<GuardPoint> guard;
  size_t guard_kept = 0;
  /// Folds the guard measured plans with -gptq layers in (four, or one per
  /// input with fewer; 1: not cross-fitted, or the guard did not run).
  size_t guard_folds = 1;
  double guard_seconds = 0;
  /// How the written plan's -gptq layers were fitted (gptq_fit_name): the
  /// guard measures each plan within the budget cross-fitted both
  /// sequentially and per layer and keeps the lower, and a --uniform run
  /// with ≥ 2 calibration inputs measures its plan so; otherwise (--no-guard,
  /// one input) sequentially.
  std::string gptq_fit = "sequential";
  /// The guard's cross-fitted damage of the solver's plan with its -gptq
  /// layers fitted sequentially and per layer (NaN unless it measured both;
  /// GuardPoint 0 holds the lower).
  double plan_damage_sequential = std::numeric_limits<double>::quiet_NaN();
  double plan_damage_per_layer = std::numeric_limits<double>::quiet_NaN();
  std::vector<LayerRewrite> rewrites;
  report::Verification verification;
  /// ONNX: the written model.onnx, run by tailor's runtime on the first
  /// verification input, against the CompressedLinear/Conv graph: max |Δ|
  /// over all outputs (NaN when not measured). llama: model.onnx (tailor's
  /// runtime) against the compressed llm forward pass (Encoded matmuls) on
  /// the first sampled sequence, max |Δ| of the logits.
  double standard_vs_tailor_max_abs = std::numeric_limits<double>::quiet_NaN();
  /// llama: standard_vs_tailor_max_abs / max |logit| (NaN when not measured).
  double standard_vs_tailor_max_rel = std::numeric_limits<double>::quiet_NaN();
  /// Seconds spent running the original and the compressed model over the
  /// verification inputs (tailor's runtime; ONNX only).
  double original_seconds = 0, compressed_seconds = 0;
  /// OCR recogniser: the fixture lines read differently by the compressed
  /// model: (file, truth, original's text, compressed's text).
  struct OcrDiff {
    std::string file, truth, original, compressed;
  };
  std::vector<OcrDiff> ocr_differences;
  /// Lines read exactly by the original and the compressed model (of
  /// `verification.inputs`), spaces ignored (tasks::ocr_score_line); a line in
  /// ocr_differences may differ by spaces alone, since those compare the texts
  /// as read.
  int64_t ocr_exact_original = 0, ocr_exact_compressed = 0;
  /// llama: KL divergence and top-1 agreement statistics.
  std::optional<llm::CompareResult> kld;
  /// Bytes of each file written, by file name.
  std::map<std::string, int64_t> file_bytes;
  /// Under max_latency: the original's and the written model.onnx's latency
  /// as `tailor run` runs them (CPU ms, 1 thread, medians of 9 interleaved
  /// rounds on the latency input); NaN otherwise.
  double latency_original_ms = std::numeric_limits<double>::quiet_NaN();
  double latency_compressed_ms = std::numeric_limits<double>::quiet_NaN();
  double seconds = 0;
};

/// Runs the whole job (see the file comment). f16 graphs (ISNet) are run in
/// f32 by the runtime (graph::promote_f16_to_f32) for verification.
/// Verification inputs, in order
/// of preference: `calib_dir` (single-input models: every *.npy is one input,
/// and for an image input [1, 3, H, W] every *.png, resized bilinearly to
/// H×W and normalised by image_mean / image_std; otherwise every subfolder
/// holds `<input name>.npy` per input), the OCR
/// fixture lines when the model is a PaddleOCR recogniser (one input, last
/// output dimension = the key list's classes), else `random_inputs` seeded
/// N(0, 1) tensors of the declared shapes (unknown dims: 1 for the first,
/// 64 for the others; integer inputs 0).
/// Saliency task (`task`): per input, the mean absolute error of the
/// compressed model's first output against the original's and the IoU of
/// both thresholded at 0.5 (tasks::compare_masks), in verification.saliency;
/// verification.metric is then the mean IoU (original 1 by definition).
/// `predicted_error` is the plan's objective (numel: Σ_i numel_i/N·e_i², the
/// parameter-weighted mean squared relative weight error), `measured_error`
/// the mean over outputs of the squared relative output error (llama: of the
/// logits), the same unit.
/// Throws Error naming the model, the budget or the failing stage's file;
/// nothing is left in or beside out_dir then.
CompressResult compress_model(const CompressOptions& options);

}  // namespace tailor::compress
