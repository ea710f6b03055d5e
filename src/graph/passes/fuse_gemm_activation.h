// Fuses a Gemm with the activation after it:
//
//   Gemm(A, B, [C]) ─► act ─►   ai.tailor.FusedGemm(A, B, [C]){act}
//
// (act one node of epilogue_activation.h; the decomposed HardSwish is not taken).
#pragma once

#include "fusion_scope.h"

namespace tailor::graph::passes {

/// The match rooted at node `gemm` of `scope.g`: a default-domain Gemm with
/// one output read only by a one-node activation (match_activation). Kind
/// "gemm_epilogue"; the FusedGemm keeps Gemm's attributes (its own alpha,
/// beta) and writes the activation's parameters as `activation_alpha`,
/// `activation_beta`. nullopt otherwise. Runs inside fuse().
std::optional<FusionMatch> match_gemm_activation(const FusionScope& scope, size_t gemm);

}  // namespace tailor::graph::passes
