// AVX2/FMA/F16C packed-code kernels (int8, int4, int3, ternary). Codes become
// f32 lanes 32 at a time: int8 by sign extension of 32 bytes; int4 by moving
// each nibble to the top of its byte (the signed byte is then 16·q),
// interleaving low and high nibbles back into element order and extending to
// 32 bits, the factor 16 folded into the scale (exact: a power of two); 3-
// and 2-bit codes by shifting a broadcast 64-bit window right per lane
// (vpsrlvd) and mapping each lane's low 3 bits through an 8-entry table
// (vpermps). Long groups (and per-channel rows) apply their scale once to the
// group's sum; groups of ≤ 64 inputs scale the decoded weights instead, which
// costs less than reducing accumulators per group. Batches up to
// kFusedMaxBatch decode inside the dot products; larger ones go through
// avx2::panel_gemm.
#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)

#include <algorithm>

#include "../packing.h"
#include "avx2_util.h"
#include "tailor/schemes/kernels.h"

namespace tailor::schemes::kernels {
namespace {

using avx2::hsum;

// Independent accumulators per row of X: several FMA chains in flight.
template <int NB>
inline constexpr int kChains = NB == 1 ? 4 : 1;

// The vector paths produce code·kLaneScale<Bits> (16 for int4): they multiply
// by scale/kLaneScale, the scalar paths by the scale itself.
template <int Bits>
inline constexpr float kLaneScale = Bits == 4 ? 16.0f : 1.0f;

// Groups of at most this many inputs scale the weights, not the group sums.
inline constexpr int64_t kScaleWeightsMaxGroup = 64;

inline __m256 to_f32(__m128i bytes8) {
  return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(bytes8));
}

// 8 codes held in the low 8·Bits bits of `w` (Bits ≤ 4), as f32 lanes times kLaneScale.
template <int Bits>
inline __m256 expand8(uint64_t w) {
  const __m256i v = _mm256_set1_epi32(static_cast<int32_t>(w));
  if constexpr (Bits == 4) {
    // Code k to the top of lane k, down by 24, the 4 bits below it cleared: 16·q.
    const __m256i up = _mm256_setr_epi32(28, 24, 20, 16, 12, 8, 4, 0);
    const __m256i q = _mm256_srai_epi32(_mm256_sllv_epi32(v, up), 24);
    return _mm256_cvtepi32_ps(_mm256_and_si256(q, _mm256_set1_epi32(~0xF)));
  } else {
    // Lane k's low 3 bits start with code k; the table maps them to q (for
    // 2-bit codes the third bit belongs to the next code and is ignored).
    const __m256i down =
        _mm256_setr_epi32(0, Bits, 2 * Bits, 3 * Bits, 4 * Bits, 5 * Bits, 6 * Bits, 7 * Bits);
    const __m256 table = Bits == 3 ? _mm256_setr_ps(0, 1, 2, 3, -4, -3, -2, -1)
                                   : _mm256_setr_ps(0, 1, -2, -1, 0, 1, -2, -1);
    return _mm256_permutevar8x32_ps(table, _mm256_srlv_epi32(v, down));
  }
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
    // Byte t holds elements 2t (low nibble) and 2t+1 (high nibble).
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(a.codes + idx / 2));
    const __m128i top = _mm_set1_epi8(static_cast<char>(0xF0));
    const __m128i lo = _mm_and_si128(_mm_slli_epi16(v, 4), top), hi = _mm_and_si128(v, top);
    const __m128i c0 = _mm_unpacklo_epi8(lo, hi), c1 = _mm_unpackhi_epi8(lo, hi);
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

// int4 codes idx … idx+63 (idx even) into w[0..7]: chunk32's nibble steps on
// 32 bytes at once. Unpacking works within 128-bit lanes, so c0 holds elements
// 0–15 | 32–47 and c1 16–31 | 48–63.
inline void chunk64_int4(const PackedGemmArgs& a, int64_t idx, __m256 (&w)[8]) {
  const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.codes + idx / 2));
  const __m256i top = _mm256_set1_epi8(static_cast<char>(0xF0));
  const __m256i lo = _mm256_and_si256(_mm256_slli_epi16(v, 4), top), hi = _mm256_and_si256(v, top);
  const __m256i c0 = _mm256_unpacklo_epi8(lo, hi), c1 = _mm256_unpackhi_epi8(lo, hi);
  const __m128i p0 = _mm256_castsi256_si128(c0), p1 = _mm256_castsi256_si128(c1);
  const __m128i p2 = _mm256_extracti128_si256(c0, 1), p3 = _mm256_extracti128_si256(c1, 1);
  w[0] = to_f32(p0);
  w[1] = to_f32(_mm_srli_si128(p0, 8));
  w[2] = to_f32(p1);
  w[3] = to_f32(_mm_srli_si128(p1, 8));
  w[4] = to_f32(p2);
  w[5] = to_f32(_mm_srli_si128(p2, 8));
  w[6] = to_f32(p3);
  w[7] = to_f32(_mm_srli_si128(p3, 8));
}

