// Batch-1 GEMV (LLM decode) on int8 and int4 codes with AVX-512F/BW/VL:
// y = Ŵ·x in f32 arithmetic (weight-only: x is never rounded), the AVX2
// kernels' structure (qb_f32_gemv_avx2.cpp: 4 rows of Ŵ per pass share each
// load of x, software prefetch of the next pass's rows, rows split across
// OpenMP threads by avx2::gemv_over_rows) on 16-lane vectors. Built in the
// x86-64-v3 build through function target attributes; the kernel registry
// picks them only where cpu_features() reports AVX-512F, BW and VL.
//
// int4 codes become f32 through a table, not shifts and conversions: 64
// bytes of a row are 16 int32 lanes of 8 nibbles each; VPERMPS reads only
// the low 4 bits of each index lane, so shifting the lanes right by 4·s and
// permuting a 16-entry table {0, 1, …, 7, −8, …, −1} gives nibble s of every
// lane as f32 in one step (3 instructions per 16 weights: shift, permute,
// FMA). Lane k of step s holds element 8k + s of the 128-element block: x is
// permuted once per call to match (xp). A lane's 8 elements lie in one
// group for groups of 16, 32, 64 or a multiple of 128 inputs, so the block's
// scales are one vector (scale of lane k = that of element 8k) multiplied in
// once per block (per channel too: the row's scale times each block's sums).
#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)

#include <fmt/format.h>
#include <immintrin.h>

#include <algorithm>
#include <vector>

#include "avx2_util.h"
#include "tailor/core/dtype.h"
#include "tailor/core/error.h"
#include "tailor/schemes/kernels.h"

#define TAILOR_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,f16c")))

