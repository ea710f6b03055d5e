// Latency as a plan resource: which ops get a latency and which kernel, the
// rest of the model, the profile.json fields, and the CLI's option checks.
// No timing is asserted (the values depend on the machine and its load).
#include "tailor/profile/latency.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>

#include "graph/passes/pass_test_util.h"
#include "tailor/core/error.h"
#include "tailor/io/onnx.h"
#include "tailor/profile/profiler.h"
#include "test_util.h"

namespace tailor::testing {
namespace {

/// x [1, 8, 6, 6] → Conv(wc [16, 8, 3, 3], pads 1) → y; v [4, 64] → MatMul(wm
/// [64, 96]) → h → Gemm(h, wg [96, 80], alpha 2) → z. wc, wm and wg are
/// profiled (≥ 1000 elements); the Gemm runs dense in tailor whatever its weight.
graph::Model model() {
  GraphBuilder b;
  b.input("x", {1, 8, 6, 6}).input("v", {-1, 64});
  b.init("wc", random_f32({16, 8, 3, 3}, 1)).init("wm", random_f32({64, 96}, 2));
  b.init("wg", random_f32({96, 80}, 3));
  b.node("Conv", {"x", "wc"}, {"y"},
         {{"pads", graph::Attribute::of_ints({1, 1, 1, 1})},
          {"kernel_shape", graph::Attribute::of_ints({3, 3})}});
  b.node("MatMul", {"v", "wm"}, {"h"});
  b.node("Gemm", {"h", "wg"}, {"z"}, {{"alpha", graph::Attribute::of_float(2.0f)}});
  b.output("y").output("z");
  return b.model();
}

std::map<std::string, Tensor> inputs() {
  return {{"x", random_f32({1, 8, 6, 6}, 4)}, {"v", random_f32({4, 64}, 5)}};
}

ModelProfile profiled(const graph::Model& m) {
  ProfileOptions o;
  o.schemes = {"dense", "int8", "int4-g32", "lowrank-r4"};
  o.min_params = 1000;
  o.threads = 1;
  return profile_model(m, o);
}

const Candidate& candidate(const ModelProfile& p, const std::string& layer,
                           const std::string& label) {
  for (const LayerProfile& l : p.layers)
    for (const Candidate& c : l.candidates)
      if (l.name == layer && c.label == label) return c;
  throw Error(layer, "no candidate " + label);
}

TEST(Latency, EveryCandidateOfAMatMulOrConvGetsOneAndTheRestIsTheModelMinusDense) {
  const graph::Model m = model();
  ModelProfile p = profiled(m);
  ASSERT_EQ(p.layers.size(), 3u);
  measure_latencies(m, inputs(), p, {0, 3});
  double dense = 0;
  for (const LayerProfile& l : p.layers) {
    for (const Candidate& c : l.candidates) {
      ASSERT_TRUE(c.latency_ms.has_value()) << l.name << " " << c.label;
      EXPECT_GE(*c.latency_ms, 0) << l.name << " " << c.label;
    }
    dense += *candidate(p, l.name, "dense").latency_ms;
  }
  // Gemm with alpha 2 does not fit CompressedLinear: tailor runs every label
  // dense there, so every label has the dense op's latency (the same number).
  for (const Candidate& c : p.layers[2].candidates)
    EXPECT_EQ(*c.latency_ms, *candidate(p, "wg", "dense").latency_ms) << c.label;
  ASSERT_TRUE(p.latency_model_ms && p.latency_rest_ms);
  EXPECT_DOUBLE_EQ(*p.latency_rest_ms, std::max(0.0, *p.latency_model_ms - dense));
  EXPECT_EQ(p.latency_input, "v [4, 64], x [1, 8, 6, 6]; cpu time, 1 thread, median of 3 after 0");
  EXPECT_EQ(p.latency_input, latency_key(inputs(), {0, 3}));
  // profile.json keeps every latency field.
  const ModelProfile back = parse_profile(profile_to_json(p), "p.json");
  EXPECT_EQ(back.latency_rest_ms, p.latency_rest_ms);
  EXPECT_EQ(back.latency_model_ms, p.latency_model_ms);
  EXPECT_EQ(back.latency_input, p.latency_input);
  EXPECT_EQ(candidate(back, "wm", "lowrank-r4").latency_ms,
            candidate(p, "wm", "lowrank-r4").latency_ms);
}

TEST(Latency, AnInputOfTheWrongShapeIsAnErrorNamingIt) {
  const graph::Model m = model();
  ModelProfile p = profiled(m);
  auto in = inputs();
  in["x"] = random_f32({1, 3, 6, 6}, 6);
  expect_error_naming([&] { measure_latencies(m, in, p, {0, 1}); }, "x", "");
  expect_error_naming(
      [&] {
        interleaved_latency_ms({&m}, inputs(), {0, 0});
      },
      "latency", "repeats >= 1");
}

TEST(Latency, PlanAndCompressCheckTheSecondBudgetOptions) {
  TempDir dir;
  const graph::Model m = model();
  ModelProfile p = profiled(m);
  const std::string plain = dir.file("plain.json"), timed = dir.file("timed.json");
  write_profile(plain, p);
  measure_latencies(m, inputs(), p, {0, 1});
  write_profile(timed, p);
  auto refused = [](const std::string& args, const std::string& needle) {
    const CommandResult r = run_cli(args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.output;
    EXPECT_NE(r.output.find(needle), std::string::npos) << args << "\n" << r.output;
  };
  refused("plan " + plain + " --budget 50% --max-latency 5", "needs measured latencies");
  refused("plan " + timed + " --budget 50% --max-latency 0",
          "--max-latency: must be finite and > 0");
  refused("plan " + timed + " --budget 50% --max-latency 5 --solver greedy", "only exact");
  refused("plan " + timed + " --budget 50% --max-latency 5 --max-macs 9", "--max-macs: not with");
  // The least latency within the bytes: every layer's fastest candidate that fits.
  refused("plan " + timed + " --budget 50% --max-latency 0.000001", "smallest reachable latency");
  const CommandResult ok = run_cli("plan " + timed + " --budget 100% --max-macs 1000000000");
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
  EXPECT_NE(ok.output.find("predicted MACs"), std::string::npos) << ok.output;
  const std::string onnx = dir.file("m.onnx");
  write_bytes(onnx, "not read");
  refused("compress " + onnx + " --budget 50% --max-latency 5 --solver cem", "only exact");
  refused("compress " + onnx + " --uniform int8 --max-macs 5", "--max-macs: not with --uniform");
  refused("compress " + onnx + " --budget 50% --max-latency -1", "--max-latency: must be finite");
  refused("compress " + onnx + " --budget 50% --max-latency 30ms", "expected milliseconds");
  refused("compress " + onnx + " --budget 50% --max-latency %", "expected milliseconds");
  refused("compress " + onnx + " --budget 50% --max-latency ''", "--max-latency: empty value");
  refused("compress " + onnx + " --budget 50% --max-latency 0x10%", "expected milliseconds");
  refused("compress " + onnx + " --budget 50% --max-latency ' 70%'", "expected milliseconds");
  refused("compress " + onnx + " --budget 50% --max-latency 70% --max-macs 9",
          "--max-macs: not with --max-latency");
  refused("compress " + onnx + " --budget 50% --max-latency 0%",
          "--max-latency: must be a finite percentage > 0");
}

// compress holds --max-latency against measured plans: rounds of plan and
// measure are printed, and a budget no plan reaches names the fastest
// plan's measured latency.
TEST(Latency, CompressMeasuresItsPlansAgainstTheLatencyBudget) {
  TempDir dir;
  const std::string onnx = dir.file("m.onnx");
  graph::write_onnx(model(), onnx);
  const std::string common = "compress " + onnx + " --budget 60% --min-params 0 --no-cache " +
                             "--schemes dense,int8,int4 --objective numel -o " + dir.file("out");
  const CommandResult ok = run_cli(common + " --max-latency 1000");
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
  EXPECT_NE(ok.output.find("latency round 1: solver budget 1000"), std::string::npos) << ok.output;
  // As a percentage: of the original's latency measured in the profile.
  const CommandResult pc = run_cli(common + " --max-latency 200%");
  EXPECT_EQ(pc.exit_code, 0) << pc.output;
  const size_t at = pc.output.find("--max-latency 200% of the original's ");
  ASSERT_NE(at, std::string::npos) << pc.output;
  double model_ms = 0, budget_ms = 0;
  ASSERT_EQ(
      std::sscanf(pc.output.c_str() + at, "--max-latency 200%% of the original's %lf ms: %lf ms",
                  &model_ms, &budget_ms),
      2)
      << pc.output;
  EXPECT_NEAR(budget_ms, 2 * model_ms, 2e-3) << pc.output;
  // Round 1 plans at that budget (printed to 3 decimals, the budget to 4 digits).
  const size_t round = pc.output.find("latency round 1: solver budget ");
  ASSERT_NE(round, std::string::npos) << pc.output;
  double round_ms = 0;
  ASSERT_EQ(std::sscanf(pc.output.c_str() + round, "latency round 1: solver budget %lf", &round_ms),
            1);
  EXPECT_NEAR(round_ms, budget_ms, 1e-3 + 1e-3 * budget_ms) << pc.output;
  const CommandResult no = run_cli(common + " --max-latency 0.000001");
  EXPECT_EQ(no.exit_code, 2) << no.output;
  EXPECT_NE(no.output.find("out of reach"), std::string::npos) << no.output;
  EXPECT_NE(no.output.find("the fastest plan at that byte budget measured"), std::string::npos)
      << no.output;
}

}  // namespace
}  // namespace tailor::testing
