// `tailor run` end to end: outputs as .npy (names sanitised), latency and
// memory lines, one-line errors naming the input.
#include <gtest/gtest.h>

#include <cstdlib>

#include <filesystem>

#include "../runtime/op_test_util.h"
#include "tailor/io/npy.h"
#include "tailor/io/onnx.h"
#include "test_util.h"

namespace tailor::testing {
namespace {

/// y "a/b" = Relu(x) + 1 with x f32 [2, 3]; with `two_outputs`, h = Relu(x)
/// is an output too (first).
std::string tiny_model(const TempDir& dir, bool two_outputs = false) {
  graph::Model m;
  m.opset = 13;
  m.graph.inputs = {"x"};
  m.graph.types["x"] = graph::ValueType{DType::f32, graph::sym_shape_of({2, 3})};
  m.graph.add_initializer("one", f32({}, {1}));
  graph::Node r;
  r.op_type = "Relu";
  r.name = "relu";
  r.inputs = {"x"};
  r.outputs = {"h"};
  graph::Node a;
  a.op_type = "Add";
  a.name = "add";
  a.inputs = {"h", "one"};
  a.outputs = {"a/b"};
  m.graph.nodes = {r, a};
  m.graph.outputs = {"a/b"};
  if (two_outputs) {
    m.graph.outputs = {"h", "a/b"};
    m.graph.types["h"] = graph::ValueType{DType::f32, graph::sym_shape_of({2, 3})};
  }
  m.graph.types["a/b"] = graph::ValueType{DType::f32, graph::sym_shape_of({2, 3})};
  const std::string path = dir.file("tiny.onnx");
  graph::write_onnx(m, path);
  return path;
}

// tailor makes OpenMP threads wait passively unless the user chose a policy
// (main.cpp re-executes itself with OMP_WAIT_POLICY=passive).
TEST(RunCli, OpenMpWaitPolicyDefaultsToPassiveAndKeepsTheUsers) {
  TempDir dir;
  const std::string model = tiny_model(dir);
  write_npy(dir.file("x.npy"), f32({2, 3}, {-1, 0, 1, 2, -3, 4}));
  const std::string args = "run " + model + " --input x=" + dir.file("x.npy") + " --time 1";
  const char* saved = std::getenv("OMP_WAIT_POLICY");
  const std::string saved_value = saved ? saved : "";
  ::unsetenv("OMP_WAIT_POLICY");
  const CommandResult unset = run_cli(args);
  ::setenv("OMP_WAIT_POLICY", "active", 1);
  const CommandResult active = run_cli(args);
  if (saved)
    ::setenv("OMP_WAIT_POLICY", saved_value.c_str(), 1);
  else
    ::unsetenv("OMP_WAIT_POLICY");
  ASSERT_EQ(unset.exit_code, 0) << unset.output;
  EXPECT_NE(unset.output.find("OpenMP wait policy passive"), std::string::npos) << unset.output;
  ASSERT_EQ(active.exit_code, 0) << active.output;
  EXPECT_NE(active.output.find("OpenMP wait policy active"), std::string::npos) << active.output;
}

TEST(RunCli, WritesOutputsAndReportsLatencyAndMemory) {
  TempDir dir;
  const std::string model = tiny_model(dir);
  write_npy(dir.file("x.npy"), f32({2, 3}, {-1, 0, 1, 2, -3, 4}));
  const CommandResult r = run_cli("run " + model + " --input x=" + dir.file("x.npy") +
                                  " --output " + dir.file("out") + " --time 3 --threads 1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("output a/b: f32 [2, 3]"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("latency: median"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("over 3 runs"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("peak activation memory:"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("peak RSS:"), std::string::npos) << r.output;
  const Tensor y = read_npy(dir.file("out/a_b.npy"));
  expect_f32(y, {2, 3}, {1, 1, 2, 3, 1, 5});
}

TEST(RunCli, InputErrorsNameTheInput) {
  TempDir dir;
  const std::string model = tiny_model(dir);
  write_npy(dir.file("bad_shape.npy"), f32({3, 2}, {1, 2, 3, 4, 5, 6}));
  write_npy(dir.file("bad_type.npy"), i64({2, 3}, {1, 2, 3, 4, 5, 6}));
  CommandResult r = run_cli("run " + model);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("input 'x': missing"), std::string::npos) << r.output;
  r = run_cli("run " + model + " --input x=" + dir.file("bad_shape.npy"));
  EXPECT_EQ(r.exit_code, 2);
  // The .npy is named first: the file to fix.
  EXPECT_NE(r.output.find(dir.file("bad_shape.npy") +
                          ": input 'x': shape [3, 2], the model expects [2, 3]"),
            std::string::npos)
      << r.output;
  r = run_cli("run " + model + " --input x=" + dir.file("bad_type.npy"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find(dir.file("bad_type.npy") + ": input 'x': dtype i64"), std::string::npos)
      << r.output;
  r = run_cli("run " + model + " --input x=");  // was "cannot open", naming nothing
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("--input: expected NAME=FILE.npy, got \"x=\""), std::string::npos)
      << r.output;
  r = run_cli("run " + model + " --input " + dir.file("bad_type.npy"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("NAME=FILE.npy"), std::string::npos) << r.output;
  r = run_cli("run " + model + " --input x=" + dir.file("nothing.npy"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("nothing.npy"), std::string::npos) << r.output;
  // Exactly one line of error.
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
}

TEST(RunCli, OutputFolderThatIsAFileIsAnErrorNamingIt) {
  // It once escaped as std::filesystem_error: "internal error", exit 3.
  TempDir dir;
  const std::string model = tiny_model(dir);
  write_npy(dir.file("x.npy"), f32({2, 3}, {-1, 0, 1, 2, -3, 4}));
  write_bytes(dir.file("afile"), "x");
  for (const std::string& out : {dir.file("afile"), dir.file("afile") + "/sub"}) {
    const CommandResult r =
        run_cli("run " + model + " --input x=" + dir.file("x.npy") + " --output " + out);
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("error: " + out + ": cannot create the output folder"),
              std::string::npos)
        << r.output;
    EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
  }
}

TEST(RunCli, NoOutputIsWrittenWhenOneDestinationCannotBe) {
  // out/a_b.npy is a folder: h.npy was written (and reported) before the
  // error on a_b.npy, a half-written output.
  TempDir dir;
  const std::string model = tiny_model(dir, true);
  write_npy(dir.file("x.npy"), f32({2, 3}, {-1, 0, 1, 2, -3, 4}));
  std::filesystem::create_directories(dir.file("out/a_b.npy"));
  const CommandResult r =
      run_cli("run " + model + " --input x=" + dir.file("x.npy") + " --output " + dir.file("out"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find(dir.file("out/a_b.npy") + ": exists and is not a regular file"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
  EXPECT_FALSE(std::filesystem::exists(dir.file("out/h.npy")));
  // Without the obstacle both are written: h = Relu(x), a/b = Relu(x) + 1.
  std::filesystem::remove(dir.file("out/a_b.npy"));
  const CommandResult ok =
      run_cli("run " + model + " --input x=" + dir.file("x.npy") + " --output " + dir.file("out"));
  ASSERT_EQ(ok.exit_code, 0) << ok.output;
  expect_f32(read_npy(dir.file("out/h.npy")), {2, 3}, {0, 0, 1, 2, 0, 4});
  expect_f32(read_npy(dir.file("out/a_b.npy")), {2, 3}, {1, 1, 2, 3, 1, 5});
}

TEST(RunCli, ThreadCountsOutOfRangeAreRefused) {
  // --threads 100000 segfaulted in the first OpenMP region.
  TempDir dir;
  const std::string model = tiny_model(dir);
  write_npy(dir.file("x.npy"), f32({2, 3}, {-1, 0, 1, 2, -3, 4}));
  for (const char* t : {"100000", "1025", "-1"}) {
    const CommandResult r =
        run_cli("run " + model + " --input x=" + dir.file("x.npy") + " --threads " + t);
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("--threads: must be between 0 and 1024"), std::string::npos)
        << r.output;
  }
}

}  // namespace
}  // namespace tailor::testing
