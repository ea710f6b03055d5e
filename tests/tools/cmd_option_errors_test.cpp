// Bad options of tailor compress / tune / tune-train: a one-line error naming
// the option or file, exit code 2, and no output folder left behind.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "graph/passes/pass_test_util.h"
#include "tailor/io/onnx.h"
#include "test_util.h"

namespace tailor::testing {
namespace {

void expect_refused(const std::string& args, const std::string& named,
                    const std::filesystem::path& out) {
  const CommandResult r = run_cli(args);
  EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.output;
  EXPECT_NE(r.output.find("tailor: error: " + named), std::string::npos) << args << "\n"
                                                                         << r.output;
  EXPECT_EQ(r.output.find("internal error"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(out)) << args;
}

/// A model file that is never read (the options are refused first) and an
/// output folder path inside a temporary folder.
struct PlaceholderModel {
  TempDir dir;
  std::string model = dir.file("m.onnx"), out = dir.file("out");
  PlaceholderModel() { write_bytes(model, "not read"); }
};

TEST(CmdOptionErrors, CompressRefusesAZeroNegativeOrNanImageStdAndANonFiniteMean) {
  const PlaceholderModel m;
  const std::string &model = m.model, &out = m.out;
  for (const char* s : {"0,1,1", "1,-2,1", "1,1,nan", "inf,1,1"})
    expect_refused(
        "compress " + model + " --budget 50% --image-std " + std::string(s) + " -o " + out,
        "--image-std: must be finite and > 0", out);
  expect_refused("compress " + model + " --budget 50% --image-mean 1,nan,1 -o " + out,
                 "--image-mean: must be finite", out);
}

TEST(CmdOptionErrors, TuneTrainChecksEveryFileAndShapePrefixBeforeMeasuring) {
  // Both would otherwise surface only after the training models were measured
  // (an --evaluate file) or never (a MODEL: prefix matching no model).
  const PlaceholderModel m;
  const std::string &model = m.model, &out = m.out;
  const std::string missing = m.dir.file("missing.onnx");
  expect_refused("tune-train " + model + " --evaluate " + missing + " -o " + out,
                 missing + ": no such file", out);
  expect_refused("tune-train " + missing + " -o " + out, missing + ": no such file", out);
  expect_refused("tune-train " + model + " --input-shape other.onnx:x=1x3x8x8 -o " + out,
                 "--input-shape: \"other.onnx\" is not one of the models given", out);
}

TEST(CmdOptionErrors, TuneAndTuneTrainNameAnOutputFolderTheyCannotCreate) {
  // -o under a regular file: create_directories fails; that was an uncaught
  // std::filesystem error (exit 3, "internal error").
  TempDir dir;
  GraphBuilder b;
  b.input("x", {1, 4});
  b.node("Relu", {"x"}, {"y"}).output("y");
  const std::string model = dir.file("relu.onnx"), blocker = dir.file("blocker");
  graph::write_onnx(b.model(), model);
  write_bytes(blocker, "a file");
  const std::string out = blocker + "/out";
  for (const std::string cmd : {"tune", "tune-train"}) {
    const CommandResult r =
        run_cli(cmd + " " + model + " --measurements 1 --repeats 1 --threads 1 -o " + out);
    EXPECT_EQ(r.exit_code, 2) << cmd << "\n" << r.output;
    EXPECT_NE(r.output.find("tailor: error: " + out + ": cannot create the output folder"),
              std::string::npos)
        << cmd << "\n"
        << r.output;
  }
}

/// The output is exactly one line and starts with `prefix`.
void expect_one_line(const CommandResult& r, const std::string& prefix) {
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_EQ(r.output.rfind(prefix, 0), 0u) << r.output;
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
}

// Parse errors were CLI11's two lines without the prefix; `tailor bogus` said
// only "A subcommand is required".
TEST(CmdOptionErrors, CommandLineErrorsAreOneLineNamingTheCommand) {
  expect_one_line(run_cli("bogus"), "tailor: error: unknown command 'bogus' (commands: inspect, ");
  expect_one_line(run_cli(""), "tailor: error: A subcommand is required (inspect, ");
  expect_one_line(run_cli("compress"), "tailor: error: compress: MODEL is required");
  expect_one_line(run_cli("plan p.json --budget 1% --seed x"), "tailor: error: plan: ");
  const CommandResult help = run_cli("compress --help");
  EXPECT_EQ(help.exit_code, 0) << help.output;
  EXPECT_NE(help.output.find("--budget"), std::string::npos) << help.output;
}

// "0x10" said "unknown unit \"x10\"" and "1e400" said "no number".
TEST(CmdOptionErrors, CompressBudgetInHexadecimalOrOutOfRangeIsNamed) {
  const PlaceholderModel m;
  const std::string &model = m.model, &out = m.out;
  expect_refused("compress " + model + " --budget 0x10 -o " + out,
                 "--budget: cannot read \"0x10\": hexadecimal numbers are not accepted", out);
  expect_refused("compress " + model + " --budget 1e400 -o " + out,
                 "--budget: cannot read \"1e400\": the number is out of range", out);
  // Empty --schemes items fell back to the whole default catalog (compress),
  // where profile refused them: both read the list the same way now.
  expect_refused("compress " + model + " --budget 50% --schemes=int8,,int4 -o " + out,
                 "--schemes: empty item in \"int8,,int4\"", out);
  expect_refused("compress " + model + " --budget 50% --schemes=, -o " + out,
                 "--schemes: empty item in \",\"", out);
}

// An empty value (an unset shell variable) was passed on: `-o ''` wrote the
// default folder beside the working directory, `--calib ''` used the
// default inputs, `--uniform ''` asked for --budget.
TEST(CmdOptionErrors, EmptyValuesAreRefusedNamingTheOption) {
  const PlaceholderModel m;
  const std::string &model = m.model, &out = m.out;
  for (const char* option : {"--uniform", "--calib", "--schemes", "--budget", "--max-latency"})
    expect_refused(
        "compress " + model + " --uniform int8 " + option + " '' -o " + out,
        std::string("compress: ") + option + ": empty value (give one, or leave the option out)",
        out);
  expect_one_line(run_cli("compress " + model + " --uniform int8 -o ''"),
                  "tailor: error: compress: --output: empty value");
  expect_one_line(run_cli("run ''"), "tailor: error: run: MODEL: empty value");
  expect_one_line(run_cli("run " + model + " --threads ''"),
                  "tailor: error: run: --threads: empty value");
}

// --calib on a llama and --tokenizer without --gguf were accepted and ignored.
TEST(CmdOptionErrors, CompressRefusesOptionsThatWouldBeIgnored) {
  TempDir dir;
  const std::string model = fixture_path("stories260K.bin"), out = dir.file("out");
  std::filesystem::create_directories(dir.file("calib"));
  expect_refused("compress " + model + " --budget 50% --calib " + dir.file("calib") + " -o " + out,
                 "--calib: applies to ONNX models; a llama checkpoint is verified on sequences "
                 "sampled from itself (--sequences, --length)",
                 out);
  expect_refused("compress " + model + " --budget 50% --tokenizer " + fixture_path("tok512.bin") +
                     " -o " + out,
                 "--tokenizer: applies only with --gguf", out);
}

}  // namespace
}  // namespace tailor::testing
