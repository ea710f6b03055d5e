// `tailor plan` end to end: output, exit codes, plan.json.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>

#include "tailor/io/atomic_file.h"
#include "tailor/profile/model_profile.h"
#include "test_util.h"

namespace tailor {
namespace {

using testing::run_cli;
using testing::TempDir;

// Three layers; fixed 1,000 bytes; dense 4·(4096 + 2048 + 1024) + 1,000.
ModelProfile cli_profile() {
  ModelProfile p;
  p.model = "models/cli.onnx";
  p.fixed_bytes = 1000;
  const int64_t shapes[3][2] = {{64, 64}, {32, 64}, {32, 32}};
  for (int i = 0; i < 3; ++i) {
    LayerProfile l;
    l.name = "blocks." + std::to_string(i) + ".weight";
    l.shape_out_in = {shapes[i][0], shapes[i][1]};
    l.numel = shapes[i][0] * shapes[i][1];
    l.dense_bytes = 4 * l.numel;
    const int64_t n = l.numel, out = shapes[i][0];
    l.candidates = {{"dense", 0.0, 4 * n, n, n, 0.0, 0.0},
                    {"int8", 0.004 * (i + 1), n + 2 * out, n, n, 0.0, 0.003 * (i + 1)},
                    {"int4", 0.07 * (i + 1), n / 2 + 2 * out, n, n, 0.0, 0.05 * (i + 1)},
                    {"ternary", 0.5, n / 4 + 2 * out, n, n, 0.0, 0.4}};
    p.dense_bytes += l.dense_bytes;
    p.layers.push_back(l);
  }
  p.dense_bytes += p.fixed_bytes;
  return p;
}

class PlanCli : public ::testing::Test {
 protected:
  void SetUp() override {
    profile_ = dir_.file("profile.json");
    write_profile(profile_, cli_profile());
  }
  TempDir dir_;
  std::string profile_;
};

TEST_F(PlanCli, WritesPlanJsonWithEveryDocumentedField) {
  const std::string out = dir_.file("plan.json");
  const auto r = run_cli("plan " + profile_ + " --budget 25% -o " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("blocks.0.weight"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("proven optimal"), std::string::npos) << r.output;
  const nlohmann::json j = nlohmann::json::parse(read_file(out));
  for (const char* key : {"budget_bytes", "solver", "objective", "lower_bound", "total_bytes",
                          "choices", "objective_value", "gap", "fixed_bytes", "seed"})
    EXPECT_TRUE(j.contains(key)) << key;
  const int64_t dense = cli_profile().dense_bytes;
  EXPECT_EQ(j["budget_bytes"].get<int64_t>(), dense / 4);
  EXPECT_LE(j["total_bytes"].get<int64_t>(), j["budget_bytes"].get<int64_t>());
  EXPECT_EQ(j["solver"], "exact");
  EXPECT_EQ(j["objective"], "numel");
  EXPECT_EQ(j["proven_optimal"], true);
  EXPECT_DOUBLE_EQ(j["lower_bound"].get<double>(), j["objective_value"].get<double>());
  ASSERT_EQ(j["choices"].size(), 3u);
  int64_t total = 1000;
  for (const auto& c : j["choices"]) {
    for (const char* key : {"layer", "label", "rel_error", "bytes"})
      EXPECT_TRUE(c.contains(key)) << key;
    total += c["bytes"].get<int64_t>();
  }
  EXPECT_EQ(total, j["total_bytes"].get<int64_t>());
}

// The profile's layers are not llama tensors: the type file cannot be written,
// and the plan.json asked for beside it must not be left behind either.
TEST_F(PlanCli, ATensorTypeFileItCannotWriteLeavesNoPlanJson) {
  const std::string out = dir_.file("plan.json");
  const std::string types = dir_.file("types.txt");
  const auto r =
      run_cli("plan " + profile_ + " --budget 25% -o " + out + " --llama-tensor-types " + types);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("blocks.0.weight: --llama-tensor-types: not a llama tensor"),
            std::string::npos)
      << r.output;
  EXPECT_FALSE(std::filesystem::exists(out));
  EXPECT_FALSE(std::filesystem::exists(types));
}

TEST_F(PlanCli, EverySolverAndTheAllTable) {
  for (const char* solver : {"greedy", "cem", "dado", "gumbel"}) {
    const std::string out = dir_.file(std::string(solver) + ".json");
    const auto r =
        run_cli("plan " + profile_ + " --budget 3bpw --objective sum --seed 4 --solver " + solver +
                " -o " + out);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const nlohmann::json j = nlohmann::json::parse(read_file(out));
    EXPECT_EQ(j["solver"], solver);
    EXPECT_EQ(j["objective"], "sum");
    EXPECT_EQ(j["seed"], 4);
  }
  const auto r = run_cli("plan " + profile_ + " --budget 3bpw --solver all --time-limit 5");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* word : {"exact", "greedy", "cem", "dado", "gumbel", "gap to exact", "nodes"})
    EXPECT_NE(r.output.find(word), std::string::npos) << word << "\n" << r.output;
}

TEST_F(PlanCli, ActivationObjectiveUsesCalibratedErrors) {
  const auto r = run_cli("plan " + profile_ + " --budget 40% --objective activation");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  ModelProfile uncalibrated = cli_profile();
  uncalibrated.layers[1].candidates[2].rel_error_activation.reset();
  const std::string path = dir_.file("uncalibrated.json");
  write_profile(path, uncalibrated);
  const auto bad = run_cli("plan " + path + " --budget 40% --objective activation");
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("rel_error_activation"), std::string::npos) << bad.output;
}

