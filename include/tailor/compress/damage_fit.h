// Scalable output damage (issue 13, item 1): for a model too large to
// measure every candidate's output damage, D(ℓ, c) ≈ α(ℓ, family) · e(ℓ, c)²,
// e the candidate's relative weight error (Candidate::rel_error) and α fitted
// per layer and scheme family to 2–3 measured probe candidates. The probes
// keep their measured D; the others are predicted and marked
// (Candidate::output_damage_fitted, LayerProfile::damage_fits).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tailor/profile/model_profile.h"

namespace tailor::compress {

/// The scheme family a candidate's damage is fitted within: "rtn" for the
/// round-to-nearest quantizers (int8, int4, int3, int4-gG, ternary, q8_0,
/// q4_0), "mse", "gptq" (the -mse / -gptq forms of any of them), "lowrank",
/// "lowrank-q" and "int+r" (the composites). Empty for "dense" and for every
/// other label (int8-a8, sparse-2:4, monarch, tucker, tt): those are always
/// measured.
std::string damage_family(const std::string& label);

/// The candidates of `layer` the fitted mode measures (indices into
/// layer.candidates, ascending): in every family of n ≥ 4 members, sorted by
/// rel_error (ties by index), P = 2 probes for n ≤ 5 and 3 for n ≥ 6, at sorted
/// positions round((k + 1)·(n − 1)/(P + 1)), k = 0..P−1 (the middle of the
/// family's error range, where a plan's choices lie, not its extremes); every
/// member of a family of n ≤ 3, and every candidate of no family but "dense".
std::vector<size_t> damage_probes(const LayerProfile& layer);

/// Fits α per family of `layer` to the measured output_damage of its measured
/// members: the probes (damage_probes) and any member whose output_damage is
/// set and not output_damage_fitted (measured later, measure_fitted_picks).
/// α = exp(mean over them with D > 0 and e > 0 of ln(D / e²)), 0 when none
/// has both; sets every other member's output_damage to α · e² with
/// output_damage_fitted, and layer.damage_fits (families with a predicted
/// member only; fit_factor over the measured members, both sides floored at
/// 1e-12). The probes must hold output_damage; throws Error naming the layer
/// and label when one does not.
void fit_layer_damage(LayerProfile& layer);

/// The fitted mode is chosen automatically (CompressOptions::damage "auto")
/// for models whose profiled weights hold more than this many elements.
constexpr int64_t kFittedDamageAboveParams = 20'000'000;

/// One line on the fits of `profile` ("" when it has none): layers fitted,
/// candidates measured and predicted, and the fit factors (median and max
/// of DamageFit::fit_factor over every fit).
std::string damage_fit_summary(const ModelProfile& profile);

}  // namespace tailor::compress
