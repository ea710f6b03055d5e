// tailor compress end to end: the PP-OCR classifier (small ONNX model) and the
// stories260K llama, in temporary folders; atomic output on failure.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "ort/ort_runner.h"
#include "tailor/compress/compress.h"
#include "tailor/compress/output_profile.h"
#include "tailor/io/llama_graph.h"
#include "tailor/io/npy.h"
#include "tailor/io/onnx.h"
#include "tailor/io/safetensors.h"
#include "tailor/llm/calib.h"
#include "tailor/llm/kld.h"
#include "tailor/plan/plan.h"
#include "tailor/plan/sweep.h"
#include "tailor/runtime/executor.h"
#include "tailor/schemes/registry.h"
#include "test_util.h"

namespace tailor {
namespace {
namespace fs = std::filesystem;
using testing::TempDir;

const std::string kCls = testing::model_path("ch_ppocr_mobile_v2.0_cls_infer.onnx");

compress::CompressOptions cls_options(const TempDir& dir, const std::string& budget) {
  compress::CompressOptions o;
  o.model = kCls;
  o.budget = budget;
  o.out_dir = dir.file("out");
  o.cache = false;
  o.random_inputs = 2;
  o.threads = 2;
  return o;
}

// Under fitted damage compress measures what the plan picks: every pick of
// the written plan holds a measured D, equal bit for bit to the measured
// mode's D of that candidate, and the plan's objective is their sum. The
// same under a latency budget: at 10× the original's latency it does not
// bind, so the rounds' plan is the byte-only one (a binding budget would
// make the plan depend on measured time); before the latency path measured
// picks, 11 of its picks stayed fitted here.
TEST(Compress, FittedDamageMeasuresWhatThePlanPicks) {
  if (!fs::exists(kCls)) GTEST_SKIP() << kCls << " not fetched (scripts/fetch-models.sh)";
  TempDir a, b, c;
  compress::CompressOptions fit = cls_options(a, "56%");
  fit.damage = "fitted";
  fit.uniform_guard = false;
  fit.schemes = {"dense", "int8", "int4", "int3", "ternary"};
  fit.min_params = 4096;  // the same layers under the latency budget (0 there by default)
  compress::CompressOptions measured = fit;
  measured.out_dir = b.file("out");
  measured.damage = "measured";
  compress::CompressOptions fit_latency = fit;
  fit_latency.out_dir = c.file("out");
  fit_latency.max_latency_fraction = 10.0;
  const compress::CompressResult rm = compress::compress_model(measured);
  for (compress::CompressOptions* o : {&fit, &fit_latency}) {
    SCOPED_TRACE(o->max_latency_fraction ? "under --max-latency" : "bytes only");
    std::vector<std::string> said;
    o->progress = [&](const std::string& stage, const std::string& msg) {
      if (stage == "plan") said.push_back(msg);
    };
    const compress::CompressResult rf = compress::compress_model(*o);
    EXPECT_TRUE(std::any_of(said.begin(), said.end(), [](const std::string& m) {
      return m.find("round 1: measured the plan's") != std::string::npos;
    })) << "the first plan picked no fitted D: the test shows nothing";
    size_t fitted_left = 0;
    double sum = 0;
    const std::vector<int> picked = plan::find_candidates(rf.profile, rf.plan, "plan");
    ASSERT_EQ(rf.profile.layers.size(), rm.profile.layers.size());
    for (size_t l = 0; l < picked.size(); ++l) {
      const Candidate& got = rf.profile.layers[l].candidates[static_cast<size_t>(picked[l])];
      const Candidate& want = rm.profile.layers[l].candidates[static_cast<size_t>(picked[l])];
      ASSERT_EQ(want.label, got.label);
      fitted_left += got.output_damage_fitted ? 1 : 0;
      if (!got.output_damage_fitted) {
        EXPECT_EQ(*got.output_damage, *want.output_damage);
      }
      sum += *want.output_damage;
    }
    EXPECT_EQ(fitted_left, 0u);
    EXPECT_NEAR(rf.plan.objective_value, sum, 1e-12 * sum);
  }
}

// The schemes compress profiles: its default catalog, plus the W8A8 kernel
// (int8-a8) under a latency budget given either way; what --schemes or
// --uniform name otherwise.
TEST(Compress, ALatencyBudgetProfilesTheW8A8KernelOnEveryWeightLayer) {
  compress::CompressOptions o;
  o.model = kCls;
  const std::vector<std::string> catalog = compress::default_schemes();
  EXPECT_EQ(std::count(catalog.begin(), catalog.end(), "int8-a8"), 0);
  EXPECT_EQ(compress::compress_profile_options(o, nullptr).schemes, catalog);
  std::vector<std::string> with_w8a8 = catalog;
  with_w8a8.push_back("int8-a8");
  compress::CompressOptions ms = o, fraction = o;
  ms.max_latency = 5.0;
  fraction.max_latency_fraction = 0.75;
  EXPECT_EQ(compress::compress_profile_options(ms, nullptr).schemes, with_w8a8);
  EXPECT_EQ(compress::compress_profile_options(fraction, nullptr).schemes, with_w8a8);
  compress::CompressOptions named = ms;
  named.schemes = {"dense", "int4"};
  EXPECT_EQ(compress::compress_profile_options(named, nullptr).schemes, named.schemes);
  compress::CompressOptions uniform = o;
  uniform.uniform = "int4-g32";
  EXPECT_EQ(compress::compress_profile_options(uniform, nullptr).schemes,
            (std::vector<std::string>{"dense", "int4-g32"}));
  // Every weight layer under a latency budget, unless --min-params says otherwise.
  EXPECT_EQ(compress::compress_profile_options(o, nullptr).min_params, 4096);
  EXPECT_EQ(compress::compress_profile_options(ms, nullptr).min_params, 0);
  EXPECT_EQ(compress::compress_profile_options(fraction, nullptr).min_params, 0);
  compress::CompressOptions given = fraction;
  given.min_params = 256;
  EXPECT_EQ(compress::compress_profile_options(given, nullptr).min_params, 256);
}

TEST(Compress, ClassifierEndToEnd) {
  if (!fs::exists(kCls)) GTEST_SKIP() << kCls << " not fetched (scripts/fetch-models.sh)";
  TempDir dir;
  const compress::CompressResult r = compress::compress_model(cls_options(dir, "50%"));
  EXPECT_EQ(r.kind, "onnx");
  for (const char* f : {"model.onnx", "weights.safetensors", "plan.json"})
    EXPECT_TRUE(fs::exists(dir.file("out/") + f)) << f;
  // Nothing but the output folder beside it (the staging folder is gone).
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()), 1);