TEST_F(PlanCli, InfeasibleBudgetExitsTwoNamingTheSmallestReachable) {
  // Smallest: 1,000 fixed + Σ ternary bytes (1,024 + 128, 512 + 64, 256 + 64) = 3,048.
  const auto r = run_cli("plan " + profile_ + " --budget 3000B");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("smallest reachable budget 3,048 bytes"), std::string::npos) << r.output;
  EXPECT_EQ(run_cli("plan " + profile_ + " --budget 3048B").exit_code, 0);
}

TEST_F(PlanCli, BadArgumentsExitTwo) {
  EXPECT_EQ(run_cli("plan " + profile_ + " --budget 25x").exit_code, 2);
  EXPECT_EQ(run_cli("plan " + profile_ + " --budget 25% --solver anneal").exit_code, 2);
  EXPECT_EQ(run_cli("plan " + profile_ + " --budget 25% --objective max").exit_code, 2);
  EXPECT_EQ(run_cli("plan " + profile_).exit_code, 2);  // --budget is required
  const auto missing = run_cli("plan " + dir_.file("none.json") + " --budget 25%");
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.output.find("none.json"), std::string::npos) << missing.output;
  // Refused with a message in the option's terms: a negative thread count
  // printed the range up to DBL_MAX in 309 digits, a nan time limit ran, a
  // seed of -1 became 2^64 − 1. Report takes the same options the same way.
  const std::pair<const char*, const char*> bad[] = {
      {"--threads -3", "--threads: Value -3 not in range 0 to 1024"},
      {"--time-limit nan", "expected a finite number >= 0, got \"nan\""},
      {"--time-limit inf", "expected a finite number >= 0, got \"inf\""},
      {"--seed -1", "expected an integer >= 0, got \"-1\""},
  };
  for (const auto& [opt, message] : bad)
    for (const std::string cmd : {"plan ", "report "}) {
      const auto r =
          run_cli(cmd + profile_ + " --budget 25% " + opt + " -o " + dir_.file("out_" + cmd));
      EXPECT_EQ(r.exit_code, 2) << cmd << opt << ": " << r.output;
      EXPECT_NE(r.output.find(message), std::string::npos) << cmd << opt << ": " << r.output;
      EXPECT_EQ(r.output.find("17976931"), std::string::npos) << r.output;
    }
}

}  // namespace
}  // namespace tailor
