// Activation statistics of a llama model (include/tailor/llm/calib.h).
#include "tailor/llm/calib.h"

#include <algorithm>

#include "tailor/core/error.h"
#include "tailor/io/safetensors.h"
#include "tailor/llm/llama.h"

namespace tailor::llm {

std::map<std::string, std::vector<float>> collect_input_stats(
    const graph::Model& model, const std::vector<std::vector<int32_t>>& sequences) {
  check(!sequences.empty(), "calibration", "no sequences to collect statistics from");
  const std::map<std::string, std::string> inputs = linear_inputs(model);
  std::vector<std::string> activations;
  for (const auto& [w, x] : inputs)
    if (std::find(activations.begin(), activations.end(), x) == activations.end())
      activations.push_back(x);
  Decoder decoder(model, activations);
  // Per activation: Σ x_j² over rows (double) and the row count.
  std::map<std::string, std::pair<std::vector<double>, int64_t>> sums;
  for (const auto& seq : sequences) {
    check(!seq.empty(), "calibration", "empty sequence");
    decoder.reset();
    decoder.forward(seq);
    for (const std::string& a : activations) {
      const Tensor x = decoder.outputs().at(a).contiguous();
      check(x.dtype() == DType::f32 && x.rank() >= 1, "calibration",
            "activation '" + a + "' is not an f32 tensor");
      const int64_t in = x.dim(x.rank() - 1), rows = in > 0 ? x.numel() / in : 0;
      auto& [sum, n] = sums[a];
      sum.resize(static_cast<size_t>(in), 0.0);
      const float* p = x.data<float>();
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < in; ++j)
          sum[static_cast<size_t>(j)] += static_cast<double>(p[r * in + j]) * p[r * in + j];
      n += rows;
    }
  }
  std::map<std::string, std::vector<float>> stats;
  for (const auto& [w, a] : inputs) {
    const auto& [sum, n] = sums.at(a);
    std::vector<float> m(sum.size(), 0.0f);
    for (size_t j = 0; j < m.size() && n > 0; ++j)
      m[j] = static_cast<float>(sum[j] / static_cast<double>(n));
    stats[w] = std::move(m);
  }
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