inline float code_at(const PackedGemmArgs& a, int64_t idx, int bits) {
  return static_cast<float>(detail::get_code(a.codes, a.code_bytes, idx, bits));
}

// acc/tail[b] += Σ_{j<n} q[idx + j]·x[b·in + j] for NB rows of X; with Scale
// the weights are multiplied by the group's scale first (vs for the lanes,
// s for the scalar head and tail).
template <int Bits, int NB, bool Scale>
inline void dot_span(const PackedGemmArgs& a, int64_t idx, int64_t n, const float* x, __m256 vs,
                     float s, __m256 (&acc)[NB][kChains<NB>], float (&tail)[NB]) {
  constexpr int C = kChains<NB>;
  const int64_t ld = a.in;
  const float ts = Scale ? s : 1.0f;
  int64_t j = 0;
  if constexpr (Bits == 4) {
    if ((idx & 1) != 0 && n > 0) {  // an odd start: one code, then whole bytes
      const float q = code_at(a, idx, Bits) * ts;
      for (int b = 0; b < NB; ++b) tail[b] += q * x[b * ld];
      j = 1;
    }
  }
  if constexpr (Bits == 4) {
    for (; j + 64 <= n; j += 64) {
      __m256 w[8];
      chunk64_int4(a, idx + j, w);
      for (int c = 0; c < 8; ++c) {
        if constexpr (Scale) w[c] = _mm256_mul_ps(w[c], vs);
        for (int b = 0; b < NB; ++b)
          acc[b][c % C] =
              _mm256_fmadd_ps(w[c], _mm256_loadu_ps(x + b * ld + j + 8 * c), acc[b][c % C]);
      }
    }
  }
  for (; j + 32 <= n; j += 32) {
    __m256 w[4];
    chunk32<Bits>(a, idx + j, w);
    for (int c = 0; c < 4; ++c) {
      if constexpr (Scale) w[c] = _mm256_mul_ps(w[c], vs);
      for (int b = 0; b < NB; ++b)
        acc[b][c % C] =
            _mm256_fmadd_ps(w[c], _mm256_loadu_ps(x + b * ld + j + 8 * c), acc[b][c % C]);
    }
  }
  for (; j + 8 <= n; j += 8) {
    __m256 w = chunk8<Bits>(a, idx + j);
    if constexpr (Scale) w = _mm256_mul_ps(w, vs);
    for (int b = 0; b < NB; ++b)
      acc[b][0] = _mm256_fmadd_ps(w, _mm256_loadu_ps(x + b * ld + j), acc[b][0]);
  }
  for (; j < n; ++j) {
    const float q = code_at(a, idx + j, Bits) * ts;
    for (int b = 0; b < NB; ++b) tail[b] += q * x[b * ld + j];
  }
}

