// `tailor report` end to end: the two files, the plan given or made here,
// verify.json, and the errors (exit code 2, nothing written).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>

#include "tailor/io/atomic_file.h"
#include "tailor/profile/model_profile.h"
#include "test_util.h"

namespace tailor {
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

using testing::run_cli;
using testing::TempDir;

bool have_gnuplot() {
  return std::system("command -v gnuplot >/dev/null 2>&1") == 0;
}

// Two layers; fixed 500 bytes.
ModelProfile report_profile() {
  ModelProfile p;
  p.model = "models/report.onnx";
  p.fixed_bytes = 500;
  for (int i = 0; i < 2; ++i) {
    LayerProfile l;
    l.name = "layers." + std::to_string(i) + ".weight";
    l.shape_out_in = {32, 64};
    l.numel = 32 * 64;
    l.dense_bytes = 4 * l.numel;
    const int64_t n = l.numel;
    l.candidates = {cand("dense", 0.0, 4 * n, n), cand("int8", 0.004 * (i + 1), n + 64, n),
                    cand("int4", 0.07 * (i + 1), n / 2 + 64, n),
                    cand("lowrank-r4", 0.3, 4 * 4 * 96, 4 * 96)};
    p.dense_bytes += l.dense_bytes;
    p.layers.push_back(l);
  }
  p.dense_bytes += p.fixed_bytes;
  return p;
}

class ReportCli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!have_gnuplot()) GTEST_SKIP() << "gnuplot not installed (Debian: gnuplot-nox)";
    profile_ = dir_.file("profile.json");
    write_profile(profile_, report_profile());
  }
  TempDir dir_;
  std::string profile_;
};

TEST_F(ReportCli, PlanFileGivesBothFiles) {
  const std::string plan = dir_.file("plan.json");
  ASSERT_EQ(run_cli("plan " + profile_ + " --budget 40% --solver greedy -o " + plan).exit_code, 0);
  testing::write_bytes(dir_.file("verify.json"),
                       R"({"outputs": [{"name": "y", "rel_error": 0.02, "cosine": 0.999}]})");
  const std::string out = dir_.file("out");
  const auto r = run_cli("report " + profile_ + " --plan " + plan + " --verify " +
                         dir_.file("verify.json") + " -o " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("report.html"), std::string::npos) << r.output;
  const std::string html = read_file(out + "/report.html");
  EXPECT_NE(html.find("layers.1.weight"), std::string::npos);
  const nlohmann::json j = nlohmann::json::parse(read_file(out + "/report.json"));
  const nlohmann::json p = nlohmann::json::parse(read_file(plan));
  EXPECT_EQ(j["plan"], p);  // the given plan, as it was
  EXPECT_EQ(j["plan"]["solver"], "greedy");
  EXPECT_EQ(j["solvers"].size(), 5u);
  EXPECT_EQ(j["error_vs_budget"].size(), 10u);
  EXPECT_EQ(j["verification"]["outputs"][0]["name"], "y");
}

TEST_F(ReportCli, BudgetPlansHere) {
  const std::string out = dir_.file("out");
  const auto r = run_cli("report " + profile_ + " --budget 40% -o " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json j = nlohmann::json::parse(read_file(out + "/report.json"));
  EXPECT_EQ(j["plan"]["solver"], "exact");
  EXPECT_EQ(j["plan"]["budget_bytes"], int64_t(0.4 * report_profile().dense_bytes));
  EXPECT_TRUE(j["verification"].is_null());
}

TEST_F(ReportCli, ErrorsExitTwoAndWriteNothing) {
  const std::string out = dir_.file("out");
  auto r = run_cli("report " + profile_ + " -o " + out);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--budget"), std::string::npos) << r.output;

  // A plan of another profile.
  ModelProfile other = report_profile();
  other.layers[1].name = "other.weight";
  write_profile(dir_.file("other.json"), other);
  ASSERT_EQ(run_cli("plan " + dir_.file("other.json") + " --budget 40% -o " +
                    dir_.file("other_plan.json"))
                .exit_code,
            0);
  r = run_cli("report " + profile_ + " --plan " + dir_.file("other_plan.json") + " -o " + out);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find(dir_.file("other_plan.json")), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("other.weight"), std::string::npos) << r.output;

  // A plan of this profile whose numbers were edited: the report printed
  // "5 of 534,660 bytes" from them. Each edit is refused, naming the file.
  const std::string good = dir_.file("good_plan.json");
  ASSERT_EQ(run_cli("plan " + profile_ + " --budget 40% -o " + good).exit_code, 0);
  const nlohmann::json base = nlohmann::json::parse(read_file(good));
  struct Edit {
    const char* what;
    std::function<void(nlohmann::json&)> apply;
    const char* message;
  };
  const Edit edits[] = {
      {"total", [](nlohmann::json& j) { j["total_bytes"] = 5; }, "\"total_bytes\" is 5"},
      {"bytes",
       [](nlohmann::json& j) {
         j["choices"][0]["bytes"] = j["choices"][0]["bytes"].get<int64_t>() + 1;
         j["total_bytes"] = j["total_bytes"].get<int64_t>() + 1;
       },
       "in the plan"},
      {"rel_error", [](nlohmann::json& j) { j["choices"][1]["rel_error"] = 0.5; }, "rel_error 0.5"},
      {"fixed",
       [](nlohmann::json& j) {
         j["fixed_bytes"] = 0;
         j["total_bytes"] = j["total_bytes"].get<int64_t>() - 500;
       },
       "\"fixed_bytes\" 0"},
      {"solver", [](nlohmann::json& j) { j["solver"] = "magic"; }, "\"solver\" \"magic\""},
      {"seed", [](nlohmann::json& j) { j["seed"] = -1; }, "\"seed\" must be an integer"},
      {"objective", [](nlohmann::json& j) { j["objective"] = "magic"; },
       "\"objective\": unknown objective"},
  };
  for (const Edit& e : edits) {
    nlohmann::json j = base;
    e.apply(j);
    const std::string edited = dir_.file(std::string("edited_") + e.what + ".json");
    testing::write_bytes(edited, j.dump(2));
    r = run_cli("report " + profile_ + " --plan " + edited + " -o " + out);
    EXPECT_EQ(r.exit_code, 2) << e.what << ": " << r.output;
    EXPECT_NE(r.output.find(edited + ": "), std::string::npos) << e.what << ": " << r.output;
    EXPECT_NE(r.output.find(e.message), std::string::npos) << e.what << ": " << r.output;
    EXPECT_FALSE(std::filesystem::exists(out + "/report.json")) << e.what;
  }

  // No gnuplot on PATH: a clear error, and no half report.
  const std::string old_path = std::getenv("PATH") ? std::getenv("PATH") : "";
  ::setenv("PATH", dir_.path().c_str(), 1);
  r = run_cli("report " + profile_ + " --budget 40% -o " + out);
  ::setenv("PATH", old_path.c_str(), 1);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("gnuplot: not found"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(out + "/report.json"));
  EXPECT_FALSE(std::filesystem::exists(out + "/report.html"));
}

}  // namespace
}  // namespace tailor