// GCC 12's AVX-512 intrinsics pass _mm512_undefined_*() (deliberately
// uninitialized) as the merge operand of unmasked conversions, which its
// -Wmaybe-uninitialized then reports at every use (GCC bug 105593).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace tailor::schemes::kernels {
namespace gemv512 {
namespace {

/// Rows of Ŵ per pass.
constexpr int kRows = 4;

// Prefetch of the same offset kRows rows further: the row the next pass reads.
inline void prefetch_ahead(const void* p, int64_t ahead) {
  _mm_prefetch(static_cast<const char*>(p) + ahead, _MM_HINT_T0);
}

TAILOR_AVX512 inline __m512 bytes16_f32(const int8_t* p) {
  return _mm512_cvtepi32_ps(
      _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
}

// The first n < 16 codes at p as f32 (the rest 0), reading only those n bytes.
TAILOR_AVX512 inline __m512 bytes_f32_masked(const int8_t* p, __mmask16 m) {
  return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(m, p)));
}

// y[o0 … o0+R−1] for int8 codes, any group size: per group, 64 inputs per
// step in two accumulators per row, the group's last n mod 16 inputs by
// masked loads; each group's sum times its scale into the row's total.
template <int R>
TAILOR_AVX512 void q8_rows(const PackedGemmArgs& a, int64_t o0) {
  const int64_t in = a.in, groups = (in + a.group - 1) / a.group;
  const auto* codes = reinterpret_cast<const int8_t*>(a.codes);
  const float* x = a.x;
  __m512 total[R];
  for (int r = 0; r < R; ++r) total[r] = _mm512_setzero_ps();
  for (int64_t g = 0; g < groups; ++g) {
    const int64_t j0 = g * a.group, n = std::min(in, j0 + a.group) - j0;
    const int8_t* w[R];
    __m512 acc[R][2];
    for (int r = 0; r < R; ++r) {
      w[r] = codes + (o0 + r) * in + j0;
      acc[r][0] = acc[r][1] = _mm512_setzero_ps();
    }
    const float* xg = x + j0;
    int64_t j = 0;
    for (; j + 64 <= n; j += 64) {
      for (int r = 0; r < R; ++r) prefetch_ahead(w[r] + j, R * in);
      const __m512 x0 = _mm512_loadu_ps(xg + j), x1 = _mm512_loadu_ps(xg + j + 16);
      const __m512 x2 = _mm512_loadu_ps(xg + j + 32), x3 = _mm512_loadu_ps(xg + j + 48);
      for (int r = 0; r < R; ++r) {
        acc[r][0] = _mm512_fmadd_ps(bytes16_f32(w[r] + j), x0, acc[r][0]);
        acc[r][1] = _mm512_fmadd_ps(bytes16_f32(w[r] + j + 16), x1, acc[r][1]);
        acc[r][0] = _mm512_fmadd_ps(bytes16_f32(w[r] + j + 32), x2, acc[r][0]);
        acc[r][1] = _mm512_fmadd_ps(bytes16_f32(w[r] + j + 48), x3, acc[r][1]);
      }
    }
    for (; j + 16 <= n; j += 16) {
      const __m512 xv = _mm512_loadu_ps(xg + j);
      for (int r = 0; r < R; ++r) acc[r][0] = _mm512_fmadd_ps(bytes16_f32(w[r] + j), xv, acc[r][0]);
    }
    if (j < n) {
      const __mmask16 m = static_cast<__mmask16>((1u << (n - j)) - 1);
      const __m512 xv = _mm512_maskz_loadu_ps(m, xg + j);
      for (int r = 0; r < R; ++r)
        acc[r][1] = _mm512_fmadd_ps(bytes_f32_masked(w[r] + j, m), xv, acc[r][1]);
    }
    for (int r = 0; r < R; ++r)
      total[r] =
          _mm512_fmadd_ps(_mm512_add_ps(acc[r][0], acc[r][1]),
                          _mm512_set1_ps(_cvtsh_ss(a.scales[(o0 + r) * groups + g])), total[r]);
  }
  for (int r = 0; r < R; ++r) a.y[o0 + r] = _mm512_reduce_add_ps(total[r]);
}

/// Inputs per block of the int4 kernel (16 int32 lanes × 8 nibbles).
constexpr int64_t kBlock = 128;

// One 128-input block of R rows: v[r] its 64 code bytes of row r (zeros past
// a row's end: table value 0), xb its 128 inputs permuted (lane k of step s =
// element 8k + s; zeros past the end). The block's products summed per lane
// go into total[r] times the lane's scale: the block's first `smask` scales
// of row r from sc[r] (f16, zeros past the row's last group), lane k taking
// scale sidx[k].
template <int R>
[[gnu::always_inline]] TAILOR_AVX512 inline void q4_block(const __m512i (&v)[R], const float* xb,
                                                          const uint16_t* const (&sc)[R],
                                                          __m512i sidx, __mmask16 smask,
                                                          __m512 (&total)[R]) {
  const __m512 table = _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, -8, -7, -6, -5, -4, -3, -2, -1);
  __m512 acc[R];
  __m512i cur[R];
  {
    const __m512 xv = _mm512_loadu_ps(xb);
    for (int r = 0; r < R; ++r) {
      acc[r] = _mm512_mul_ps(_mm512_permutexvar_ps(v[r], table), xv);
      cur[r] = v[r];
    }
  }
  // Each step shifts the previous step's lanes by 4 (not v by 4·s): a shift
  // of v itself may be compiled as a shift of v's bytes reloaded from memory,
  // 7 more loads per row and block, which then bound the loop.
  for (int s = 1; s < 8; ++s) {
    const __m512 xv = _mm512_loadu_ps(xb + 16 * s);
    for (int r = 0; r < R; ++r) {
      cur[r] = _mm512_srli_epi32(cur[r], 4);
      acc[r] = _mm512_fmadd_ps(_mm512_permutexvar_ps(cur[r], table), xv, acc[r]);
    }
  }
  for (int r = 0; r < R; ++r) {
    const __m512 s16 = _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(smask, sc[r]));
    total[r] = _mm512_fmadd_ps(acc[r], _mm512_permutexvar_ps(sidx, s16), total[r]);
  }
}

