// `tailor tune`: runs every search method on one model under the same
// measurement budget, re-measures the best candidates in interleaved rounds,
// chooses one configuration, and keeps everything in a replayable decision
// record (TuneRecord; decisions.json through record.h's JSON boundary).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tailor/graph/graph.h"
#include "tailor/tune/cost_model.h"
#include "tailor/tune/harness.h"
#include "tailor/tune/record.h"
#include "tailor/tune/search.h"
#include "tailor/tune/space.h"

namespace tailor::tune {

/// Settings of tune_model.
struct TuneOptions {
  /// Measurements each method may spend (default, exhaustive: their own counts).
  int measurements = 24;
  uint64_t seed = 0;
  /// Most threads offered (0: the kernels' current thread count).
  int threads = 0;
  /// Shapes of inputs with symbolic dims.
  std::map<std::string, std::vector<int64_t>> input_shapes;
  /// Inputs to check and time every configuration on instead of seeded
  /// random ones (`tailor tune --input NAME=FILE.npy`): an approximate
  /// choice (a W8A8 kernel variant) is then held to the tolerance on the
  /// data it will run on. Their shapes are recorded as input_shapes.
  std::map<std::string, Tensor> inputs;
  HarnessOptions harness;
  /// Interleaved rounds of the final paired re-measurement, and how many of
  /// each method's best configurations enter it.
  int paired_rounds = 7;
  int paired_top = 2;
  /// Warm start of the cost model (feature_names() terms), if any.
  std::optional<CostModel> cost_model;
  GradientOptions gradient;
  /// Path recorded in the record (for messages and replay).
  std::string model_path;
};

/// Checks and times configuration `c` applied by `applier` with `harness`
/// (only checks it when `timed` is false: the gradient method's screen); a
/// pass that throws fails the check, its message the entry's error. Shared by
/// `tailor tune` and `tailor tune-train`.
MeasuredConfiguration measure_configuration(const Harness& harness, Applier& applier,
                                            const Configuration& c, bool timed = true);

/// One-sided sign test on paired rounds (rounds[r][i]: candidate i's time in
/// round r): with k the rounds where `candidate` is faster than `baseline`
/// and n the rounds where they differ, P(X ≥ k) for X ~ Binomial(n, 1/2),
/// the chance of k or more wins were neither faster (1 when n = 0).
double sign_test_p_value(const std::vector<std::vector<double>>& rounds, size_t candidate,
                         size_t baseline);

/// Significance of the sign test a configuration must pass to replace the default.
inline constexpr double kReplaceDefaultAlpha = 0.05;

/// The configuration tune chooses from the paired rounds (rounds[r][i]:
/// candidate pool[i]'s latency in round r; medians[i] its paired statistic):
/// the least median when `fallback` (the default) is not in the pool;
/// otherwise the least median among the candidates sign_test_p_value shows
/// faster than the default at kReplaceDefaultAlpha / m, m the candidates
/// whose median is below the default's (each of them is tested:
/// Bonferroni), else the default. Returns an index into pool. (The least median alone, tested
/// alone, lost its place to one slow round: on the compressed detector a candidate at 0.65× the
/// default measured 32.6 ms once in 7 rounds, so 6 wins, and the default stayed though another
/// candidate at 0.66× had won all 7.)
size_t pick_winner(const std::vector<Configuration>& pool, const std::vector<double>& medians,
                   const std::vector<std::vector<double>>& rounds, const Configuration& fallback);

/// One method's best-so-far curve in a record: best_ms[i] is the least
/// latency (first measurement, the record's statistic) among the method's
/// first i + 1 measurements, 0 while none of them passed its check.
struct SearchCurve {
  std::string method;
  std::vector<double> best_ms;
};

/// Every method's curve, in the record's method order (issue 16's sample
/// efficiency: best latency reached against measurements spent).
std::vector<SearchCurve> search_curves(const TuneRecord& record);

/// The fewest measurements after which `curve` is within `fraction` of
/// `target_ms` (target_ms / best_ms ≥ fraction, e.g. 0.97 for "97% of the
/// best"); -1 when it never is. Throws Error("tune", ...) unless
/// 0 < fraction ≤ 1 and target_ms > 0.
int measurements_to_reach(const SearchCurve& curve, double target_ms, double fraction);

/// Tunes `model` and returns the decision record. The chosen configuration
/// is pick_winner's over the paired rounds: the least paired median among
/// the pool's candidates a sign test shows faster than the default; when
/// none is, the default stays (with 7 rounds a candidate must win all 7).
TuneRecord tune_model(const graph::Model& model, const TuneOptions& options);

/// Re-derives the chosen configuration from `record`'s measurements without
/// measuring: rebuilds the decision space of `model` (which must be the
/// record's model) from the recorded value shapes, reruns every method with
/// the recorded seed against the recorded latencies, and picks the winner from
/// the recorded paired rounds. Throws Error("replay", ...) when the record
/// lacks a measurement the replay asks for (another model, seed or version).
Configuration replay(const graph::Model& model, const TuneRecord& record);

/// Applies the record's chosen decisions to `model` (the record's model:
/// Error("tuning", ...) when its node count or conv names differ) and
/// returns the graph to run and the thread count.
AppliedConfiguration apply_record(const graph::Model& model, const TuneRecord& record);

}  // namespace tailor::tune
