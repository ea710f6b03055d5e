// tailor tune on the showcase graph: the record, the passes it turns on,
// replay determinism, and tailor run --tuning.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <functional>

#include "graph/passes/pass_test_util.h"
#include "tailor/graph/passes/promote_f16.h"
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

  const TuneRecord record = read_record(tuned + "/decisions.json");
  // The JSON boundary is lossless: the file equals the record written back.
  EXPECT_EQ(json(record), json::parse(read_file(tuned + "/decisions.json")));
  // Every method spent at most 3 measurements; every measured candidate was
  // checked first, and only passing ones carry times.
  ASSERT_EQ(record.table.size(), record.methods.size());
  for (const auto& row : record.table) EXPECT_LE(row.measurements, 3) << row.method;
  for (const auto& m : record.measured) EXPECT_EQ(m.times_ms.empty(), !m.ok) << m.key;
  // The duplicated conv and the dead conv cost 2 of the graph's 3 large convs:
  // the chosen configuration runs CSE and DCE.
  const auto& chosen = record.chosen.decisions;
  EXPECT_EQ(chosen.at("pass:cse"), "on");
  EXPECT_EQ(chosen.at("pass:dce"), "on");
  EXPECT_EQ(record.chosen.key, DecisionSpace::key(record.chosen.config));
  // The last line says how far the chosen configuration's outputs moved: its
  // recorded check error, under the default metric and tolerance.
  double moved = -1;
  for (const auto& m : record.measured)
    if (m.key == record.chosen.key) moved = m.max_rel_error;
  ASSERT_GE(moved, 0);
  EXPECT_NE(r.output.find(fmt::format(
                "outputs within {:.2g} of max |r| (--error max, --tolerance 5e-05)", moved)),
            std::string::npos)
      << r.output;

  // Replay: the same decisions from the recorded measurements, in process and by the CLI.
  const graph::Model imported = graph::import_onnx(model);
  EXPECT_EQ(replay(imported, record), record.chosen.config);
  r = testing::run_cli("tune --replay " + tuned + "/decisions.json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("same decisions as the record"), std::string::npos) << r.output;
  // A record missing a measurement the replay needs is an error saying so.
  TuneRecord broken = record;
  broken.measured.clear();
  testing::expect_error_naming([&] { replay(imported, broken); }, "replay", "no measurement");
  // A record made by a tailor whose passes offered fewer decisions is
  // refused naming one the model has and the record lacks.
  TuneRecord older = record;
  older.space.decisions.erase(older.space.decisions.begin());
  older.chosen.config.erase(older.chosen.config.begin());
  testing::expect_error_naming(
      [&] { replay(imported, older); }, "replay",
      "the model has '" + record.space.decisions.front().name + "', the record does not");

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
  // Replayed against another model, the error names the record (it named
  // "replay"); an option replay does not use was silently ignored, and a
  // pass list beside --tuning was silently overridden: both are refused.
  r = testing::run_cli("tune " + testing::model_path("ch_ppocr_mobile_v2.0_cls_infer.onnx") +
                       " --replay " + tuned + "/decisions.json");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find(tuned + "/decisions.json: "), std::string::npos) << r.output;
  r = testing::run_cli("tune --replay " + tuned + "/decisions.json --measurements 5");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--measurements: has no effect with --replay"), std::string::npos)
      << r.output;
  for (const char* extra : {" --passes none", " --no-fuse"}) {
    r = testing::run_cli("run " + model + " --tuning " + tuned +
                         "/decisions.json --input x=" + dir.file("x.npy") + extra);
    EXPECT_EQ(r.exit_code, 2) << extra << r.output;
    EXPECT_NE(r.output.find(": cannot be combined with --tuning"), std::string::npos)
        << extra << r.output;
  }
  // An edited record whose choices are not the model's: "abc" for a column
  // block or a thread count ended in `tailor: internal error: stoll` (exit
  // 3). Choices are now taken from the space built from the model, and a
  // record whose space differs is refused naming the file and the decision.
  json edited = json::parse(read_file(tuned + "/decisions.json"));
  for (json& d : edited["space"]["decisions"])
    if (d["kind"] == "threads") {
      json& chosen_threads = edited["chosen"]["decisions"][d["name"].get<std::string>()];
      if (chosen_threads == d["choices"][0]) chosen_threads = "abc";  // restated consistently
      d["choices"][0] = "abc";
    }
  write_file_atomic(dir.file("edited.json"), edited.dump());
  r = testing::run_cli("run " + model + " --tuning " + dir.file("edited.json") +
                       " --input x=" + dir.file("x.npy"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find(dir.file("edited.json") +
                          ": tuning: decision 'threads' differs from the model's"),
            std::string::npos)
      << r.output;
  // A record missing a field is refused naming the file and the field.
  json partial = json::parse(read_file(tuned + "/decisions.json"));
  partial.erase("paired");
  write_file_atomic(dir.file("partial.json"), partial.dump());
  testing::expect_error_naming([&] { read_record(dir.file("partial.json")); },
                               dir.file("partial.json"), "\"paired\"");
  // A fraction where an integer belongs was truncated (a choice of 0.7 read
  // as 0), and chosen.decisions, which restates chosen.config, was not
  // compared with it.
  json fractional = json::parse(read_file(tuned + "/decisions.json"));
  fractional["chosen"]["config"][0] = 0.7;
  write_file_atomic(dir.file("fractional.json"), fractional.dump());
  testing::expect_error_naming([&] { read_record(dir.file("fractional.json")); },
                               dir.file("fractional.json"),
                               "field \"config\": expected an integer in range, got 0.7");
  // Edits an outside pass made (stop 45): a short paired round crashed
  // replay (exit 3); the others were read as something else or accepted.
  const std::vector<std::pair<std::function<void(json&)>, std::string>> edits = {
      {[](json& j) { j["paired"]["rounds"][0].erase(0); },
       "a round of \"rounds\" does not hold one time per configuration"},
      {[](json& j) { j["gradient"]["inner_steps"] = 25.9; },
       "field \"inner_steps\": expected an integer in range, got 25.9"},
      {[](json& j) { j["gradient"]["inner_steps"] = 1000000000; },
       "gradient: \"inner_steps\" must be in 1..100000"},
      {[](json& j) { j["threads"] = 4294967297; },
       "field \"threads\": expected an integer in range, got 4294967297"},
      {[](json& j) { j["model_nodes"] = -1; },
       "field \"model_nodes\": expected an integer >= 0 in range, got -1"},
      {[](json& j) { j["harness"]["repeats"] = -5; }, "\"repeats\" and \"check_inputs\" >= 1"},
      {[](json& j) { j["harness"]["statistic"] = "mean"; },
       "\"statistic\" must be \"median\" or \"min\", got \"mean\""},
      {[](json& j) { j["harness"]["error"] = "rms"; },
       "\"error\" must be \"max\" or \"mean\", got \"rms\""},
      {[](json& j) { j["measured"][0]["config"][0] = 7; }, "measured[0]: choice 7 of decision"},
      {[](json& j) { j["methods"][0]["trials"][0]["measured"] = 99; },
       "a trial names no measured configuration of its key"},
  };
  // A record from before the error metric was recorded checked the largest.
  json old_record = json::parse(read_file(tuned + "/decisions.json"));
  EXPECT_EQ(old_record["harness"]["error"], "max");
  old_record["harness"].erase("error");
  write_file_atomic(dir.file("old.json"), old_record.dump());
  EXPECT_EQ(read_record(dir.file("old.json")).harness.error, "max");
  for (const auto& [edit, message] : edits) {
    json e = json::parse(read_file(tuned + "/decisions.json"));
    edit(e);
    write_file_atomic(dir.file("e.json"), e.dump());
    testing::expect_error_naming([&] { read_record(dir.file("e.json")); }, dir.file("e.json"),
                                 message);
  }
  // Records that read well but do not fit the model: a node count that
  // run --tuning refused and replay accepted, and input shapes naming an
  // input the model lacks or contradicting the observed shapes (both
  // accepted): every command now refuses them, naming the record.
  const std::vector<std::pair<std::function<void(json&)>, std::string>> misfits = {
      {[](json& j) { j["model_nodes"] = j["model_nodes"].get<int64_t>() - 1; },
       "the record was made for a model with"},
      {[](json& j) {
         j["input_shapes"] = {{"y", {1, 4, 64, 64}}};
       },
       "input_shapes name 'y', not an input of the model"},
      {[](json& j) {
         j["input_shapes"] = {{"x", {1, 4, 32, 64}}};
       },
       "give input 'x' different shapes"},
  };
  for (const auto& [edit, message] : misfits) {
    json e = json::parse(read_file(tuned + "/decisions.json"));
    edit(e);
    write_file_atomic(dir.file("misfit.json"), e.dump());
    for (const std::string& cmd : {"tune " + model + " --replay " + dir.file("misfit.json"),
                                   "run " + model + " --tuning " + dir.file("misfit.json") +
                                       " --input x=" + dir.file("x.npy")}) {
      r = testing::run_cli(cmd);
      EXPECT_EQ(r.exit_code, 2) << cmd << r.output;
      EXPECT_NE(r.output.find(dir.file("misfit.json") + ": "), std::string::npos) << r.output;
      EXPECT_NE(r.output.find(message), std::string::npos) << cmd << r.output;
    }
  }
  json redecided = json::parse(read_file(tuned + "/decisions.json"));
  const std::string cse = redecided["chosen"]["decisions"]["pass:cse"];
  redecided["chosen"]["decisions"]["pass:cse"] = cse == "on" ? "off" : "on";
  write_file_atomic(dir.file("redecided.json"), redecided.dump());
  testing::expect_error_naming(
      [&] { read_record(dir.file("redecided.json")); }, dir.file("redecided.json"),
      "chosen decision 'pass:cse' is \"" + std::string(cse == "on" ? "off" : "on") +
          "\" where the chosen configuration says \"" + cse + "\"");
}