// y[o0 … o0+R−1] for int4 codes (`in` even; group as
// q4_gemv_avx512_supported), 128 inputs per block by the table (xp: x
// permuted per block and zero-padded to whole blocks); the last in mod 128
// inputs as one more block from a masked load of their bytes. Each block's
// scales as one vector (lane k: the group of element 8k, lane_group[k] past
// the block's first; per_block scales a block) times the block's sums (per
// channel: the row's one scale, every block).
template <int R>
TAILOR_AVX512 void q4_rows(const PackedGemmArgs& a, int64_t o0, const float* xp,
                           const int32_t* lane_group, int per_block) {
  const int64_t in = a.in, groups = (in + a.group - 1) / a.group, blocks = in / kBlock;
  const uint8_t* row[R];  // row starts (in even: whole bytes)
  const uint16_t* sc[R];
  __m512 total[R];
  for (int r = 0; r < R; ++r) {
    row[r] = a.codes + (o0 + r) * in / 2;
    sc[r] = a.scales + (o0 + r) * groups;
    total[r] = _mm512_setzero_ps();
  }
  const __m512i sidx = _mm512_loadu_si512(lane_group);
  const auto smask = static_cast<__mmask16>((1u << per_block) - 1);
  for (int64_t blk = 0; blk < blocks; ++blk) {
    __m512i v[R];
    const uint16_t* sb[R];
    const int64_t g0 = blk * kBlock / a.group;
    for (int r = 0; r < R; ++r) {
      const uint8_t* w = row[r] + blk * (kBlock / 2);
      prefetch_ahead(w, R * in / 2);
      // The scales are a stream of their own ([out, groups] f16), too short
      // per row for the hardware prefetchers as well.
      if ((blk & 3) == 0) prefetch_ahead(sc[r] + g0, R * groups * 2);
      v[r] = _mm512_loadu_si512(w);
      sb[r] = sc[r] + g0;
    }
    q4_block<R>(v, xp + blk * kBlock, sb, sidx, smask, total);
  }
  if (const int64_t rest = in - blocks * kBlock; rest > 0) {
    const auto bmask = static_cast<__mmask64>((uint64_t{1} << (rest / 2)) - 1);
    const int64_t g0 = blocks * kBlock / a.group;
    const int64_t left = groups - g0;  // groups the last block touches: ≤ per_block
    const auto tmask = left < per_block ? static_cast<__mmask16>((1u << left) - 1) : smask;
    __m512i v[R];
    const uint16_t* sb[R];
    for (int r = 0; r < R; ++r) {
      v[r] = _mm512_maskz_loadu_epi8(bmask, row[r] + blocks * (kBlock / 2));
      sb[r] = sc[r] + g0;
    }
    q4_block<R>(v, xp + blocks * kBlock, sb, sidx, tmask, total);
  }
  for (int r = 0; r < R; ++r) a.y[o0 + r] = _mm512_reduce_add_ps(total[r]);
}

void check_gemv(const PackedGemmArgs& a, const char* kernel) {
  check(a.batch == 1, "kernels", fmt::format("{} takes one row of activations", kernel));
}

void q8_gemv(const PackedGemmArgs& args) {
  check_gemv(args, "q8_f32_gemv_avx512");
  avx2::gemv_over_rows<kRows>(
      args.out, args.in, [&](int64_t o) { q8_rows<kRows>(args, o); },
      [&](int64_t o) { q8_rows<1>(args, o); });
}

void q4_gemv(const PackedGemmArgs& args) {
  check_gemv(args, "q4_f32_gemv_avx512");
  check(q4_gemv_avx512_supported(args), "kernels",
        fmt::format("q4_f32_gemv_avx512 needs an even number of inputs and groups of 16, 32, 64, "
                    "a multiple of 128 or all inputs (in {}, group {})",
                    args.in, args.group));
  // x in the order the table yields (per 128-element block, step s lane k =
  // element 8k + s), zero past the end of x.
  thread_local std::vector<float> xp;
  const int64_t blocks = (args.in + kBlock - 1) / kBlock;
  xp.resize(static_cast<size_t>(blocks * kBlock));
  for (int64_t b = 0; b < blocks; ++b)
    for (int s = 0; s < 8; ++s)
      for (int k = 0; k < 16; ++k) {
        const int64_t j = b * kBlock + 8 * k + s;
        xp[static_cast<size_t>(b * kBlock + 16 * s + k)] = j < args.in ? args.x[j] : 0.0f;
      }
  const float* p = xp.data();
  // Lane k's group within the block: 8k / group (groups of 16, 32, 64), 0 for
  // groups of a multiple of 128 or per channel; a block has per_block scales.
  const bool one = args.group >= args.in || args.group >= kBlock;
  const int per_block = one ? 1 : static_cast<int>(kBlock / args.group);
  int32_t lane_group[16];
  for (int k = 0; k < 16; ++k) lane_group[k] = one ? 0 : static_cast<int32_t>(8 * k / args.group);
  avx2::gemv_over_rows<kRows>(
      args.out, args.in, [&](int64_t o) { q4_rows<kRows>(args, o, p, lane_group, per_block); },
      [&](int64_t o) { q4_rows<1>(args, o, p, lane_group, per_block); });
}

}  // namespace
}  // namespace gemv512

void q8_f32_gemv_avx512(const PackedGemmArgs& args) {
  gemv512::q8_gemv(args);
}

void q4_f32_gemv_avx512(const PackedGemmArgs& args) {
  gemv512::q4_gemv(args);
}

void q8_f32_gemm_avx512(const PackedGemmArgs& args) {
  if (args.batch == 1) {
    q8_f32_gemv_avx512(args);
  } else {
    q8_f32_gemm_avx2(args);
  }
}

void q4_f32_gemm_avx512(const PackedGemmArgs& args) {
  if (args.batch == 1 && q4_gemv_avx512_supported(args)) {
    q4_f32_gemv_avx512(args);
  } else {
    q4_f32_gemm_avx2(args);
  }
}

}  // namespace tailor::schemes::kernels

#pragma GCC diagnostic pop
#undef TAILOR_AVX512

#endif
