// Byte totals that do not fit in int64: two candidates of 2^62 bytes summed
// to −9.2e18 and `tailor plan` printed "total -9,223,372,036,854,775,808 ...
// (proven optimal)". Every byte sum is checked (core/checked.h); the plan
// problem refuses a profile whose largest total overflows, in one line.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "tailor/core/checked.h"
#include "tailor/plan/problem.h"
#include "tailor/profile/model_profile.h"
#include "test_util.h"

namespace tailor {
namespace {
using testing::TempDir;

constexpr int64_t k2to62 = int64_t{1} << 62;
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

TEST(CheckedArithmetic, ThrowsInsteadOfWrapping) {
  EXPECT_EQ(checked_add<int64_t>(k2to62, k2to62 - 1, "s", "x"), kMax);  // 2^63 − 1 fits
  EXPECT_EQ(checked_mul<int64_t>(int64_t{1} << 31, int64_t{1} << 31, "s", "x"), k2to62);
  testing::expect_error_naming([] { checked_add<int64_t>(k2to62, k2to62, "f.json", "the sum"); },
                               "f.json", "the sum overflows 64 bits");
  testing::expect_error_naming([] { checked_add<int64_t>(kMax, 1, "f.json", "the sum"); }, "f.json",
                               "overflows 64 bits");
  testing::expect_error_naming([] { checked_mul<int64_t>(k2to62, 2, "f.json", "the product"); },
                               "f.json", "the product overflows 64 bits");
  testing::expect_error_naming(
      [] { checked_mul<uint64_t>(uint64_t{1} << 32, uint64_t{1} << 32, "f", "u"); }, "f",
      "u overflows 64 bits");
}

/// Two [64, 64] layers l0, l1 whose candidates take 2^62 bytes each.
ModelProfile huge_profile() {
  ModelProfile p;
  p.model = "m.onnx";
  for (int i = 0; i < 2; ++i) {
    LayerProfile l;
    l.name = "l" + std::to_string(i);
    l.shape_out_in = {64, 64};
    l.numel = 4096;
    l.dense_bytes = 4 * 4096;
    for (const char* label : {"dense", "int8"}) {
      Candidate c;
      c.label = label;
      c.bytes = k2to62;
      c.macs = 4096;
      l.candidates.push_back(c);
    }
    p.dense_bytes += l.dense_bytes;
    p.layers.push_back(l);
  }
  return p;
}

TEST(ByteOverflow, ProblemRefusesAProfileWhoseByteTotalOverflows) {
  testing::expect_error_naming(
      [] { plan::make_problem(huge_profile(), plan::Objective::numel, kMax, "big.json"); },
      "big.json",
      "the byte total up to layer \"l1\" (largest candidate 4,611,686,018,427,387,904 bytes) "
      "overflows 64 bits");
  // One layer of 2^62 plus fixed bytes of 2^62: the fixed bytes count too.
  ModelProfile p = huge_profile();
  p.layers.pop_back();
  EXPECT_NO_THROW(plan::make_problem(p, plan::Objective::numel, kMax, "big.json"));
  p.fixed_bytes = k2to62;
  testing::expect_error_naming(
      [&] { plan::make_problem(p, plan::Objective::numel, kMax, "big.json"); }, "big.json",
      "the byte total up to layer \"l0\"");
}

TEST(ByteOverflow, SumsOverAProblemBuiltByHandAreChecked) {
  plan::Problem p;
  p.source = "hand";
  p.layers = {{{k2to62, 0.0}}, {{k2to62, 0.0}}};
  testing::expect_error_naming(
      [&] {
        plan::choice_bytes(p, {0, 0});
      },
      "hand", "the byte total of a plan overflows 64 bits");
  testing::expect_error_naming([&] { plan::min_bytes(p); }, "hand", "overflows 64 bits");
}

// Finite errors whose objective term overflows: rel_error 1e160 squared is
// inf under numel, and two of 1.5e308 sum to inf under sum. The exact
// solver's reduced-cost sort met inf − inf = NaN and crashed (`tailor plan`,
// SIGSEGV); the problem now refuses them, naming the layer.
TEST(ByteOverflow, ProblemRefusesObjectiveTermsThatOverflow) {
  ModelProfile p = huge_profile();
  for (LayerProfile& l : p.layers)
    for (Candidate& c : l.candidates) c.bytes = 100;
  EXPECT_NO_THROW(plan::make_problem(p, plan::Objective::numel, 1000, "big.json"));
  p.layers[0].candidates[1].rel_error = 1e160;
  testing::expect_error_naming(
      [&] { plan::make_problem(p, plan::Objective::numel, 1000, "big.json"); }, "big.json",
      "layer \"l0\" candidate \"int8\": its numel objective term is not finite");
  EXPECT_NO_THROW(plan::make_problem(p, plan::Objective::sum, 1000, "big.json"));
  p.layers[0].candidates[1].rel_error = 1.5e308;
  p.layers[1].candidates[0].rel_error = 1.5e308;
  testing::expect_error_naming(
      [&] { plan::make_problem(p, plan::Objective::sum, 1000, "big.json"); }, "big.json",
      "the sum objective summed up to layer \"l1\" is not finite");
  TempDir dir;
  p.layers[0].candidates[1].rel_error = 1e160;
  write_profile(dir.file("huge.json"), p);
  const auto r = testing::run_cli("plan " + dir.file("huge.json") + " --budget 150 -o " +
                                  dir.file("plan.json"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_EQ(r.output.find('\n'), r.output.size() - 1) << r.output;  // one line
  EXPECT_NE(r.output.find("is not finite"), std::string::npos) << r.output;
}

TEST(ByteOverflow, PlanCommandGivesOneLineError) {
  TempDir dir;
  const std::string path = dir.file("big.json");
  write_profile(path, huge_profile());
  const auto r = testing::run_cli("plan " + path + " --budget 100% -o " + dir.file("plan.json"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_EQ(r.output.rfind("tailor: error: ", 0), 0u) << r.output;
  EXPECT_EQ(r.output.find('\n'), r.output.size() - 1) << r.output;  // one line
  EXPECT_NE(r.output.find("overflows 64 bits"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("proven optimal"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace tailor
