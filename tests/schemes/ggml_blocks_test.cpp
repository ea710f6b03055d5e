// ggml's block formats q8_0 and q4_0: the bytes tailor writes equal an
// independent numpy encoder (tests/schemes/ggml_reference.py) on inputs that
// hit every rounding rule (ties at .5, the first of two equal magnitudes, a
// positive and a negative maximum, an all-zero block); bytes per block; no
// candidate on rows that are not whole blocks; blocks round-trip.
#include "tailor/schemes/ggml_blocks.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <vector>

#include "tailor/core/error.h"
#include "tailor/core/rng.h"
#include "tailor/io/npy.h"
#include "tailor/schemes/registry.h"
#include "test_util.h"

namespace tailor::schemes {
namespace {

/// W [4, 96]: rows of random values, with hand-placed blocks exercising the
/// rounding rules of both encoders.
Tensor fixed_weight() {
  const int64_t out = 4, in = 96;
  std::vector<float> v(static_cast<size_t>(out * in));
  Rng r(19);
  for (float& x : v) x = static_cast<float>(r.uniform(-2, 2));
  auto block = [&](int64_t row, int64_t b) { return v.data() + row * in + b * 32; };
  // Row 0 block 0: max |x| 127 (q8_0: d = 1) and ties 2.5, -3.5, 0.5 (q8_0 rounds away from 0).
  float* b0 = block(0, 0);
  for (int j = 0; j < 32; ++j) b0[j] = static_cast<float>(j) - 15.5f;
  b0[3] = 127;
  // Row 0 block 1: max -8 (q4_0: d = 1) so x + 8.5 lands on integers: ties truncate.
  float* b1 = block(0, 1);
  for (int j = 0; j < 32; ++j) b1[j] = static_cast<float>(j % 16) * 0.5f - 4.0f;
  b1[7] = -8;
  // Row 1 block 0: equal magnitudes of opposite sign, +6 first (q4_0 takes +6: d < 0).
  float* b2 = block(1, 0);
  b2[4] = 6;
  b2[9] = -6;
  // Row 1 block 2: the same, -6 first.
  float* b3 = block(1, 2);
  b3[2] = -6;
  b3[30] = 6;
  // Row 2 block 1: all zero (d = 0).
  float* b4 = block(2, 1);
  for (int j = 0; j < 32; ++j) b4[j] = 0;
  // Row 3 block 2: tiny values (scale near f16's subnormal range).
  float* b5 = block(3, 2);
  for (int j = 0; j < 32; ++j) b5[j] = static_cast<float>(j - 16) * 1e-7f;
  return Tensor::from_f32({out, in}, v);
}

TEST(GgmlBlocks, BytesEqualNumpyReference) {
  if (std::system("/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "python3 with numpy not found: cross-check skipped";
  testing::TempDir dir;
  const Tensor w = fixed_weight();
  write_npy(dir.file("w.npy"), w);
  const std::string script = std::string(TAILOR_SOURCE_DIR) + "/tests/schemes/ggml_reference.py";
  for (const std::string label : {"q8_0", "q4_0"}) {
    const std::string cmd = "/usr/bin/python3 " + script + " " + dir.file("w.npy") + " " + label +
                            " " + dir.file(label + "_raw.npy") + " " + dir.file(label + "_dec.npy");
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    const auto e = parse_scheme(label).encode(w);
    const std::vector<uint8_t> got = to_ggml_blocks(*e);
    const Tensor expect = read_npy(dir.file(label + "_raw.npy"));
    ASSERT_EQ(got.size(), expect.nbytes()) << label;
    const auto* eb = reinterpret_cast<const uint8_t*>(expect.raw());
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_EQ(int(got[i]), int(eb[i]))
          << label << " byte " << i << " (block " << i / (label == "q8_0" ? 34 : 18) << ")";
    const std::vector<float> dec = e->decode().to_f32_vector();
    const std::vector<float> ref = read_npy(dir.file(label + "_dec.npy")).to_f32_vector();
    ASSERT_EQ(dec.size(), ref.size());
    for (size_t i = 0; i < dec.size(); ++i) ASSERT_EQ(dec[i], ref[i]) << label << " element " << i;
  }
}

TEST(GgmlBlocks, HandChecked) {
  const Tensor w = fixed_weight();
  // q8_0, row 0 block 0: d = 127/127 = 1; x = j − 15.5 rounds half away from zero.
  const std::vector<float> q8 = parse_scheme("q8_0").encode(w)->decode().to_f32_vector();
  EXPECT_EQ(q8[0], -16.0f);  // −15.5
  EXPECT_EQ(q8[15], -1.0f);  // −0.5
  EXPECT_EQ(q8[16], 1.0f);   // 0.5
  EXPECT_EQ(q8[3], 127.0f);
  // q4_0, row 0 block 1: d = −8/−8 = 1; c = min(15, trunc(x + 8.5)), x̂ = c − 8.
  const std::vector<float> q4 = parse_scheme("q4_0").encode(w)->decode().to_f32_vector();
  EXPECT_EQ(q4[32 + 7], -8.0f);
  // Ties go up (towards +∞), unlike q8_0's half away from zero.
  EXPECT_EQ(q4[32 + 1], -3.0f);  // x = −3.5: trunc(5.0) = 5 → −3
  EXPECT_EQ(q4[32 + 15], 4.0f);  // x = 3.5: trunc(12.0) = 12 → 4
}

TEST(GgmlBlocks, BytesPerBlockAndApplicability) {
  for (const auto& [label, per_block] : {std::pair{"q8_0", 34}, std::pair{"q4_0", 18}}) {
    const Scheme s = parse_scheme(label);
    EXPECT_EQ(s.predicted_bytes({8, 64}), uint64_t(8 * 2 * per_block)) << label;
    EXPECT_EQ(s.encode(fixed_weight())->bytes(), uint64_t(4 * 3 * per_block)) << label;
    EXPECT_TRUE(s.applicable({8, 64}));
    EXPECT_FALSE(s.applicable({64, 172}));  // stories260K's FFN down projection
    EXPECT_THROW(s.encode(Tensor::zeros(DType::f32, {2, 40})), Error);
  }
  bool listed = false;
  for (const Scheme& s : applicable_schemes({64, 172}, {}))
    listed = listed || is_ggml_block_label(s.label());
  EXPECT_FALSE(listed);
  EXPECT_EQ(ggml_block_note({64, 172}),
            "q8_0, q4_0: row length 172 is not a multiple of ggml's block of 32");
  EXPECT_EQ(ggml_block_note({172, 64}), "");
}

TEST(GgmlBlocks, RoundTripAndBadBlocks) {
  const Tensor w = fixed_weight();
  for (const std::string label : {"q8_0", "q4_0"}) {
    const auto e = parse_scheme(label).encode(w);
    const std::vector<uint8_t> raw = to_ggml_blocks(*e);
    const auto back = from_ggml_blocks(label, 4, 96, raw.data(), raw.size());
    EXPECT_EQ(back->decode().to_f32_vector(), e->decode().to_f32_vector()) << label;
    EXPECT_EQ(back->bytes(), e->bytes());
    EXPECT_THROW(from_ggml_blocks(label, 4, 96, raw.data(), raw.size() - 1), Error);
    EXPECT_THROW(from_ggml_blocks(label, 4, 100, raw.data(), raw.size()), Error);
  }
  EXPECT_THROW(to_ggml_blocks(*parse_scheme("int4-g32").encode(w)), Error);
  EXPECT_THROW(parse_scheme("q4_0").encode(Tensor::from_f32({1, 32}, std::vector<float>(32, 1e9f))),
               Error);  // scale 1.25e8 overflows f16
}

}  // namespace
}  // namespace tailor::schemes