  const int64_t dense = r.profile.dense_bytes;
  EXPECT_LE(r.plan.total_bytes, dense * 50 / 100);
  // weights.safetensors holds exactly the plan's bytes (f16 scales, packed codes,
  // factors, fixed weights as stored) plus its JSON header.
  const graph::Model st = read_safetensors(dir.file("out/weights.safetensors"));
  int64_t data = 0;
  for (const auto& [name, t] : st.graph.initializers) data += static_cast<int64_t>(t.nbytes());
  EXPECT_EQ(st.metadata.at("format"), "tailor-compressed");
  EXPECT_EQ(plan::read_plan(dir.file("out/plan.json")).total_bytes, r.plan.total_bytes);
  EXPECT_LT(data, dense * 51 / 100);
  // The standard file shrinks too (4-bit codes packed two per byte).
  EXPECT_LT(static_cast<int64_t>(fs::file_size(dir.file("out/model.onnx"))),
            static_cast<int64_t>(fs::file_size(kCls)) * 65 / 100);

  ASSERT_EQ(r.verification.outputs.size(), 1u);
  EXPECT_EQ(r.verification.inputs, 2);
  EXPECT_GT(r.verification.outputs[0].cosine, 0.9);
  EXPECT_TRUE(std::isfinite(r.verification.measured_error));
  EXPECT_DOUBLE_EQ(r.verification.predicted_error, r.plan.objective_value);
  EXPECT_LT(r.standard_vs_tailor_max_abs, 1e-4);

