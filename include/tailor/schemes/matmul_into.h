// Y = X·Ŵᵀ written into caller-owned memory: the runtime's compressed ops
// call this once per node and token in LLM decode, where allocating and
// copying a result Tensor per call costs more than the product itself.
#pragma once

#include <cstdint>
#include <optional>

#include "tailor/schemes/kernels.h"
#include "tailor/schemes/scheme.h"

namespace tailor::schemes {

/// Encoded::matmul into y: x holds X [batch, e.in()] f32 row-major, y receives
/// Y [batch, e.out()] f32 row-major, overwritten (it must not overlap x); the
/// same bits as e.matmul. Quantized codes (int8, int4, int3, ternary, their
/// grouped and data-aware variants) run their kernel straight into y with no
/// allocation; other schemes go through matmul and one copy.
void matmul_into(const Encoded& e, const float* x, int64_t batch, float* y);

/// The stored codes of a weight-only quantized form (int8, int4, int3,
/// ternary, their grouped and data-aware variants) as the packed kernels read
/// them: `args` with codes, code_bytes, scales, out, in and group set (x,
/// batch, y left empty), pointing into e's factors (valid while e lives).
struct PackedView {
  kernels::PackedGemmArgs args;
  int bits = 0;  ///< 8, 4, 3 or 2
};
/// e's PackedView, or nullopt for every other scheme and for int8-a8 (whose
/// matmul also rounds the activations).
std::optional<PackedView> packed_view(const Encoded& e);
/// The int8 codes and per-channel scales of an int8-a8 weight (the W8A8
/// kernels' view, bits 8), or nullopt for every other scheme.
std::optional<PackedView> w8a8_view(const Encoded& e);
/// The codes of a weight-only per-channel int8 weight (int8 and its -gptq /
/// -mse forms: the codes int8-a8 encodes from the same dense weight), which
/// the W8A8 kernels can multiply too; nullopt for every other form,
/// int8-a8 included.
std::optional<PackedView> int8_weight_only_view(const Encoded& e);

}  // namespace tailor::schemes
