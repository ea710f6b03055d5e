// W8A8 on AVX2 (kernels.h, q8_q8_gemm_avx2): X quantized per row to int8
// (vectorised, the same f32 operations as the reference, so the same codes),
// then exact integer dot products. VPMADDUBSW multiplies u8 by s8 and adds
// neighbouring products into s16 with saturation; with the sign trick the u8
// operand is abs(q) (≤ 128, −128 included) and the s8 operand qx·sign(q)
// (VPSIGNB; |qx| ≤ 127), so a pair sum is at most 2·128·127 = 32512 and never
// saturates. VPMADDWD against ones widens the pairs to s32 lanes, which hold
// at most 2^16 inputs' worth (2^16·128·127 < 2^31) before the tile reduces
// them into an int64 sum. Tiles: 4 rows of X × 2 rows of Ŵ (8 accumulators,
// 15 of the 16 ymm registers), over blocks of 64×64 outputs handed to OpenMP
// threads dynamically.
#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include <fmt/format.h>

#include "tailor/core/error.h"
#include "tailor/schemes/kernels.h"

namespace tailor::schemes::kernels {
namespace {

// Inputs reduced per int32 pass (see above).
constexpr int64_t kKChunk = int64_t{1} << 16;
// Rows of X and of Ŵ per OpenMP task.
constexpr int64_t kBlock = 64;
// Multiply-accumulates below which the kernel stays on one thread.
constexpr int64_t kParallelMinMacs = int64_t{1} << 18;

inline int32_t hsum_i32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
  return _mm_cvtsi128_si32(s);
}

// Row x [in] → qx [in]; returns s_x, 0 for a zero row, NaN for a non-finite one.
float quantize_row(const float* x, int64_t in, int8_t* qx) {
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
  __m256 vmax = _mm256_setzero_ps();
  // Non-finite lanes have all exponent bits set: track them apart from max
  // (max_ps drops NaN operands).
  const __m256i exp_mask = _mm256_set1_epi32(0x7F800000);
  __m256i bad = _mm256_setzero_si256();
  int64_t j = 0;
  for (; j + 8 <= in; j += 8) {
    const __m256 v = _mm256_loadu_ps(x + j);
    vmax = _mm256_max_ps(vmax, _mm256_and_ps(v, abs_mask));
    const __m256i e = _mm256_and_si256(_mm256_castps_si256(v), exp_mask);
    bad = _mm256_or_si256(bad, _mm256_cmpeq_epi32(e, exp_mask));
  }
  float lanes[8];
  _mm256_storeu_ps(lanes, vmax);
  float m = 0;
  for (float l : lanes) m = std::max(m, l);
  bool finite = _mm256_testz_si256(bad, bad) != 0;
  for (; j < in; ++j) {
    finite = finite && std::isfinite(x[j]);
    m = std::max(m, std::abs(x[j]));
  }
  if (!finite) return std::numeric_limits<float>::quiet_NaN();
  const float sx = m / 127.0f;
  if (sx == 0) {
    std::fill_n(qx, in, int8_t{0});
    return 0;
  }
  // round_half_away(x/s) = sign·floor(|x/s| + 0.5), clamped to 127: as the reference.
  const __m256 vs = _mm256_set1_ps(sx), half = _mm256_set1_ps(0.5f), top = _mm256_set1_ps(127.0f);
  const __m256 sign_mask = _mm256_castsi256_ps(_mm256_set1_epi32(static_cast<int>(0x80000000u)));
  auto q8 = [&](const float* p) {
    const __m256 v = _mm256_div_ps(_mm256_loadu_ps(p), vs);
    __m256 r = _mm256_floor_ps(_mm256_add_ps(_mm256_and_ps(v, abs_mask), half));
    r = _mm256_or_ps(_mm256_min_ps(r, top), _mm256_and_ps(v, sign_mask));
    return _mm256_cvttps_epi32(r);
  };
  for (j = 0; j + 32 <= in; j += 32) {
    const __m256i a = _mm256_packs_epi32(q8(x + j), q8(x + j + 8));
    const __m256i b = _mm256_packs_epi32(q8(x + j + 16), q8(x + j + 24));
    // packs works per 128-bit lane: restore element order.
    const __m256i p = _mm256_permutevar8x32_epi32(_mm256_packs_epi16(a, b),
                                                  _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(qx + j), p);
  }
  for (; j < in; ++j) {
    const float v = x[j] / sx;
    const float r = std::min(std::floor(std::abs(v) + 0.5f), 127.0f);
    qx[j] = static_cast<int8_t>(v < 0 ? -r : r);
  }
  return sx;
}

// dot[m][r] = Σ_{k0 ≤ j < k1} qx[m][j]·q[r][j] for an MR×NR tile (k1 − k0 ≤ kKChunk).
template <int MR, int NR>
inline void tile(const int8_t* x, int64_t ldx, const int8_t* w, int64_t ldw, int64_t k0, int64_t k1,
                 int64_t (&dot)[MR][NR]) {
  const __m256i ones = _mm256_set1_epi16(1);
  __m256i acc[MR][NR];
  for (int m = 0; m < MR; ++m)
    for (int r = 0; r < NR; ++r) acc[m][r] = _mm256_setzero_si256();
  int64_t k = k0;
  for (; k + 32 <= k1; k += 32) {
    __m256i wv[NR], aw[NR];
    for (int r = 0; r < NR; ++r) {
      wv[r] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + r * ldw + k));
      aw[r] = _mm256_abs_epi8(wv[r]);
    }
    for (int m = 0; m < MR; ++m) {
      const __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + m * ldx + k));
      for (int r = 0; r < NR; ++r) {
        const __m256i p = _mm256_maddubs_epi16(aw[r], _mm256_sign_epi8(xv, wv[r]));
        acc[m][r] = _mm256_add_epi32(acc[m][r], _mm256_madd_epi16(p, ones));
      }
    }
  }
  for (int m = 0; m < MR; ++m)
    for (int r = 0; r < NR; ++r) {
      int64_t s = hsum_i32(acc[m][r]);
      for (int64_t t = k; t < k1; ++t) s += int32_t{x[m * ldx + t]} * w[r * ldw + t];
      dot[m][r] += s;
    }
}

