// Runtime side of the "ai.tailor" fused ops (see tailor/graph/fused_ops.h).
#pragma once

#include "tailor/graph/fused_ops.h"
#include "tailor/graph/graph.h"
#include "tailor/runtime/kernels/elementwise.h"

namespace tailor::runtime {

using graph::ElementwiseOp;
using graph::kFusedElementwiseMaxInputs;
using graph::kFusedElementwiseMaxSteps;

/// The epilogue activation of a fused node: attributes `activation` (string,
/// as FusedConv's; SqueezeExcite's second one is `gate`, passed as `name`) and
/// its parameters `alpha`, `beta` (FusedGemm, whose alpha/beta are Gemm's:
/// `activation_alpha`, `activation_beta`), and the affine maps around it,
/// floats `pre_scale`, `pre_shift`, `post_scale`, `post_shift` (defaults 1, 0,
/// 1, 0; kernels::Activation). Throws Error naming the node for an unknown
/// activation, or for a non-identity map without one.
kernels::Activation activation_from_node(const graph::Node& node, const char* alpha = "alpha",
                                         const char* beta = "beta",
                                         const char* name = "activation");

}  // namespace tailor::runtime