  // The written model.onnx in onnxruntime vs tailor's runtime.
  if (auto why = testing::ort_unavailable(); !why.empty()) GTEST_SKIP() << why;
  const graph::Model m = graph::import_onnx(dir.file("out/model.onnx"));
  const std::string in = m.graph.inputs.at(0), out = m.graph.outputs.at(0);
  Tensor x = Tensor::zeros(DType::f32, {1, 3, 48, 192});
  float* p = x.mutable_data<float>();
  for (int64_t i = 0; i < x.numel(); ++i) p[i] = std::sin(0.01f * static_cast<float>(i));
  runtime::Executor ex(m);
  const std::vector<float> ours = ex.run({{in, x}}).at(out).to_f32_vector();
  const std::vector<float> ort =
      testing::run_ort(dir.file("out/model.onnx"), {{in, x}}).at(out).to_f32_vector();
  ASSERT_EQ(ours.size(), ort.size());
  for (size_t i = 0; i < ours.size(); ++i) EXPECT_NEAR(ours[i], ort[i], 1e-4);
}

TEST(Compress, FailureLeavesNoOutputFolder) {
  if (!fs::exists(kCls)) GTEST_SKIP() << kCls << " not fetched (scripts/fetch-models.sh)";
  TempDir dir;
  // Fails in the plan stage (budget below the smallest reachable one).
  testing::expect_error_naming([&] { compress::compress_model(cls_options(dir, "0.5%")); }, kCls,
                               "smallest");
  // Fails in the verify stage, after the files were staged.
  compress::CompressOptions o = cls_options(dir, "50%");
  o.calib_dir = dir.file("no-such-folder");
  testing::expect_error_naming([&] { compress::compress_model(o); }, "no-such-folder",
                               "not a folder");
  EXPECT_FALSE(fs::exists(dir.file("out")));
  EXPECT_TRUE(fs::is_empty(dir.path()));
}

TEST(Compress, RefusesToReplaceAFileOrAFolderOfOtherFiles) {
  // `-o .` or `-o ~` used to rename the folder away and delete it after a
  // successful run; a file given as -o was silently replaced by a folder.
  if (!fs::exists(kCls)) GTEST_SKIP() << kCls << " not fetched (scripts/fetch-models.sh)";
  TempDir dir;
  compress::CompressOptions o = cls_options(dir, "50%");
  testing::write_bytes(o.out_dir, "mine");
  testing::expect_error_naming([&] { compress::compress_model(o); }, o.out_dir,
                               "exists and is not a folder");
  fs::remove(o.out_dir);
  fs::create_directory(o.out_dir);
  const std::string keep = (fs::path(o.out_dir) / "notes.txt").string();
  testing::write_bytes(keep, "mine");
  testing::expect_error_naming([&] { compress::compress_model(o); }, o.out_dir,
                               "holds 'notes.txt'");
  EXPECT_EQ(fs::file_size(keep), 4u);
  EXPECT_EQ(std::distance(fs::directory_iterator(o.out_dir), fs::directory_iterator()), 1);
}

// A plan that keeps every layer dense changes nothing: by definition the
// relative error is 0 and the cosine 1; the odd-numbered --calib inputs are
// the ones verified (the even-numbered calibrate the output objective).
TEST(Compress, DensePlanOnCalibrationInputsIsExact) {
  if (!fs::exists(kCls)) GTEST_SKIP() << kCls << " not fetched (scripts/fetch-models.sh)";
  TempDir dir;
  fs::create_directories(dir.file("calib"));
  for (int k = 0; k < 2; ++k) {
    Tensor x = Tensor::zeros(DType::f32, {1, 3, 48, 192});
    float* p = x.mutable_data<float>();
    for (int64_t i = 0; i < x.numel(); ++i)
      p[i] = std::cos(0.003f * static_cast<float>(i * (k + 1)));
    write_npy(dir.file("calib/" + std::to_string(k) + ".npy"), x);
  }
  compress::CompressOptions o = cls_options(dir, "100%");
  o.schemes = {"dense"};
  o.calib_dir = dir.file("calib");
  const compress::CompressResult r = compress::compress_model(o);
  EXPECT_EQ(r.verification.inputs, 1);  // the odd-numbered half; the even one calibrates
  ASSERT_EQ(r.verification.outputs.size(), 1u);
  EXPECT_EQ(r.verification.outputs[0].rel_error, 0.0);
  EXPECT_EQ(r.verification.measured_damage, 0.0);
  EXPECT_EQ(r.verification.predicted_damage, 0.0);
  EXPECT_NEAR(r.verification.outputs[0].cosine, 1.0, 1e-12);
  EXPECT_EQ(r.verification.measured_error, 0.0);
  EXPECT_EQ(r.plan.objective_value, 0.0);
  EXPECT_TRUE(r.rewrites.empty());  // nothing to rewrite
}

