// `tailor tune`: runs every search method on one model under the same
// measurement budget, re-measures the best candidates in interleaved rounds,
// chooses one configuration, and keeps everything in a replayable decision
// record (decisions.json, schema in the README's "tailor tune" section).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tailor/graph/graph.h"
#include "tailor/tune/harness.h"
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
  HarnessOptions harness;
  /// Interleaved rounds of the final paired re-measurement, and how many of
  /// each method's best configurations enter it.
  int paired_rounds = 7;
  int paired_top = 2;
  /// Warm start of the cost model (CostModel::to_json output), if any.
  std::optional<nlohmann::json> cost_model;
  GradientOptions gradient;
  /// Path recorded in the record (for messages and replay).
  std::string model_path;
};

/// One row of the method table.
struct MethodRow {
  std::string method;
  /// Best latency (paired re-measurement median), ms; 0 when nothing passed.
  double best_ms = 0;
  /// Default's paired median / best_ms.
  double speedup = 0;
  int measurements = 0;
  /// Seconds its measurements took (a measurement another method made first
  /// is charged at what it cost then).
  double tuning_s = 0;
  int64_t peak_bytes = 0;
};

/// One entry of a decision record's `measured` array: configuration `c`
/// applied by `applier` and checked and timed by `harness`; a pass that throws
/// fails the check, its message the entry's error. Keys: `config`, `key`
/// (DecisionSpace::key), `check` {`ok`, `max_rel_error` (null when not finite),
/// `error` when not ok}, `times_ms`, `median_ms`, `min_ms`, `mad_ms` (ms),
/// `peak_bytes` (peak activation bytes), `cost_s` (seconds spent checking and
/// timing). Shared by `tailor tune` and `tailor tune-train`.
nlohmann::json measure_configuration(const Harness& harness, Applier& applier,
                                     const Configuration& c);

/// Tunes `model` and returns the decision record (JSON).
nlohmann::json tune_model(const graph::Model& model, const TuneOptions& options);

/// The method table of a record.
std::vector<MethodRow> method_table(const nlohmann::json& record);

/// Re-derives the chosen configuration from `record`'s measurements without
/// measuring: rebuilds the decision space of `model` (which must be the
/// record's model) from the recorded value shapes, reruns every method with
/// the recorded seed against the recorded latencies, and picks the winner from
/// the recorded paired rounds. Throws Error("replay", ...) when the record
/// lacks a measurement the replay asks for (another model, seed or version).
Configuration replay(const graph::Model& model, const nlohmann::json& record);

/// The record's decision space (as recorded, no model needed).
DecisionSpace space_from_record(const nlohmann::json& record);
/// The record's chosen configuration.
Configuration chosen_from_record(const nlohmann::json& record);

/// Applies the record's chosen decisions to `model` (the record's model:
/// Error("tuning", ...) when its node count or conv names differ) and
/// returns the graph to run and the thread count.
AppliedConfiguration apply_record(const graph::Model& model, const nlohmann::json& record);

/// Reads a decision record; throws Error naming the file on bad JSON or a
/// missing field.
nlohmann::json read_record(const std::string& path);

}  // namespace tailor::tune
