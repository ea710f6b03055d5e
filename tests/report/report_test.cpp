// make_report, report.json and verify.json on a small profile whose optima
// are found here by enumerating every plan.
#include "tailor/report/report.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "tailor/core/error.h"
#include "tailor/io/atomic_file.h"
#include "test_util.h"

namespace tailor::report {
namespace {

/// A candidate with label, rel_error, bytes and MACs (the rest left empty).
Candidate cand(const std::string& label, double rel_error, int64_t bytes, int64_t macs) {
  Candidate c;
  c.label = label;
  c.rel_error = rel_error;
  c.bytes = bytes;
  c.macs = macs;
  return c;
}

using testing::TempDir;

/// Two layers, fixed 100 bytes, dense 1700 bytes; "int4" only profiled for
/// layer a, "lowrank-r4" only for layer b.
ModelProfile two_layers() {
  ModelProfile p;
  p.model = "two.onnx";
  p.fixed_bytes = 100;
  p.dense_bytes = 100 + 400 + 1200;
  LayerProfile a{"a.weight", {10, 10}, 100, 400, {}};
  a.candidates = {cand("dense", 0.0, 400, 100), cand("int8", 0.01, 110, 100),
                  cand("int4", 0.08, 60, 100)};
  LayerProfile b{"b.weight", {20, 15}, 300, 1200, {}};
  b.candidates = {cand("dense", 0.0, 1200, 300), cand("int8", 0.02, 310, 300),
                  cand("lowrank-r4", 0.2, 100, 140)};
  p.layers = {a, b};
  return p;
}

/// The numel objective's optimum under a total budget, by enumeration.
double brute_force_optimum(const ModelProfile& p, int64_t budget) {
  double best = std::numeric_limits<double>::infinity();
  const double total_numel = 400;
  for (const Candidate& ca : p.layers[0].candidates)
    for (const Candidate& cb : p.layers[1].candidates) {
      if (p.fixed_bytes + ca.bytes + cb.bytes > budget) continue;
      best = std::min(best, 100 / total_numel * ca.rel_error * ca.rel_error +
                                300 / total_numel * cb.rel_error * cb.rel_error);
    }
  return best;
}

/// A (not optimal) greedy-labelled plan: int8 for both layers under 700 bytes.
plan::Plan int8_plan() {
  plan::Plan p;
  p.model = "two.onnx";
  p.budget_bytes = 700;
  p.fixed_bytes = 100;
  p.total_bytes = 100 + 110 + 310;
  p.solver = "greedy";
  p.objective = "numel";
  p.objective_value = 0.25 * 0.01 * 0.01 + 0.75 * 0.02 * 0.02;
  p.choices = {{"a.weight", "int8", 0.01, 110}, {"b.weight", "int8", 0.02, 310}};
  return p;
}

TEST(Report, CurveIsTheExactOptimumAtTenBudgets) {
  const ModelProfile profile = two_layers();
  const Report r = make_report(profile, int8_plan(), "plan.json",
                               plan::study_plan(profile, int8_plan(), "plan.json", {}));
  // Smallest feasible: 100 + 60 + 100 = 260; dense 1700; 9 steps of 160.
  ASSERT_EQ(r.curve.size(), 10u);
  for (size_t i = 0; i < r.curve.size(); ++i) {
    const int64_t budget = 260 + 160 * static_cast<int64_t>(i);
    EXPECT_EQ(r.curve[i].budget_bytes, budget);
    EXPECT_NEAR(r.curve[i].objective, brute_force_optimum(profile, budget), 1e-15) << budget;
    EXPECT_LE(r.curve[i].total_bytes, budget);
    EXPECT_TRUE(r.curve[i].proven_optimal);
  }
  EXPECT_EQ(r.curve.back().objective, 0.0);  // dense fits at the dense budget
}

TEST(Report, SolversCompareAtTheChosenBudget) {
  const ModelProfile profile = two_layers();
  const Report r = make_report(profile, int8_plan(), "plan.json",
                               plan::study_plan(profile, int8_plan(), "plan.json", {}));
  ASSERT_EQ(r.solvers.size(), 5u);
  EXPECT_EQ(r.solvers[0].solver, "exact");
  EXPECT_EQ(r.solvers[4].solver, "gumbel");
  // Under 700 bytes: a dense (400) + b lowrank (100) = 600 costs 0.75·0.04 = 0.03;
  // a int4 + b int8 = 470 costs 0.25·0.0064 + 0.75·0.0004 = 0.0019; a int8 + b int8
  // = 520 costs 0.000325; a dense + b int8 = 810 does not fit. Optimum 0.000325.
  EXPECT_NEAR(r.solvers[0].objective, 0.000325, 1e-15);
  EXPECT_EQ(r.solvers[0].total_bytes, 520);
  EXPECT_EQ(r.solvers[0].gap_to_exact, 0.0);
  EXPECT_TRUE(r.solvers[0].proven_optimal);
  for (const SolverRow& s : r.solvers) {
    EXPECT_LE(s.total_bytes, 700) << s.solver;
    EXPECT_NEAR(s.gap_to_exact, s.objective - 0.000325, 1e-15) << s.solver;
    EXPECT_GE(s.gap_to_exact, -1e-15) << s.solver;
  }
}

TEST(Report, LayerRowsAndSchemeMap) {
  const Report r = make_report(two_layers(), int8_plan(), "plan.json",
                               plan::study_plan(two_layers(), int8_plan(), "plan.json", {}));
  EXPECT_EQ(r.schemes, (std::vector<std::string>{"dense", "int8", "int4", "lowrank-r4"}));
  ASSERT_EQ(r.layers.size(), 2u);
  EXPECT_EQ(r.layers[0].dense_bytes, 400);
  EXPECT_EQ(r.layers[0].bytes, 110);
  EXPECT_EQ(r.layers[1].dense_bytes, 1200);
  EXPECT_EQ(r.layers[1].bytes, 310);
  EXPECT_EQ(r.layers[1].label, "int8");
  EXPECT_EQ(r.layers[0].scheme_errors[2], 0.08);
  EXPECT_TRUE(std::isnan(r.layers[0].scheme_errors[3]));  // lowrank-r4 not profiled for a
  EXPECT_TRUE(std::isnan(r.layers[1].scheme_errors[2]));  // int4 not profiled for b
  EXPECT_EQ(r.layers[1].scheme_errors[3], 0.2);
}

TEST(Report, PlanOfAnotherProfileIsRefused) {
  const ModelProfile profile = two_layers();
  plan::Plan renamed = int8_plan();
  renamed.choices[1].layer = "c.weight";
  testing::expect_error_naming([&] { make_report(profile, renamed, "p.json", plan::PlanStudy{}); },
                               "p.json", "c.weight");
  testing::expect_error_naming([&] { plan::study_plan(profile, renamed, "p.json", {}); }, "p.json",
                               "c.weight");
  plan::Plan unknown = int8_plan();
  unknown.choices[0].label = "lowrank-r4";
  testing::expect_error_naming([&] { make_report(profile, unknown, "p.json", plan::PlanStudy{}); },
                               "p.json", "lowrank-r4");
  testing::expect_error_naming([&] { plan::study_plan(profile, unknown, "p.json", {}); }, "p.json",
                               "lowrank-r4");
  plan::Plan short_plan = int8_plan();
  short_plan.choices.pop_back();
  testing::expect_error_naming(
      [&] { make_report(profile, short_plan, "p.json", plan::PlanStudy{}); }, "p.json",
      "not a plan of this profile");
  testing::expect_error_naming([&] { plan::study_plan(profile, short_plan, "p.json", {}); },
                               "p.json", "not a plan of this profile");
}

TEST(Report, JsonHoldsTheNumbers) {
  Verification v;
  v.inputs = 4;
  v.outputs = {{"logits", 0.012, 0.9999}};
  v.metric = TaskMetric{"character accuracy", 0.98, 0.97};
  v.predicted_error = 0.0021;
  v.damage_metric = "kl";
  v.measured_damage = 0.01;
  v.measured_interval = {0.004, 0.03};
  Report r = make_report(two_layers(), int8_plan(), "plan.json",
                         plan::study_plan(two_layers(), int8_plan(), "plan.json", {}), v);
  r.measured_metric = "kl";
  r.measured.push_back({"uniform int8", 520, 0.002, true, "", {0.001, 0.0035}});
  r.measured.push_back({"plan (exact)", 500, 0.003, false, "", {}});
  const nlohmann::json j = nlohmann::json::parse(report_to_json(r));
  // The damages' intervals over the inputs; none measured: null.
  EXPECT_EQ(j["verification"]["measured_damage_low"], 0.004);
  EXPECT_EQ(j["verification"]["measured_damage_high"], 0.03);
  EXPECT_TRUE(j["verification"]["calibration_damage"].is_null());
  EXPECT_EQ(j["measured_plans"][0]["damage_low"], 0.001);
  EXPECT_EQ(j["measured_plans"][0]["damage_high"], 0.0035);
  EXPECT_TRUE(j["measured_plans"][1]["damage_low"].is_null());
  EXPECT_EQ(j["report_version"], 1);
  EXPECT_EQ(j["total_bytes"], 520);
  EXPECT_NEAR(j["total_percent"].get<double>(), 100.0 * 520 / 1700, 1e-12);
  EXPECT_EQ(j["plan"]["solver"], "greedy");
  EXPECT_EQ(j["plan"]["choices"][1]["label"], "int8");
  ASSERT_EQ(j["error_vs_budget"].size(), 10u);
  EXPECT_EQ(j["error_vs_budget"][0]["budget_bytes"], 260);
  EXPECT_NEAR(j["error_vs_budget"][0]["objective"].get<double>(),
              brute_force_optimum(two_layers(), 260), 1e-15);
  EXPECT_EQ(j["solvers"].size(), 5u);
  EXPECT_EQ(j["layers"][1]["scheme_errors"].size(), 3u);  // int4 absent, not null
  EXPECT_FALSE(j["layers"][1]["scheme_errors"].contains("int4"));
  EXPECT_EQ(j["verification"]["outputs"][0]["cosine"], 0.9999);
  EXPECT_EQ(j["verification"]["metric"]["compressed"], 0.97);
  EXPECT_EQ(j["verification"]["predicted_error"], 0.0021);
  EXPECT_TRUE(j["verification"]["measured_error"].is_null());
}

TEST(Verification, ReadsTheFileAndRefusesBadOnes) {
  TempDir dir;
  testing::write_bytes(dir.file("v.json"), R"({"inputs": 3,
    "outputs": [{"name": "y", "rel_error": 0.5, "cosine": 0.8}],
    "metric": {"name": "acc", "original": 1, "compressed": 0.5},
    "predicted_error": 0.1, "measured_error": null, "damage_metric": "kl",
    "predicted_damage": 0.02, "measured_damage": 0.01, "measured_damage_low": 0.004,
    "measured_damage_high": 0.03, "calibration_damage": 0.012,
    "calibration_damage_low": null, "calibration_damage_high": null})");
  const Verification v = read_verification(dir.file("v.json"));
  EXPECT_EQ(v.inputs, 3);
  ASSERT_EQ(v.outputs.size(), 1u);
  EXPECT_EQ(v.outputs[0].name, "y");
  EXPECT_EQ(v.outputs[0].cosine, 0.8);
  ASSERT_TRUE(v.metric.has_value());
  EXPECT_EQ(v.metric->compressed, 0.5);
  EXPECT_EQ(v.predicted_error, 0.1);
  EXPECT_TRUE(std::isnan(v.measured_error));
  EXPECT_EQ(v.measured_damage, 0.01);
  EXPECT_EQ(v.measured_interval.low, 0.004);
  EXPECT_EQ(v.measured_interval.high, 0.03);
  EXPECT_EQ(v.calibration_damage, 0.012);
  EXPECT_TRUE(std::isnan(v.calibration_interval.low));

