// Calibration statistics of a model's weight layers: the activations each
// weight multiplies, collected by running the executor with them exposed as
// extra outputs, reduced to the Gram matrix H = XᵀX (GPTQ's Hessian, Frantar
// et al., 2022) or to its diagonal (the per-input mean x² of activation-aware
// errors, DESIGN.md).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "tailor/core/tensor.h"
#include "tailor/graph/graph.h"
#include "tailor/linalg/svd.h"
#include "tailor/schemes/scheme.h"

namespace tailor::runtime {

/// Where a weight layer reads its input: the value its consumer multiplies it
/// with, and, for a Conv, how that value becomes rows X [rows, in] (im2col
/// patches in the (channel, ky, kx) order of the kernel's [out, in/g·kh·kw] view).
struct LayerInput {
  /// The weight (an initializer or Constant of the main graph, or its Cast).
  std::string weight;
  /// The activation value (the consumer's input 0).
  std::string value;
  /// Columns of X: the weight's `in`.
  int64_t in = 0;
  /// Conv only (empty for MatMul / Gemm): kernel [kh, kw], strides, dilations,
  /// pads [top, left, bottom, right], group.
  std::vector<int64_t> kernel, strides, dilations, pads;
  int64_t group = 1;
};

/// The weight layers of the main graph whose input rows are defined: the B
/// operand (rank 2) of MatMul, of Gemm with transA = 0, and 2-D Conv kernels
/// (explicit pads, auto_pad NOTSET); a weight reached through one Cast counts
/// as the weight. A weight read by several such nodes has one entry per node
/// (its X stacks their rows). Order: node order.
std::vector<LayerInput> layer_inputs(const graph::Model& model);

/// Accumulates per-layer statistics of activation tensors.
class InputStats {
 public:
  /// `full`: H = XᵀX (in² doubles per layer); otherwise only Σ x_j².
  InputStats(std::vector<LayerInput> layers, bool full);

  /// The activation values to expose as outputs (each once, node order).
  std::vector<std::string> values() const;
  /// Adds the rows of every layer's activation found in `values` (by name).
  /// Throws Error naming the value when it is not f32 or its shape does not
  /// give rows of `in` columns. NaN/Inf propagate into the sums.
  void add(const std::map<std::string, Tensor>& values);

  /// Per weight: H (full) summed over rows; `rows` counts them.
  std::map<std::string, schemes::Gram> grams() const;
  /// The same, releasing each accumulator as its Gram is formed (peak: the
  /// Grams plus one layer's accumulator, not twice the Grams); the stats are
  /// empty afterwards.
  std::map<std::string, schemes::Gram> take_grams();
  /// Per weight: mean over rows of x_j² [in] (0 with no rows).
  std::map<std::string, std::vector<float>> mean_squares() const;

 private:
  std::vector<LayerInput> layers_;
  /// Per weight: in and rows, and Σ x_j² in h when not full.
  std::map<std::string, schemes::Gram> acc_;
  /// Per weight when full: H's lower triangle (linalg::gram_accumulate).
  std::map<std::string, linalg::MatrixD> full_;
};

/// H = XᵀX per weight layer (layer_inputs) over the calibration `feeds` (each
/// a complete input map of `model`, run one at a time by an Executor with the
/// activations exposed as outputs). Accumulated in double. A layer whose
/// inputs are all zero has H = 0 (GPTQ damps it). Throws Error (source
/// "calibration") when `feeds` is empty or an activation holds NaN/Inf, and as
/// Executor::run does for a bad feed. `weights`: only these layers (by weight
/// name; the others' activations are neither exposed nor accumulated, so the
/// cost is the runs plus these layers' rows·in² each); nullptr: every layer.
/// `labels` (one per feed, e.g. its file; nullptr: none): a feed the model
/// cannot run throws the executor's Error with the feed's label as source.
std::map<std::string, schemes::Gram> gram(const graph::Model& model,
                                          const std::vector<std::map<std::string, Tensor>>& feeds,
                                          const std::set<std::string>* weights = nullptr,
                                          const std::vector<std::string>* labels = nullptr);

}  // namespace tailor::runtime
