// Batch-1 GEMV (LLM decode) on int8 and int4 codes, AVX2/FMA/F16C: y = Ŵ·x
// with f32 arithmetic (weight-only quantization: x is never rounded). The
// weights are read once and nothing else is, so these kernels are built to
// stream: kRows rows of Ŵ per pass share each load of x (an x of 14336
// inputs does not fit L1; one row per pass would re-read it from L2 four
// bytes per weight byte), two independent accumulators per row, and a
// software prefetch of the rows the next pass reads. Codes become
// f32 lanes straight from memory: VPMOVSXBD of 8 bytes (int8: 8 codes; int4:
// 8 bytes of two nibbles each, whose signed high nibble is the byte >> 4
// (arithmetic) and signed low nibble (byte << 28) >> 28). The int4 kernel
// therefore gets the even and odd elements of 16 inputs in two vectors: x is
// permuted once per call to match (xp, 16-element blocks: evens then odds).
// Scales are applied once per group (or row) to the group's f32 sum.
#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "../packing.h"
#include "avx2_util.h"
#include "tailor/core/error.h"
#include "tailor/schemes/kernels.h"

namespace tailor::schemes::kernels {
namespace {

using avx2::hsum;

/// Rows of Ŵ per pass.
constexpr int kRows = 4;
/// Software prefetch: each load of a row's codes prefetches the same offset
/// of the row kRows rows further, the row the next pass reads (rows of a few
/// KiB are too short for the hardware's stream prefetchers, which stop at
/// 4 KiB pages and train anew on every row).
inline void prefetch_next_pass(const void* p, int64_t ahead) {
  _mm_prefetch(static_cast<const char*>(p) + ahead, _MM_HINT_T0);
}

inline __m256 bytes8_f32(const int8_t* p) {
  return _mm256_cvtepi32_ps(
      _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
}

inline __m256 f16_broadcast(uint16_t h) {
  return _mm256_cvtph_ps(_mm_set1_epi16(static_cast<int16_t>(h)));
}

// y[o0 … o0+R−1] for int8 codes, any group size.
template <int R>
void q8_rows(const PackedGemmArgs& a, int64_t o0, const float* x) {
  const int64_t in = a.in, groups = (in + a.group - 1) / a.group;
  const auto* codes = reinterpret_cast<const int8_t*>(a.codes);
  __m256 total[R];
  float tail_total[R];
  for (int r = 0; r < R; ++r) {
    total[r] = _mm256_setzero_ps();
    tail_total[r] = 0;
  }
  for (int64_t g = 0; g < groups; ++g) {
    const int64_t j0 = g * a.group, n = std::min(in, j0 + a.group) - j0;
    const int8_t* w[R];
    __m256 acc[R][2];
    for (int r = 0; r < R; ++r) {
      w[r] = codes + (o0 + r) * in + j0;
      acc[r][0] = acc[r][1] = _mm256_setzero_ps();
    }
    const float* xg = x + j0;
    int64_t j = 0;
    for (; j + 32 <= n; j += 32) {
      for (int r = 0; r < R; ++r) prefetch_next_pass(w[r] + j, R * in);
      const __m256 x0 = _mm256_loadu_ps(xg + j), x1 = _mm256_loadu_ps(xg + j + 8);
      const __m256 x2 = _mm256_loadu_ps(xg + j + 16), x3 = _mm256_loadu_ps(xg + j + 24);
      for (int r = 0; r < R; ++r) {
        acc[r][0] = _mm256_fmadd_ps(bytes8_f32(w[r] + j), x0, acc[r][0]);
        acc[r][1] = _mm256_fmadd_ps(bytes8_f32(w[r] + j + 8), x1, acc[r][1]);
        acc[r][0] = _mm256_fmadd_ps(bytes8_f32(w[r] + j + 16), x2, acc[r][0]);
        acc[r][1] = _mm256_fmadd_ps(bytes8_f32(w[r] + j + 24), x3, acc[r][1]);
      }
    }
    for (; j + 8 <= n; j += 8) {
      const __m256 xv = _mm256_loadu_ps(xg + j);
      for (int r = 0; r < R; ++r) acc[r][0] = _mm256_fmadd_ps(bytes8_f32(w[r] + j), xv, acc[r][0]);
    }
    float tail[R] = {};
    for (; j < n; ++j)
      for (int r = 0; r < R; ++r) tail[r] += static_cast<float>(w[r][j]) * xg[j];
    for (int r = 0; r < R; ++r) {
      const uint16_t h = a.scales[(o0 + r) * groups + g];
      total[r] = _mm256_fmadd_ps(_mm256_add_ps(acc[r][0], acc[r][1]), f16_broadcast(h), total[r]);
      tail_total[r] += tail[r] * _cvtsh_ss(h);
    }
  }
  for (int r = 0; r < R; ++r) a.y[o0 + r] = hsum(total[r]) + tail_total[r];
}

// 8 bytes of int4 codes (16 elements) at p: even elements into lo, odd into hi.
inline void nibbles16(const uint8_t* p, __m256& lo, __m256& hi) {
  const __m256i v = _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
  lo = _mm256_cvtepi32_ps(_mm256_srai_epi32(_mm256_slli_epi32(v, 28), 28));
  hi = _mm256_cvtepi32_ps(_mm256_srai_epi32(v, 4));
}

// int4-g32 rows o0 … o0+R−1 over groups [0, 8·floor(in/256)) into total:
// blocks of 8 groups (256 inputs, 128 bytes per row), row by row so the
// block's 1 KiB of xp stays in L1 for the next rows. A row's 8 f16 scales are
// widened in one VCVTPH2PS and staged on the stack (then one broadcast load
// per group, no conversion); each group's 32 products form one FMA chain,
// scaled into the row's total. Returns the first group not done.
template <int R>
int64_t q4_g32_blocks(const PackedGemmArgs& a, const uint8_t* const (&row)[R],
                      const uint16_t* const (&sc)[R], const float* xp, __m256 (&total)[R]) {
  const int64_t blocks = a.in / 256, groups = (a.in + 31) / 32;
  alignas(32) float sv[8];
  for (int64_t blk = 0; blk < blocks; ++blk) {
    const float* xb = xp + blk * 256;
    for (int r = 0; r < R; ++r) {
      const uint8_t* w = row[r] + blk * 128;
      prefetch_next_pass(w, R * a.in / 2);
      prefetch_next_pass(w + 64, R * a.in / 2);
      // The scales are a stream of their own ([out, groups] f16, 1/16 of the
      // codes' bytes): too short per row for the hardware prefetchers as well.
      if ((blk & 3) == 0) prefetch_next_pass(sc[r] + 8 * blk, R * groups * 2);
      _mm256_store_ps(
          sv, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sc[r] + 8 * blk))));
      __m256 t[2] = {total[r], _mm256_setzero_ps()};  // two chains: even and odd groups
      for (int k = 0; k < 8; ++k) {
        __m256 lo0, hi0, lo1, hi1;
        nibbles16(w + 16 * k, lo0, hi0);
        nibbles16(w + 16 * k + 8, lo1, hi1);
        const float* xg = xb + 32 * k;
        __m256 p = _mm256_mul_ps(lo0, _mm256_loadu_ps(xg));
        p = _mm256_fmadd_ps(hi0, _mm256_loadu_ps(xg + 8), p);
        p = _mm256_fmadd_ps(lo1, _mm256_loadu_ps(xg + 16), p);
        p = _mm256_fmadd_ps(hi1, _mm256_loadu_ps(xg + 24), p);
        t[k % 2] = _mm256_fmadd_ps(p, _mm256_broadcast_ss(sv + k), t[k % 2]);
      }
      total[r] = _mm256_add_ps(t[0], t[1]);
    }
  }
  return blocks * 8;
}

