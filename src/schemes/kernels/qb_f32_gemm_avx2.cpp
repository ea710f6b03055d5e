// AVX2/FMA/F16C packed-code kernels (int8, int4, int3, ternary). Codes become
// f32 lanes 32 at a time: int8 by sign extension of 32 bytes; int4 by
// splitting 16 bytes into low and high nibbles, interleaving them back into
// element order and sign-extending 4 → 8 → 32 bits; 3- and 2-bit codes by
// broadcasting a 64-bit window and shifting each lane's code to the top
// (vpsllvd) and arithmetically back down (vpsrad). Scales multiply once per
// group of inputs. Batches up to kFusedMaxBatch decode inside the dot
// products; larger ones go through avx2::panel_gemm.
#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)

#include <algorithm>

#include "../packing.h"
#include "avx2_util.h"
#include "tailor/schemes/kernels.h"

namespace tailor::schemes::kernels {
namespace {

using avx2::hsum;

// Independent accumulators per row of X: one chain per 8 lanes in flight.
template <int NB>
inline constexpr int kChains = NB == 1 ? 4 : 1;

inline __m256 to_f32(__m128i bytes8) {
  return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(bytes8));
}

// 8 codes of Bits ≤ 4 held in the low 8·Bits bits of `w`, as f32 lanes.
template <int Bits>
inline __m256 expand8(uint64_t w) {
  const __m256i up = _mm256_setr_epi32(32 - Bits, 32 - 2 * Bits, 32 - 3 * Bits, 32 - 4 * Bits,
                                       32 - 5 * Bits, 32 - 6 * Bits, 32 - 7 * Bits, 32 - 8 * Bits);
  const __m256i q = _mm256_sllv_epi32(_mm256_set1_epi32(static_cast<int32_t>(w)), up);
  return _mm256_cvtepi32_ps(_mm256_srai_epi32(q, 32 - Bits));
}

// Codes idx … idx+7.
template <int Bits>
inline __m256 chunk8(const PackedGemmArgs& a, int64_t idx) {
  if constexpr (Bits == 8)
    return to_f32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(a.codes + idx)));
  else
    return expand8<Bits>(avx2::load_bits(a.codes, a.code_bytes, idx, Bits));
}

// Codes idx … idx+31 into w[0..3] (int4: idx even, so they start on a byte).
template <int Bits>
inline void chunk32(const PackedGemmArgs& a, int64_t idx, __m256 (&w)[4]) {
  if constexpr (Bits == 8) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.codes + idx));
    const __m128i lo = _mm256_castsi256_si128(v), hi = _mm256_extracti128_si256(v, 1);
    w[0] = to_f32(lo);
    w[1] = to_f32(_mm_srli_si128(lo, 8));
    w[2] = to_f32(hi);
    w[3] = to_f32(_mm_srli_si128(hi, 8));
  } else if constexpr (Bits == 4) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(a.codes + idx / 2));
    const __m128i mask = _mm_set1_epi8(0x0F), eight = _mm_set1_epi8(8);
    const __m128i lo = _mm_and_si128(v, mask), hi = _mm_and_si128(_mm_srli_epi16(v, 4), mask);
    // Byte t holds elements 2t (low nibble) and 2t+1: interleave, then
    // sign-extend the nibbles within their bytes: (c ^ 8) − 8.
    const __m128i c0 = _mm_sub_epi8(_mm_xor_si128(_mm_unpacklo_epi8(lo, hi), eight), eight);
    const __m128i c1 = _mm_sub_epi8(_mm_xor_si128(_mm_unpackhi_epi8(lo, hi), eight), eight);
    w[0] = to_f32(c0);
    w[1] = to_f32(_mm_srli_si128(c0, 8));
    w[2] = to_f32(c1);
    w[3] = to_f32(_mm_srli_si128(c1, 8));
  } else {
    // 16 codes of 2 or 3 bits fit one 57-bit window.
    const uint64_t u0 = avx2::load_bits(a.codes, a.code_bytes, idx, Bits);
    const uint64_t u1 = avx2::load_bits(a.codes, a.code_bytes, idx + 16, Bits);
    w[0] = expand8<Bits>(u0);
    w[1] = expand8<Bits>(u0 >> (8 * Bits));
    w[2] = expand8<Bits>(u1);
    w[3] = expand8<Bits>(u1 >> (8 * Bits));
  }
}

inline float code_at(const PackedGemmArgs& a, int64_t idx, int bits) {
  return static_cast<float>(detail::get_code(a.codes, a.code_bytes, idx, bits));
}

