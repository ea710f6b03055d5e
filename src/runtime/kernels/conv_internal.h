// Conv paths shared between conv.cpp and the specialised kernel files.
#pragma once

#include "tailor/runtime/kernels/conv.h"

namespace tailor::runtime::kernels::detail {

/// groups == c_in == c_out: one filter per channel.
inline bool is_depthwise(const Conv2dParams& p) {
  return p.groups > 1 && p.groups == p.c_in && p.groups == p.c_out;
}

/// Direct depthwise convolution, AVX2/FMA over output columns; parameters
/// already validated. Parallel over (image, channel) planes.
void conv2d_depthwise_avx2(const Conv2dParams& p, const float* x, const float* w, const float* bias,
                           float* y, const Activation& act);

}  // namespace tailor::runtime::kernels::detail
