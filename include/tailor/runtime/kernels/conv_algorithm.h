// The conv algorithm as a per-node choice (issue 16): which kernel conv2d
// runs a non-depthwise, non-1×1 conv with, the runtime's automatic rule, and
// the entry point that takes a forced choice through conv2d's one selection
// point (the tuner's decision, node attribute "conv_algorithm").
#pragma once

#include "tailor/runtime/kernels/conv.h"

namespace tailor::runtime::kernels {

/// `automatic` takes conv2d's fixed rule; `gemm` the implicit-im2col GEMM
/// (packed weights when given); `winograd` Winograd F(4×4, 3×3), only where
/// conv_winograd_eligible(p).
enum class ConvAlgorithm { automatic, gemm, winograd };

/// Whether conv2d can run p by Winograd F(4×4, 3×3): 3×3, stride 1, one
/// group, c_in and c_out ≥ 8 and c_in·c_out ≤ 2²⁰ (the shapes whose
/// transformed weights pack_conv2d_weights keeps), any dilation (the tiles
/// then lie on each phase's outputs, registry.h).
bool conv_winograd_eligible(const Conv2dParams& p);

/// The algorithm conv2d's automatic rule picks for p: winograd when
/// conv_winograd_eligible(p), the output plane is at least active_kernels().winograd_min_plane
/// on each side (16, or 8 with the AVX-512 products), for a
/// dilated p its tiles keep at least half their outputs (out_h·out_w ≥ 8 per
/// tile), and the environment does not set TAILOR_CONV_WINOGRAD=0; else gemm.
ConvAlgorithm conv_default_algorithm(const Conv2dParams& p);

/// conv2d (same contract) with the algorithm `algorithm`: automatic is
/// conv2d itself; gemm rules Winograd out; winograd forces it, not subject
/// to TAILOR_CONV_WINOGRAD (Error unless conv_winograd_eligible(p); weights
/// `packed` does not hold transformed are transformed on the call, which
/// needs w). Depthwise and 1×1 stride-1 unpadded convs ignore gemm (they
/// have one kernel each).
void conv2d(const Conv2dParams& p, ConvAlgorithm algorithm, const float* x, const float* w,
            const float* bias, float* y, const Activation& act = {}, float* scratch = nullptr,
            const PackedConvWeights* packed = nullptr);

}  // namespace tailor::runtime::kernels