  testing::write_bytes(dir.file("bad.json"), R"({"outputs": [{"name": "y", "rel_error": 0.5}]})");
  testing::expect_error_naming([&] { read_verification(dir.file("bad.json")); },
                               dir.file("bad.json"), "cosine");
  testing::write_bytes(dir.file("notjson.json"), "{");
  testing::expect_error_naming([&] { read_verification(dir.file("notjson.json")); },
                               dir.file("notjson.json"), "not valid JSON");
}

// rel_error −1 and cosine 5 were accepted and drawn in the report.
TEST(Verification, RefusesValuesOutsideTheirRange) {
  TempDir dir;
  const std::string path = dir.file("v.json");
  auto refused = [&](const std::string& json, const std::string& needle) {
    testing::write_bytes(path, json);
    testing::expect_error_naming([&] { read_verification(path); }, path, needle);
  };
  refused(R"({"outputs": [{"name": "y", "rel_error": -1, "cosine": 0.5}]})",
          "outputs[0]: \"rel_error\" must be ≥ 0, found -1");
  refused(R"({"outputs": [{"name": "y", "rel_error": 0.1, "cosine": 5}]})",
          "outputs[0]: \"cosine\" must be in [-1, 1], found 5");
  refused(R"({"outputs": [], "measured_error": -0.5})", "\"measured_error\" must be ≥ 0");
  refused(R"({"outputs": [], "saliency": {"output": "m", "threshold": 0.5, "mae": 0.1,
          "iou": 1.5, "inputs": []}})",
          "saliency: \"iou\" must be in [0, 1], found 1.5");
  // A damage interval: both ends, low ≤ high, beside its figure, in a metric.
  const std::string kl = R"({"outputs": [], "damage_metric": "kl", )";
  refused(kl + R"("measured_damage": 0.005, "measured_damage_low": 0.02,
          "measured_damage_high": 0.001})",
          "\"measured_damage_low\" 0.02 exceeds \"measured_damage_high\" 0.001");
  refused(kl + R"("measured_damage": 0.005, "measured_damage_low": 0.001})",
          "\"measured_damage_low\" and \"measured_damage_high\" must be given together");
  refused(kl + R"("calibration_damage_low": 0.001, "calibration_damage_high": 0.002})",
          "\"calibration_damage_low\" without \"calibration_damage\"");
  refused(R"({"outputs": [], "calibration_damage": -5})",
          "\"calibration_damage\" needs \"damage_metric\"");
  refused(R"({"outputs": [], "measured_damage_low": "x"})",
          "\"measured_damage_low\" needs \"damage_metric\"");
  // A number past a double is refused naming the file, not an internal error.
  refused(R"({"outputs": [], "measured_error": 1e400})", "not valid JSON");
}

}  // namespace
}  // namespace tailor::report
