// The decision record of `tailor tune` as typed values: every measurement,
// every method's trials, the cost model before and after, the paired
// re-measurement, the method table and the chosen configuration. JSON only at
// the file boundary: one to_json/from_json pair per type (decisions.json,
// schema in docs/formats.md, "decisions.json"; tune-train's samples.json
// holds MeasuredConfiguration entries).
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tailor/tune/cost_model.h"
#include "tailor/tune/harness.h"
#include "tailor/tune/search.h"
#include "tailor/tune/space.h"

namespace tailor::tune {

/// One configuration checked and (when the check passed) timed: a record's
/// `measured` entry, the harness's Measurement of `config`. In a record,
/// max_rel_error is NaN when not finite and error is empty when ok. JSON keys:
/// `config`, `key`, `check` {`ok`, `max_rel_error` (null when not finite),
/// `error` (only when not ok)}, `times_ms`, `median_ms`, `min_ms`, `mad_ms`,
/// `peak_bytes`, `cost_s`.
struct MeasuredConfiguration : Measurement {
  Configuration config;
  /// DecisionSpace::key(config).
  std::string key;
  /// min_ms for `statistic` "min", else median_ms.
  double latency_ms(const std::string& statistic) const;
};

/// One evaluation of a method: the index of its `measured` entry and its key.
struct Trial {
  size_t measured = 0;
  std::string key;
};

/// One method's evaluations in order, and the key of its best configuration
/// in the paired re-measurement (empty when none of its configurations entered it).
struct MethodTrials {
  std::string name;
  std::vector<Trial> trials;
  std::string best_key;
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

/// The cost model the gradient method started from and the one it ended
/// with, and its rank correlation on configurations it never measured.
struct CostModelRecord {
  CostModel initial;
  CostModel fitted;
  /// Checked configurations the gradient method did not measure.
  size_t held_out = 0;
  /// Spearman ρ of fitted predictions vs measurements on them (nullopt below 3).
  std::optional<double> spearman_held_out;
};

/// The interleaved re-measurement of each method's best candidates.
struct PairedRecord {
  /// The candidates (DecisionSpace::key and configuration), in pool order.
  std::vector<std::string> pool;
  std::vector<Configuration> configs;
  /// rounds[r][i]: candidate i's latency in round r, ms.
  std::vector<std::vector<double>> rounds;
  /// Per candidate, the harness statistic over the rounds, ms.
  std::vector<double> latency_ms;
};

/// The configuration tune chose.
struct ChosenConfiguration {
  Configuration config;
  std::string key;
  /// Its paired latency, ms.
  double latency_ms = 0;
  /// Decision name → chosen choice.
  std::map<std::string, std::string> decisions;
};

/// Everything `tailor tune` decided and measured; replayable (replay()).
struct TuneRecord {
  /// The model's path as given, and its main-graph node count.
  std::string model;
  size_t model_nodes = 0;
  uint64_t seed = 0;
  /// Measurements each method could spend.
  int measurements = 0;
  /// Most threads offered.
  int threads = 0;
  std::map<std::string, std::vector<int64_t>> input_shapes;
  /// Shapes observed on the unoptimized model (rebuild the space on replay).
  ValueShapes value_shapes;
  /// The harness settings recorded (warmup, repeats, tolerance, check_inputs,
  /// statistic, clock) and the paired re-measurement's.
  HarnessOptions harness;
  int paired_rounds = 0;
  int paired_top = 0;
  GradientOptions gradient;
  DecisionSpace space;
  std::vector<MeasuredConfiguration> measured;
  /// Configurations checked and not timed by the gradient method's screen
  /// of approximate choices (search_gradient), each one approximate choice
  /// on the default, in check order. One a method measures later is also in
  /// `measured`, with the same check. Older records have none.
  std::vector<MeasuredConfiguration> screened;
  std::vector<MethodTrials> methods;
  CostModelRecord cost_model;
  PairedRecord paired;
  std::vector<MethodRow> table;
  ChosenConfiguration chosen;
};

/// The JSON boundary (nlohmann's to_json/from_json convention). from_json
/// throws Error("decision record", ...) naming a missing or mistyped field,
/// a configuration outside the recorded space, or cost-model terms other
/// than feature_names(); a record without "gradient" (older records) takes
/// GradientOptions' defaults.
void to_json(nlohmann::json& j, const MeasuredConfiguration& m);
void from_json(const nlohmann::json& j, MeasuredConfiguration& m);
void to_json(nlohmann::json& j, const TuneRecord& r);
void from_json(const nlohmann::json& j, TuneRecord& r);

/// Reads decisions.json; throws Error naming `path` on bad JSON, another
/// format than "tailor.tune/1", or what from_json throws.
TuneRecord read_record(const std::string& path);
/// Writes decisions.json atomically (1-space indented JSON); Error naming
/// `path` on I/O failure.
void write_record(const std::string& path, const TuneRecord& record);

}  // namespace tailor::tune
