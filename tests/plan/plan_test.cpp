#include "tailor/plan/plan.h"

#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "tailor/core/error.h"
#include "tailor/plan/exact.h"
#include "test_util.h"

namespace tailor::plan {
namespace {

using tailor::testing::expect_error_naming;
using tailor::testing::TempDir;

Candidate candidate(const char* label, double rel_error, int64_t bytes) {
  Candidate c;
  c.label = label;
  c.rel_error = rel_error;
  c.bytes = bytes;
  return c;
}

ModelProfile two_layers() {
  ModelProfile p;
  p.model = "m.onnx";
  p.dense_bytes = 4 * 300 + 100;
  p.fixed_bytes = 100;
  LayerProfile a{"a", {10, 20}, 200, 800, {}};
  a.candidates = {candidate("dense", 0.0, 800), candidate("int8", 0.01, 220),
                  candidate("int4", 0.1, 120)};
  LayerProfile b{"b", {10, 10}, 100, 400, {}};
  b.candidates = {candidate("dense", 0.0, 400), candidate("int4", 0.2, 70)};
  p.layers = {a, b};
  return p;
}

TEST(PlanJson, ObjectivesWeighTheErrors) {
  const ModelProfile prof = two_layers();
  const Problem numel = make_problem(prof, Objective::numel, 10000, "p.json");
  EXPECT_DOUBLE_EQ(numel.layers[0][1].cost, 200.0 / 300 * 0.01 * 0.01);
  EXPECT_DOUBLE_EQ(numel.layers[1][1].cost, 100.0 / 300 * 0.2 * 0.2);
  const Problem sum = make_problem(prof, Objective::sum, 10000, "p.json");
  EXPECT_DOUBLE_EQ(sum.layers[0][2].cost, 0.1);
  EXPECT_EQ(sum.budget, 10000 - 100);
  EXPECT_EQ(sum.fixed_bytes, 100);
  expect_error_naming([&] { make_problem(prof, Objective::activation, 10000, "p.json"); }, "p.json",
                      "rel_error_activation");
  ModelProfile calibrated = prof;
  for (auto& l : calibrated.layers)
    for (auto& c : l.candidates) c.rel_error_activation = 2 * c.rel_error;
  const Problem act = make_problem(calibrated, Objective::activation, 10000, "p.json");
  EXPECT_DOUBLE_EQ(act.layers[1][1].cost, 100.0 / 300 * 0.4 * 0.4);
  EXPECT_EQ(parse_objective("sum"), Objective::sum);
  expect_error_naming([] { parse_objective("max"); }, "--objective", "max");
}

TEST(PlanJson, BudgetBelowTheFixedBytesIsInfeasible) {
  const Problem p = make_problem(two_layers(), Objective::numel, 50, "p.json");
  EXPECT_EQ(p.budget, -50);
  // Smallest reachable: fixed 100 + int4 120 + int4 70.
  expect_error_naming([&] { check_feasible(p); }, "p.json", "smallest reachable budget 290 bytes");
  expect_error_naming([&] { solve_exact(p, {}); }, "p.json", "50 bytes is below");
}

TEST(PlanJson, PlanNamesLayersAndLabelsAndRoundTrips) {
  const ModelProfile prof = two_layers();
  const Problem p = make_problem(prof, Objective::numel, 100 + 220 + 70, "p.json");
  const Solution s = solve_exact(p, {});
  const Plan plan = make_plan(prof, p, s, "exact", Objective::numel, 5);
  ASSERT_EQ(plan.choices.size(), 2u);
  EXPECT_EQ(plan.choices[0].layer, "a");
  EXPECT_EQ(plan.choices[0].label, "int8");
  EXPECT_EQ(plan.choices[1].label, "int4");
  EXPECT_EQ(plan.total_bytes, 390);
  EXPECT_EQ(plan.budget_bytes, 390);
  EXPECT_TRUE(plan.proven_optimal);
  EXPECT_EQ(plan.gap, 0);

  TempDir dir;
  write_plan(dir.file("plan.json"), plan);
  const Plan q = read_plan(dir.file("plan.json"));
  EXPECT_EQ(q.model, plan.model);
  EXPECT_EQ(q.budget_bytes, plan.budget_bytes);
  EXPECT_EQ(q.total_bytes, plan.total_bytes);
  EXPECT_EQ(q.solver, "exact");
  EXPECT_EQ(q.objective, "numel");
  EXPECT_EQ(q.seed, 5u);
  EXPECT_EQ(q.objective_value, plan.objective_value);
  EXPECT_EQ(q.lower_bound, plan.lower_bound);
  ASSERT_EQ(q.choices.size(), 2u);
  EXPECT_EQ(q.choices[1].label, "int4");
  EXPECT_EQ(q.choices[1].bytes, 70);
}

TEST(PlanJson, UnknownBoundsAreNull) {
  Plan p;
  p.solver = "exact";
  p.lower_bound = std::nan("");
  p.gap = std::nan("");
  const nlohmann::json j = nlohmann::json::parse(plan_to_json(p));
  for (const char* key : {"budget_bytes", "solver", "objective", "lower_bound", "total_bytes",
                          "choices", "objective_value", "gap"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_TRUE(j["lower_bound"].is_null());
  EXPECT_TRUE(j["gap"].is_null());
  TempDir dir;
  write_plan(dir.file("p.json"), p);
  EXPECT_TRUE(std::isnan(read_plan(dir.file("p.json")).lower_bound));
}

TEST(PlanJson, ReadPlanRejectsMalformedFiles) {
  TempDir dir;
  const std::string path = dir.file("bad.json");
  tailor::testing::write_bytes(path, R"({"model": "m", "budget_bytes": 10})");
  expect_error_naming([&] { read_plan(path); }, path, "missing field \"total_bytes\"");
  tailor::testing::write_bytes(
      path, R"({"model": "m", "budget_bytes": 10, "total_bytes": 5, "solver": "exact",
  "objective": "numel", "objective_value": 0, "lower_bound": 0, "choices": [{"layer": "a"}]})");
  expect_error_naming([&] { read_plan(path); }, path, "choices[0]: missing field \"label\"");
  tailor::testing::write_bytes(path, "[1, 2");
  expect_error_naming([&] { read_plan(path); }, path, "not valid JSON");
  // Accepted before: a negative error, negative bytes, an empty layer name.
  const std::string head = R"({"model": "m", "budget_bytes": 10, "total_bytes": 5,
  "solver": "exact", "objective": "numel", "objective_value": 0, "lower_bound": 0,
  "choices": [)";
  tailor::testing::write_bytes(
      path, head + R"({"layer": "a", "label": "int8", "rel_error": -1, "bytes": 1}]})");
  expect_error_naming([&] { read_plan(path); }, path,
                      "choices[0]: \"rel_error\" must be finite and ≥ 0, found -1");
  tailor::testing::write_bytes(
      path, head + R"({"layer": "", "label": "int8", "rel_error": 0, "bytes": 1}]})");
  expect_error_naming([&] { read_plan(path); }, path, "choices[0]: empty \"layer\"");
  tailor::testing::write_bytes(
      path, head + R"({"layer": "a", "label": "int8", "rel_error": 0, "bytes": -3}]})");
  expect_error_naming([&] { read_plan(path); }, path, "choices[0]: \"bytes\" must be ≥ 0");
  // A fraction where an integer belongs was truncated (1.5 bytes read as 1).
  tailor::testing::write_bytes(
      path, head + R"({"layer": "a", "label": "int8", "rel_error": 0, "bytes": 1.5}]})");
  expect_error_naming([&] { read_plan(path); }, path,
                      "choices[0]: field \"bytes\" must be an integer: 1.5");
  tailor::testing::write_bytes(path, R"({"model": "m", "budget_bytes": 10.25, "total_bytes": 5})");
  expect_error_naming([&] { read_plan(path); }, path,
                      "field \"budget_bytes\" must be an integer: 10.25");
  tailor::testing::write_bytes(
      path, R"({"model": "m", "budget_bytes": 10, "total_bytes": 5, "total_bytes": 7})");
  expect_error_naming([&] { read_plan(path); }, path, "key \"total_bytes\" appears twice");
  // Checked against each other: the total, the solver, the seed.
  tailor::testing::write_bytes(
      path, head + R"({"layer": "a", "label": "int8", "rel_error": 0, "bytes": 4}]})");
  expect_error_naming([&] { read_plan(path); }, path,
                      "\"total_bytes\" is 5, but fixed_bytes plus the choices' bytes is 4");
}

TEST(PlanJson, SolveDispatchesByName) {
  const ModelProfile prof = two_layers();
  const Problem p = make_problem(prof, Objective::sum, 1000, "p.json");
  for (const std::string& name : solver_names()) EXPECT_LE(solve(name, p, {}).bytes, p.budget);
  expect_error_naming([&] { solve("anneal", p, {}); }, "--solver", "anneal");
}

}  // namespace
}  // namespace tailor::plan
