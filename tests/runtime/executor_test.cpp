// The executor: load-time errors, input checks, buffer reuse by liveness, the
// arena's first-fit heap (merged neighbours, the same memory every run).
#include <gtest/gtest.h>

#include "op_test_util.h"
#include "tailor/core/error.h"
#include "test_util.h"

namespace tailor::testing {
namespace {

graph::Node node(const char* op, const char* name, std::vector<std::string> in,
                 std::vector<std::string> out) {
  graph::Node n;
  n.op_type = op;
  n.name = name;
  n.inputs = std::move(in);
  n.outputs = std::move(out);
  return n;
}

TEST(Executor, MissingOpIsALoadTimeErrorNamingOpAndNode) {
  graph::Model m;
  m.opset = 13;
  m.source = "m.onnx";
  m.graph.inputs = {"x"};
  m.graph.nodes = {node("Relu", "r", {"x"}, {"a"}), node("FancyOp", "fancy_1", {"a"}, {"y"})};
  m.graph.outputs = {"y"};
  expect_error_naming([&] { runtime::Executor ex(m); }, "m.onnx", "FancyOp");
  expect_error_naming([&] { runtime::Executor ex(m); }, "m.onnx", "fancy_1");
}

TEST(Executor, InputsCheckedByNameDtypeAndShape) {
  graph::Model m;
  m.opset = 13;
  m.graph.inputs = {"x"};
  m.graph.types["x"] =
      graph::ValueType{DType::f32, graph::SymShape{graph::Dim::named("n"), graph::Dim::known(2)}};
  m.graph.nodes = {node("Relu", "r", {"x"}, {"y"})};
  m.graph.outputs = {"y"};
  runtime::Executor ex(m);
  // Symbolic dim takes any size.
  expect_f32(ex.run({{"x", f32({3, 2}, {-1, 1, -2, 2, -3, 3})}}).at("y"), {3, 2},
             {0, 1, 0, 2, 0, 3});
  expect_error_naming([&] { ex.run({}); }, "input 'x'", "missing");
  expect_error_naming(
      [&] {
        ex.run({{"x", f32({3, 3}, std::vector<float>(9))}});
      },
      "input 'x'", "shape [3, 3]");
  expect_error_naming([&] { ex.run({{"x", i64({1, 2}, {1, 2})}}); }, "input 'x'", "dtype i64");
  expect_error_naming(
      [&] {
        ex.run({{"x", f32({1, 2}, {1, 2})}, {"z", f32({1}, {1})}});
      },
      "input 'z'", "no such input");
}

TEST(Executor, RunOrderedTakesAndGivesValuesByPosition) {
  // s = a + b, y = Relu(s); outputs listed y then s, inputs a then b.
  graph::Model m;
  m.opset = 13;
  m.graph.inputs = {"a", "b"};
  m.graph.types["a"] =
      graph::ValueType{DType::f32, graph::SymShape{graph::Dim::named("n"), graph::Dim::known(2)}};
  m.graph.nodes = {node("Add", "add", {"a", "b"}, {"s"}), node("Relu", "r", {"s"}, {"y"})};
  m.graph.outputs = {"y", "s"};
  runtime::Executor ex(m);
  const std::vector<Tensor> out = ex.run_ordered({f32({1, 2}, {-3, 1}), f32({2}, {1, 1})});
  ASSERT_EQ(out.size(), 2u);
  expect_f32(out[0], {1, 2}, {0, 2});   // Relu(-2), Relu(2)
  expect_f32(out[1], {1, 2}, {-2, 2});  // -3 + 1, 1 + 1
  expect_error_naming([&] { ex.run_ordered({f32({1, 2}, {1, 2})}); }, "input 'b'", "missing");
  expect_error_naming(
      [&] {
        ex.run_ordered({f32({1, 2}, {1, 2}), f32({2}, {1, 1}), f32({1}, {1})});
      },
      "input 2", "no such input");
  expect_error_naming(
      [&] {
        ex.run_ordered({i64({1, 2}, {1, 2}), f32({2}, {1, 1})});
      },
      "input 'a'", "dtype i64");
}

TEST(Executor, BuffersAreReusedAfterTheLastConsumer) {
  // A chain of 6 Relu/Neg nodes on 1 MiB tensors: with reuse by liveness at
  // most 2 buffers (input of a step and its output) are live at once.
  graph::Model m;
  m.opset = 13;
  m.graph.inputs = {"x"};
  std::string prev = "x";
  for (int i = 0; i < 6; ++i) {
    const std::string out = "v" + std::to_string(i);
    m.graph.nodes.push_back(
        node(i % 2 ? "Neg" : "Relu", ("n" + std::to_string(i)).c_str(), {prev}, {out}));
    prev = out;
  }
  m.graph.outputs = {prev};
  runtime::Executor ex(m);
  const int64_t n = 1 << 18;  // 1 MiB of f32
  std::vector<float> v(static_cast<size_t>(n), -1.0f);
  auto out = ex.run({{"x", f32({n}, v)}});
  EXPECT_EQ(out.at(prev).to_f32_vector()[0], -0.0f);
  EXPECT_EQ(ex.peak_activation_bytes(), 2u * static_cast<size_t>(n) * 4);
  EXPECT_EQ(ex.pooled_activation_bytes(), 2u * static_cast<size_t>(n) * 4);
  // A second run reuses the pool (the first run's output is dropped first).
  out.clear();
  ex.run({{"x", f32({n}, v)}});
  EXPECT_EQ(ex.pooled_activation_bytes(), 2u * static_cast<size_t>(n) * 4);
}

// x → a = Relu(x), b = Neg(x) (n floats each), c = Concat(a, b) (2n), y =
// Relu(c) (2n). First fit at the lowest free address: a at [0, n), b at
// [n, 2n), c at [2n, 4n); a and b die after c and merge into [0, 2n), which
// takes y: 4n floats written, 4n live at the peak (c and y, or a, b and c).
// Without the merge y would go to [4n, 6n) (a pool of whole buffers: 5n).
graph::Model concat_model() {
  graph::Model m;
  m.opset = 13;
  m.graph.inputs = {"x"};
  graph::Node cat = node("Concat", "cat", {"a", "b"}, {"c"});
  cat.set("axis", graph::Attribute::of_int(0));
  m.graph.nodes = {node("Relu", "r", {"x"}, {"a"}), node("Neg", "g", {"x"}, {"b"}), cat,
                   node("Relu", "r2", {"c"}, {"y"})};
  m.graph.outputs = {"y"};
  return m;
}

TEST(Executor, FreedNeighboursMergeAndTheMemoryIsTheSameEveryRun) {
  runtime::Executor ex(concat_model());
  const int64_t n = 1 << 16;  // 256 KiB of f32, a multiple of the 64-byte alignment
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = static_cast<float>(i % 7) - 3.0f;
  for (int run = 0; run < 3; ++run) {
    const auto out = ex.run({{"x", f32({n}, v)}});
    const std::vector<float> y = out.at("y").to_f32_vector();
    ASSERT_EQ(y.size(), static_cast<size_t>(2 * n));
    for (int64_t i = 0; i < n; ++i) {
      const float x = v[static_cast<size_t>(i)];
      ASSERT_EQ(y[static_cast<size_t>(i)], x > 0 ? x : 0.0f) << i;
      ASSERT_EQ(y[static_cast<size_t>(n + i)], -x > 0 ? -x : 0.0f) << i;
    }
    EXPECT_EQ(ex.pooled_activation_bytes(), 4u * static_cast<size_t>(n) * 4) << "run " << run;
    EXPECT_EQ(ex.peak_activation_bytes(), 4u * static_cast<size_t>(n) * 4) << "run " << run;
  }
}

TEST(Executor, OutputsHeldAcrossRunsKeepTheirValues) {
  // Run 1's output stays alive through run 2 (its block is not reused while a
  // tensor views it), then dies; run 3 reuses the memory.
  runtime::Executor ex(concat_model());
  const int64_t n = 1000;  // not a multiple of 16 floats: blocks rounded to 64 bytes
  auto out1 = ex.run({{"x", f32({n}, std::vector<float>(n, 2.0f))}});
  auto out2 = ex.run({{"x", f32({n}, std::vector<float>(n, -5.0f))}});
  const std::vector<float> y1 = out1.at("y").to_f32_vector(), y2 = out2.at("y").to_f32_vector();
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(y1[static_cast<size_t>(i)], 2.0f);
    ASSERT_EQ(y1[static_cast<size_t>(n + i)], 0.0f);
    ASSERT_EQ(y2[static_cast<size_t>(i)], 0.0f);
    ASSERT_EQ(y2[static_cast<size_t>(n + i)], 5.0f);
  }
  const size_t after2 = ex.pooled_activation_bytes();
  out1.clear();
  out2.clear();
  ex.run({{"x", f32({n}, std::vector<float>(n, 1.0f))}});
  EXPECT_EQ(ex.pooled_activation_bytes(), after2);
}

TEST(Executor, OutOfOrderGraphIsRefused) {
  graph::Model m;
  m.opset = 13;
  m.source = "bad.onnx";
  m.graph.inputs = {"x"};
  m.graph.nodes = {node("Relu", "second", {"a"}, {"y"}), node("Relu", "first", {"x"}, {"a"})};
  m.graph.outputs = {"y"};
  expect_error_naming([&] { runtime::Executor ex(m); }, "bad.onnx", "'a'");
}

// A Conv fused with its bias and Relu (and moved to channels-last) used to
// fail under the internal node's name ("conv_epilogue_y", "y_conv_nhwc").
TEST(Executor, AFusedConvFailingAtRunTimeNamesTheModelsNode) {
  graph::Model m;
  m.opset = 13;
  m.graph.inputs = {"x"};
  m.graph.types["x"] =
      graph::ValueType{DType::f32, graph::SymShape{graph::Dim::known(1), graph::Dim::named("c"),
                                                   graph::Dim::known(8), graph::Dim::known(8)}};
  m.graph.add_initializer("w", f32({4, 3, 3, 3}, std::vector<float>(108, 0.5f)));
  m.graph.add_initializer("b", f32({4}, {1, 2, 3, 4}));
  m.graph.nodes = {node("Conv", "stem_conv", {"x", "w", "b"}, {"c1"}),
                   node("Relu", "stem_relu", {"c1"}, {"y"})};
  m.graph.outputs = {"y"};
  runtime::Executor ex(m);
  EXPECT_EQ(
      ex.run({{"x", f32({1, 3, 8, 8}, std::vector<float>(192, 1.0f))}}).at("y").to_f32_vector()[0],
      1 + 0.5f * 27);  // no padding: the whole 3×3×3 window of ones, + b[0]
  expect_error_naming(
      [&] {
        ex.run({{"x", f32({1, 2, 8, 8}, std::vector<float>(128))}});
      },
      "'stem_conv'", "");
}

}  // namespace
}  // namespace tailor::testing