TEST(Compress, CalibrationFileOfTheWrongShapeOrDtypeIsNamed) {
  // The classifier declares x [?, 3, ?, ?] f32; the error used to name the
  // graph input only ("input 'x': shape ..."), not which --calib file.
  if (!fs::exists(kCls)) GTEST_SKIP() << kCls << " not fetched (scripts/fetch-models.sh)";
  TempDir dir;
  fs::create_directories(dir.file("calib"));
  const std::string bad = dir.file("calib/b.npy");
  write_npy(dir.file("calib/a.npy"), Tensor::zeros(DType::f32, {1, 3, 48, 192}));
  write_npy(bad, Tensor::zeros(DType::f32, {1, 2, 48, 192}));
  compress::CompressOptions o = cls_options(dir, "100%");
  o.schemes = {"dense"};
  o.calib_dir = dir.file("calib");
  testing::expect_error_naming([&] { compress::compress_model(o); }, bad,
                               "has shape [1, 2, 48, 192], the model declares [?, 3, ?, ?]");
  write_npy(bad, Tensor::zeros(DType::i64, {1, 3, 48, 192}));
  testing::expect_error_naming([&] { compress::compress_model(o); }, bad,
                               "has dtype i64, the model declares f32");
  EXPECT_FALSE(fs::exists(o.out_dir));
}

TEST(Compress, CliWritesReportAndNamesIt) {
  if (!fs::exists(kCls)) GTEST_SKIP() << kCls << " not fetched (scripts/fetch-models.sh)";
  TempDir dir;
  const auto r = testing::run_cli("compress " + kCls + " --budget 60% --no-cache --inputs 1 -o " +
                                  dir.file("out") + " --report");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* stage : {"load", "profile", "plan", "rewrite", "write", "verify", "report"})
    EXPECT_NE(r.output.find(std::string("] ") + stage), std::string::npos) << stage;
  EXPECT_NE(r.output.find("report: " + dir.file("out") + "/report.html"), std::string::npos);
  EXPECT_TRUE(fs::exists(dir.file("out/report.json")));
  const auto bad = testing::run_cli("compress " + kCls + " --budget 1% -o " + dir.file("x"));
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_FALSE(fs::exists(dir.file("x")));
}

TEST(Compress, Stories260KReportsKlAndTopOne) {
  TempDir dir;
  compress::CompressOptions o;
  o.model = testing::fixture_path("stories260K.bin");
  o.budget = "40%";
  o.out_dir = dir.file("out");
  o.cache = false;
  o.kld_sequences = 4;
  o.kld_length = 32;
  const compress::CompressResult r = compress::compress_model(o);
  EXPECT_EQ(r.kind, "llama");
  EXPECT_LE(r.plan.total_bytes, r.profile.dense_bytes * 40 / 100);
  ASSERT_TRUE(r.kld.has_value());
  EXPECT_EQ(r.kld->positions, 4 * 32);
  EXPECT_GE(r.kld->mean_kl, 0.0);
  EXPECT_TRUE(std::isfinite(r.kld->mean_kl));
  EXPECT_GT(r.kld->top1_agreement, 0.0);
  EXPECT_LE(r.kld->top1_agreement, 1.0);
  ASSERT_TRUE(r.verification.metric.has_value());
  EXPECT_EQ(r.verification.metric->compressed, r.kld->top1_agreement);
  EXPECT_TRUE(fs::exists(dir.file("out/weights.safetensors")));
  EXPECT_TRUE(fs::exists(dir.file("out/plan.json")));
  // model.onnx: the llama decoder graph with the planned linears in standard
  // ONNX (rewrite_standard), run by tailor's runtime against the
  // CompressedLinear graph the verification runs.
  ASSERT_TRUE(fs::exists(dir.file("out/model.onnx")));
  EXPECT_EQ(r.rewrites.size(), r.plan.choices.size() -
                                   std::count_if(r.plan.choices.begin(), r.plan.choices.end(),
                                                 [](const auto& c) { return c.label == "dense"; }));
  EXPECT_LE(r.standard_vs_tailor_max_rel, 1e-5);
  // Smaller than the dense weights (1,040,128 bytes) by the plan's savings,
  // the RoPE tables and mask (1,081,600 bytes) on top.
  EXPECT_LT(r.file_bytes.at("model.onnx"), 1081600 + r.plan.total_bytes + 100000);
}

