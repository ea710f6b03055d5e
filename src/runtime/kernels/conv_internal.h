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

/// Floats of the packed weights of conv_block_avx2: groups · ⌈cog/6⌉·6 · K.
int64_t packed_weights_size(const Conv2dParams& p);

/// Packs w [c_out, K] (K = c_in/groups·kh·kw) per group into panels of 6
/// output channels, k-major: ap[g][panel][k][r] (rows past cog zero).
void pack_weights(const Conv2dParams& p, const float* w, float* ap);

/// Output pixels [j0, j0 + nb) of all of one group's cog channels of one
/// image: yg[o, j] = act(Σ_k W[o, k]·im2col(xg)[k, j] + bias[o]) by the
/// implicit-im2col 6×16 AVX2 micro-kernel, k ascending (in chunks of 256).
/// `ag` is that group's packed weights, `bias` that group's bias or null,
/// `bp` a per-thread buffer of 16·K floats.
void conv_block_avx2(const Conv2dParams& p, const float* xg, const float* ag, const float* bias,
                     const Activation& act, int64_t j0, int64_t nb, float* yg, float* bp);

}  // namespace tailor::runtime::kernels::detail
