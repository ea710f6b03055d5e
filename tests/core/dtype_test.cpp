#include "tailor/core/dtype.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>

namespace tailor {
namespace {

// Bit patterns from the IEEE 754 binary16 definition (sign 1, exponent 5 with
// bias 15, mantissa 10).
TEST(F16, KnownValues) {
  EXPECT_EQ(f32_to_f16(1.0f), 0x3c00);
  EXPECT_EQ(f32_to_f16(-2.0f), 0xc000);
  EXPECT_EQ(f32_to_f16(65504.0f), 0x7bff);                      // largest finite
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7c00);                      // rounds to +inf
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -24)), 0x0001);         // smallest subnormal
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -25)), 0x0000);         // tie -> even (0)
  EXPECT_EQ(f32_to_f16(std::ldexp(3.0f, -25)), 0x0002);         // 1.5 ulp -> tie -> even (2)
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -14)), 0x0400);         // smallest normal
  EXPECT_EQ(f32_to_f16(0.1f), 0x2e66);                          // 0.0999755859375
  EXPECT_EQ(f32_to_f16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);  // tie -> even
  EXPECT_EQ(f32_to_f16(1.0f + std::ldexp(3.0f, -11)), 0x3c02);  // tie -> even (up)
  EXPECT_EQ(f32_to_f16(-0.0f), 0x8000);
  EXPECT_EQ(f32_to_f16(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_EQ(f32_to_f16(std::nanf("")) & 0x7c00, 0x7c00);
  EXPECT_NE(f32_to_f16(std::nanf("")) & 0x03ff, 0);
}

TEST(F16, RoundTripIsExactForEveryFiniteHalf) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const uint16_t v = static_cast<uint16_t>(h);
    if ((v & 0x7c00) == 0x7c00 && (v & 0x3ff)) continue;  // NaN payloads
    ASSERT_EQ(f32_to_f16(f16_to_f32(v)), v) << std::hex << h;
  }
  EXPECT_EQ(f16_to_f32(0x3555), 0.333251953125f);
  EXPECT_EQ(f16_to_f32(0x0001), std::ldexp(1.0f, -24));
}

TEST(BF16, KnownValues) {
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(bf16_to_f32(0x4049), 3.140625f);
  EXPECT_EQ(f32_to_bf16(3.14159265f), 0x4049);
  // 1 + 2^-8 is a tie between 0x3f80 and 0x3f81: even wins.
  EXPECT_EQ(f32_to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);
  EXPECT_EQ(f32_to_bf16(1.0f + std::ldexp(3.0f, -8)), 0x3f82);
}

TEST(Convert, IntegersSaturateAndTruncate) {
  const float src[] = {1.9f, -1.9f, 300.0f, -300.0f, NAN};
  int8_t dst[5];
  convert_elements(src, DType::f32, dst, DType::i8, 5);
  EXPECT_EQ(dst[0], 1);
  EXPECT_EQ(dst[1], -1);
  EXPECT_EQ(dst[2], 127);
  EXPECT_EQ(dst[3], -128);
  EXPECT_EQ(dst[4], 0);
  const int64_t big[] = {int64_t{1} << 40, -7};
  int32_t small[2];
  convert_elements(big, DType::i64, small, DType::i32, 2);
  EXPECT_EQ(small[0], INT32_MAX);
  EXPECT_EQ(small[1], -7);
}

TEST(DTypeNames, RoundTrip) {
  for (DType t : {DType::f32, DType::f16, DType::bf16, DType::f64, DType::i8, DType::u8, DType::i16,
                  DType::u16, DType::i32, DType::i64, DType::boolean}) {
    EXPECT_EQ(dtype_from_name(dtype_name(t)), t);
  }
  EXPECT_FALSE(dtype_from_name("q4_k").has_value());
  EXPECT_EQ(dtype_size(DType::bf16), 2u);
  EXPECT_EQ(dtype_size(DType::i64), 8u);
}

}  // namespace
}  // namespace tailor
