// The serial bias + activation loop behind bias_activation, for kernels that
// apply their epilogue inside their own parallel region.
#pragma once

#include <cstdint>

#include "tailor/runtime/kernels/elementwise.h"

namespace tailor::runtime::kernels::detail {

/// y[i] = act(x[i] + bias) for i < n, on the calling thread (in place allowed).
void bias_activation_span(const Activation& act, float bias, const float* x, float* y, int64_t n);

}  // namespace tailor::runtime::kernels::detail
