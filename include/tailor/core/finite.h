// Finding NaN and ±Inf in a tensor: inputs, weights and outputs that a
// comparison or an encoder cannot use are refused by name.
#pragma once

#include <cstdint>

#include "tailor/core/tensor.h"

namespace tailor {

/// The non-finite elements (NaN, ±Inf) of a tensor: how many, and the first
/// one's row-major index and value (index −1 when there are none).
struct NonFinite {
  int64_t count = 0;
  int64_t first = -1;
  float first_value = 0;
};

/// Counts the non-finite elements of a floating-point tensor (f32, f16, bf16,
/// f64; values compared as f32). Integer and bool tensors have none.
NonFinite find_non_finite(const Tensor& t);

}  // namespace tailor
