// Fuses the decomposed softmax over one axis, with or without the max shift:
//
//   x ─► Exp = e ─┬─► ReduceSum ─► Div(e, ·) ─►                  ai.tailor.Softmax(x){axis}
//                 └──────────────┘
//   x ─┬─► ReduceMax ─► Sub(x, ·) ─► Exp = e ─┬─► ReduceSum ─► Div(e, ·) ─►
//      └──────────────┘                       └──────────────┘
#pragma once

#include "fusion_scope.h"

namespace tailor::graph::passes {

/// The match rooted at node `first` of `scope.g` (the Exp, or the ReduceMax):
/// x f32, the reductions over the same one constant axis with keepdims 1, e
/// read by exactly the ReduceSum and the Div, every other inner value read
/// once. Kind "softmax"; the Softmax's `axis` is the ReduceSum's axis as
/// written. nullopt otherwise. Runs inside fuse(), before the epilogue and
/// elementwise rules.
std::optional<FusionMatch> match_softmax(const FusionScope& scope, size_t first);

}  // namespace tailor::graph::passes
