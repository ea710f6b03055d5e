// Activation statistics of a llama model (include/tailor/llm/calib.h).
#include "tailor/llm/calib.h"

#include "tailor/core/error.h"
#include "tailor/io/safetensors.h"

namespace tailor::llm {

RecordingLinear::RecordingLinear(std::shared_ptr<const Linear> inner)
    : inner_(std::move(inner)), sum_sq_(static_cast<size_t>(inner_->in()), 0.0) {}

void RecordingLinear::forward(const float* x, int64_t batch, float* y) const {
  {
    const int64_t n_in = in();
    std::lock_guard<std::mutex> lock(mutex_);
    for (int64_t b = 0; b < batch; ++b) {
      const float* row = x + b * n_in;
      for (int64_t j = 0; j < n_in; ++j)
        sum_sq_[static_cast<size_t>(j)] += static_cast<double>(row[j]) * row[j];
    }
    rows_ += batch;
  }
  inner_->forward(x, batch, y);
}

std::vector<float> RecordingLinear::mean_square() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<float> m(sum_sq_.size(), 0.0f);
  if (rows_ == 0) return m;
  for (size_t j = 0; j < m.size(); ++j)
    m[j] = static_cast<float>(sum_sq_[j] / static_cast<double>(rows_));
  return m;
}

int64_t RecordingLinear::rows() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return rows_;
}

std::map<std::string, std::vector<float>> collect_input_stats(
    const LlamaModel& model, const std::vector<std::vector<int32_t>>& sequences) {
  check(!sequences.empty(), "calibration", "no sequences to collect statistics from");
  LlamaModel recorded = model;  // copies share the weights
  std::map<std::string, std::shared_ptr<const RecordingLinear>> recorders;
  for (const std::string& name : model.linear_names()) {
    auto rec = std::make_shared<const RecordingLinear>(model.linear_ptr(name));
    recorded.wrap_linear(name, rec);
    recorders[name] = rec;
  }
  for (const auto& seq : sequences) {
    check(!seq.empty(), "calibration", "empty sequence");
    LlamaSession session(recorded);
    session.forward(seq);
  }
  std::map<std::string, std::vector<float>> stats;
  for (const auto& [name, rec] : recorders) stats[name] = rec->mean_square();
  return stats;
}

void write_calibration(const std::string& path,
                       const std::map<std::string, std::vector<float>>& stats) {
  std::vector<NamedTensor> tensors;
  tensors.reserve(stats.size());
  for (const auto& [name, v] : stats)
    tensors.push_back({name, Tensor::from_f32({static_cast<int64_t>(v.size())}, v)});
  write_safetensors(path, tensors, {{"tailor.calibration", "per-input-channel mean x^2"}});
}

}  // namespace tailor::llm
