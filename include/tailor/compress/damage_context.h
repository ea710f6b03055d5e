// Damage in context (issue 13): the output objective measured around a plan
// rather than around the original model.
//
// D(ℓ, c) measures one layer replaced in the original model, and Σ D assumes
// the layers' damages add up. On the recogniser they do not: a few
// calibration lines are bistable, and any one layer's error flips them to
// the same damaged output. Uniform int8's 38 single-layer damages sum to 2.9×
// what the whole file measures on its 40 calibration lines. A plan built from
// those sums is judged on the wrong scale.
//
// Here each candidate is measured in the context of a plan P, the way
// exllamav3 measures a layer's options against an already-quantized model.
// Every other layer keeps its pick of P, and layer ℓ takes candidate c. The
// marginal is M(ℓ, c) = D_P(ℓ, c) − D_P(ℓ, P_ℓ). A plan Q is then predicted
// as damage(P) + Σ_ℓ M(ℓ, Q_ℓ): first-order around P, exact at P.
//
// Measured on the recogniser (40 calibration lines, 40 held out), P = uniform
// int8 and Q = P with 1–38 random layers at int4-g32: this prediction was
// 0.80–2.03× the held-out damage over 14 plans. Σ D was 1.29–3.39×. Far from
// P it fails: an exact solver re-solving on the marginals moved 31 of 38
// picks and predicted −0.096 for a plan that measured 5× P's damage. So
// compress plans on Σ D, and `spearman_check --context` compares the two
// predictions (docs/benchmarks.md, stop 51).
#pragma once

#include <string>

#include "tailor/compress/output_profile.h"
#include "tailor/graph/graph.h"
#include "tailor/plan/plan.h"
#include "tailor/profile/model_profile.h"

namespace tailor::compress {

/// The output objective around a plan (measure_damage_in_context).
struct DamageInContext {
  /// damage(P) on the calibration inputs, in the calibration metric. Its -gptq
  /// layers are cross-fitted as D is: input k runs P encoded against the Gram
  /// of the inputs outside its fold.
  double context_damage = 0;
  /// The profile with each candidate's output_damage set to its marginal,
  /// shifted so that each layer's least is 0: M(ℓ, c) − min_c' M(ℓ, c'),
  /// what predicted_in_context sums (an objective a solver could take);
  /// every other field as in the profile measured around.
  ModelProfile profile;
  /// predicted(Q) = offset + Σ_ℓ profile's D(ℓ, Q_ℓ), where offset =
  /// damage(P) + Σ_ℓ min_c M(ℓ, c) (≤ damage(P)).
  double offset = 0;
  /// Wall-clock seconds of the measurement (the log only).
  double seconds = 0;
};

/// Measures every candidate of every layer of `profile` around `context`.
/// `profile` is made from `model`, whose weights the candidates encode; the
/// runs use `run_model` (the llama decoder graph, else `model`). Calibration
/// inputs, metric and Grams come from `objective`, the scheme settings and
/// threads from `profile_options`, as the profile's own damage pass used
/// them. Cost: one damage pass (measure_output_damage with
/// DamageOptions::context) plus one whole run per input. Throws Error when
/// the context has an int8-a8 pick (it changes the arithmetic, which a
/// replaced weight cannot show) or is not a plan of `profile`, naming the
/// layer, and as measure_output_damage does.
DamageInContext measure_damage_in_context(const graph::Model& model, const graph::Model& run_model,
                                          const OutputObjective& objective,
                                          const ProfileOptions& profile_options,
                                          const ModelProfile& profile, const plan::Plan& context);

/// damage(plan) on the calibration inputs of `objective`, in its metric, the
/// whole plan run at once: its -gptq picks cross-fitted as D is (input k runs
/// the plan encoded against the Gram of the inputs outside its fold). What
/// DamageInContext::context_damage holds for the context. Throws Error as
/// measure_damage_in_context does.
double calibration_damage(const graph::Model& model, const graph::Model& run_model,
                          const OutputObjective& objective, const ProfileOptions& profile_options,
                          const plan::Plan& plan);

/// The predicted damage of `plan` around the context: offset + Σ_ℓ D(ℓ, Q_ℓ)
/// of in_context.profile, or 0 where that first-order sum falls below 0 (a
/// damage is ≥ 0; it happens far from the context, where the prediction
/// fails anyway). Throws Error naming the layer when `plan` is not a plan of
/// that profile (plan::find_candidates).
double predicted_in_context(const DamageInContext& in_context, const plan::Plan& plan);

}  // namespace tailor::compress