// `--input NAME=FILE.npy`: every configuration is checked and timed on the
// file's tensor. The showcase's input declared [1, 4, H, W] (symbolic H, W; the graph takes 64):
// random inputs need --input-shape; the file's shape is what the record
// keeps. A file of another channel count is a one-line error naming it.
TEST(TuneCli, ChecksAndTimesOnAnInputFile) {
  testing::TempDir dir;
  graph::Model m = testing::showcase_model();
  graph::SymShape sym = *m.graph.types["x"].shape;
  sym[2] = graph::Dim::named("H");
  sym[3] = graph::Dim::named("W");
  m.graph.types["x"].shape = sym;
  const std::string model = dir.file("sym.onnx"), tuned = dir.file("tuned");
  graph::write_onnx(m, model);
  const std::string args =
      " --measurements 2 --repeats 1 --paired-rounds 1 --threads 1 -o " + tuned;
  auto r = testing::run_cli("tune " + model + args);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("--input-shape"), std::string::npos) << r.output;
  write_npy(dir.file("x.npy"), testing::random_tensor({1, 4, 64, 64}, 3));
  r = testing::run_cli("tune " + model + " --input x=" + dir.file("x.npy") + args);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const TuneRecord record = read_record(tuned + "/decisions.json");
  EXPECT_EQ(record.input_shapes.at("x"), (std::vector<int64_t>{1, 4, 64, 64}));
  ASSERT_FALSE(record.measured.empty());
  EXPECT_TRUE(record.measured.front().ok) << record.measured.front().error;
  write_npy(dir.file("bad.npy"), testing::random_tensor({1, 3, 64, 64}, 3));
  r = testing::run_cli("tune " + model + " --input x=" + dir.file("bad.npy") + args);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
  EXPECT_NE(r.output.find(dir.file("bad.npy")), std::string::npos) << r.output;
  // An outside pass (stop 46): a NaN in the file made every check fail and
  // tune crash (exit 3); --tolerance inf wrote a record replay could not
  // read; --input-shape beside --input for the same input was ignored.
  Tensor nan = testing::random_tensor({1, 4, 64, 64}, 3);
  nan.mutable_data<float>()[5] = std::nanf("");
  write_npy(dir.file("nan.npy"), nan);
  const std::vector<std::pair<std::string, std::string>> refused = {
      {" --input x=" + dir.file("nan.npy"), dir.file("nan.npy") + ": input 'x': holds NaN or Inf"},
      {" --input x=" + dir.file("x.npy") + " --tolerance inf",
       "--tolerance: must be finite and >= 0"},
      {" --input x=" + dir.file("x.npy") + " --input-shape x=1x4x64x64",
       "--input-shape: input 'x' is also given by --input"}};
  for (const auto& [extra, message] : refused) {
    r = testing::run_cli("tune " + model + extra + args);
    EXPECT_EQ(r.exit_code, 2) << extra << "\n" << r.output;
    EXPECT_NE(r.output.find(message), std::string::npos) << extra << "\n" << r.output;
  }
  // No configuration passing its check (a tolerance below any error) is an
  // error naming the default's, not an internal error.
  TuneOptions o;
  o.measurements = 2;
  o.harness.repeats = 1;
  o.paired_rounds = 1;
  o.threads = 1;
  o.harness.tolerance = -1;
  o.inputs = {{"x", read_npy(dir.file("x.npy"))}};
  testing::expect_error_naming([&] { tune_model(m, o); }, "tune",
                               "no configuration passed its check (the default's: max relative "
                               "error ");
}

