// f32_attention_avx2 against f32_attention_ref: head_dim around the 8-lane
// width (1, 3, 8, 13, 16, 24), key counts around the 4-key step, several rows
// and heads, a causal mask with −inf (a row masked everywhere gives zeros),
// KV heads read at a stride with room left over (NaN there must not leak),
// head-major and position-major (heads interleaved per key), a NaN query
// turning its row NaN; and the reference by hand.
// Tolerance with |q|, |k|, |v| ≤ 1: each score's dot product of d terms is off
// by ≤ d·ε·d·scale in either kernel (summation orders differ); exp(s − max)
// then moves by that relatively, plus ≤ 4ε (Cephes ≤ 2 ulp, std::exp ≤ 1);
// the float sum of `keys` weights by ≤ keys·ε, as does the weighted sum of the
// values: tol = (4·d²·scale + 16 + 4·keys)·ε.
#include <cmath>
#include <limits>

#include "runtime/kernels/kernel_compare.h"

namespace tailor::runtime::kernels::testing {
namespace {

class F32Attention : public KernelVsRef {
 protected:
  // Keys and values head-major [heads, keys + room, d], or position-major
  // [keys + room, heads, d] when `interleaved`; the room holds NaN.
  void check(int64_t heads, int64_t rows, int64_t keys, int64_t d, bool causal, int64_t room = 0,
             bool nan = false, bool interleaved = false) {
    const int64_t stride = interleaved ? d : (keys + room) * d;
    const int64_t key_stride = interleaved ? heads * d : d;
    const uint64_t seed = static_cast<uint64_t>(heads * 1000 + rows * 100 + keys * 10 + d);
    auto q = uniform(heads * rows * d, seed);
    const int64_t n = heads * (keys + room) * d;
    auto k = uniform(n, seed + 1), v = uniform(n, seed + 2);
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t j = keys; j < keys + room; ++j)
        for (int64_t c = 0; c < d; ++c) {
          const auto at = static_cast<size_t>(h * stride + j * key_stride + c);
          k[at] = v[at] = std::numeric_limits<float>::quiet_NaN();
        }
    if (nan) q[0] = std::numeric_limits<float>::quiet_NaN();  // head 0, row 0
    std::vector<float> mask;
    if (causal) {
      // Row i sees keys 0 … keys − rows + i; with rows > keys the first rows see nothing.
      mask.assign(static_cast<size_t>(rows * keys), 0.0f);
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < keys; ++j)
          if (j > keys - rows + i) mask[static_cast<size_t>(i * keys + j)] = -INFINITY;
    }
    const float scale = 1.0f / std::sqrt(static_cast<float>(d));
    std::vector<float> want(q.size()), got(q.size(), -99.f);
    const float* m = causal ? mask.data() : nullptr;
    ref().attention(q.data(), k.data(), v.data(), m, want.data(), heads, rows, keys, d, stride,
                    key_stride, scale);
    opt().attention(q.data(), k.data(), v.data(), m, got.data(), heads, rows, keys, d, stride,
                    key_stride, scale);
    const double t = (4.0 * static_cast<double>(d * d) * scale + 16.0 + 4.0 * keys) * kEps;
    const std::string what = "attention heads " + std::to_string(heads) + " rows " +
                             std::to_string(rows) + " keys " + std::to_string(keys) + " d " +
                             std::to_string(d) + (causal ? " causal" : "") +
                             (interleaved ? " interleaved" : "");
    expect_within(got, want, std::vector<double>(q.size(), t), what);
    for (int64_t i = 0; i < rows && causal; ++i) {
      if (keys - rows + i < 0) {
        for (int64_t c = 0; c < d; ++c) {
          EXPECT_EQ(got[static_cast<size_t>(i * d + c)], 0.0f) << what;
        }
      }
    }
    if (nan) {
      for (int64_t c = 0; c < d; ++c) {
        EXPECT_TRUE(std::isnan(got[static_cast<size_t>(c)])) << what;
      }
    }
  }
};

TEST_F(F32Attention, MatchesReferenceAcrossShapes) {
  for (int64_t d : {1, 3, 8, 13, 16, 24})
    for (int64_t keys : {1, 2, 3, 4, 5, 7, 8, 9, 17}) check(2, 3, keys, d, false);
  check(4, 1, 300, 8, false);  // a decoder step over a long cache
}

TEST_F(F32Attention, CausalMaskAndFullyMaskedRows) {
  for (int64_t keys : {1, 4, 6, 11}) check(2, 4, keys, 8, true);
  check(3, 5, 3, 16, true);  // rows 0 and 1 see no key: zeros
}

TEST_F(F32Attention, StridedHeadsReadOnlyTheirKeys) {
  check(4, 2, 7, 8, true, /*room=*/5);
  check(2, 1, 9, 13, false, /*room=*/3);
  check(4, 2, 7, 8, true, /*room=*/5, false, /*interleaved=*/true);
  check(3, 1, 10, 13, false, /*room=*/2, false, /*interleaved=*/true);
}

TEST(F32AttentionRef, PositionMajorEqualsHeadMajor) {
  // Two heads, two keys, d = 2, in both layouts: the same numbers in, the same out.
  const float q[4] = {0.5f, -1.0f, 2.0f, 0.25f};
  const float kh[8] = {1, 2, 3, 4, -1, 0.5f, 2, -2};  // [head][key][c]
  const float vh[8] = {5, 6, 7, 8, 9, 10, 11, 12};
  float kp[8], vp[8];  // [key][head][c]
  for (int h = 0; h < 2; ++h)
    for (int j = 0; j < 2; ++j)
      for (int c = 0; c < 2; ++c) {
        kp[(j * 2 + h) * 2 + c] = kh[(h * 2 + j) * 2 + c];
        vp[(j * 2 + h) * 2 + c] = vh[(h * 2 + j) * 2 + c];
      }
  float a[4], b[4];
  f32_attention_ref(q, kh, vh, nullptr, a, 2, 1, 2, 2, 4, 2, 0.7f);
  f32_attention_ref(q, kp, vp, nullptr, b, 2, 1, 2, 2, 2, 4, 0.7f);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(a[i], b[i]) << i;
}

TEST_F(F32Attention, NanQueryTurnsItsRowNan) {
  check(2, 2, 9, 8, false, 0, /*nan=*/true);
}

TEST(F32AttentionRef, ByHand) {
  // One head, one row, d = 1, scale 1: scores [0, ln 3] → weights [1/4, 3/4];
  // y = 1/4·1 + 3/4·5 = 4. With the mask −inf on key 1: y = v_0 = 1.
  const float q[1] = {1.0f}, k[2] = {0.0f, std::log(3.0f)}, v[2] = {1.0f, 5.0f};
  float y[1];
  f32_attention_ref(q, k, v, nullptr, y, 1, 1, 2, 1, 2, 1, 1.0f);
  EXPECT_NEAR(y[0], 4.0f, 1e-6f);  // a few ulp: ln 3 and the weights rounded
  const float mask[2] = {0.0f, -INFINITY};
  f32_attention_ref(q, k, v, mask, y, 1, 1, 2, 1, 2, 1, 1.0f);
  EXPECT_EQ(y[0], 1.0f);
}

}  // namespace
}  // namespace tailor::runtime::kernels::testing
