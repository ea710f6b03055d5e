// Sequential GPTQ with the original model's products as its target. GPTQ
// (Frantar et al., 2022) fits each layer's codes to min ‖X·Wᵀ − X·Ŵᵀ‖² over
// calibration rows X of the original model. In a compressed model a layer sees
// X̃, the inputs the compressed layers before it produce. Encoding the layers in
// schedule order and fitting each to min ‖X·Wᵀ − X̃·Ŵᵀ‖² (the asymmetric
// objective of GPTAQ, Li et al., 2025) lets each layer absorb part of the error
// upstream of it. Here that objective is met in two steps: the ridge target W'
// of asymmetric_target, then GPTQ of W' against H̃ = X̃ᵀX̃, since
// ‖X·Wᵀ − X̃·Ŵᵀ‖² = ‖X̃·(W' − Ŵ)ᵀ‖² + const for the least-squares W'.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tailor/compress/rewrite.h"
#include "tailor/core/tensor.h"
#include "tailor/graph/graph.h"
#include "tailor/graph/weights.h"
#include "tailor/plan/plan.h"
#include "tailor/schemes/scheme.h"

namespace tailor::compress {

/// The share of the asymmetric correction a sequential fit applies: GPTAQ's
/// published default (its reference code scales the X̃ᵀ(X − X̃) term by 0.25).
/// The full least-squares correction (1) fits calibration noise: held out, it
/// read 0.0331 against 0.0069 at 0.25 for the detector's uniform int8-gptq, and
/// 0.0494 against 0.0436 for the recogniser's int4-g32-gptq.
inline constexpr double kAsymmetricAlpha = 0.25;

/// The weight `w` (its [out, in] view W) refitted to the compressed model's
/// inputs: W'ᵀ = Wᵀ + α·(X̃ᵀX̃ + λI)⁻¹·(X̃ᵀX − X̃ᵀX̃)·Wᵀ, with λ = damp · mean
/// diag X̃ᵀX̃ (GPTQ's damping), solved in double by Cholesky; at α = 1 that is
/// argmin ‖X·Wᵀ − X̃·W'ᵀ‖² + λ‖W' − W‖², at α = 0 W itself. `h`: X̃ᵀX̃ [in, in];
/// `cross`: X̃ᵀX [in, in] row-major. Returned stored as `w` is (layout and
/// shape), f32. W itself when X̃ᵀX̃'s diagonal is 0 (no rows). Throws Error
/// naming the weight when the sizes disagree with its `in`.
Tensor asymmetric_target(const graph::WeightView& w, const schemes::Gram& h,
                         const std::vector<double>& cross, double damp, double alpha);

/// How encode_plan_sequential fits a plan's -gptq layers.
enum class GptqFit {
  /// In schedule order, each against the original's products from the
  /// compressed model's inputs (asymmetric_target, then GPTQ on X̃ᵀX̃).
  sequential,
  /// Each alone on the original model's inputs X (GPTQ on XᵀX): what a
  /// layer's damage D(ℓ, c) measured. On the detector's exact plan at uniform
  /// int4-g32's bytes (int8-gptq on 11 layers, int3-gptq on 4) this read
  /// 0.0127 on 16 held-out canvases, and the sequential fit 0.0389.
  per_layer,
};

/// encode_plan with every -gptq choice (reads_gram) quantized sequentially
/// against the original's products. Every other non-dense choice is encoded
/// first (no Gram needed). Then per input of `feeds` two runs step through
/// `run_model` (f16 promoted to f32, as the Grams and the damage pass run it):
/// one original, one with every encoded layer's decoded weight in place. At the
/// first step that reads a -gptq layer's input activation
/// (runtime::layer_inputs), the rows X̃ (compressed run) and X (original) are
/// added, in input order, to X̃ᵀX̃ and X̃ᵀX. Once its last reader's rows are in,
/// the layer is encoded: GPTQ of asymmetric_target(W, α = kAsymmetricAlpha)
/// against X̃ᵀX̃, or of W
/// itself against X̃ᵀX̃ (= XᵀX, exactly parallel GPTQ) while every activation it
/// read agrees bit for bit with the original's. Its decoded weight then replaces
/// W in the compressed runs for the steps still to run. Layers whose inputs
/// are first read at the same step are encoded together (`threads` workers,
/// one linalg thread each). A weight read at several steps gets each reader's
/// rows as the runs reach it, the earlier readers running W.
/// Weights come from `weights_model` (the model the plan was profiled on);
/// `run_model` is the graph that runs it: the same model for ONNX, the decoder
/// graph of a llama checkpoint, whose layers are then stored as `stored_dtype`.
/// One pass over `feeds`, every input's two runs held at once; the joint
/// Grams cost 4× the parallel ones. The result does not depend on `threads`.
/// With `fit` per_layer the compressed runs keep the original weights, so
/// every layer gets GPTQ of W against XᵀX (one run per input).
/// Result: encode_plan's layers in encode_plan's order (rel_error against W).
/// Throws Error (source "calibration") when `feeds` is empty or an activation
/// holds NaN/Inf, and as encode_plan and Executor::run do.
std::vector<EncodedLayer> encode_plan_sequential(
    const graph::Model& weights_model, const graph::Model& run_model, const plan::Plan& plan,
    const schemes::SchemeParams& defaults, uint64_t seed, int threads,
    const std::vector<std::map<std::string, Tensor>>& feeds,
    std::optional<DType> stored_dtype = std::nullopt, GptqFit fit = GptqFit::sequential);

/// "sequential" or "per layer".
const char* gptq_fit_name(GptqFit fit);

}  // namespace tailor::compress
