// Fuses the squeeze-and-excitation block (Hu et al., 2018, "Squeeze-and-
// Excitation Networks"; MobileNetV3's SE module):
//
//   x ─┬─► GlobalAveragePool ─► Conv 1×1 (W1, [B1]) ─► [act] ─► Conv 1×1 (W2, [B2]) ─► gate ─► Mul
//   ─►
//      └──────────────────────────────────────────────────────────────────────────────────┘
//
//        ai.tailor.SqueezeExcite(x, W1, [B1], W2, [B2]){activation, alpha, beta,
//                                                       gate, gate_alpha, gate_beta}
#pragma once

#include "fusion_scope.h"

namespace tailor::graph::passes {

/// The match rooted at node `pool` of `scope.g` (the GlobalAveragePool): x f32
/// of rank 4; each Conv 1×1 with unit strides, no padding (pads 0, auto_pad
/// NOTSET or VALID), one group, a constant f32 weight [c_out, c_in, 1, 1] and
/// an optional constant f32 bias [c_out], W1 [m, C, 1, 1] and W2 [C, m, 1, 1];
/// act an optional activation and gate a required one (match_activation's:
/// Relu, HardSigmoid, Sigmoid, ..., the decomposed HardSwish), each read once;
/// the Mul multiplying x by the gate (either order). Every inner value is read
/// once. Kind "squeeze_excite"; the activations are written as FusedConv's
/// (`activation`, `alpha`, `beta`) and under `gate`, `gate_alpha`,
/// `gate_beta`. nullopt otherwise. Runs inside fuse(), before the epilogue
/// rules (which would take the two Convs and their activations).
std::optional<FusionMatch> match_squeeze_excite(const FusionScope& scope, size_t pool);

}  // namespace tailor::graph::passes
