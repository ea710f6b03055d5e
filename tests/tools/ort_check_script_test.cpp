// scripts/ort-check.sh refuses a bad NAME=SHAPE or a missing model with one
// line and exit code 2, before it looks for onnxruntime.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <array>
#include <cstdio>
#include <string>

#include "test_util.h"

namespace tailor::testing {
namespace {

CommandResult run_script(const std::string& args) {
  const std::string cmd =
      std::string(TAILOR_SOURCE_DIR) + "/scripts/ort-check.sh " + args + " 2>&1";
  CommandResult r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 256> buf{};
  while (fgets(buf.data(), buf.size(), p)) r.output += buf.data();
  const int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

TEST(OrtCheckScript, RefusesBadShapesAndAMissingModelWithOneLine) {
  TempDir dir;
  const std::string model = dir.file("m.onnx");
  write_bytes(model, "not read");
  for (const std::string spec : {"x=1x3xax8", "x=1x3x-1x8", "x=1x3x0x8", "x=", "=1x3"}) {
    const CommandResult r = run_script(model + " '" + spec + "'");
    EXPECT_EQ(r.exit_code, 2) << spec << "\n" << r.output;
    EXPECT_EQ(r.output,
              "ort-check: input \"" + spec + "\": expected NAME=D0xD1x... with positive dims\n");
  }
  const CommandResult r = run_script(dir.file("missing.onnx") + " x=1x2");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_EQ(r.output, "ort-check: " + dir.file("missing.onnx") + ": no such file\n");
}

}  // namespace
}  // namespace tailor::testing
