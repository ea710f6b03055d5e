// tailor tune on the showcase graph: the record, the passes it turns on,
// replay determinism, and tailor run --tuning.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "tailor/io/atomic_file.h"
#include "tailor/io/npy.h"
#include "tailor/io/onnx.h"
#include "tailor/runtime/executor.h"
#include "tailor/tune/tune.h"
#include "test_util.h"
#include "tune/showcase.h"

namespace tailor::tune {
namespace {

using nlohmann::json;

TEST(TuneCli, ShowcaseTuningTurnsThePassesOnAndReplays) {
  testing::TempDir dir;
  const graph::Model showcase = testing::showcase_model();
  const std::string model = dir.file("showcase.onnx");
  graph::write_onnx(showcase, model);
  if (const char* out = std::getenv("TAILOR_SHOWCASE_OUT")) graph::write_onnx(showcase, out);
  const std::string tuned = dir.file("tuned");
  auto r = testing::run_cli(
      "tune " + model +
      " --measurements 3 --repeats 1 --paired-rounds 3 --statistic min --threads 1 --seed 3 -o " +
      tuned);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("gradient"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("greedy"), std::string::npos) << r.output;

  const json record = read_record(tuned + "/decisions.json");
  // Every method spent at most 3 measurements; every measured candidate was
  // checked first, and only passing ones carry times.
  for (const auto& row : method_table(record)) EXPECT_LE(row.measurements, 3) << row.method;
  for (const auto& m : record.at("measured"))
    EXPECT_EQ(m.at("times_ms").empty(), !m.at("check").at("ok").get<bool>());
  // The duplicated conv and the dead conv cost 2 of the graph's 3 large convs:
  // the chosen configuration runs CSE and DCE.
  const json& chosen = record.at("chosen").at("decisions");
  EXPECT_EQ(chosen.at("pass:cse"), "on") << chosen.dump();
  EXPECT_EQ(chosen.at("pass:dce"), "on") << chosen.dump();

  // Replay: the same decisions from the recorded measurements, in process and by the CLI.
  const graph::Model imported = graph::import_onnx(model);
  EXPECT_EQ(replay(imported, record), chosen_from_record(record));
  r = testing::run_cli("tune --replay " + tuned + "/decisions.json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("same decisions as the record"), std::string::npos) << r.output;
  // A record missing a measurement the replay needs is an error saying so.
  json broken = record;
  broken["measured"] = json::array();
  testing::expect_error_naming([&] { replay(imported, broken); }, "replay", "no measurement");

  // tailor run --tuning: the tuned graph's output equals the original's.
  const std::map<std::string, Tensor> in = random_inputs(imported, {}, 9);
  write_npy(dir.file("x.npy"), in.at("x"));
  r = testing::run_cli("run " + model + " --tuning " + tuned +
                       "/decisions.json --input x=" + dir.file("x.npy") + " -o " + dir.file("out"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const Tensor got = read_npy(dir.file("out/y.npy"));
  runtime::Executor ex(imported);
  const Tensor want = ex.run(in).at("y");
  ASSERT_EQ(got.shape(), want.shape());
  const std::vector<float> g = got.to_f32_vector(), w = want.to_f32_vector();
  float scale = 0;
  for (float v : w) scale = std::max(scale, std::fabs(v));
  for (size_t i = 0; i < g.size(); ++i) ASSERT_NEAR(g[i], w[i], 1e-5f * scale) << i;
  // A record of another model is refused.
  r = testing::run_cli("run " + testing::model_path("ch_ppocr_mobile_v2.0_cls_infer.onnx") +
                       " --tuning " + tuned + "/decisions.json");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("tuning"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace tailor::tune
