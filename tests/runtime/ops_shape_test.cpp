// Shape and data-movement ops on tiny inputs against values derived by hand.
#include <gtest/gtest.h>

#include "op_test_util.h"
#include "tailor/core/error.h"

namespace tailor::testing {
namespace {

using graph::Attribute;

Tensor iota(Shape s) {
  std::vector<float> v(static_cast<size_t>(shape_numel(s)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
  return f32(std::move(s), v);
}

TEST(OpsShape, ReshapeZeroAndMinusOne) {
  const Tensor x = iota({2, 3, 4});
  Tensor y = OneOp{"Reshape", {x, i64({3}, {0, -1, 2})}}.run1();
  EXPECT_EQ(y.shape(), (Shape{2, 6, 2}));
  EXPECT_EQ(y.to_f32_vector(), x.to_f32_vector());
  // allowzero = 1: 0 is a real zero-size dim (only valid for an empty input).
  y =
      OneOp{
          "Reshape", {f32({0, 3}, {}), i64({2}, {3, 0})}, {{"allowzero", Attribute::of_int(1)}}, 14}
          .run1();
  EXPECT_EQ(y.shape(), (Shape{3, 0}));
  EXPECT_THROW((OneOp{"Reshape", {x, i64({2}, {-1, -1})}}.run1()), Error);
  EXPECT_THROW((OneOp{"Reshape", {x, i64({2}, {5, -1})}}.run1()), Error);
}

TEST(OpsShape, FlattenSqueezeUnsqueezeByOpset) {
  const Tensor x = iota({2, 1, 3});
  EXPECT_EQ((OneOp{"Flatten", {x}, {{"axis", Attribute::of_int(2)}}}.run1().shape()),
            (Shape{2, 3}));
  EXPECT_EQ((OneOp{"Flatten", {x}, {{"axis", Attribute::of_int(0)}}}.run1().shape()),
            (Shape{1, 6}));
  // Opset 11: axes attribute; opset 13: axes input.
  EXPECT_EQ((OneOp{"Squeeze", {x}, {{"axes", Attribute::of_ints({1})}}, 11}.run1().shape()),
            (Shape{2, 3}));
  EXPECT_EQ((OneOp{"Squeeze", {x, i64({1}, {-2})}, {}, 13}.run1().shape()), (Shape{2, 3}));
  EXPECT_EQ((OneOp{"Squeeze", {x}, {}, 13}.run1().shape()), (Shape{2, 3}));  // all 1-dims
  EXPECT_THROW((OneOp{"Squeeze", {x, i64({1}, {0})}, {}, 13}.run1()), Error);
  EXPECT_EQ((OneOp{"Unsqueeze", {x}, {{"axes", Attribute::of_ints({0, 4})}}, 11}.run1().shape()),
            (Shape{1, 2, 1, 3, 1}));
  EXPECT_EQ((OneOp{"Unsqueeze", {x, i64({1}, {-1})}, {}, 13}.run1().shape()), (Shape{2, 1, 3, 1}));
}

TEST(OpsShape, Transpose) {
  // [2,3] -> [3,2]
  expect_f32(OneOp{"Transpose", {iota({2, 3})}}.run1(), {3, 2}, {0, 3, 1, 4, 2, 5});
  // [2,2,2] perm [1,0,2]: y[i,j,k] = x[j,i,k].
  expect_f32(
      OneOp{"Transpose", {iota({2, 2, 2})}, {{"perm", Attribute::of_ints({1, 0, 2})}}}.run1(),
      {2, 2, 2}, {0, 1, 4, 5, 2, 3, 6, 7});
  EXPECT_THROW((OneOp{"Transpose", {iota({2, 2})}, {{"perm", Attribute::of_ints({0, 0})}}}.run1()),
               Error);
}

TEST(OpsShape, ConcatAndSplit) {
  expect_f32(
      OneOp{"Concat", {iota({2, 1}), f32({2, 2}, {7, 8, 9, 10})}, {{"axis", Attribute::of_int(-1)}}}
          .run1(),
      {2, 3}, {0, 7, 8, 1, 9, 10});
  auto parts = OneOp{"Split", {iota({5})}, {{"axis", Attribute::of_int(0)}}, 13, 2}.run();
  expect_f32(parts[0], {3}, {0, 1, 2});
  expect_f32(parts[1], {2}, {3, 4});
  parts = OneOp{"Split", {iota({2, 3}), i64({2}, {1, 2})}, {{"axis", Attribute::of_int(1)}}, 13, 2}
              .run();
  expect_f32(parts[0], {2, 1}, {0, 3});
  expect_f32(parts[1], {2, 2}, {1, 2, 4, 5});
  parts = OneOp{"Split", {iota({4})}, {{"split", Attribute::of_ints({1, 3})}}, 11, 2}.run();
  expect_f32(parts[1], {3}, {1, 2, 3});
}

TEST(OpsShape, SliceAttributeFormAndInputForm) {
  const Tensor x = iota({3, 4});
  // Opset 9: attributes.
  expect_f32(OneOp{"Slice",
                   {x},
                   {{"starts", Attribute::of_ints({1})},
                    {"ends", Attribute::of_ints({3})},
                    {"axes", Attribute::of_ints({0})}},
                   9}
                 .run1(),
             {2, 4}, {4, 5, 6, 7, 8, 9, 10, 11});
  // Opset 13: negative start, huge end, step 2 on axis 1.
  expect_f32(
      OneOp{"Slice", {x, i64({1}, {-3}), i64({1}, {INT64_MAX}), i64({1}, {1}), i64({1}, {2})}}
          .run1(),
      {3, 2}, {1, 3, 5, 7, 9, 11});
  // Negative step: reverse axis 0.
  expect_f32(
      OneOp{"Slice", {x, i64({1}, {-1}), i64({1}, {INT64_MIN}), i64({1}, {0}), i64({1}, {-1})}}
          .run1(),
      {3, 4}, {8, 9, 10, 11, 4, 5, 6, 7, 0, 1, 2, 3});
  // Empty result when start >= end.
  EXPECT_EQ((OneOp{"Slice", {x, i64({1}, {3}), i64({1}, {1})}}.run1().shape()), (Shape{0, 4}));
}

TEST(OpsShape, ShapeSizeGatherCast) {
  const Tensor x = iota({2, 3, 4});
  EXPECT_EQ(i64_values(OneOp{"Shape", {x}}.run1()), (std::vector<int64_t>{2, 3, 4}));
  EXPECT_EQ(i64_values(OneOp{"Shape", {x}, {{"start", Attribute::of_int(-2)}}, 15}.run1()),
            (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(i64_values(OneOp{"Size", {x}}.run1()), (std::vector<int64_t>{24}));
  // Gather axis 1 with a negative index: columns 2 and 0.
  expect_f32(
      OneOp{"Gather", {iota({2, 3}), i64({2}, {-1, 0})}, {{"axis", Attribute::of_int(1)}}}.run1(),
      {2, 2}, {2, 0, 5, 3});
  // Scalar index on axis 0 drops the axis.
  expect_f32(OneOp{"Gather", {iota({2, 3}), i64({}, {1})}}.run1(), {3}, {3, 4, 5});
  EXPECT_THROW((OneOp{"Gather", {iota({2, 3}), i64({1}, {2})}}.run1()), Error);
  // Cast f32 -> i64 truncates toward zero; i64 -> f32; to bool.
  EXPECT_EQ(i64_values(
                OneOp{"Cast", {f32({3}, {1.7f, -1.7f, 3})}, {{"to", Attribute::of_int(7)}}}.run1()),
            (std::vector<int64_t>{1, -1, 3}));
  expect_f32(OneOp{"Cast", {i64({2}, {5, -2})}, {{"to", Attribute::of_int(1)}}}.run1(), {2},
             {5, -2});
  EXPECT_EQ(bool_values(OneOp{"Cast", {f32({2}, {0, 2})}, {{"to", Attribute::of_int(9)}}}.run1()),
            (std::vector<uint8_t>{0, 1}));
}

TEST(OpsShape, ConstantConstantOfShapeExpandTileRange) {
  EXPECT_EQ(i64_values(OneOp{"Constant", {}, {{"value_ints", Attribute::of_ints({4, 5})}}}.run1()),
            (std::vector<int64_t>{4, 5}));
  expect_f32(OneOp{"Constant", {}, {{"value", Attribute::of_tensor(f32({2}, {1.5f, 2}))}}}.run1(),
             {2}, {1.5f, 2});
  expect_f32(
      OneOp{"ConstantOfShape", {i64({2}, {2, 2})}, {{"value", Attribute::of_tensor(f32({1}, {3}))}}}
          .run1(),
      {2, 2}, {3, 3, 3, 3});
  expect_f32(OneOp{"ConstantOfShape", {i64({1}, {2})}}.run1(), {2}, {0, 0});
  // Expand [2,1] to [2,3] and [3] to [2,3]; the target may be smaller than the input rank's
  // broadcast.
  expect_f32(OneOp{"Expand", {f32({2, 1}, {1, 2}), i64({2}, {2, 3})}}.run1(), {2, 3},
             {1, 1, 1, 2, 2, 2});
  expect_f32(OneOp{"Expand", {f32({3}, {1, 2, 3}), i64({2}, {2, 1})}}.run1(), {2, 3},
             {1, 2, 3, 1, 2, 3});
  expect_f32(OneOp{"Tile", {f32({2}, {1, 2}), i64({1}, {3})}}.run1(), {6}, {1, 2, 1, 2, 1, 2});
  expect_f32(OneOp{"Tile", {f32({1, 2}, {1, 2}), i64({2}, {2, 1})}}.run1(), {2, 2}, {1, 2, 1, 2});
  EXPECT_EQ(i64_values(OneOp{"Range", {i64({}, {10}), i64({}, {4}), i64({}, {-3})}}.run1()),
            (std::vector<int64_t>{10, 7}));
  expect_f32(OneOp{"Range", {f32({}, {0}), f32({}, {1}), f32({}, {0.25f})}}.run1(), {4},
             {0, 0.25f, 0.5f, 0.75f});
}

TEST(OpsShape, PadModes) {
  const Tensor x = f32({1, 3}, {1, 2, 3});
  // Constant (opset 11 inputs): 1 before, 2 after on the last axis, value 9.
  expect_f32(OneOp{"Pad", {x, i64({4}, {0, 1, 0, 2}), f32({}, {9})}, {}, 11}.run1(), {1, 6},
             {9, 1, 2, 3, 9, 9});
  // Reflect: [1 2 3] padded 2 before, 1 after -> 3 2 | 1 2 3 | 2.
  expect_f32(
      OneOp{"Pad", {x, i64({4}, {0, 2, 0, 1})}, {{"mode", Attribute::of_string("reflect")}}, 11}
          .run1(),
      {1, 6}, {3, 2, 1, 2, 3, 2});
  expect_f32(OneOp{"Pad", {x, i64({4}, {0, 1, 0, 1})}, {{"mode", Attribute::of_string("edge")}}, 11}
                 .run1(),
             {1, 5}, {1, 1, 2, 3, 3});
  // Opset 2 form: pads attribute.
  expect_f32(OneOp{"Pad", {x}, {{"pads", Attribute::of_ints({1, 0, 0, 0})}}, 9}.run1(), {2, 3},
             {0, 0, 0, 1, 2, 3});
}

TEST(OpsShape, IdentityAndDropoutPassThrough) {
  const Tensor x = f32({2}, {1, 2});
  expect_f32(OneOp{"Identity", {x}}.run1(), {2}, {1, 2});
  auto out = OneOp{"Dropout", {x}, {}, 13, 2}.run();
  expect_f32(out[0], {2}, {1, 2});
  EXPECT_EQ(bool_values(out[1]), (std::vector<uint8_t>{1, 1}));
}

}  // namespace
}  // namespace tailor::testing
