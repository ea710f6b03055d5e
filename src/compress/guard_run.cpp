// The uniform guard's measurement of whole plans (guard_run.h).
#include "compress/guard_run.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <optional>
#include <regex>

#include "tailor/compress/output_damage.h"
#include "tailor/core/error.h"
#include "tailor/plan/budget.h"

namespace tailor::compress {

/// The plan taking `label` at every layer whose profile has it, dense elsewhere.
plan::Plan uniform_plan(const ModelProfile& profile, const std::string& label,
                        plan::Objective objective, uint64_t seed, const std::string& source) {
  plan::Problem p =
      plan::make_problem(profile, objective, std::numeric_limits<int64_t>::max() / 2, source);
  plan::Solution sol;
  bool any = false;
  for (const LayerProfile& l : profile.layers) {
    int pick = -1, dense = -1;
    for (size_t c = 0; c < l.candidates.size(); ++c) {
      if (l.candidates[c].label == label) pick = static_cast<int>(c);
      if (l.candidates[c].label == "dense") dense = static_cast<int>(c);
    }
    any = any || pick >= 0;
    if (pick < 0) pick = dense;
    if (pick < 0)
      throw Error(l.name, "--uniform " + label + ": the layer has neither " + label +
                              " nor dense among its profiled candidates");
    sol.choice.push_back(pick);
  }
  if (!any)
    throw Error("--uniform",
                "no layer has a candidate '" + label +
                    (label == "int8-a8"
                         ? fmt::format("' (profiled when --schemes names it or is not given, "
                                       "and only where every reader of an f32 weight is a "
                                       "MatMul, a Gemm, or a 2-D Conv of groups 1, of at most {} "
                                       "inputs and, a Conv, {} taps: graph::w8a8_reader)",
                                       graph::kW8A8MaxIn, graph::kW8A8ChunkIn)
                         : "' (profile it: --schemes, or a label of docs/schemes.md)"));
  sol.bytes = plan::choice_bytes(p, sol.choice);
  p.budget = sol.bytes;
  sol.objective = plan::evaluate(p, sol.choice);
  return plan::make_plan(profile, p, sol, "uniform " + label, objective, seed);
}

std::vector<EncodedLayer> run_guard(const graph::Model& run_model, const Calibration& c,
                                    CompressResult& r, int64_t budget, const CompressOptions& o,
                                    plan::Objective objective, const PlanEncoder& encode,
                                    bool with_uniforms) {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  const PlanDamage meter(run_model, c.inputs, c.metric, c.outputs, o.threads);
  // The quantizers (reference, -mse, -gptq, ggml), in the profile's order:
  // a rank or decomposition label (lowrank-r12, int4+r8, tucker) is chosen
  // per layer, not a scheme one applies uniformly.
  static const std::regex quantizer(R"(^(int\d+(-g\d+)?(-a8)?|ternary|q8_0|q4_0)(-mse|-gptq)?$)");
  std::vector<std::string> labels;
  for (const LayerProfile& l : r.profile.layers)
    for (const Candidate& cand : l.candidates)
      if (with_uniforms && std::regex_match(cand.label, quantizer) &&
          std::find(labels.begin(), labels.end(), cand.label) == labels.end())
        labels.push_back(cand.label);
  r.guard.clear();
  std::vector<plan::Plan> plans{r.plan};
  for (const std::string& label : labels)
    plans.push_back(uniform_plan(r.profile, label, objective, o.seed, o.model));
  const size_t n_folds = cross_fit_folds(c.inputs.size(), kGuardFolds);
  const bool any_gptq = std::any_of(plans.begin(), plans.end(),
                                    [](const plan::Plan& p) { return !gram_weights(p).empty(); });
  r.guard_folds = any_gptq && n_folds > 1 ? n_folds : 1;
  std::vector<std::vector<std::map<std::string, Tensor>>> outside(r.guard_folds);
  for (size_t f = 0; r.guard_folds > 1 && f < r.guard_folds; ++f)
    for (size_t k = 0; k < c.inputs.size(); ++k)
      if (k % n_folds != f) outside[f].push_back(c.inputs[k]);
  // Every input's encoding of each plan: measured where a plan is not
  // cross-fitted, written for the kept one (encoded after the pick where the
  // measurement did not need it).
  std::vector<std::optional<std::vector<EncodedLayer>>> layers(plans.size());
  std::vector<GptqFit> fits(plans.size(), GptqFit::sequential);
  for (size_t p = 0; p < plans.size(); ++p) {
    GuardPoint point{p == 0 ? "plan (" + r.plan.solver + ")" : "uniform " + labels[p - 1],
                     plans[p].total_bytes};
    const bool cross = r.guard_folds > 1 && !gram_weights(plans[p]).empty();
    std::vector<DamageMeter> meters;  // each calibration input's, for the interval
    if (cross && point.bytes <= budget) {
      auto cross_fitted = [&](GptqFit fit, std::vector<double>* per_input,
                              std::vector<DamageMeter>* meters) {
        std::vector<std::vector<EncodedLayer>> folds;
        for (const auto& fold_inputs : outside) folds.push_back(encode(plans[p], fold_inputs, fit));
        return meter.measure_cross_fitted(folds, per_input, meters);
      };
      // Both fits: the lower is the point, and how the plan is written.
      point.damage = cross_fitted(GptqFit::sequential, &point.per_input, &meters);
      std::vector<double> per_input;
      std::vector<DamageMeter> per_layer_meters;
      const double per_layer = cross_fitted(GptqFit::per_layer, &per_input, &per_layer_meters);
      if (p == 0) {
        r.plan_damage_sequential = point.damage;
        r.plan_damage_per_layer = per_layer;
      }
      fits[p] = GptqFit::sequential;
      // NaN (a non-finite output) loses to any figure.
      if (per_layer < point.damage || (std::isnan(point.damage) && !std::isnan(per_layer))) {
        point.damage = per_layer;
        point.per_input = std::move(per_input);
        meters = std::move(per_layer_meters);
        fits[p] = GptqFit::per_layer;
      }
      point.fit = gptq_fit_name(fits[p]);
    } else {
      // Not cross-fitted, or a -gptq plan the guard cannot keep (over the
      // budget; in the report only): in-sample, one encoding, not
      // kGuardFolds.
      layers[p] = encode(plans[p], c.inputs, GptqFit::sequential);
      point.damage = meter.measure(*layers[p], &point.per_input, &meters);
      if (cross) {
        point.in_sample = "over the budget";
        point.fit = gptq_fit_name(GptqFit::sequential);
      }
    }
    point.interval = damage_interval(meters, o.seed);
    r.guard.push_back(std::move(point));
  }
  r.guard_kept = guard_pick(r.guard, budget);
  const GptqFit fit = fits[r.guard_kept];
  r.gptq_fit = gptq_fit_name(fit);
  std::vector<EncodedLayer> kept = layers[r.guard_kept]
                                       ? std::move(*layers[r.guard_kept])
                                       : encode(plans[r.guard_kept], c.inputs, fit);
  r.plan = std::move(plans[r.guard_kept]);
  r.plan.budget_bytes = budget;  // a kept uniform plan: the user's budget, not its own bytes
  r.guard_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return kept;
}

}  // namespace tailor::compress