// Y rows b0 … b0+NB−1, every output row; rows of Ŵ split across threads.
template <int Bits, int NB, bool ScaleWeights>
void fused(const PackedGemmArgs& a, int64_t b0) {
  constexpr int C = kChains<NB>;
  const int64_t in = a.in, groups = (in + a.group - 1) / a.group;
  const float* x = a.x + b0 * in;
#pragma omp parallel for schedule(dynamic, \
                                  avx2::kRowsPerTask) if (a.out * in >= avx2::kParallelMinWeights)
  for (int64_t o = 0; o < a.out; ++o) {
    __m256 total[NB][C];
    float tail_total[NB];
    for (int b = 0; b < NB; ++b) {
      for (int c = 0; c < C; ++c) total[b][c] = _mm256_setzero_ps();
      tail_total[b] = 0;
    }
    for (int64_t g = 0; g < groups; ++g) {
      const int64_t j0 = g * a.group, n = std::min(in, j0 + a.group) - j0;
      const float s = _cvtsh_ss(a.scales[o * groups + g]);
      const __m256 vs = _mm256_set1_ps(s / kLaneScale<Bits>);
      if constexpr (ScaleWeights) {
        dot_span<Bits, NB, true>(a, o * in + j0, n, x + j0, vs, s, total, tail_total);
      } else {
        __m256 acc[NB][C];
        float tail[NB];
        for (int b = 0; b < NB; ++b) {
          for (int c = 0; c < C; ++c) acc[b][c] = _mm256_setzero_ps();
          tail[b] = 0;
        }
        dot_span<Bits, NB, false>(a, o * in + j0, n, x + j0, vs, s, acc, tail);
        for (int b = 0; b < NB; ++b) {
          for (int c = 0; c < C; ++c) total[b][c] = _mm256_fmadd_ps(acc[b][c], vs, total[b][c]);
          tail_total[b] += tail[b] * s;
        }
      }
    }
    for (int b = 0; b < NB; ++b) {
      __m256 sum = total[b][0];
      for (int c = 1; c < C; ++c) sum = _mm256_add_ps(sum, total[b][c]);
      a.y[(b0 + b) * a.out + o] = hsum(sum) + tail_total[b];
    }
  }
}

// int4 with groups of 32 and an even `in` (every group starts on a byte):
// two groups per 32-byte load (chunk64_int4), each group's 32 products summed
// into one vector and scaled once (one FMA per group instead of a multiply
// per weight vector); a last pair that is not whole goes through dot_span.
template <int NB>
void fused_int4_g32(const PackedGemmArgs& a, int64_t b0) {
  const int64_t in = a.in, groups = (in + 31) / 32;
  const float* x = a.x + b0 * in;
#pragma omp parallel for schedule(dynamic, \
                                  avx2::kRowsPerTask) if (a.out * in >= avx2::kParallelMinWeights)
  for (int64_t o = 0; o < a.out; ++o) {
    const uint16_t* sc = a.scales + o * groups;
    __m256 total[NB][2];
    float tail[NB];
    for (int b = 0; b < NB; ++b) {
      total[b][0] = total[b][1] = _mm256_setzero_ps();
      tail[b] = 0;
    }
    int64_t g = 0;
    for (; (g + 2) * 32 <= in; g += 2) {
      __m256 w[8];
      chunk64_int4(a, o * in + g * 32, w);
      const __m256 vs0 = _mm256_set1_ps(_cvtsh_ss(sc[g]) / kLaneScale<4>);
      const __m256 vs1 = _mm256_set1_ps(_cvtsh_ss(sc[g + 1]) / kLaneScale<4>);
      for (int b = 0; b < NB; ++b) {
        const float* xb = x + b * in + g * 32;
        __m256 p0 = _mm256_mul_ps(w[0], _mm256_loadu_ps(xb));
        __m256 p1 = _mm256_mul_ps(w[4], _mm256_loadu_ps(xb + 32));
        for (int c = 1; c < 4; ++c) {
          p0 = _mm256_fmadd_ps(w[c], _mm256_loadu_ps(xb + 8 * c), p0);
          p1 = _mm256_fmadd_ps(w[4 + c], _mm256_loadu_ps(xb + 32 + 8 * c), p1);
        }
        total[b][0] = _mm256_fmadd_ps(p0, vs0, total[b][0]);
        total[b][1] = _mm256_fmadd_ps(p1, vs1, total[b][1]);
      }
    }
    for (; g < groups; ++g) {
      const int64_t j0 = g * 32, n = std::min(in, j0 + 32) - j0;
      const float s = _cvtsh_ss(sc[g]);
      // dot_span adds into acc: chain 0 carries the total, the others start at 0.
      __m256 acc[NB][kChains<NB>];
      for (int b = 0; b < NB; ++b)
        for (int c = 0; c < kChains<NB>; ++c)
          acc[b][c] = c == 0 ? total[b][0] : _mm256_setzero_ps();
      dot_span<4, NB, true>(a, o * in + j0, n, x + j0, _mm256_set1_ps(s / kLaneScale<4>), s, acc,
                            tail);
      for (int b = 0; b < NB; ++b) {
        __m256 sum = acc[b][0];
        for (int c = 1; c < kChains<NB>; ++c) sum = _mm256_add_ps(sum, acc[b][c]);
        total[b][0] = sum;
      }
    }
    for (int b = 0; b < NB; ++b)
      a.y[(b0 + b) * a.out + o] = hsum(_mm256_add_ps(total[b][0], total[b][1])) + tail[b];
  }
}

