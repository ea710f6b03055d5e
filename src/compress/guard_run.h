// The uniform guard's measurement of whole plans (compress.cpp's step 3b):
// the solver's plan against every uniform quantizer plan on the calibration
// inputs, -gptq plans cross-fitted and fitted both ways (GptqFit).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "tailor/compress/compress.h"
#include "tailor/compress/output_profile.h"
#include "tailor/compress/rewrite.h"
#include "tailor/compress/sequential_gptq.h"
#include "tailor/core/tensor.h"
#include "tailor/graph/graph.h"
#include "tailor/plan/plan.h"

namespace tailor::compress {

/// Folds of the guard's cross-fitting. Each fold encodes every plan with a
/// -gptq layer twice more (encode_plan_sequential, sequentially and per layer:
/// a pass over the fold's inputs each), so the guard takes at most four, where D takes
/// up to kCrossFitFolds. On the recogniser's 40 calibration lines at int4-g32's
/// bytes, two folds (GPTQ fitted to 20 lines) kept a plan that read 1.26× uniform
/// int4-g32-gptq's KL on 400 unseen lines; four kept int4-g32-gptq (guard
/// 695 s on one thread, against 323 s with two folds on two).
inline constexpr int kGuardFolds = 4;

/// The plan taking `label` at every layer whose profile has it, dense elsewhere.
plan::Plan uniform_plan(const ModelProfile& profile, const std::string& label,
                        plan::Objective objective, uint64_t seed, const std::string& source);

/// A plan's layers encoded on `inputs` with its -gptq layers fitted as asked
/// (compress's encode_plan_sequential with the run's settings).
using PlanEncoder = std::function<std::vector<EncodedLayer>(
    const plan::Plan&, const std::vector<std::map<std::string, Tensor>>&, GptqFit)>;

/// The uniform guard (CompressOptions::uniform_guard): measures r.plan and
/// every uniform quantizer plan on the calibration inputs (those over `budget` too: the
/// report shows them all), records them in r.guard, replaces r.plan by the
/// kept one (guard_pick: within the budget) and returns its encoded layers
/// (`encode(plan, inputs, fit)`: encode_plan_sequential against `inputs`). A plan with a -gptq
/// layer is measured cross-fitted as its damage D was, in up to kGuardFolds folds
/// (cross_fit_folds): input k in fold f runs that plan encoded against the inputs outside f, once
/// with its -gptq layers fitted sequentially and once per layer (GptqFit), and takes the lower
/// (GuardPoint::fit; the kept plan is written so); a uniform one over `budget`,
/// which the guard cannot keep, is measured in-sample instead (GPTQ fitted
/// to the inputs it is scored on; GuardPoint::in_sample). The returned
/// layers use every input. Without `with_uniforms` only r.plan is measured,
/// to choose its fit (a --uniform run).
std::vector<EncodedLayer> run_guard(const graph::Model& run_model, const Calibration& c,
                                    CompressResult& r, int64_t budget, const CompressOptions& o,
                                    plan::Objective objective, const PlanEncoder& encode,
                                    bool with_uniforms = true);

}  // namespace tailor::compress
