// The cost-model trainer across several graphs (DESIGN.md, "Differentiable
// compilation"): measures configurations of each graph with the tuner's
// harness (same check, same timing), fits one set of non-negative cost-model
// coefficients to all measurements together — the terms are per-node analytic
// counts (FLOPs, bytes, kernels, ...), so coefficients carry over between
// graphs — reports the rank correlation on held-out configurations per graph
// and pooled, and evaluates the learned parameters as a warm start on graphs
// outside the training set.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tailor/graph/graph.h"
#include "tailor/tune/cost_model.h"
#include "tailor/tune/harness.h"
#include "tailor/tune/record.h"
#include "tailor/tune/search.h"
#include "tailor/tune/space.h"

namespace tailor::tune {

/// Measured configurations of one graph: the cost model's terms of each
/// configuration that passed its check and its latency.
struct GraphSamples {
  /// The graph's name (its model path).
  std::string name;
  /// Per sample: DecisionSpace::key of the configuration.
  std::vector<std::string> keys;
  /// Per sample: graph_features of the configuration (feature_names order).
  std::vector<std::vector<double>> features;
  /// Per sample: latency in milliseconds (> 0), the harness's statistic.
  std::vector<double> latency_ms;
};

/// One graph prepared for measuring: its harness (reference outputs on seeded
/// random inputs), observed value shapes, decision space and applier, and a
/// cache of every configuration measured (each is checked once and timed at
/// most once). The oracle and features are those tune_model uses.
class GraphBench {
 public:
  /// `threads`: most threads offered (0: the kernels' current count).
  /// Throws Error from the harness (inputs, shapes) or the passes.
  GraphBench(const graph::Model& model, std::string name,
             const std::map<std::string, std::vector<int64_t>>& input_shapes, uint64_t seed,
             int threads, const HarnessOptions& harness);
  GraphBench(const GraphBench&) = delete;
  GraphBench& operator=(const GraphBench&) = delete;

  const std::string& name() const { return name_; }
  const DecisionSpace& space() const { return *space_; }
  /// Latency (the harness statistic) in ms, or nullopt when the check failed.
  const Oracle& oracle() const { return oracle_; }
  const FeatureFn& features() const { return features_; }
  /// Every configuration measured so far, in order (a TuneRecord's `measured`).
  const std::vector<MeasuredConfiguration>& measured() const { return measured_; }
  /// The checked configurations measured so far as samples.
  GraphSamples samples() const;

 private:
  std::string name_;
  std::unique_ptr<Harness> harness_;
  ValueShapes shapes_;
  std::unique_ptr<DecisionSpace> space_;
  std::unique_ptr<Applier> applier_;
  MachineInfo machine_;
  std::vector<MeasuredConfiguration> measured_;
  std::map<std::string, size_t> by_key_;
  Oracle oracle_;
  FeatureFn features_;
};

/// Measures `count` distinct configurations of `bench`'s space (fewer when the
/// space is smaller): the default, then alternately a uniform random
/// configuration and the default with 1–3 decisions changed (Rng(seed)).
/// A configuration failing its check counts but yields no sample.
void sample_configurations(GraphBench& bench, int count, uint64_t seed);

/// Settings of train_cost_model.
struct TrainOptions {
  /// Fraction of each graph's samples held out for the rank correlation
  /// (at least 3 per graph when it has 6 or more samples).
  double held_out = 0.25;
  uint64_t seed = 0;
  /// Full-batch Adam steps and learning rate of each fit.
  int iterations = 3000;
  double lr = 0.05;
  /// Every coefficient's starting value (> 0).
  double initial = 0.1;
};

/// The rank correlation of one graph's held-out samples.
struct GraphFit {
  std::string name;
  int train = 0;
  int held_out = 0;
  /// Spearman ρ of predicted vs measured latency on the held-out samples
  /// (nullopt below 3 held-out samples).
  std::optional<double> spearman;
};

/// What train_cost_model returns.
struct TrainResult {
  /// Fitted on every sample of every graph (the parameters to save).
  CostModel model;
  /// Per graph, the split fit's held-out ρ.
  std::vector<GraphFit> graphs;
  /// ρ over the held-out samples of all graphs together (between-graph
  /// latency differences included, so it is high whenever graph sizes
  /// differ), and the mean of the per-graph ρ.
  std::optional<double> spearman_pooled;
  std::optional<double> spearman_mean_per_graph;
  /// Mean squared log-latency error of the final fit on all samples.
  double loss = 0;
};

/// Fits one CostModel to the samples of every graph together (CostModel::fit,
/// the log-latency loss, each sample weighted equally): first on each graph's
/// training part (a seeded shuffle, `held_out` of it kept back) to report the
/// held-out ρ, then on all samples for the returned model. Throws
/// Error("train", ...) when there are no samples or a feature vector has the
/// wrong length.
TrainResult train_cost_model(const std::vector<GraphSamples>& graphs, const TrainOptions& options);

/// The learned parameters as JSON: CostModel::to_json (so `tailor tune
/// --cost-model` reads it) plus "trained_on" (graph names, sample counts,
/// held-out ρ), "spearman_pooled", "spearman_mean_per_graph", "loss".
nlohmann::json train_result_json(const TrainResult& r);

/// One point of a warm-start curve: the gradient method run for k
/// measurements from one initial cost model.
struct WarmStartPoint {
  int k = 0;
  /// ρ of the cost model after k measurements (refitted on all k) on the
  /// pool's samples the method did not measure; nullopt below 3 of them.
  std::optional<double> spearman;
  int held_out = 0;
  /// Lowest latency among the k measurements, ms (0 when none passed).
  double best_ms = 0;
};

/// Runs search_gradient on `bench` for each k in `ks` from `initial`
/// (seed `seed`), refits a copy of the returned model on the k measurements
/// (as the next step would), and scores it on `pool` (samples of the same
/// graph, e.g. from sample_configurations) minus the configurations it
/// measured. k = 0 scores `initial` itself on the whole pool.
std::vector<WarmStartPoint> warm_start_curve(GraphBench& bench, const GraphSamples& pool,
                                             const CostModel& initial, const std::vector<int>& ks,
                                             uint64_t seed, const GradientOptions& options = {});

}  // namespace tailor::tune
