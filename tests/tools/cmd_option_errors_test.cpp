// Bad options of tailor compress / tune / tune-train: a one-line error naming
// the option or file, exit code 2, and no output folder left behind.
#include <gtest/gtest.h>

#include <filesystem>

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

TEST(CmdOptionErrors, CompressRefusesAZeroNegativeOrNanImageStdAndANonFiniteMean) {
  // Checked before the model is read, so a placeholder file suffices.
  TempDir dir;
  const std::string model = dir.file("m.onnx"), out = dir.file("out");
  write_bytes(model, "not read");
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
  TempDir dir;
  const std::string model = dir.file("m.onnx"), out = dir.file("out");
  write_bytes(model, "not read");
  const std::string missing = dir.file("missing.onnx");
  expect_refused("tune-train " + model + " --evaluate " + missing + " -o " + out,
                 missing + ": no such file", out);
  expect_refused("tune-train " + missing + " -o " + out, missing + ": no such file", out);
  expect_refused("tune-train " + model + " --input-shape other.onnx:x=1x3x8x8 -o " + out,
                 "--input-shape: \"other.onnx\" is not one of the models given", out);
}

}  // namespace
}  // namespace tailor::testing