// Ŵ row o into `row` [in]: codes times their group's scale.
template <int Bits>
void decode_row(const PackedGemmArgs& a, int64_t o, float* row) {
  const int64_t in = a.in, groups = (in + a.group - 1) / a.group, idx = o * in;
  for (int64_t g = 0; g < groups; ++g) {
    const int64_t j0 = g * a.group, j1 = std::min(in, j0 + a.group);
    const float s = _cvtsh_ss(a.scales[o * groups + g]);
    const __m256 vs = _mm256_set1_ps(s / kLaneScale<Bits>);
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

template <int Bits, bool ScaleWeights>
void fused_batch(const PackedGemmArgs& a) {
  int64_t b = 0;
  for (; b + avx2::kBatchTile <= a.batch; b += avx2::kBatchTile)
    fused<Bits, avx2::kBatchTile, ScaleWeights>(a, b);
  for (; b < a.batch; ++b) fused<Bits, 1, ScaleWeights>(a, b);
}

template <int Bits>
void gemm(const PackedGemmArgs& a) {
  if (Bits == 8 && a.batch == 1) {
    q8_f32_gemv_avx2(a);
  } else if (Bits == 4 && q4_gemv_supported(a)) {
    q4_f32_gemv_avx2(a);
  } else if (a.batch > avx2::kFusedMaxBatch) {
    avx2::panel_gemm(a.out, a.in, a.x, a.batch, a.y,
                     [&a](int64_t o, float* row) { decode_row<Bits>(a, o, row); });
  } else if (Bits == 4 && a.group == 32 && a.in % 2 == 0) {
    int64_t b = 0;
    for (; b + avx2::kBatchTile <= a.batch; b += avx2::kBatchTile)
      fused_int4_g32<avx2::kBatchTile>(a, b);
    for (; b < a.batch; ++b) fused_int4_g32<1>(a, b);
  } else if (a.group < a.in && a.group <= kScaleWeightsMaxGroup) {
    fused_batch<Bits, true>(a);
  } else {
    fused_batch<Bits, false>(a);
  }
}

template <int Bits>
void decode_rows(const PackedGemmArgs& a, int64_t o0, int64_t rows, float* dst) {
  for (int64_t r = 0; r < rows; ++r) decode_row<Bits>(a, o0 + r, dst + r * a.in);
}

}  // namespace

void q8_f32_decode_avx2(const PackedGemmArgs& args, int64_t o0, int64_t rows, float* dst) {
  decode_rows<8>(args, o0, rows, dst);
}
void q4_f32_decode_avx2(const PackedGemmArgs& args, int64_t o0, int64_t rows, float* dst) {
  decode_rows<4>(args, o0, rows, dst);
}
void q3_f32_decode_avx2(const PackedGemmArgs& args, int64_t o0, int64_t rows, float* dst) {
  decode_rows<3>(args, o0, rows, dst);
}
void q2_f32_decode_avx2(const PackedGemmArgs& args, int64_t o0, int64_t rows, float* dst) {
  decode_rows<2>(args, o0, rows, dst);
}

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
