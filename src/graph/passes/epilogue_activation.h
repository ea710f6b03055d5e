// The activation an epilogue fusion (conv, gemm, matmul) absorbs into its
// fused node, matched as
//
//   v ──► Relu | Sigmoid | Tanh | HardSigmoid | HardSwish | LeakyRelu | Clip
//
//   v ─┬─► Add(·, 3) ─► Clip(·, 0, 6) ─► Div(·, 6) ─► Mul ─►     (HardSwish decomposed,
//      └───────────────────────────────────────────────┘            both association orders)
//   v ─┬─► Add(·, 3) ─► Clip(·, 0, 6) ─► Mul ─► Div(·, 6) ─►
//      └────────────────────────────────────┘
//
// (the ONNX ops of graph::kFusedActivations), and written as a fused node's
// activation attributes.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fusion_scope.h"
#include "tailor/graph/fused_ops.h"

namespace tailor::graph::passes {

/// An activation found after a value.
struct EpilogueActivation {
  /// Its row of kFusedActivations.
  const FusedActivationInfo* info = nullptr;
  /// Its parameters (Clip's bounds, the ONNX attributes or fixed values the
  /// table names).
  float alpha = 0.f, beta = 0.f;
  /// The nodes it replaces (one, or four for the decomposed HardSwish).
  std::vector<size_t> nodes;
  /// The value it produces.
  std::string out;
};

/// A Mul then an Add by float one-element constants (x·scale + shift) after
/// a value, each optional.
struct ScalarAffine {
  float scale = 1.f, shift = 0.f;
  /// The nodes it replaces (none, the Mul, the Add, or both in that order).
  std::vector<size_t> nodes;
  /// The value it produces (the value it started from when it has no node).
  std::string out;
};

/// The map after the f32 value `v`: a Mul that is `v`'s only reader and
/// multiplies it by a float one-element constant of rank ≤ v's (so the shape
/// stays), then likewise an Add (either may be missing; no claimed node is
/// taken). `nodes` is empty when there is neither.
ScalarAffine match_scalar_affine(const FusionScope& scope, const std::string& v);

/// The activation reading `v` in `scope`: one node of an ONNX op in
/// kFusedActivations that is `v`'s only reader and reads it as input 0
/// (Clip only with constant bounds), or the decomposed HardSwish above (3
/// and 6 one-element constants of rank ≤ 1, every inner value read once, `v`
/// read by exactly the Add and the Mul). No claimed node is taken; nullopt
/// when there is no such activation.
std::optional<EpilogueActivation> match_activation(const FusionScope& scope, const std::string& v);

/// Absorbs the activation reading `out` (when match_activation finds one)
/// into `fused`, which replaces `match.members` (the epilogue so far) and
/// produces `out`: sets its `activation`, `alpha`, `beta` attributes (the
/// FusedConv contract of tailor/graph/fused_ops.h) and its output, and
/// returns the match; nullopt when nothing but the root node would be fused.
/// With an activation, the scalar maps around it join too (the "learnable
/// affine blocks" of PP-OCRv4's PPLCNetV3 backbone):
///
///   out ─► [Mul(·, s0)] ─► [Add(·, t0)] ─► act ─► [Mul(·, s1)] ─► [Add(·, t1)] ─►
///
/// (match_scalar_affine's), written as `pre_scale` s0, `pre_shift` t0,
/// `post_scale` s1, `post_shift` t1 (kEpilogueAffineAttributes; only those
/// that are not the identity). A pre map without an activation after it stays
/// out of the epilogue.
std::optional<FusionMatch> finish_epilogue(const FusionScope& scope, FusionMatch match, Node fused,
                                           std::string out);

/// Writes `a` on `n`: `activation` = its name, then the parameters under the
/// attribute names `alpha_attribute`, `beta_attribute` (FusedGemm keeps Gemm's
/// own alpha, beta and passes "activation_alpha", "activation_beta").
void set_activation(Node& n, const EpilogueActivation& a, std::string_view alpha_attribute,
                    std::string_view beta_attribute);

}  // namespace tailor::graph::passes
