// Fuses the layer normalization exporters decompose over the last axis:
//
//   x ─┬─► ReduceMean ─► Sub(x, ·) = d
//      └───────────────────┘
//   d ─► Pow(d, 2) | Mul(d, d) ─► ReduceMean ─► Add(·, ε) ─► Sqrt = r
//   d ─► Div(d, r) | Mul(d, Reciprocal(r)) ─► [Mul(·, scale) ─► [Add(·, bias)]] ─►
//
//        ai.tailor.LayerNormalization(x, [scale], [bias]){axis −1, epsilon ε}
#pragma once

#include "fusion_scope.h"

namespace tailor::graph::passes {

/// The match rooted at node `mean` of `scope.g` (the first ReduceMean): x f32,
/// both ReduceMeans over the last axis only (axes {−1} or {rank − 1}) with
/// keepdims 1, d read by exactly the square and the division, ε a
/// one-element constant of rank ≤ 1, every other inner value read once; then
/// optionally a Mul by a constant f32 scale of rank 1 and after it an Add of a
/// constant f32 bias of the same length. Kind "layer_norm". nullopt otherwise.
/// Runs inside fuse(), before the epilogue and elementwise rules.
std::optional<FusionMatch> match_layer_norm(const FusionScope& scope, size_t mean);

}  // namespace tailor::graph::passes