// acc/tail[b] += Σ_{j<n} q[idx + j]·x[b·in + j] for NB rows of X.
template <int Bits, int NB>
inline void dot_span(const PackedGemmArgs& a, int64_t idx, int64_t n, const float* x,
                     __m256 (&acc)[NB][kChains<NB>], float (&tail)[NB]) {
  constexpr int C = kChains<NB>;
  const int64_t ld = a.in;
  int64_t j = 0;
  if constexpr (Bits == 4) {
    if ((idx & 1) != 0 && n > 0) {  // an odd start: one code, then whole bytes
      const float q = code_at(a, idx, Bits);
      for (int b = 0; b < NB; ++b) tail[b] += q * x[b * ld];
      j = 1;
    }
  }
  for (; j + 32 <= n; j += 32) {
    __m256 w[4];
    chunk32<Bits>(a, idx + j, w);
    for (int c = 0; c < 4; ++c)
      for (int b = 0; b < NB; ++b)
        acc[b][c % C] =
            _mm256_fmadd_ps(w[c], _mm256_loadu_ps(x + b * ld + j + 8 * c), acc[b][c % C]);
  }
  for (; j + 8 <= n; j += 8) {
    const __m256 w = chunk8<Bits>(a, idx + j);
    for (int b = 0; b < NB; ++b)
      acc[b][0] = _mm256_fmadd_ps(w, _mm256_loadu_ps(x + b * ld + j), acc[b][0]);
  }
  for (; j < n; ++j) {
    const float q = code_at(a, idx + j, Bits);
    for (int b = 0; b < NB; ++b) tail[b] += q * x[b * ld + j];
  }
}

// Y rows b0 … b0+NB−1, every output row; rows of Ŵ split across threads.
template <int Bits, int NB>
void fused(const PackedGemmArgs& a, int64_t b0) {
  constexpr int C = kChains<NB>;
  const int64_t in = a.in, groups = (in + a.group - 1) / a.group;
  const float* x = a.x + b0 * in;
#pragma omp parallel for schedule(dynamic, \
                                  avx2::kRowsPerTask) if (a.out * in >= avx2::kParallelMinWeights)
  for (int64_t o = 0; o < a.out; ++o) {
    __m256 total[NB];
    float tail_total[NB];
    for (int b = 0; b < NB; ++b) total[b] = _mm256_setzero_ps(), tail_total[b] = 0;
    for (int64_t g = 0; g < groups; ++g) {
      const int64_t j0 = g * a.group, n = std::min(in, j0 + a.group) - j0;
      __m256 acc[NB][C];
      float tail[NB];
      for (int b = 0; b < NB; ++b) {
        for (int c = 0; c < C; ++c) acc[b][c] = _mm256_setzero_ps();
        tail[b] = 0;
      }
      dot_span<Bits, NB>(a, o * in + j0, n, x + j0, acc, tail);
      const float s = _cvtsh_ss(a.scales[o * groups + g]);
      const __m256 vs = _mm256_set1_ps(s);
      for (int b = 0; b < NB; ++b) {
        __m256 sum = acc[b][0];
        for (int c = 1; c < C; ++c) sum = _mm256_add_ps(sum, acc[b][c]);
        total[b] = _mm256_fmadd_ps(sum, vs, total[b]);
        tail_total[b] += tail[b] * s;
      }
    }
    for (int b = 0; b < NB; ++b) a.y[(b0 + b) * a.out + o] = hsum(total[b]) + tail_total[b];
  }
}

// Ŵ row o into `row` [in]: codes times their group's scale.
template <int Bits>
void decode_row(const PackedGemmArgs& a, int64_t o, float* row) {
  const int64_t in = a.in, groups = (in + a.group - 1) / a.group;
  for (int64_t g = 0; g < groups; ++g) {
    const int64_t j0 = g * a.group, j1 = std::min(in, j0 + a.group), idx = o * in;
    const float s = _cvtsh_ss(a.scales[o * groups + g]);
    const __m256 vs = _mm256_set1_ps(s);
    int64_t j = j0;
    if (Bits == 4 && ((idx + j) & 1) != 0 && j < j1) {
      row[j] = code_at(a, idx + j, Bits) * s;
      ++j;
    }
    for (; j + 32 <= j1; j += 32) {
      __m256 w[4];
      chunk32<Bits>(a, idx + j, w);
      for (int c = 0; c < 4; ++c) _mm256_storeu_ps(row + j + 8 * c, _mm256_mul_ps(w[c], vs));
    }
    for (; j + 8 <= j1; j += 8)
      _mm256_storeu_ps(row + j, _mm256_mul_ps(chunk8<Bits>(a, idx + j), vs));
    for (; j < j1; ++j) row[j] = code_at(a, idx + j, Bits) * s;
  }
}

template <int Bits>
void gemm(const PackedGemmArgs& a) {
  if (a.batch > avx2::kFusedMaxBatch) {
    avx2::panel_gemm(a.out, a.in, a.x, a.batch, a.y,
                     [&a](int64_t o, float* row) { decode_row<Bits>(a, o, row); });
    return;
  }
  int64_t b = 0;
  for (; b + avx2::kBatchTile <= a.batch; b += avx2::kBatchTile)
    fused<Bits, avx2::kBatchTile>(a, b);
  for (; b < a.batch; ++b) fused<Bits, 1>(a, b);
}

}  // namespace

void q8_f32_gemm_avx2(const PackedGemmArgs& args) {
  gemm<8>(args);
}
void q4_f32_gemm_avx2(const PackedGemmArgs& args) {
  gemm<4>(args);
}
void q3_f32_gemm_avx2(const PackedGemmArgs& args) {
  gemm<3>(args);
}
void q2_f32_gemm_avx2(const PackedGemmArgs& args) {
  gemm<2>(args);
}

}  // namespace tailor::schemes::kernels

#endif