// Y rows [b0, b0 + MR) × outputs [o0, o1).
template <int MR>
void strip(const PackedGemmArgs& a, const int8_t* qx, const float* sx, int64_t b0, int64_t o0,
           int64_t o1) {
  const auto* q = reinterpret_cast<const int8_t*>(a.codes);
  const int64_t in = a.in;
  auto finish = [&](int64_t o, const int64_t* col, int64_t stride) {
    const float sw = _cvtsh_ss(a.scales[o]);
    for (int m = 0; m < MR; ++m) {
      float* y = a.y + (b0 + m) * a.out + o;
      *y = std::isnan(sx[m]) ? std::numeric_limits<float>::quiet_NaN()
                             : static_cast<float>(col[m * stride]) * (sx[m] * sw);
    }
  };
  int64_t o = o0;
  for (; o + 2 <= o1; o += 2) {
    int64_t dot[MR][2] = {};
    for (int64_t k0 = 0; k0 < in; k0 += kKChunk)
      tile<MR, 2>(qx, in, q + o * in, in, k0, std::min(in, k0 + kKChunk), dot);
    finish(o, &dot[0][0], 2);
    finish(o + 1, &dot[0][1], 2);
  }
  for (; o < o1; ++o) {
    int64_t dot[MR][1] = {};
    for (int64_t k0 = 0; k0 < in; k0 += kKChunk)
      tile<MR, 1>(qx, in, q + o * in, in, k0, std::min(in, k0 + kKChunk), dot);
    finish(o, &dot[0][0], 1);
  }
}

}  // namespace

void q8_q8_gemm_avx2(const PackedGemmArgs& a) {
  check(a.group >= a.in, "kernels",
        fmt::format("W8A8 takes per-channel scales only, got groups of {} for {} inputs", a.group,
                    a.in));
  const int64_t in = a.in;
  std::vector<int8_t> qx(static_cast<size_t>(a.batch * in));
  std::vector<float> sx(static_cast<size_t>(a.batch));
  const bool parallel = a.batch * a.out * in >= kParallelMinMacs;
#pragma omp parallel for schedule(static) if (parallel && a.batch > 1)
  for (int64_t b = 0; b < a.batch; ++b)
    sx[static_cast<size_t>(b)] = quantize_row(a.x + b * in, in, qx.data() + b * in);

  const int64_t bb = (a.batch + kBlock - 1) / kBlock, ob = (a.out + kBlock - 1) / kBlock;
  // For one row of X (decode), split the outputs finer so both threads get work.
  const int64_t oblock = a.batch == 1 ? 16 : kBlock;
  const int64_t obn = a.batch == 1 ? (a.out + oblock - 1) / oblock : ob;
#pragma omp parallel for collapse(2) schedule(dynamic, 1) if (parallel)
  for (int64_t i = 0; i < bb; ++i)
    for (int64_t t = 0; t < obn; ++t) {
      const int64_t b1 = std::min(a.batch, (i + 1) * kBlock);
      const int64_t o0 = t * oblock, o1 = std::min(a.out, o0 + oblock);
      int64_t b = i * kBlock;
      for (; b + 4 <= b1; b += 4) strip<4>(a, qx.data() + b * in, sx.data() + b, b, o0, o1);
      for (; b < b1; ++b) strip<1>(a, qx.data() + b * in, sx.data() + b, b, o0, o1);
    }
}

}  // namespace tailor::schemes::kernels

#endif
