// Damage in context: each candidate measured in the model of a context plan
// equals a fresh run of that plan with the one layer changed, its KL by
// definition; the prediction around a plan is exact at the plan and for
// plans one layer away.
#include "tailor/compress/damage_context.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "compress/guard_run.h"
#include "compress/output_damage_util.h"
#include "tailor/compress/compress.h"
#include "tailor/compress/output_damage.h"
#include "tailor/compress/output_profile.h"
#include "tailor/core/error.h"
#include "tailor/graph/weights.h"
#include "tailor/io/onnx.h"
#include "tailor/profile/profiler.h"
#include "tailor/runtime/executor.h"
#include "test_util.h"

namespace tailor {
namespace {
namespace fs = std::filesystem;
using testing::kCls;
using testing::TempDir;
using testing::wavy;
using testing::with_decoded_weight;

/// Mean over rows and inputs of KL(P ‖ Q) = Σ_v P_v log(P_v / Q_v), the
/// classifier's rows of two classes.
double kl_by_definition(const std::vector<std::vector<float>>& p,
                        const std::vector<std::vector<float>>& q) {
  double kl = 0;
  int64_t rows = 0;
  for (size_t k = 0; k < p.size(); ++k)
    for (size_t r = 0; r < p[k].size(); r += 2, ++rows)
      for (size_t v = 0; v < 2; ++v)
        kl += p[k][r + v] * std::log(double(p[k][r + v]) / double(q[k][r + v]));
  return kl / static_cast<double>(rows);
}

TEST(DamageInContext, EachCandidateIsAFreshRunOfTheContextWithThatLayerChanged) {
  if (!fs::exists(kCls)) GTEST_SKIP() << kCls << " not fetched (scripts/fetch-models.sh)";
  const graph::Model m = graph::import_onnx(kCls);
  const std::string out = m.graph.outputs[0];
  const std::vector<std::map<std::string, Tensor>> inputs = {{{m.graph.inputs[0], wavy(1)}},
                                                             {{m.graph.inputs[0], wavy(2)}}};
  ProfileOptions po;
  po.schemes = {"dense", "int8", "int4"};
  po.threads = 1;
  ModelProfile profile = profile_model(m, po);
  ASSERT_GE(profile.layers.size(), 3u);
  profile.layers.resize(3);
  // The context: int8 at the three layers.
  const std::vector<graph::WeightView> ws = graph::weights(m);
  std::vector<compress::EncodedLayer> context;
  compress::DamageOptions d;
  d.metric = compress::DamageMetric::kl_probabilities;
  d.threads = 2;
  for (size_t l = 0; l < 3; ++l)
    context.push_back(compress::encode_layer(*graph::find_weight(ws, profile.layers[l].name),
                                             "int8", {}, 0x7a11, l));
  d.context = {context};
  compress::measure_output_damage(m, inputs, profile, d);

  runtime::Executor original(m);
  std::vector<std::vector<float>> p;
  for (const auto& in : inputs) p.push_back(original.run(in).at(out).to_f32_vector());
  for (size_t l = 0; l < 3; ++l)
    for (const Candidate& c : profile.layers[l].candidates) {
      // Every layer of the context decoded, then layer l as the candidate.
      graph::Model changed = m;
      for (size_t j = 0; j < 3; ++j)
        if (j != l)
          with_decoded_weight(changed, *graph::find_weight(ws, context[j].name), context[j]);
      const graph::WeightView& w = *graph::find_weight(ws, profile.layers[l].name);
      if (c.label != "dense")
        with_decoded_weight(changed, w, compress::encode_layer(w, c.label, {}, 0x7a11, l));
      runtime::Executor ex(changed);
      std::vector<std::vector<float>> q;
      for (const auto& in : inputs) q.push_back(ex.run(in).at(out).to_f32_vector());
      ASSERT_TRUE(c.output_damage) << profile.layers[l].name << " " << c.label;
      EXPECT_NEAR(*c.output_damage, kl_by_definition(p, q), 1e-12)
          << profile.layers[l].name << " " << c.label;
      // Dense is measured in context: the other two layers' int8 damage.
      EXPECT_GT(*c.output_damage, 0.0) << profile.layers[l].name << " " << c.label;
    }

  // A context naming a weight the model does not have.
  d.context[0].push_back(context.front());
  d.context[0].back().name = "no-such-weight";
  testing::expect_error_naming([&] { compress::measure_output_damage(m, inputs, profile, d); },
                               "no-such-weight", "not a weight of the model's main graph");
}

TEST(DamageInContext, ThePredictionIsExactAtThePlanAndOneLayerAway) {
  if (!fs::exists(kCls)) GTEST_SKIP() << kCls << " not fetched (scripts/fetch-models.sh)";
  TempDir dir;
  compress::CompressOptions co = testing::cls_options(dir);
  const graph::Model m = graph::import_onnx(kCls);
  ProfileOptions po = compress::compress_profile_options(co, nullptr);
  po.schemes = {"dense", "int8", "int4", "int4-gptq"};
  const compress::OutputObjective objective =
      compress::prepare_output_objective(m, nullptr, co, po);
  ASSERT_GE(objective.calibration.inputs.size(), 2u);  // -gptq cross-fitted in folds
  ModelProfile profile = profile_model(m, po);
  ASSERT_GE(profile.layers.size(), 4u);
  // Contexts: uniform int8 (one fold), uniform int4-gptq (cross-fitted: the
  // context's own -gptq layers and the candidates in it against the
  // original's activations outside each fold).
  for (const char* context : {"int8", "int4-gptq"}) {
    SCOPED_TRACE(context);
    const plan::Plan p = compress::uniform_plan(profile, context, plan::Objective::numel, 0, kCls);
    const compress::DamageInContext dc =
        compress::measure_damage_in_context(m, m, objective, po, profile, p);
    EXPECT_GT(dc.context_damage, 0.0);
    EXPECT_NEAR(compress::predicted_in_context(dc, p), dc.context_damage,
                1e-12 * dc.context_damage);
    EXPECT_LE(dc.offset, dc.context_damage);
    for (const LayerProfile& l : dc.profile.layers) {
      double least = INFINITY;
      for (const Candidate& c : l.candidates) least = std::min(least, *c.output_damage);
      EXPECT_EQ(least, 0.0) << l.name;
    }
    // One layer away, the prediction is that plan's own whole damage (a run
    // of the whole plan, each -gptq layer encoded per fold): that layer's D
    // in context is a run of the same model.
    for (size_t l : {size_t{0}, profile.layers.size() / 2, profile.layers.size() - 1})
      for (const char* label : {"dense", "int4", "int8", "int4-gptq"}) {
        if (std::string(label) == context) continue;
        plan::Plan q = p;
        for (plan::PlanChoice& c : q.choices)
          if (c.layer == profile.layers[l].name) c.label = label;
        const double whole = compress::calibration_damage(m, m, objective, po, q);
        EXPECT_NEAR(compress::predicted_in_context(dc, q), whole, 1e-9 * whole + 1e-15)
            << profile.layers[l].name << " " << label;
      }
  }
  // An int8-a8 pick cannot be a context.
  plan::Plan a8 = compress::uniform_plan(profile, "int8", plan::Objective::numel, 0, kCls);
  a8.choices.front().label = "int8-a8";
  testing::expect_error_naming(
      [&] { compress::measure_damage_in_context(m, m, objective, po, profile, a8); },
      a8.choices.front().layer, "int8-a8");
}

}  // namespace
}  // namespace tailor
