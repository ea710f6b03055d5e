// Elementwise ops on tiny inputs against values derived by hand.
#include <gtest/gtest.h>

#include <cmath>

#include "op_test_util.h"
#include "tailor/core/error.h"

namespace tailor::testing {
namespace {

using graph::Attribute;

TEST(OpsElementwise, AddBroadcastsMultidirectionally) {
  // [2,1] + [3] -> [2,3]: row i, col j = a[i] + b[j].
  const Tensor y = OneOp{"Add", {f32({2, 1}, {1, 2}), f32({3}, {10, 20, 30})}}.run1();
  expect_f32(y, {2, 3}, {11, 21, 31, 12, 22, 32});
}

TEST(OpsElementwise, SubMulDivPerChannel) {
  // [1,2,2] with a per-channel [2,1] operand (NCHW bias pattern).
  const Tensor x = f32({1, 2, 2}, {1, 2, 3, 4});
  const Tensor c = f32({2, 1}, {2, 4});
  expect_f32(OneOp{"Sub", {x, c}}.run1(), {1, 2, 2}, {-1, 0, -1, 0});
  expect_f32(OneOp{"Mul", {x, c}}.run1(), {1, 2, 2}, {2, 4, 12, 16});
  expect_f32(OneOp{"Div", {x, c}}.run1(), {1, 2, 2}, {0.5f, 1, 0.75f, 1});
  // Scalar on the left.
  expect_f32(OneOp{"Sub", {f32({}, {10}), x}}.run1(), {1, 2, 2}, {9, 8, 7, 6});
}

TEST(OpsElementwise, IntegerArithmeticForShapes) {
  const Tensor y = OneOp{"Mul", {i64({2}, {3, 4}), i64({}, {2})}}.run1();
  EXPECT_EQ(i64_values(y), (std::vector<int64_t>{6, 8}));
  EXPECT_EQ(i64_values(OneOp{"Div", {i64({2}, {7, -7}), i64({}, {2})}}.run1()),
            (std::vector<int64_t>{3, -3}));  // truncation, as ONNX integer Div
}

TEST(OpsElementwise, PowSqrtExpLogTanh) {
  expect_f32(OneOp{"Pow", {f32({3}, {1, 2, 3}), f32({}, {2})}}.run1(), {3}, {1, 4, 9});
  expect_f32(OneOp{"Pow", {f32({2}, {4, 9}), f32({}, {0.5f})}}.run1(), {2}, {2, 3});
  expect_f32(OneOp{"Pow", {f32({2}, {2, 2}), f32({2}, {3, -1})}}.run1(), {2}, {8, 0.5f});
  expect_f32(OneOp{"Sqrt", {f32({2}, {16, 0.25f})}}.run1(), {2}, {4, 0.5f});
  expect_f32(OneOp{"Exp", {f32({2}, {0, 1})}}.run1(), {2}, {1, 2.7182817f});
  expect_f32(OneOp{"Log", {f32({2}, {1, 2.7182817f})}}.run1(), {2}, {0, 1});
  expect_f32(OneOp{"Tanh", {f32({2}, {0, 1})}}.run1(), {2}, {0, 0.7615942f});
  expect_f32(OneOp{"Neg", {f32({2}, {1, -2})}}.run1(), {2}, {-1, 2});
  expect_f32(OneOp{"Abs", {f32({2}, {1, -2})}}.run1(), {2}, {1, 2});
}

TEST(OpsElementwise, Activations) {
  const Tensor x = f32({5}, {-4, -1, 0, 1, 4});
  expect_f32(OneOp{"Relu", {x}}.run1(), {5}, {0, 0, 0, 1, 4});
  // sigmoid(1) = 1/(1+e^-1) = 0.7310586
  expect_f32(OneOp{"Sigmoid", {x}}.run1(), {5},
             {0.01798621f, 0.26894142f, 0.5f, 0.7310586f, 0.98201379f});
  // HardSigmoid alpha 0.2 beta 0.5: clamp(0.2x + 0.5, 0, 1).
  expect_f32(OneOp{"HardSigmoid", {x}}.run1(), {5}, {0, 0.3f, 0.5f, 0.7f, 1});
  expect_f32(OneOp{"HardSigmoid",
                   {x},
                   {{"alpha", Attribute::of_float(0.5f)}, {"beta", Attribute::of_float(0.0f)}}}
                 .run1(),
             {5}, {0, 0, 0, 0.5f, 1});
  // HardSwish: x * clamp(x/6 + 1/2, 0, 1): -1 -> -1/3, 1 -> 2/3.
  expect_f32(OneOp{"HardSwish", {x}, {}, 14}.run1(), {5}, {0, -1.0f / 3, 0, 2.0f / 3, 4});
  expect_f32(OneOp{"LeakyRelu", {x}, {{"alpha", Attribute::of_float(0.1f)}}}.run1(), {5},
             {-0.4f, -0.1f, 0, 1, 4});
}

TEST(OpsElementwise, ClipAttributesBeforeOpset11InputsAfter) {
  const Tensor x = f32({4}, {-2, 0.5f, 3, 7});
  expect_f32(
      OneOp{"Clip", {x}, {{"min", Attribute::of_float(0)}, {"max", Attribute::of_float(6)}}, 9}
          .run1(),
      {4}, {0, 0.5f, 3, 6});
  expect_f32(OneOp{"Clip", {x, f32({}, {0}), f32({}, {1})}, {}, 11}.run1(), {4}, {0, 0.5f, 1, 1});
  // Omitted min: only the upper bound applies.
  expect_f32(OneOp{"Clip", {x, Tensor(), f32({}, {1})}, {}, 13}.run1(), {4}, {-2, 0.5f, 1, 1});
}

TEST(OpsElementwise, ComparisonsLogicWhere) {
  const Tensor a = i64({3}, {1, 2, 3});
  const Tensor b = i64({}, {2});
  EXPECT_EQ(bool_values(OneOp{"Equal", {a, b}}.run1()), (std::vector<uint8_t>{0, 1, 0}));
  EXPECT_EQ(bool_values(OneOp{"Less", {a, b}}.run1()), (std::vector<uint8_t>{1, 0, 0}));
  EXPECT_EQ(bool_values(OneOp{"Greater", {a, b}}.run1()), (std::vector<uint8_t>{0, 0, 1}));
  const Tensor p = boolean({4}, {0, 0, 1, 1}), q = boolean({4}, {0, 1, 0, 1});
  EXPECT_EQ(bool_values(OneOp{"And", {p, q}}.run1()), (std::vector<uint8_t>{0, 0, 0, 1}));
  EXPECT_EQ(bool_values(OneOp{"Not", {p}}.run1()), (std::vector<uint8_t>{1, 1, 0, 0}));
  // Where broadcasts all three: cond [2,1], x [2], y scalar.
  const Tensor y =
      OneOp{"Where", {boolean({2, 1}, {1, 0}), f32({2}, {1, 2}), f32({}, {-1})}}.run1();
  expect_f32(y, {2, 2}, {1, 2, -1, -1});
}

TEST(OpsElementwise, BadShapesNameTheNode) {
  try {
    OneOp{"Add", {f32({2}, {1, 2}), f32({3}, {1, 2, 3})}}.run1();
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("n0"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("broadcast"), std::string::npos) << e.what();
  }
}

TEST(OpsElementwise, LargeBroadcastMatchesDefinitionInParallel) {
  // [4, 64, 32, 32] + [1, 64, 1, 1]: big enough for the OpenMP path.
  const int64_t n = 4, c = 64, hw = 32 * 32;
  std::vector<float> x(static_cast<size_t>(n * c * hw)), b(static_cast<size_t>(c));
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 97) * 0.5f;
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(i);
  const Tensor y = OneOp{"Add", {f32({n, c, 32, 32}, x), f32({1, c, 1, 1}, b)}}.run1();
  const std::vector<float> got = y.to_f32_vector();
  for (int64_t i = 0; i < n * c * hw; i += 997)
    ASSERT_EQ(got[static_cast<size_t>(i)],
              x[static_cast<size_t>(i)] + b[static_cast<size_t>((i / hw) % c)]);
}

}  // namespace
}  // namespace tailor::testing
