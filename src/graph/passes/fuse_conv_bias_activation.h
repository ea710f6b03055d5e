// Fuses a convolution with the bias Add and the activation after it:
//
//   Conv(x, W, [b]) ─► [Add(·, c)] ─► [act] ─►   ai.tailor.FusedConv(x, W, b + c){act}
//   ConvTranspose(x, W, [b]) ─► act ─►            ai.tailor.FusedConvTranspose(x, W, b){act}
//
// (c a constant per output channel or one value, act as epilogue_activation.h).
#pragma once

#include "fusion_scope.h"

namespace tailor::graph::passes {

/// The match rooted at node `conv` of `scope.g`: a default-domain Conv with
/// one output, a constant f32 weight of rank 3 or 4 ([c_out, c_in/group, k...])
/// and, when present, a constant f32 bias of c_out elements; then, when the
/// Conv's output is read only by it, an Add of an f32 constant shaped
/// [c_out, 1(, 1)], [1, c_out, 1(, 1)] or of one element (rank ≤ rank of the
/// output) — folded into a new bias initializer b + c of shape [c_out],
/// computed in f32 — and then an activation (match_activation). Kind
/// "conv_epilogue"; the FusedConv keeps the Conv's attributes and adds the
/// activation's. nullopt when neither the Add nor an activation follows. Runs
/// inside fuse(); simplify before it folds BatchNormalization and per-channel
/// Mul into the weights, which this rule does not. An ai.tailor
/// CompressedConv (bias already an input) takes only a following activation,
/// keeping its op type (its kernel runs the activation in its epilogue).
std::optional<FusionMatch> match_conv_bias_activation(const FusionScope& scope, size_t conv);

/// The match rooted at node `conv`: a default-domain ConvTranspose with one
/// output, a constant f32 weight of rank 4 ([c_in, c_out/group, kh, kw]) and,
/// when present, a constant f32 bias of c_out elements, then an activation
/// (match_activation, with its scalar maps). Kind "conv_transpose_epilogue";
/// the ai.tailor FusedConvTranspose keeps the ConvTranspose's attributes and
/// adds the activation's (its kernel applies it as it writes each output
/// row). nullopt without an activation. simplify before it folds a
/// BatchNormalization after the ConvTranspose into its weights (the
/// detector's DB head: ConvTranspose ─► BatchNormalization ─► Relu, twice).
std::optional<FusionMatch> match_conv_transpose_bias_activation(const FusionScope& scope,
                                                                size_t conv);

}  // namespace tailor::graph::passes
