// Cross-fitting of the data-aware (-gptq) candidates: D(ℓ, c) and the
// uniform guard score each input on GPTQ fitted to the inputs outside its
// fold, checked against full runs with weights encoded here against
// runtime::gram of those inputs and KL computed by definition.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <stdexcept>

#include "compress/output_damage_util.h"
#include "tailor/compress/compress.h"
#include "tailor/compress/output_damage.h"
#include "tailor/compress/output_profile.h"
#include "tailor/compress/sequential_gptq.h"
#include "tailor/graph/weights.h"
#include "tailor/io/npy.h"
#include "tailor/io/onnx.h"
#include "tailor/profile/profiler.h"
#include "tailor/runtime/calibration.h"
#include "tailor/runtime/executor.h"
#include "test_util.h"

namespace tailor {
namespace {
namespace fs = std::filesystem;
using testing::cls_options;
using testing::kCls;
using testing::TempDir;
using testing::wavy;
using testing::with_decoded_weight;

// The classifier's --calib inputs a, c, e (of six files wavy(1..6)).
std::vector<std::map<std::string, Tensor>> calib_ace(const graph::Model& m) {
  const std::string in = m.graph.inputs[0];
  return {{{in, wavy(1)}}, {{in, wavy(3)}}, {{in, wavy(5)}}};
}

// `label` at every layer of `profile` that has it, dense elsewhere.
plan::Plan uniform_of(const ModelProfile& profile, const std::string& label) {
  plan::Plan uniform;
  for (const LayerProfile& layer : profile.layers) {
    plan::PlanChoice ch;
    ch.layer = layer.name;
    ch.label = std::any_of(layer.candidates.begin(), layer.candidates.end(),
                           [&](const Candidate& c) { return c.label == label; })
                   ? label
                   : "dense";
    uniform.choices.push_back(ch);
  }
  return uniform;
}

// The classifier's KL (mean over its output rows, two classes each) of
// `plan` on `calib`, each input k run with the plan's layers encoded by
// encode_plan_sequential against fit(k) (cross-fitted: the other inputs;
// in-sample: all of them), its -gptq layers fitted `how`, by definition.
double kl_of(const graph::Model& m, const plan::Plan& plan,
             const std::vector<std::map<std::string, Tensor>>& calib,
             const std::function<std::vector<std::map<std::string, Tensor>>(size_t)>& fit,
             compress::GptqFit how = compress::GptqFit::sequential) {
  const std::string out = m.graph.outputs[0];
  const std::vector<graph::WeightView> ws = graph::weights(m);
  runtime::Executor ref(m);
  double kl = 0;
  int64_t rows = 0;
  for (size_t k = 0; k < calib.size(); ++k) {
    graph::Model changed = m;
    for (const compress::EncodedLayer& e :
         compress::encode_plan_sequential(m, m, plan, {}, 0x7a11, 1, fit(k), std::nullopt, how))
      with_decoded_weight(changed, *graph::find_weight(ws, e.name), e);
    const std::vector<float> p = ref.run(calib[k]).at(out).to_f32_vector();
    const std::vector<float> q = runtime::Executor(changed).run(calib[k]).at(out).to_f32_vector();
    for (size_t i = 0; i < q.size(); i += 2, ++rows)
      for (size_t v = 0; v < 2; ++v) kl += p[i + v] * std::log(double(p[i + v]) / double(q[i + v]));
  }
  return kl / static_cast<double>(rows);
}

// For input k, the inputs of `calib` outside its fold (three inputs, three
// folds: all but k).
std::function<std::vector<std::map<std::string, Tensor>>(size_t)> outside_of(
    const std::vector<std::map<std::string, Tensor>>& calib) {
  return [calib](size_t k) {
    std::vector<std::map<std::string, Tensor>> o;
    for (size_t j = 0; j < calib.size(); ++j)
      if (j != k) o.push_back(calib[j]);
    return o;
  };
}

compress::CompressOptions ace_options(const TempDir& dir) {
  fs::create_directories(dir.file("calib"));
  for (int k = 0; k < 6; ++k)
    write_npy(dir.file(std::string("calib/") + static_cast<char>('a' + k) + ".npy"), wavy(k + 1));
  compress::CompressOptions o = cls_options(dir);
  o.calib_dir = dir.file("calib");
  return o;
}

const compress::GuardPoint& point_named(const compress::CompressResult& r,
                                        const std::string& name) {
  const auto it =
      std::find_if(r.guard.begin(), r.guard.end(), [&](const auto& p) { return p.name == name; });
  if (it == r.guard.end()) throw std::runtime_error("no guard point " + name);
  return *it;
}

// The guard measures a plan of -gptq layers cross-fitted: with three
// calibration inputs (a, c, e of six --calib files) in three folds, input k
// runs every layer GPTQ-encoded (sequentially, encode_plan_sequential) on the
// other two; the guard's "uniform int4-gptq" damage is the KL of those full
// runs, by definition, over every output row.
TEST(CrossFit, TheGuardScoresGptqPlansOnInputsOutsideTheirGram) {
  if (!fs::exists(kCls)) GTEST_SKIP() << kCls << " not fetched (scripts/fetch-models.sh)";
  TempDir dir;
  compress::CompressOptions o = ace_options(dir);
  o.schemes = {"dense", "int4", "int4-gptq"};
  o.budget = "60%";
  const compress::CompressResult r = compress::compress_model(o);
  const compress::GuardPoint& point = point_named(r, "uniform int4-gptq");
  EXPECT_EQ(r.guard_folds, 3u);  // three inputs, three folds
  EXPECT_EQ(point.in_sample, "");

  const graph::Model m = graph::import_onnx(kCls);
  const auto calib = calib_ace(m);
  const auto others = outside_of(calib);
  // Both fits; the point is the lower and says which.
  const double seq = kl_of(m, uniform_of(r.profile, "int4-gptq"), calib, others);
  const double per_layer =
      kl_of(m, uniform_of(r.profile, "int4-gptq"), calib, others, compress::GptqFit::per_layer);
  EXPECT_NEAR(point.damage, std::min(seq, per_layer), 1e-9 + 1e-6 * point.damage);
  EXPECT_EQ(point.fit, per_layer < seq ? "per layer" : "sequential");
  EXPECT_NE(seq, per_layer);

  // The kept plan (one with -gptq layers) is written encoded on all three
  // inputs: model.onnx computes what the original does with the weights
  // encode_plan_sequential gives on a, c and e.
  ASSERT_FALSE(compress::gram_weights(r.plan).empty());
  EXPECT_EQ(r.gptq_fit, r.guard[r.guard_kept].fit);
  const std::vector<graph::WeightView> ws = graph::weights(m);
  graph::Model kept = m;
  for (const compress::EncodedLayer& e :
       compress::encode_plan_sequential(m, m, r.plan, {}, 0x7a11, 1, calib, std::nullopt,
                                        r.gptq_fit == "sequential" ? compress::GptqFit::sequential
                                                                   : compress::GptqFit::per_layer))
    with_decoded_weight(kept, *graph::find_weight(ws, e.name), e);
  const std::string in = m.graph.inputs[0], out = m.graph.outputs[0];
  const std::map<std::string, Tensor> x = {{in, wavy(2)}};
  const std::vector<float> want = runtime::Executor(kept).run(x).at(out).to_f32_vector();
  const std::vector<float> got = runtime::Executor(graph::import_onnx(dir.file("out/model.onnx")))
                                     .run(x)
                                     .at(out)
                                     .to_f32_vector();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6) << i;
}

// A uniform -gptq plan over the budget, which the guard cannot keep, is not
// cross-fitted: int8-gptq at 54% keeps its damage with GPTQ fitted to all
// three inputs (in-sample), by definition the KL with every layer encoded on
// a, c and e, and says why; the plan and the uniforms within the budget
// (int3-gptq, int4-gptq) are cross-fitted as before.
TEST(CrossFit, TheGuardMeasuresUniformsOverTheBudgetInSample) {
  if (!fs::exists(kCls)) GTEST_SKIP() << kCls << " not fetched (scripts/fetch-models.sh)";
  TempDir dir;
  compress::CompressOptions o = ace_options(dir);
  o.schemes = {"dense", "int8-gptq", "int3-gptq", "int4-gptq"};
  o.budget = "54%";
  const compress::CompressResult r = compress::compress_model(o);
  EXPECT_EQ(r.guard_folds, 3u);
  ASSERT_FALSE(r.guard.empty());

  const graph::Model m = graph::import_onnx(kCls);
  const auto calib = calib_ace(m);
  const compress::GuardPoint& int8 = point_named(r, "uniform int8-gptq");
  EXPECT_GT(int8.bytes, r.plan.budget_bytes);
  EXPECT_EQ(int8.in_sample, "over the budget");
  EXPECT_NEAR(int8.damage,
              kl_of(m, uniform_of(r.profile, "int8-gptq"), calib, [&](size_t) { return calib; }),
              1e-9 + 1e-6 * int8.damage);
  const compress::GuardPoint& int3 = point_named(r, "uniform int3-gptq");
  EXPECT_LE(int3.bytes, r.plan.budget_bytes);
  EXPECT_EQ(int3.in_sample, "");
  const auto others = outside_of(calib);
  EXPECT_NEAR(int3.damage,
              std::min(kl_of(m, uniform_of(r.profile, "int3-gptq"), calib, others),
                       kl_of(m, uniform_of(r.profile, "int3-gptq"), calib, others,
                             compress::GptqFit::per_layer)),
              1e-9 + 1e-6 * int3.damage);
  EXPECT_EQ(r.guard[0].in_sample, "");
  EXPECT_EQ(point_named(r, "uniform int4-gptq").in_sample, "");
}

// A --uniform -gptq file is written with the fit of the lower cross-fitted
// damage, as the guard writes a plan: the two KLs by definition.
TEST(CrossFit, AUniformGptqFileTakesTheFitOfLowerCrossFittedDamage) {
  if (!fs::exists(kCls)) GTEST_SKIP() << kCls << " not fetched (scripts/fetch-models.sh)";
  TempDir dir;
  compress::CompressOptions o = ace_options(dir);
  o.schemes = {"dense", "int4-gptq"};
  o.uniform = "int4-gptq";
  const compress::CompressResult r = compress::compress_model(o);
  ASSERT_EQ(r.guard.size(), 1u);
  const graph::Model m = graph::import_onnx(kCls);
  const auto calib = calib_ace(m);
  const auto others = outside_of(calib);
  const plan::Plan u = uniform_of(r.profile, "int4-gptq");
  const double seq = kl_of(m, u, calib, others);
  const double per_layer = kl_of(m, u, calib, others, compress::GptqFit::per_layer);
  EXPECT_NEAR(r.plan_damage_sequential, seq, 1e-9 + 1e-6 * seq);
  EXPECT_NEAR(r.plan_damage_per_layer, per_layer, 1e-9 + 1e-6 * per_layer);
  EXPECT_EQ(r.gptq_fit, per_layer < seq ? "per layer" : "sequential");
  EXPECT_NEAR(r.guard[0].damage, std::min(seq, per_layer), 1e-9 + 1e-6 * r.guard[0].damage);
}

// Cross-fitted -gptq damage: with 3 inputs in 2 folds ({0, 2} and {1}),
// inputs 0 and 2 are measured on the candidate GPTQ-encoded against the Gram
// of input 1 alone, input 1 on the one encoded against inputs 0 and 2
// (runtime::gram of those inputs, summed in their order); the KL of each full
// run with that decoded weight, by definition, pooled over the rows.
TEST(CrossFit, GptqIsScoredOnInputsOutsideItsGram) {
  if (!fs::exists(kCls)) GTEST_SKIP() << kCls << " not fetched (scripts/fetch-models.sh)";
  const graph::Model m = graph::import_onnx(kCls);
  const std::string out = m.graph.outputs[0];
  const std::vector<std::map<std::string, Tensor>> inputs = {{{m.graph.inputs[0], wavy(1)}},
                                                             {{m.graph.inputs[0], wavy(2)}},
                                                             {{m.graph.inputs[0], wavy(3)}}};
  const auto all = runtime::gram(m, inputs);
  const auto of_1 = runtime::gram(m, {inputs[1]});
  const auto of_02 = runtime::gram(m, {inputs[0], inputs[2]});
  compress::Grams grams;  // every input's: what a fold-less pass encodes with
  for (const auto& [name, g] : all) grams[name] = std::make_shared<const schemes::Gram>(g);
  ProfileOptions po;
  po.schemes = {"dense", "int4-gptq", "int4"};
  po.threads = 1;
  po.grams = grams;
  ModelProfile profile = profile_model(m, po);
  ASSERT_GE(profile.layers.size(), 2u);
  profile.layers.resize(2);
  compress::DamageOptions d;
  d.metric = compress::DamageMetric::kl_probabilities;
  d.grams = grams;
  d.folds = 2;
  d.threads = 2;
  ModelProfile crossfit = profile, fitted_on_all = profile, on_one_thread = profile;
  compress::measure_output_damage(m, inputs, crossfit, d);
  d.threads = 1;  // the folds encoded on one worker instead of two: the same bits
  compress::measure_output_damage(m, inputs, on_one_thread, d);
  for (size_t l = 0; l < crossfit.layers.size(); ++l)
    for (size_t c = 0; c < crossfit.layers[l].candidates.size(); ++c)
      EXPECT_EQ(crossfit.layers[l].candidates[c].output_damage,
                on_one_thread.layers[l].candidates[c].output_damage)
          << crossfit.layers[l].name << " " << crossfit.layers[l].candidates[c].label;
  d.threads = 2;
  d.folds = 1;
  compress::measure_output_damage(m, inputs, fitted_on_all, d);

  runtime::Executor ref(m);
  std::vector<std::vector<float>> p;
  for (const auto& in : inputs) p.push_back(ref.run(in).at(out).to_f32_vector());
  const std::vector<graph::WeightView> ws = graph::weights(m);
  int checked = 0;
  for (size_t l = 0; l < crossfit.layers.size(); ++l) {
    const LayerProfile& layer = crossfit.layers[l];
    const graph::WeightView& w = *graph::find_weight(ws, layer.name);
    for (size_t c = 0; c < layer.candidates.size(); ++c) {
      const std::string& label = layer.candidates[c].label;
      ASSERT_TRUE(layer.candidates[c].output_damage) << layer.name << " " << label;
      const double got = *layer.candidates[c].output_damage;
      if (label != "int4-gptq") {  // not data-aware: the same pass either way
        EXPECT_EQ(got, *fitted_on_all.layers[l].candidates[c].output_damage) << label;
        continue;
      }
      double kl = 0;
      int64_t rows = 0;
      for (size_t k = 0; k < inputs.size(); ++k) {
        schemes::SchemeParams params;
        params.gram =
            std::make_shared<const schemes::Gram>((k % 2 == 0 ? of_1 : of_02).at(layer.name));
        const compress::EncodedLayer e = compress::encode_layer(w, label, params, 0x7a11, l);
        graph::Model changed = m;
        with_decoded_weight(changed, w, e);
        const std::vector<float> q =
            runtime::Executor(changed).run(inputs[k]).at(out).to_f32_vector();
        for (size_t r = 0; r < q.size(); r += 2, ++rows)
          for (size_t v = 0; v < 2; ++v)
            kl += p[k][r + v] * std::log(double(p[k][r + v]) / double(q[r + v]));
      }
      EXPECT_NEAR(got, kl / static_cast<double>(rows), 1e-12) << layer.name;
      // Encoded against every input's Gram instead, it scores otherwise.
      EXPECT_NE(got, *fitted_on_all.layers[l].candidates[c].output_damage) << layer.name;
      ++checked;
    }
  }
  EXPECT_EQ(checked, 2);
}

}  // namespace
}  // namespace tailor
