// Damage in context (damage_context.h).
#include "tailor/compress/damage_context.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <set>

#include "tailor/compress/output_damage.h"
#include "tailor/compress/output_profile.h"
#include "tailor/compress/rewrite.h"
#include "tailor/core/error.h"
#include "tailor/graph/weights.h"
#include "tailor/plan/sweep.h"

namespace tailor::compress {

namespace {

/// `plan` encoded once per fold of D's cross-fitting (input k in fold k mod
/// K): its -gptq picks against the Gram of the inputs outside the fold. One
/// fold without a -gptq pick.
std::vector<std::vector<EncodedLayer>> encode_folds(const graph::Model& model,
                                                    const graph::Model& run_model,
                                                    const OutputObjective& objective,
                                                    const ProfileOptions& po,
                                                    const plan::Plan& plan) {
  for (const plan::PlanChoice& c : plan.choices)
    if (c.label == "int8-a8")
      throw Error(c.layer,
                  "damage in context: an int8-a8 pick changes the arithmetic, which a "
                  "replaced weight cannot show");
  const Calibration& cal = objective.calibration;
  const size_t n = cal.inputs.size();
  const std::set<std::string> gptq = gram_weights(plan);
  const size_t folds = gptq.empty() ? 1 : cross_fit_folds(n, kCrossFitFolds);
  std::vector<std::vector<EncodedLayer>> encoded(folds);
  for (size_t f = 0; f < folds; ++f) {
    Grams grams;
    if (folds == 1) {
      grams = objective.grams.get(gptq);
    } else {
      std::vector<std::map<std::string, Tensor>> outside;
      std::vector<std::string> labels;
      for (size_t k = 0; k < n; ++k)
        if (k % folds != f) {
          outside.push_back(cal.inputs[k]);
          if (k < cal.labels.size()) labels.push_back(cal.labels[k]);
        }
      grams = calibration_grams(run_model, outside, &gptq,
                                labels.size() == outside.size() ? &labels : nullptr);
    }
    encoded[f] = encode_plan(model, plan, po.scheme_defaults, 0x7a11, po.threads, grams);
  }
  return encoded;
}

double measure_folds(const graph::Model& run_model, const OutputObjective& objective,
                     const ProfileOptions& po,
                     const std::vector<std::vector<EncodedLayer>>& encoded) {
  const Calibration& cal = objective.calibration;
  const PlanDamage meter(run_model, cal.inputs, cal.metric, cal.outputs, po.threads);
  return meter.measure_cross_fitted(encoded);
}

}  // namespace

double calibration_damage(const graph::Model& model, const graph::Model& run_model,
                          const OutputObjective& objective, const ProfileOptions& po,
                          const plan::Plan& plan) {
  return measure_folds(run_model, objective, po,
                       encode_folds(model, run_model, objective, po, plan));
}

DamageInContext measure_damage_in_context(const graph::Model& model, const graph::Model& run_model,
                                          const OutputObjective& objective,
                                          const ProfileOptions& po, const ModelProfile& profile,
                                          const plan::Plan& context) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<int> picks = plan::find_candidates(profile, context, "damage in context");
  const Calibration& cal = objective.calibration;
  std::vector<std::vector<EncodedLayer>> encoded =
      encode_folds(model, run_model, objective, po, context);
  DamageInContext out;
  out.context_damage = measure_folds(run_model, objective, po, encoded);

  DamageOptions d = damage_options(objective, po, profile);
  d.context = std::move(encoded);
  out.profile = profile;
  measure_output_damage(run_model, cal.inputs, out.profile, d);

  // Marginals against each layer's own pick, shifted to a least of 0.
  out.offset = out.context_damage;
  for (size_t l = 0; l < out.profile.layers.size(); ++l) {
    std::vector<Candidate>& cs = out.profile.layers[l].candidates;
    const double at_pick = *cs[static_cast<size_t>(picks[l])].output_damage;
    double least = std::numeric_limits<double>::infinity();
    for (const Candidate& c : cs) least = std::min(least, *c.output_damage - at_pick);
    for (Candidate& c : cs) c.output_damage = *c.output_damage - at_pick - least;
    out.offset += least;
  }
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

double predicted_in_context(const DamageInContext& in_context, const plan::Plan& plan) {
  const std::vector<int> picks =
      plan::find_candidates(in_context.profile, plan, "predicted damage in context");
  double sum = in_context.offset;
  for (size_t l = 0; l < picks.size(); ++l)
    sum += *in_context.profile.layers[l].candidates[static_cast<size_t>(picks[l])].output_damage;
  return std::max(sum, 0.0);  // far from the context the first-order sum can fall below 0
}

}  // namespace tailor::compress