// One group g (inputs j0 … j0+n−1) of rows o0 … o0+R−1 of any length, added
// into total / tail_total (a multiple of 16 inputs but a row's last group).
// Out of line: its accumulators would otherwise be set up on the stack on
// every group of q4_rows, the int4-g32 path's included.
template <int R>
[[gnu::noinline]] void q4_group(const PackedGemmArgs& a, int64_t o0, const uint8_t* const (&row)[R],
                                const uint16_t* const (&sc)[R], int64_t g, int64_t j0, int64_t n,
                                const float* x, const float* xp, __m256 (&total)[R],
                                float (&tail_total)[R]) {
  const int64_t in = a.in;
  __m256 acc[R][2];
  for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
  const float* xg = xp + j0;
  int64_t j = 0;
  for (; j + 32 <= n; j += 32) {
    for (int r = 0; r < R; ++r) prefetch_next_pass(row[r] + (j0 + j) / 2, R * in / 2);
    const __m256 xe0 = _mm256_loadu_ps(xg + j), xo0 = _mm256_loadu_ps(xg + j + 8);
    const __m256 xe1 = _mm256_loadu_ps(xg + j + 16), xo1 = _mm256_loadu_ps(xg + j + 24);
    for (int r = 0; r < R; ++r) {
      __m256 lo, hi;
      nibbles16(row[r] + (j0 + j) / 2, lo, hi);
      acc[r][0] = _mm256_fmadd_ps(lo, xe0, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(hi, xo0, acc[r][1]);
      nibbles16(row[r] + (j0 + j) / 2 + 8, lo, hi);
      acc[r][0] = _mm256_fmadd_ps(lo, xe1, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(hi, xo1, acc[r][1]);
    }
  }
  for (; j + 16 <= n; j += 16) {
    const __m256 xe = _mm256_loadu_ps(xg + j), xo = _mm256_loadu_ps(xg + j + 8);
    for (int r = 0; r < R; ++r) {
      __m256 lo, hi;
      nibbles16(row[r] + (j0 + j) / 2, lo, hi);
      acc[r][0] = _mm256_fmadd_ps(lo, xe, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(hi, xo, acc[r][1]);
    }
  }
  // Only the row's last group can end off a 16-block: its tail in x's own order.
  float tail[R] = {};
  for (; j < n; ++j)
    for (int r = 0; r < R; ++r)
      tail[r] +=
          static_cast<float>(detail::get_code(a.codes, a.code_bytes, (o0 + r) * in + j0 + j, 4)) *
          x[j0 + j];
  for (int r = 0; r < R; ++r) {
    total[r] =
        _mm256_fmadd_ps(_mm256_add_ps(acc[r][0], acc[r][1]), f16_broadcast(sc[r][g]), total[r]);
    tail_total[r] += tail[r] * _cvtsh_ss(sc[r][g]);
  }
}

// y[o0 … o0+R−1] for int4 codes: `in` even, groups a multiple of 16 inputs
// or one group per row (q4_gemv_supported); xp is x permuted per 16-element
// block (evens, then odds) over the first in − in mod 16 inputs. int4-g32
// goes by blocks of 8 groups (q4_g32_blocks); any other whole group of 32 is
// one straight block per row, its two partial sums scaled into the row's
// total at once.
template <int R>
void q4_rows(const PackedGemmArgs& a, int64_t o0, const float* x, const float* xp) {
  const int64_t in = a.in, groups = (in + a.group - 1) / a.group;
  const uint8_t* row[R];  // row starts (in even: whole bytes)
  const uint16_t* sc[R];
  __m256 total[R];
  float tail_total[R];
  for (int r = 0; r < R; ++r) {
    row[r] = a.codes + (o0 + r) * in / 2;
    sc[r] = a.scales + (o0 + r) * groups;
    total[r] = _mm256_setzero_ps();
    tail_total[r] = 0;
  }
  for (int64_t g = a.group == 32 ? q4_g32_blocks<R>(a, row, sc, xp, total) : 0; g < groups; ++g) {
    const int64_t j0 = g * a.group, n = std::min(in, j0 + a.group) - j0;
    if (n == 32) {
      if ((g & 3) == 0)  // one prefetch per 64 bytes of each row
        for (int r = 0; r < R; ++r) prefetch_next_pass(row[r] + j0 / 2, R * in / 2);
      const float* xg = xp + j0;
      for (int r = 0; r < R; ++r) {
        __m256 lo0, hi0, lo1, hi1;
        nibbles16(row[r] + j0 / 2, lo0, hi0);
        nibbles16(row[r] + j0 / 2 + 8, lo1, hi1);
        __m256 p0 = _mm256_mul_ps(lo0, _mm256_loadu_ps(xg));
        __m256 p1 = _mm256_mul_ps(hi0, _mm256_loadu_ps(xg + 8));
        p0 = _mm256_fmadd_ps(lo1, _mm256_loadu_ps(xg + 16), p0);
        p1 = _mm256_fmadd_ps(hi1, _mm256_loadu_ps(xg + 24), p1);
        total[r] = _mm256_fmadd_ps(_mm256_add_ps(p0, p1), f16_broadcast(sc[r][g]), total[r]);
      }
      continue;
    }
    q4_group<R>(a, o0, row, sc, g, j0, n, x, xp, total, tail_total);
  }
  for (int r = 0; r < R; ++r) a.y[o0 + r] = hsum(total[r]) + tail_total[r];
}

void check_gemv(const PackedGemmArgs& a, const char* kernel) {
  check(a.batch == 1, "kernels", fmt::format("{} takes one row of activations", kernel));
}

}  // namespace

void q8_f32_gemv_avx2(const PackedGemmArgs& args) {
  check_gemv(args, "q8_f32_gemv_avx2");
  avx2::gemv_over_rows<kRows>(
      args.out, args.in, [&](int64_t o) { q8_rows<kRows>(args, o, args.x); },
      [&](int64_t o) { q8_rows<1>(args, o, args.x); });
}

void q4_f32_gemv_avx2(const PackedGemmArgs& args) {
  check_gemv(args, "q4_f32_gemv_avx2");
  check(q4_gemv_supported(args), "kernels",
        fmt::format("q4_f32_gemv_avx2 needs an even number of inputs and groups of a multiple of "
                    "16 (in {}, group {})",
                    args.in, args.group));
  // x in the order the nibbles come out: per 16-element block, evens then odds.
  thread_local std::vector<float> xp;
  const int64_t blocks = args.in / 16;
  xp.resize(static_cast<size_t>(blocks * 16));
  for (int64_t b = 0; b < blocks; ++b)
    for (int k = 0; k < 8; ++k) {
      xp[static_cast<size_t>(16 * b + k)] = args.x[16 * b + 2 * k];
      xp[static_cast<size_t>(16 * b + 8 + k)] = args.x[16 * b + 2 * k + 1];
    }
  const float* p = xp.data();
  avx2::gemv_over_rows<kRows>(
      args.out, args.in, [&](int64_t o) { q4_rows<kRows>(args, o, args.x, p); },
      [&](int64_t o) { q4_rows<1>(args, o, args.x, p); });
}

}  // namespace tailor::schemes::kernels

#endif
