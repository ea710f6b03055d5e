// Activation statistics of a llama model for activation-aware planning
// (DESIGN.md: the calibration-weighted error sqrt(Σ d_j (W−Ŵ)²_ij) / sqrt(Σ d_j W²_ij),
// d_j = mean over tokens of x_j², as in AWQ/GPTQ-style calibration).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "tailor/llm/llama.h"

namespace tailor::llm {

/// Wraps a Linear and accumulates, per input channel j, Σ x_j² and the number
/// of input rows (tokens) it has seen; forward is the wrapped one's.
class RecordingLinear final : public Linear {
 public:
  explicit RecordingLinear(std::shared_ptr<const Linear> inner);
  int64_t out() const override { return inner_->out(); }
  int64_t in() const override { return inner_->in(); }
  void forward(const float* x, int64_t batch, float* y) const override;
  uint64_t bytes() const override { return inner_->bytes(); }
  std::string label() const override { return inner_->label(); }
  /// Per-input-channel mean x² [in] over every row seen (zeros before any).
  std::vector<float> mean_square() const;
  /// Rows (tokens) seen.
  int64_t rows() const;

 private:
  std::shared_ptr<const Linear> inner_;
  mutable std::mutex mutex_;
  mutable std::vector<double> sum_sq_;
  mutable int64_t rows_ = 0;
};

/// Runs `model` over each sequence (a fresh KV cache per sequence, the whole
/// sequence in one forward) with every Linear wrapped in a RecordingLinear,
/// and returns, per Linear (file names as linear_names()), the per-input-channel
/// mean x² [in] over all tokens of all sequences. Throws Error (source
/// "calibration") when `sequences` is empty, and as LlamaSession::forward does.
std::map<std::string, std::vector<float>> collect_input_stats(
    const LlamaModel& model, const std::vector<std::vector<int32_t>>& sequences);

/// Writes `stats` as the calibration file `tailor profile --calib` reads
/// (safetensors, one f32 vector per layer named as the layer), atomically.
void write_calibration(const std::string& path,
                       const std::map<std::string, std::vector<float>>& stats);

}  // namespace tailor::llm
