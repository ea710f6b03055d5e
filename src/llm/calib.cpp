// Activation statistics of a llama model (include/tailor/llm/calib.h).
#include "tailor/llm/calib.h"

#include <algorithm>

#include "tailor/core/error.h"
#include "tailor/io/safetensors.h"
#include "tailor/llm/llama.h"
#include "tailor/runtime/calibration.h"

namespace tailor::llm {

std::map<std::string, std::vector<float>> collect_input_stats(
    const graph::Model& model, const std::vector<std::vector<int32_t>>& sequences) {
  check(!sequences.empty(), "calibration", "no sequences to collect statistics from");
  const std::map<std::string, std::string> inputs = linear_inputs(model);
  std::vector<runtime::LayerInput> layers;
  for (runtime::LayerInput& l : runtime::layer_inputs(model)) {
    const auto it = inputs.find(l.weight);
    if (it != inputs.end() && it->second == l.value && l.kernel.empty()) layers.push_back(l);
  }
  runtime::InputStats stats(std::move(layers), false);
  Decoder decoder(model, stats.values());
  for (const auto& seq : sequences) {
    check(!seq.empty(), "calibration", "empty sequence");
    decoder.reset();
    decoder.forward(seq);
    stats.add(decoder.outputs());
  }
  return stats.mean_squares();
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
