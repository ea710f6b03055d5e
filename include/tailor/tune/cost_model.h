// The tuner's differentiable cost model: predicted latency = Σ_j softplus(θ_j)·f_j
// over analytic terms f_j of the graph a configuration produces (FLOPs, bytes
// moved, kernel count, working set beyond the cache, ...), the coefficients
// non-negative by the softplus parameterisation, fitted by the decision
// layer's Adam (Kingma & Ba, 2015) to measured latencies with a log-latency loss.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tailor/graph/graph.h"
#include "tailor/tune/space.h"

namespace tailor::tune {

/// Cache sizes the terms compare working sets against, in bytes.
struct MachineInfo {
  int64_t l2_bytes = 1 << 20;
  int64_t llc_bytes = 32 << 20;
  /// From sysconf (_SC_LEVEL2_CACHE_SIZE, _SC_LEVEL3_CACHE_SIZE), these defaults where unknown.
  static MachineInfo detect();
};

/// Names of the terms graph_features returns, in order (units in the name).
const std::vector<std::string>& feature_names();

/// The analytic terms of `model` run on `threads` threads, summed over its
/// main-graph nodes: [1 (fixed overhead), GEMM/conv FLOPs/10⁷/threads,
/// other ops' element operations/10⁷/threads, bytes read and written/10⁷,
/// kernels/100, kernels·(threads − 1)/100, Σ max(0, working set − L2)/10⁷,
/// sgemm calls/100, Winograd conv FLOPs/10⁷/threads, compressed layers'
/// FLOPs/10⁷/threads on the weight-only kernels, and on the W8A8 ones
/// (int8-a8 weights and "kernel_variant" = "w8a8"; 2·Encoded::macs of the
/// layer's rows, its stored bytes in its working set)]. A conv's FLOPs count
/// as Winograd's when it runs that kernel (its "conv_algorithm" attribute,
/// else runtime::kernels::conv_default_algorithm; its working set then adds
/// the transformed weights), else as GEMM FLOPs; a node with attribute
/// "threads" = 1 counts on one thread. Value shapes come from `shapes` (the unoptimized
/// model's run); values the passes created take the shape of their largest
/// input (Transpose permutes it), an approximation the fit absorbs.
std::vector<double> graph_features(const graph::Model& model, int threads,
                                   const ValueShapes& shapes, const MachineInfo& machine);

/// softplus(x) = log(1 + eˣ), computed without overflow.
double softplus(double x);

/// The cost model. Coefficients are softplus(theta): never negative.
class CostModel {
 public:
  /// `n` terms, each coefficient starting at `initial` (> 0).
  explicit CostModel(size_t n = 0, double initial = 0.1);
  /// One term per coefficient, θ = softplus⁻¹(c); throws Error("cost
  /// model", ...) unless every c is finite and > 0.
  static CostModel from_coefficients(const std::vector<double>& c);
  size_t size() const { return theta_.size(); }
  std::vector<double> coefficients() const;
  const std::vector<double>& theta() const { return theta_; }
  /// Predicted latency Σ softplus(θ_j)·f_j (plus 1e-9 so its log is finite).
  double predict(const std::vector<double>& f) const;
  /// Fits θ by `iterations` full-batch decision::Adam steps (learning rate
  /// `lr`, β = 0.9, 0.999, ε = 1e-8) on L = mean_i (log predict(X_i) − log y_i)²,
  /// starting from the current θ. y_i > 0. With `anchor` (size() values)
  /// the loss adds anchor_weight·Σ_j (θ_j − anchor_j)², a Gaussian prior that
  /// keeps a warm start's coefficients where few measurements say little.
  /// Returns the final loss (the prior term included).
  double fit(const std::vector<std::vector<double>>& X, const std::vector<double>& y,
             int iterations = 500, double lr = 0.05, double anchor_weight = 0,
             const std::vector<double>* anchor = nullptr);
  /// {"terms": [...], "theta": [...], "coefficients": [...]}.
  nlohmann::json to_json(const std::vector<std::string>& names) const;
  /// Reads to_json's output; throws Error("cost model", ...) when the term
  /// names differ from `names`.
  static CostModel from_json(const nlohmann::json& j, const std::vector<std::string>& names);

 private:
  std::vector<double> theta_;
};

/// Spearman's rank correlation of a and b (average ranks for ties); 0 when
/// either is constant or they have fewer than 2 elements.
double spearman(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace tailor::tune
