// Scalable output damage (damage_fit.h): the probes chosen and α fitted as
// computed here by hand; profile.json keeps which damage is fitted; the
// fitted pass measures the probes exactly as the full pass does.
#include "tailor/compress/damage_fit.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "tailor/compress/output_damage.h"
#include "tailor/compress/output_profile.h"
#include "tailor/core/error.h"
#include "tailor/io/onnx.h"
#include "tailor/plan/sweep.h"
#include "tailor/profile/profiler.h"
#include "test_util.h"

namespace tailor {
namespace {
namespace fs = std::filesystem;

Candidate cand(const std::string& label, double e, std::optional<double> d = std::nullopt) {
  Candidate c;
  c.label = label;
  c.rel_error = e;
  c.bytes = 100;
  c.macs = 100;
  c.output_damage = d;
  return c;
}

// rtn (7 members) sorted by e: int8 .01, g32 .12, g64 .13, g128 .14, int4
// .17, int3 .35, ternary .6; P = 3 at round(1.5) = 2, 3, round(4.5) = 5:
// g64, g128, int3. gptq (4 members): P = 2 at 1, 2: int4-g32-gptq, int4-gptq.
// lowrank (3 members): all measured. sparse-2:4: no family, measured.
LayerProfile hand_layer() {
  LayerProfile l;
  l.name = "w";
  l.shape_out_in = {10, 10};
  l.numel = 100;
  l.dense_bytes = 400;
  // Probes' D / e²: g64 2, g128 4, int3 8 → α = (2·4·8)^(1/3) = 4; gptq 0.5, 0.5 → α = 0.5.
  l.candidates = {cand("dense", 0, 0.0),
                  cand("int3", 0.35, 8 * 0.35 * 0.35),
                  cand("int4", 0.17),
                  cand("int8", 0.01),
                  cand("int4-g32", 0.12),
                  cand("int4-g64", 0.13, 2 * 0.13 * 0.13),
                  cand("int4-g128", 0.14, 4 * 0.14 * 0.14),
                  cand("ternary", 0.6),
                  cand("int8-gptq", 0.014),
                  cand("int4-g32-gptq", 0.158, 0.5 * 0.158 * 0.158),
                  cand("int4-gptq", 0.225, 0.5 * 0.225 * 0.225),
                  cand("int3-gptq", 0.417),
                  cand("lowrank-r8", 0.5, 0.3),
                  cand("lowrank-r16", 0.3, 0.1),
                  cand("lowrank-r32", 0.1, 0.01),
                  cand("sparse-2:4", 0.4, 0.2)};
  return l;
}

TEST(DamageFit, FamiliesOfLabels) {
  using compress::damage_family;
  EXPECT_EQ(damage_family("int8"), "rtn");
  EXPECT_EQ(damage_family("int4-g64"), "rtn");
  EXPECT_EQ(damage_family("ternary"), "rtn");
  EXPECT_EQ(damage_family("int4-g32-gptq"), "gptq");
  EXPECT_EQ(damage_family("int3-mse"), "mse");
  EXPECT_EQ(damage_family("lowrank-r12"), "lowrank");
  EXPECT_EQ(damage_family("dense"), "");
  EXPECT_EQ(damage_family("sparse-2:4"), "");
  EXPECT_EQ(damage_family("no-such-label"), "");
}

TEST(DamageFit, ProbesAndAlphaAsComputedByHand) {
  LayerProfile l = hand_layer();
  // Indices: int3 1, g64 5, g128 6, g32-gptq 9, int4-gptq 10, lowrank 12–14, sparse 15.
  EXPECT_EQ(compress::damage_probes(l), (std::vector<size_t>{1, 5, 6, 9, 10, 12, 13, 14, 15}));
  compress::fit_layer_damage(l);
  ASSERT_EQ(l.damage_fits.size(), 2u);  // gptq and rtn (map order); lowrank fully measured
  const DamageFit& gptq = l.damage_fits[0];
  const DamageFit& rtn = l.damage_fits[1];
  EXPECT_EQ(rtn.family, "rtn");
  EXPECT_NEAR(rtn.alpha, 4.0, 1e-12);
  EXPECT_NEAR(rtn.fit_factor, 2.0, 1e-12);  // g64 (2 against 4) and int3 (8 against 4)
  EXPECT_EQ(rtn.probes, (std::vector<std::string>{"int4-g64", "int4-g128", "int3"}));
  EXPECT_EQ(gptq.family, "gptq");
  EXPECT_NEAR(gptq.alpha, 0.5, 1e-12);
  EXPECT_NEAR(gptq.fit_factor, 1.0, 1e-12);
  auto at = [&](const std::string& label) -> const Candidate& {
    for (const Candidate& c : l.candidates)
      if (c.label == label) return c;
    throw Error(label, "not in the layer");
  };
  // Predicted: α · e²; probes keep their measured D.
  EXPECT_NEAR(*at("int8").output_damage, 4 * 0.01 * 0.01, 1e-15);
  EXPECT_NEAR(*at("int4-g32").output_damage, 0.0576, 1e-15);
  EXPECT_NEAR(*at("int4").output_damage, 0.1156, 1e-15);
  EXPECT_NEAR(*at("ternary").output_damage, 1.44, 1e-12);
  EXPECT_NEAR(*at("int8-gptq").output_damage, 9.8e-5, 1e-17);
  EXPECT_NEAR(*at("int3-gptq").output_damage, 0.0869445, 1e-12);
  for (const char* f : {"int8", "int4-g32", "int4", "ternary", "int8-gptq", "int3-gptq"})
    EXPECT_TRUE(at(f).output_damage_fitted) << f;
  for (const char* m :
       {"dense", "int3", "int4-g64", "int4-g128", "int4-gptq", "lowrank-r8", "sparse-2:4"})
    EXPECT_FALSE(at(m).output_damage_fitted) << m;
  EXPECT_EQ(*at("int3").output_damage, 8 * 0.35 * 0.35);

  // profile.json keeps which damage is fitted and the fits.
  ModelProfile p;
  p.model = "m.onnx";
  p.dense_bytes = 400;
  p.output_metric = "kl";
  p.calibration = "hand";
  p.layers = {l};
  const std::string json = profile_to_json(p);
  EXPECT_NE(json.find("\"output_damage_fitted\": true"), std::string::npos);
  const ModelProfile back = parse_profile(json, "profile.json");
  ASSERT_EQ(back.layers[0].damage_fits.size(), 2u);
  EXPECT_EQ(back.layers[0].damage_fits[1].probes, rtn.probes);
  EXPECT_EQ(back.layers[0].damage_fits[1].alpha, rtn.alpha);
  for (size_t c = 0; c < l.candidates.size(); ++c)
    EXPECT_EQ(back.layers[0].candidates[c].output_damage_fitted,
              l.candidates[c].output_damage_fitted);
  EXPECT_EQ(profile_to_json(back), json);

  // A probe without damage cannot be fitted.
  LayerProfile bare = hand_layer();
  bare.candidates[5].output_damage.reset();
  testing::expect_error_naming([&] { compress::fit_layer_damage(bare); }, "w", "int4-g64");
}

TEST(DamageFit, ZeroDamageProbesGiveAlphaZeroAndAFiniteFactor) {
  LayerProfile l = hand_layer();
  for (Candidate& c : l.candidates)
    if (c.output_damage && c.label != "dense") c.output_damage = 0.0;
  compress::fit_layer_damage(l);
  for (const DamageFit& f : l.damage_fits) {
    EXPECT_EQ(f.alpha, 0.0) << f.family;
    EXPECT_EQ(f.fit_factor, 1.0) << f.family;  // 0 predicted, 0 measured
  }
  EXPECT_EQ(*l.candidates[3].output_damage, 0.0);  // int8, predicted
}

TEST(DamageFit, RefitsToEveryMeasuredMember) {
  LayerProfile l = hand_layer();
  compress::fit_layer_damage(l);
  // int4 (e .17), a predicted rtn member, measured since: D / e² = 16.
  l.candidates[2].output_damage = 16 * 0.17 * 0.17;
  l.candidates[2].output_damage_fitted = false;
  compress::fit_layer_damage(l);
  const DamageFit& rtn = l.damage_fits[1];
  ASSERT_EQ(rtn.family, "rtn");
  // (2 · 4 · 16 · 8)^(1/4) = 1024^(1/4) = 4√2; in rel_error order.
  EXPECT_NEAR(rtn.alpha, 4 * std::sqrt(2.0), 1e-12);
  EXPECT_EQ(rtn.probes, (std::vector<std::string>{"int4-g64", "int4-g128", "int4", "int3"}));
  EXPECT_NEAR(rtn.fit_factor, 2 * std::sqrt(2.0), 1e-12);  // g64: 2 against 4√2; int4: 16
  EXPECT_EQ(*l.candidates[2].output_damage, 16 * 0.17 * 0.17);
  EXPECT_FALSE(l.candidates[2].output_damage_fitted);
  EXPECT_NEAR(*l.candidates[3].output_damage, 4 * std::sqrt(2.0) * 0.01 * 0.01, 1e-15);  // int8
  EXPECT_TRUE(l.candidates[3].output_damage_fitted);
  EXPECT_NEAR(l.damage_fits[0].alpha, 0.5, 1e-12);  // gptq: as before

  // Every gptq member measured: nothing left to predict, no gptq fit.
  for (size_t c : {size_t{8}, size_t{11}}) {
    l.candidates[c].output_damage = 0.25;
    l.candidates[c].output_damage_fitted = false;
  }
  compress::fit_layer_damage(l);
  ASSERT_EQ(l.damage_fits.size(), 1u);
  EXPECT_EQ(l.damage_fits[0].family, "rtn");
  EXPECT_EQ(*l.candidates[8].output_damage, 0.25);
}

const std::string kCls = testing::model_path("ch_ppocr_mobile_v2.0_cls_infer.onnx");

std::vector<std::map<std::string, Tensor>> cls_inputs(const graph::Model& m) {
  std::vector<std::map<std::string, Tensor>> inputs;
  for (int k = 0; k < 2; ++k) {
    Tensor x = Tensor::zeros(DType::f32, {1, 3, 48, 192});
    float* p = x.mutable_data<float>();
    for (int64_t i = 0; i < x.numel(); ++i)
      p[i] = std::sin(0.003f * static_cast<float>(i) * static_cast<float>(k + 2));
    inputs.push_back({{m.graph.inputs[0], x}});
  }
  return inputs;
}

TEST(DamageFit, FittedPassMeasuresTheProbesAsTheFullPass) {
  if (!fs::exists(kCls)) GTEST_SKIP() << kCls << " not fetched (scripts/fetch-models.sh)";
  const graph::Model m = graph::import_onnx(kCls);
  const std::vector<std::map<std::string, Tensor>> inputs = cls_inputs(m);
  ProfileOptions po;
  po.schemes = {"dense", "int8", "int4", "int3", "ternary"};
  po.threads = 1;
  ModelProfile full = profile_model(m, po);
  ASSERT_GE(full.layers.size(), 2u);
  full.layers.resize(2);  // two layers keep the test fast
  ModelProfile fitted = full;
  compress::DamageOptions d;
  d.metric = compress::DamageMetric::kl_probabilities;
  d.threads = 1;
  compress::measure_output_damage(m, inputs, full, d);
  d.fitted = true;
  compress::measure_output_damage(m, inputs, fitted, d);
  for (size_t l = 0; l < full.layers.size(); ++l) {
    const LayerProfile& fl = fitted.layers[l];
    const std::vector<size_t> probes = compress::damage_probes(fl);
    EXPECT_EQ(probes.size(), 2u);  // 4 rtn members: P = 2
    ASSERT_EQ(fl.damage_fits.size(), 1u);
    double log_sum = 0;
    for (size_t c : probes) {
      EXPECT_FALSE(fl.candidates[c].output_damage_fitted);
      EXPECT_EQ(*fl.candidates[c].output_damage, *full.layers[l].candidates[c].output_damage);
      const double e = fl.candidates[c].rel_error;
      log_sum += std::log(*fl.candidates[c].output_damage / (e * e));
    }
    const double alpha = std::exp(log_sum / 2);
    EXPECT_NEAR(fl.damage_fits[0].alpha, alpha, 1e-12 * alpha);
    int predicted = 0;
    for (const Candidate& c : fl.candidates) {
      ASSERT_TRUE(c.output_damage) << c.label;
      if (!c.output_damage_fitted) continue;
      ++predicted;
      EXPECT_NEAR(*c.output_damage, alpha * c.rel_error * c.rel_error, 1e-12 * alpha);
    }
    EXPECT_EQ(predicted, 2);  // 4 rtn members less 2 probes
  }
}

// The plan's fitted picks are measured as the full pass measures every
// candidate, bit for bit, and the re-solved plan's objective is the full
// pass's Σ D of its picks.
TEST(DamageFit, MeasuresWhatThePlanPicksAsTheFullPass) {
  if (!fs::exists(kCls)) GTEST_SKIP() << kCls << " not fetched (scripts/fetch-models.sh)";
  const graph::Model m = graph::import_onnx(kCls);
  ProfileOptions po;
  po.schemes = {"dense", "int8", "int4", "int3", "ternary"};
  po.threads = 1;
  ModelProfile full = profile_model(m, po);
  ASSERT_GE(full.layers.size(), 4u);
  full.layers.resize(4);
  ModelProfile fitted = full;
  compress::OutputObjective objective;
  objective.calibration.inputs = cls_inputs(m);
  objective.calibration.metric = compress::DamageMetric::kl_probabilities;
  compress::DamageOptions d;
  d.metric = objective.calibration.metric;
  d.threads = 1;
  compress::measure_output_damage(m, objective.calibration.inputs, full, d);
  d.fitted = true;
  compress::measure_output_damage(m, objective.calibration.inputs, fitted, d);

  // int8 (the fitted least-error member) fits the budget everywhere.
  int64_t budget = full.fixed_bytes;
  for (const LayerProfile& l : full.layers)
    for (const Candidate& c : l.candidates)
      if (c.label == "int8") budget += c.bytes;
  auto solve = [&] {
    const plan::Problem p = plan::make_problem(fitted, plan::Objective::output, budget, "t");
    return plan::solve_plans(fitted, p, {"exact"}, {}, plan::Objective::output).front();
  };
  const plan::Plan first = solve();
  auto picks_fitted = [&](const plan::Plan& p) {
    const std::vector<int> picked = plan::find_candidates(fitted, p, "plan");
    size_t n = 0;
    for (size_t l = 0; l < picked.size(); ++l)
      n += fitted.layers[l].candidates[static_cast<size_t>(picked[l])].output_damage_fitted ? 1 : 0;
    return n;
  };
  const size_t first_fitted = picks_fitted(first);
  ASSERT_GT(first_fitted, 0u);  // else the test shows nothing
  const compress::MeasuredPicks got =
      compress::measure_fitted_picks(m, objective, po, {}, fitted, first, solve, 8);
  ASSERT_FALSE(got.rounds.empty());
  EXPECT_EQ(got.rounds[0].fitted_picks, first_fitted);
  EXPECT_EQ(got.fitted_left, 0u);
  EXPECT_EQ(picks_fitted(got.plan), 0u);
  double sum = 0;  // the full pass's D of the plan's picks
  for (size_t l = 0; l < got.plan.choices.size(); ++l)
    for (size_t c = 0; c < full.layers[l].candidates.size(); ++c) {
      const Candidate& f = fitted.layers[l].candidates[c];
      if (f.output_damage && !f.output_damage_fitted) {  // measured: as the full pass
        EXPECT_EQ(*f.output_damage, *full.layers[l].candidates[c].output_damage) << f.label;
      }
      if (f.label == got.plan.choices[l].label) sum += *full.layers[l].candidates[c].output_damage;
    }
  EXPECT_NEAR(got.plan.objective_value, sum, 1e-12 * sum);
  EXPECT_EQ(got.rounds.back().objective_after, got.plan.objective_value);

  // None fitted: the plan comes back unchanged, in no round.
  const compress::MeasuredPicks again =
      compress::measure_fitted_picks(m, objective, po, {}, fitted, got.plan, solve, 8);
  EXPECT_TRUE(again.rounds.empty());
  EXPECT_EQ(plan::plan_to_json(again.plan), plan::plan_to_json(got.plan));

  // A pick the profile lacks is named.
  plan::Plan stray = got.plan;
  stray.choices[0].label = "int5";
  testing::expect_error_naming(
      [&] { compress::measure_fitted_picks(m, objective, po, {}, fitted, stray, solve, 8); },
      stray.choices[0].layer, "int5");
}

}  // namespace
}  // namespace tailor
