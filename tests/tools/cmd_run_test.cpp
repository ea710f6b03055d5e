// `tailor run` end to end: outputs as .npy (names sanitised), latency and
// memory lines, one-line errors naming the input.
#include <gtest/gtest.h>

#include <filesystem>

#include "../runtime/op_test_util.h"
#include "tailor/graph/onnx.h"
#include "tailor/io/npy.h"
#include "test_util.h"

namespace tailor::testing {
namespace {

/// y "a/b" = Relu(x) + 1 with x f32 [2, 3].
std::string tiny_model(const TempDir& dir) {
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
  m.graph.types["a/b"] = graph::ValueType{DType::f32, graph::sym_shape_of({2, 3})};
  const std::string path = dir.file("tiny.onnx");
  graph::write_onnx(m, path);
  return path;
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
  EXPECT_NE(r.output.find("input 'x': shape [3, 2], the model expects [2, 3]"), std::string::npos)
      << r.output;
  r = run_cli("run " + model + " --input x=" + dir.file("bad_type.npy"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("input 'x': dtype i64"), std::string::npos) << r.output;
  r = run_cli("run " + model + " --input " + dir.file("bad_type.npy"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("NAME=FILE.npy"), std::string::npos) << r.output;
  r = run_cli("run " + model + " --input x=" + dir.file("nothing.npy"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("nothing.npy"), std::string::npos) << r.output;
  // Exactly one line of error.
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
}

}  // namespace
}  // namespace tailor::testing