// The check of model.onnx said "max |Δ| 1.14e-05 (relative to max |logit|
// 5.58e-07)", which read as if max |logit| were 5.58e-07.
TEST(Compress, Stories260KNamesEachNumberOfTheModelOnnxCheck) {
  TempDir dir;
  const auto r =
      testing::run_cli("compress " + testing::fixture_path("stories260K.bin") +
                       " --uniform int8 --no-cache --sequences 2 --length 8 -o " + dir.file("out"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const size_t at = r.output.find("vs compressed llama forward: max |Δ| ");
  ASSERT_NE(at, std::string::npos) << r.output;
  const std::string line = r.output.substr(at, r.output.find('\n', at) - at);
  EXPECT_NE(line.find(", max |Δ| / max |logit| "), std::string::npos) << line;
  EXPECT_EQ(line.find("relative to"), std::string::npos) << line;
}

// --objective activation on a llama: statistics collected from sequences the
// model samples (seed + 2), the profile's activation-aware errors follow
// DESIGN.md's definition with them, and the plan uses that objective.
TEST(Compress, Stories260KActivationObjective) {
  TempDir dir;
  compress::CompressOptions o;
  o.model = testing::fixture_path("stories260K.bin");
  o.budget = "30%";
  o.out_dir = dir.file("out");
  o.cache = false;
  o.objective = "activation";
  o.schemes = {"int8", "int4"};
  o.kld_sequences = 2;
  o.kld_length = 16;
  const compress::CompressResult r = compress::compress_model(o);
  EXPECT_EQ(r.plan.objective, "activation");
  ASSERT_FALSE(r.profile.layers.empty());
  for (const auto& l : r.profile.layers)
    for (const auto& c : l.candidates) EXPECT_TRUE(c.rel_error_activation.has_value()) << l.name;

  // Independently: same sequences, recorded mean x², int8 decode, and
  // sqrt(Σ d_j (W−Ŵ)²_ij) / sqrt(Σ d_j W²_ij) in double.
  const graph::Model m = load_llama_graph(o.model);
  llm::CompareOptions co;
  co.seed = o.seed + 2;
  co.sequences = 2;
  co.length = 16;
  const auto stats = llm::collect_input_stats(m, llm::sample_sequences(m, co));
  const std::string name = "model.layers.1.mlp.down_proj.weight";
  const Tensor& w = m.graph.initializers.at(name);
  const Tensor w_hat = schemes::parse_scheme("int8").encode(w)->decode().contiguous();
  const std::vector<float>& d = stats.at(name);
  double num = 0, den = 0;
  for (int64_t i = 0; i < w.dim(0); ++i)
    for (int64_t j = 0; j < w.dim(1); ++j) {
      const double a = w.data<float>()[i * w.dim(1) + j];
      const double b = w_hat.data<float>()[i * w.dim(1) + j];
      num += d[static_cast<size_t>(j)] * (a - b) * (a - b);
      den += d[static_cast<size_t>(j)] * a * a;
    }
  const double want = std::sqrt(num / den);
  bool found = false;
  for (const auto& l : r.profile.layers)
    if (l.name == name)
      for (const auto& c : l.candidates)
        if (c.label == "int8") {
          found = true;
          EXPECT_NEAR(*c.rel_error_activation, want, 1e-4 * want);
        }
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace tailor