// An f16 model (ISNet's form: Cast to f16, f16 weights and biases, Cast back)
// is tuned as `tailor run` runs it, f16 computed in f32: before, the harness's
// reference run failed on the Conv's f16 bias.
TEST(TuneCli, TunesAnF16ModelAsRunRunsIt) {
  testing::TempDir dir;
  using testing::ints;
  const graph::Model m =
      testing::GraphBuilder()
          .input("X", {1, 8, 16, 16})
          .init("W", testing::random_f32({8, 8, 3, 3}, 1, -0.2f, 0.2f).to(DType::f16))
          .init("B", testing::random_f32({8}, 2, -0.2f, 0.2f).to(DType::f16))
          .node("Cast", {"X"}, {"x16"}, {{"to", testing::int1(10)}})
          .node("Conv", {"x16", "W", "B"}, {"c"},
                {{"kernel_shape", ints({3, 3})}, {"pads", ints({1, 1, 1, 1})}})
          .node("Relu", {"c"}, {"r"})
          .node("Cast", {"r"}, {"Y"}, {{"to", testing::int1(1)}})
          .output("Y")
          .model();
  const std::string model = dir.file("f16.onnx"), tuned = dir.file("tuned");
  graph::write_onnx(m, model);
  auto r = testing::run_cli(
      "tune " + model + " --measurements 2 --repeats 1 --paired-rounds 1 --threads 1 -o " + tuned);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = testing::run_cli("tune --replay " + tuned + "/decisions.json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("same decisions as the record"), std::string::npos) << r.output;
  // Its output is the model's, computed in f32 (a 3×3 conv of 72 products
  // with f16 weights: within 1e-5 of the output's largest magnitude).
  const std::map<std::string, Tensor> in = random_inputs(m, {}, 9);
  write_npy(dir.file("x.npy"), in.at("X"));
  r = testing::run_cli("run " + model + " --tuning " + tuned +
                       "/decisions.json --input X=" + dir.file("x.npy") + " -o " + dir.file("out"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::vector<float> got = read_npy(dir.file("out/Y.npy")).to_f32_vector();
  graph::Model f32 = m;
  graph::promote_f16_to_f32(f32);
  const std::vector<float> want = runtime::Executor(f32).run(in).at("Y").to_f32_vector();
  ASSERT_EQ(got.size(), want.size());
  float scale = 0;
  for (float v : want) scale = std::max(scale, std::fabs(v));
  EXPECT_GT(scale, 0.0f);
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-5f * scale) << i;
}

}  // namespace
}  // namespace tailor::tune
