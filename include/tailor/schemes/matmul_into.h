// Y = X·Ŵᵀ written into caller-owned memory: the runtime's compressed ops
// call this once per node and token in LLM decode, where allocating and
// copying a result Tensor per call costs more than the product itself.
#pragma once

#include <cstdint>

#include "tailor/schemes/scheme.h"

namespace tailor::schemes {

/// Encoded::matmul into y: x holds X [batch, e.in()] f32 row-major, y receives
/// Y [batch, e.out()] f32 row-major, overwritten (it must not overlap x); the
/// same bits as e.matmul. Quantized codes (int8, int4, int3, ternary, their
/// grouped and data-aware variants) run their kernel straight into y with no
/// allocation; other schemes go through matmul and one copy.
void matmul_into(const Encoded& e, const float* x, int64_t batch, float* y);

}  // namespace tailor::schemes
