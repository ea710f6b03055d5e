// Hand-computed cases for every quantizer and for 2:4 sparsity: all-zero
// rows, one outlier, ties at .5 (negative ones included), odd `in`, `in`
// shorter than a group. Expected codes, scales and bytes are worked out in
// the comments from DESIGN.md's definitions, not read back from the code.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "tailor/core/dtype.h"
#include "tailor/core/error.h"
#include "tailor/schemes/registry.h"

namespace tailor::schemes {
namespace {

std::unique_ptr<Encoded> encode(std::string_view label, Shape shape, std::vector<float> w) {
  return parse_scheme(label).encode(Tensor::from_f32(std::move(shape), w));
}

std::vector<uint8_t> bytes_of(const Tensor& t) {
  const auto* p = reinterpret_cast<const uint8_t*>(t.raw());
  return {p, p + t.nbytes()};
}

std::vector<uint16_t> halves(const Tensor& t) {
  const uint16_t* p = t.data<uint16_t>();
  return {p, p + t.numel()};
}

TEST(Int8A8, SameWeightsActivationsRoundedPerRow) {
  // Weights: row 0 max 127·2⁻⁷ → s = 2⁻⁷ (exact in f16), q = [127, −64, 32];
  // row 1 max 127·2⁻⁶ → s = 2⁻⁶, q = [127, 32, −64]. Stored as int8's.
  const std::vector<float> w{0.9921875f, -0.5f, 0.25f, 1.984375f, 0.5f, -1.0f};
  auto a8 = encode("int8-a8", {2, 3}, w);
  auto i8 = encode("int8", {2, 3}, w);
  EXPECT_EQ(a8->label(), "int8-a8");
  EXPECT_EQ(bytes_of(a8->factor("q")), bytes_of(i8->factor("q")));
  EXPECT_EQ(halves(a8->factor("scale")), (std::vector<uint16_t>{0x2000, 0x2400}));
  EXPECT_EQ(a8->decode().to_f32_vector(), i8->decode().to_f32_vector());
  EXPECT_EQ(a8->bytes(), i8->bytes());
  EXPECT_EQ(parse_scheme("int8-a8").predicted_bytes({2, 3}), 6u + 2 * 2);
  // X row 0 = [127, −50.4, 2.5]: max 127 → s_x = 1, qx = [127, −50, 3] (2.5
  // rounds away from zero). Row 1 = [63.5, −127, −0.5]: s_x = 1, qx = [64, −127, −1].
  //   Y00 = (127·127 + 50·64 + 3·32)·2⁻⁷ = 19425/128 = 151.7578125
  //   Y01 = (127·127 − 50·32 − 3·64)·2⁻⁶ = 14337/64 = 224.015625
  //   Y10 = (64·127 + 127·64 − 32)·2⁻⁷ = 16224/128 = 126.75
  //   Y11 = (64·127 − 127·32 + 64)·2⁻⁶ = 4128/64 = 64.5
  // int8 (f32 activations) gives Y00 = 126.0078125 + 25.2 + 0.625 = 151.83…: the rounding shows.
  const std::vector<float> xv{127, -50.4f, 2.5f, 63.5f, -127, -0.5f};
  const Tensor x = Tensor::from_f32({2, 3}, xv);
  EXPECT_EQ(a8->matmul(x).to_f32_vector(),
            (std::vector<float>{151.7578125f, 224.015625f, 126.75f, 64.5f}));
  EXPECT_NEAR(i8->matmul(x).to_f32_vector()[0], 151.8328125, 1e-4);
  // An all-zero row of X gives 0; a NaN in a row gives a row of NaN.
  const std::vector<float> xz{0, 0, 0, 1, std::nanf(""), 1};
  const std::vector<float> y0 = a8->matmul(Tensor::from_f32({2, 3}, xz)).to_f32_vector();
  EXPECT_EQ(y0[0], 0.0f);
  EXPECT_EQ(y0[1], 0.0f);
  EXPECT_TRUE(std::isnan(y0[2]) && std::isnan(y0[3]));
}

TEST(Int8, ZeroRowOutlierAndNegativeTies) {
  // Row 0 all zero: s = 1 (f16 0x3C00), q = 0.
  // Row 1, one outlier: s = f16(100/127) = f16(0.787401…); the f16 step in
  //   [0.5, 1) is 2⁻¹¹, 0.787401·2048 = 1612.6 → 1613/2048 = 0.78759765625
  //   (bits 0x3800 + (1613 − 1024) = 0x3A4D). q = round(100/s = 126.97) = 127,
  //   1/s = 1.27 → 1, −1 → −1, 0.5/s = 0.63 → 1.
  // Row 2: s = f16(127/127) = 1; −2.5 → −3 and 2.5 → 3 (away from zero), −0.5 → −1.
  auto e = encode("int8", {3, 4}, {0, 0, 0, 0, 100, 1, -1, 0.5f, -127, -2.5f, 2.5f, -0.5f});
  EXPECT_EQ(e->factor("q").dtype(), DType::i8);
  const int8_t* q = e->factor("q").data<int8_t>();
  EXPECT_EQ(std::vector<int8_t>(q, q + 12),
            (std::vector<int8_t>{0, 0, 0, 0, 127, 1, -1, 1, -127, -3, 3, -1}));
  EXPECT_EQ(halves(e->factor("scale")), (std::vector<uint16_t>{0x3C00, 0x3A4D, 0x3C00}));
  const float s = 0.78759765625f;
  const std::vector<float> expect{0, 0, 0, 0, 127 * s, s, -s, s, -127, -3, 3, -1};
  EXPECT_EQ(e->decode().to_f32_vector(), expect);
  EXPECT_EQ(e->bytes(), 12u + 2 * 3);
}

TEST(Int4, PackedNibblesOddInputsAndTies) {
  // Row 0: s = f16(7/7) = 1, q = [7, −3, 3, −1, 1] (±2.5 → ±3, ±0.5 → ±1).
  // Row 1 all zero: s = 1, q = 0. Two's-complement nibbles, element 2t low:
  // byte 0 = 7 | 0xD<<4 = 0xD7, byte 1 = 3 | 0xF<<4 = 0xF3, byte 2 = 1 | 0<<4
  // (row 1 starts mid-byte), bytes 3, 4 = 0: ceil(10·4/8) = 5 bytes.
  auto e = encode("int4", {2, 5}, {7, -2.5f, 2.5f, -0.5f, 0.5f, 0, 0, 0, 0, 0});
  EXPECT_EQ(bytes_of(e->factor("q")), (std::vector<uint8_t>{0xD7, 0xF3, 0x01, 0x00, 0x00}));
  EXPECT_EQ(halves(e->factor("scale")), (std::vector<uint16_t>{0x3C00, 0x3C00}));
  EXPECT_EQ(e->decode().to_f32_vector(), (std::vector<float>{7, -3, 3, -1, 1, 0, 0, 0, 0, 0}));
  EXPECT_EQ(e->bytes(), 5u + 2 * 2);
}

TEST(Int4, OutlierRowScaleTwo) {
  // s = f16(14/7) = 2: 14 → 7, 1 → 0.5 → 1, −1 → −0.5 → −1, 0.5 → 0.25 → 0.
  auto e = encode("int4", {1, 4}, {14, 1, -1, 0.5f});
  EXPECT_EQ(bytes_of(e->factor("q")), (std::vector<uint8_t>{0x17, 0x0F}));
  EXPECT_EQ(e->decode().to_f32_vector(), (std::vector<float>{14, 2, -2, 0}));
}

TEST(Int3, BitstreamAcrossBytes) {
  // s = 1, q = [−3, 2, −2] → 3-bit codes 101, 010, 110, LSB first:
  // byte 0 = 1·1 + 1·4 | 1·16 | 0·64 + 1·128 = 0x95, byte 1 = bit 8 = 1.
  auto e = encode("int3", {1, 3}, {-3, 1.5f, -1.5f});
  EXPECT_EQ(bytes_of(e->factor("q")), (std::vector<uint8_t>{0x95, 0x01}));
  EXPECT_EQ(e->decode().to_f32_vector(), (std::vector<float>{-3, 2, -2}));
  // Outlier: s = f16(6/3) = 2; 1/2 = 0.5 → 1, −0.5 → −1; a zero row keeps s = 1.
  auto f = encode("int3", {2, 3}, {6, 1, -1, 0, 0, 0});
  EXPECT_EQ(f->decode().to_f32_vector(), (std::vector<float>{6, 2, -2, 0, 0, 0}));
  EXPECT_EQ(halves(f->factor("scale")), (std::vector<uint16_t>{0x4000, 0x3C00}));
  EXPECT_EQ(f->bytes(), 3u + 2 * 2);  // ceil(6·3/8) = 3
}

TEST(Int4Grouped, ShortLastGroupAndInputsBelowGroup) {
  // in = 40 with G = 32: group 0 holds 7 and −3.5 (s = 1: q = 7, −4), group 1
  // (8 inputs) holds 1.75, −0.625, 0.125: s = f16(1.75/7) = 0.25 (0x3400),
  // q = 7, −2.5 → −3, 0.5 → 1.
  std::vector<float> w(40, 0.0f);
  w[0] = 7;
  w[1] = -3.5f;
  w[32] = 1.75f;
  w[33] = -0.625f;
  w[34] = 0.125f;
  auto e = encode("int4-g32", {1, 40}, w);
  EXPECT_EQ(e->factor("scale").shape(), (Shape{1, 2}));
  EXPECT_EQ(halves(e->factor("scale")), (std::vector<uint16_t>{0x3C00, 0x3400}));
  std::vector<float> expect(40, 0.0f);
  expect[0] = 7;
  expect[1] = -4;
  expect[32] = 1.75f;
  expect[33] = -0.75f;
  expect[34] = 0.25f;
  EXPECT_EQ(e->decode().to_f32_vector(), expect);
  EXPECT_EQ(e->bytes(), 20u + 2 * 2);

  // in = 5 < G = 128: one (short) group per row, same codes as per-channel int4.
  const std::vector<float> v{7, -2.5f, 2.5f, -0.5f, 0.5f, 0, 0, 0, 0, 0};
  auto g = encode("int4-g128", {2, 5}, v);
  auto c = encode("int4", {2, 5}, v);
  EXPECT_EQ(g->factor("scale").shape(), (Shape{2, 1}));
  EXPECT_EQ(bytes_of(g->factor("q")), bytes_of(c->factor("q")));
  EXPECT_EQ(g->decode().to_f32_vector(), c->decode().to_f32_vector());
}

TEST(Ternary, ThresholdScaleAndZeroRow) {
  // Row 0: mean|W| = 2.3/4 = 0.575, Δ = 0.4025: keeps 1, −1; α = 1.
  // Row 1: mean = 1, Δ = 0.7: keeps 3; α = 3 (0x4200).
  // Row 2 all zero: nothing above Δ = 0, α = 0.
  // Row 3: mean = 0.25, Δ = 0.175: keeps 0.3, −0.3, 0.4; α = f16(1/3): step
  //   2⁻¹² in [0.25, 0.5), 1365.33 → 1365·2⁻¹² = 0.333251953125 (0x3555).
  // Codes (01 = +1, 11 = −1): byte 0 = 01 | 11<<2 = 0x0D, byte 1 = 0x01,
  // byte 2 = 0, byte 3 = 01 | 11<<2 | 01<<4 = 0x1D.
  auto e = encode("ternary", {4, 4},
                  {1, -1, 0.1f, 0.2f, 3, 0.5f, -0.5f, 0, 0, 0, 0, 0, 0.3f, -0.3f, 0.4f, 0});
  EXPECT_EQ(bytes_of(e->factor("q")), (std::vector<uint8_t>{0x0D, 0x01, 0x00, 0x1D}));
  EXPECT_EQ(halves(e->factor("scale")), (std::vector<uint16_t>{0x3C00, 0x4200, 0x0000, 0x3555}));
  const float a = 0.333251953125f;
  EXPECT_EQ(e->decode().to_f32_vector(),
            (std::vector<float>{1, -1, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, a, -a, a, 0}));
  EXPECT_EQ(e->bytes(), 4u + 2 * 4);
}

TEST(Sparse24, LargestTwoPerGroupTiesAndShortGroups) {
  // Groups [1, −3, 2, 0.5] → keep −3 (1), 2 (2); [1, 1, −1, 1] all tie → 0, 1;
  // short group [0.1, −0.3, 0.3] → keep −0.3 (1), 0.3 (2). kept = 2+2+2 = 6.
  // Indices 1, 2, 0, 1 | 1, 2 → byte 0 = 1 | 2<<2 | 0<<4 | 1<<6 = 0x49, byte 1 = 0x09.
  auto e = encode("sparse-2:4", {1, 11}, {1, -3, 2, 0.5f, 1, 1, -1, 1, 0.1f, -0.3f, 0.3f});
  EXPECT_EQ(e->factor("values").to_f32_vector(), (std::vector<float>{-3, 2, 1, 1, -0.3f, 0.3f}));
  EXPECT_EQ(bytes_of(e->factor("indices")), (std::vector<uint8_t>{0x49, 0x09}));
  EXPECT_EQ(e->decode().to_f32_vector(),
            (std::vector<float>{0, -3, 2, 0, 1, 1, 0, 0, 0, -0.3f, 0.3f}));
  EXPECT_EQ(e->bytes(), 4u * 6 + 2);

  // in = 5: one full group and a group of 1 (kept whole): 3 values per row.
  // Row 0 is zero but for the last input: the zero group keeps 0, 1 (ties).
  // Row 1 [2, 1, 1, 0 | −4]: 2, then 1 at index 1 over the tied index 2.
  auto f = encode("sparse-2:4", {2, 5}, {0, 0, 0, 0, 9, 2, 1, 1, 0, -4});
  EXPECT_EQ(f->factor("values").shape(), (Shape{2, 3}));
  EXPECT_EQ(f->decode().to_f32_vector(), (std::vector<float>{0, 0, 0, 0, 9, 2, 1, 0, 0, -4}));
  EXPECT_EQ(f->bytes(), 4u * 6 + 2);  // ceil(2·6/8) = 2
}

TEST(Quantizers, NonFiniteWeightsAreRefused) {
  const float inf = std::numeric_limits<float>::infinity();
  for (auto label : {"int8", "int4", "int3", "int4-g32", "ternary", "sparse-2:4", "dense"})
    EXPECT_THROW(encode(label, {1, 3}, {1, inf, 0}), Error) << label;
  EXPECT_THROW(encode("int8", {1, 2}, {1e9f, 0}), Error);  // scale overflows f16
}

}  // namespace
}  // namespace tailor::schemes
