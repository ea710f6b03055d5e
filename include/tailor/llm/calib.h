// Activation statistics of a llama model for activation-aware planning
// (DESIGN.md: the calibration-weighted error sqrt(Σ d_j (W−Ŵ)²_ij) / sqrt(Σ d_j W²_ij),
// d_j = mean over tokens of x_j², as in AWQ/GPTQ-style calibration).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tailor/graph/graph.h"

namespace tailor::llm {

/// Runs the decoder graph `model` (llama.h) over each sequence (empty caches,
/// the whole sequence in one step) with the input activation of every linear
/// weight (linear_inputs) exposed as an extra output of the executor run, and
/// returns, per linear weight (its initializer name), the per-input-channel
/// mean x² [in] over all tokens (rows) of all sequences. Throws Error (source
/// "calibration") when `sequences` or one of them is empty, and as
/// Decoder::forward does.
std::map<std::string, std::vector<float>> collect_input_stats(
    const graph::Model& model, const std::vector<std::vector<int32_t>>& sequences);

/// Writes `stats` as the calibration file `tailor profile --calib` reads
/// (safetensors, one f32 vector per layer named as the layer), atomically.
void write_calibration(const std::string& path,
                       const std::map<std::string, std::vector<float>>& stats);

}  // namespace tailor::llm
