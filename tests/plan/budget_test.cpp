#include "tailor/plan/budget.h"

#include <gtest/gtest.h>

#include "tailor/core/error.h"
#include "test_util.h"

namespace tailor::plan {
namespace {

using tailor::testing::expect_error_naming;

ModelProfile profile_of(int64_t dense_bytes, int64_t fixed_bytes, std::vector<int64_t> numels) {
  ModelProfile p;
  p.dense_bytes = dense_bytes;
  p.fixed_bytes = fixed_bytes;
  for (size_t i = 0; i < numels.size(); ++i) {
    LayerProfile l;
    l.name = "w";
    l.name += std::to_string(i);
    l.numel = numels[i];
    p.layers.push_back(l);
  }
  return p;
}

TEST(PlanBudget, ParsesEveryForm) {
  const ModelProfile p = profile_of(10761252, 1000, {1000000, 24});
  struct Case {
    const char* text;
    int64_t bytes;
  };
  const Case cases[] = {
      {"25%", 2690313},  // floor(0.25 · 10,761,252)
      {"100%", 10761252},
      {"0.5 %", 53806},           // floor(53,806.26)
      {"4.5bpw", 1000 + 562513},  // fixed + floor(4.5 · 1,000,024 / 8) = 562,513.5
      {"4BPW", 1000 + 500012},
      {"300MB", 300000000},
      {"300mb", 300000000},
      {"1.5GiB", 1610612736},
      {"2KiB", 2048},
      {"1.5kB", 1500},
      {"2GB", 2000000000},
      {"1TiB", int64_t{1} << 40},
      {"123456", 123456},
      {"123456B", 123456},
      {"1e6", 1000000},
      {" 7MiB ", 7 * 1048576},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    EXPECT_EQ(budget_bytes(parse_budget(c.text), p), c.bytes);
  }
  EXPECT_EQ(parse_budget("25%").kind, Budget::Kind::percent);
  EXPECT_EQ(parse_budget("4.5bpw").kind, Budget::Kind::bits_per_weight);
  EXPECT_EQ(parse_budget("1GiB").kind, Budget::Kind::bytes);
}

TEST(PlanBudget, RejectsMalformedBudgets) {
  for (const char* text : {"", "%", "abc", "25x", "-5%", "0MB", "nan", "inf", "1e30TB", "25%%",
                           "4.5 bits", "MB300", "1.5.2GB"}) {
    SCOPED_TRACE(text);
    expect_error_naming([&] { parse_budget(text); }, "--budget", std::string("\"") + text + "\"");
  }
}

// "0x10" was read as 0 followed by the unit "x10" ("unknown unit"), "1e400"
// as "no number".
TEST(PlanBudget, HexadecimalAndOutOfRangeNumbersSayWhatIsWrong) {
  expect_error_naming([] { parse_budget("0x10"); }, "--budget",
                      "\"0x10\": hexadecimal numbers are not accepted");
  for (const char* text : {"1e400", "1e400%", "1e-400MB"})
    expect_error_naming([&] { parse_budget(text); }, "--budget",
                        std::string("\"") + text + "\": the number is out of range");
  // "1.5" was read as 1 byte; a fraction of a larger unit is fine.
  for (const char* text : {"1.5", "0.9", "1000.25B"})
    expect_error_naming([&] { parse_budget(text); }, "--budget",
                        std::string("\"") + text + "\": a byte count must be a whole number");
  EXPECT_EQ(parse_budget("1.5kB").value, 1500);
  EXPECT_EQ(parse_budget("1000").value, 1000);
}

}  // namespace
}  // namespace tailor::plan
