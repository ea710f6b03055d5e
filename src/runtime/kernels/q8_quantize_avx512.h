// The W8A8 kernels' activation quantization on AVX-512 (16 lanes), shared
// by q8_q8_conv_6x32_avx512vnni and q8_q8_conv1x1_8x16_avx512vnni: the codes
// of the definition (registry.h, Q8Q8Conv1x1Params / Q8Q8ConvParams; the
// references q8_q8_conv1x1_ref and q8_q8_conv_ref): for a scale s = max|x|/127,
// qx = clamp(floor(|x/s| + 0.5), 0, 127) with x/s's sign, as int32 lanes,
// packed four channels to a dword as u8 qx + 128 (VPDPBUSD's unsigned
// operand). code_fast takes the codes by one multiplication by fl(1/s) where
// that provably gives the reference's, and flags the lanes where it may not
// (the caller redoes them by code_exact's division). Functions carry
// AVX512-F/BW/VL/VNNI target attributes (the build stays x86-64-v3); the
// callers are compiled for the same targets and chosen at run time by the
// registry.
#pragma once

#include <immintrin.h>

#include <cstdint>

// GCC 12's AVX-512 intrinsics pass _mm512_undefined_*() as a merge operand,
// which -Wmaybe-uninitialized reports at every use (GCC bug 105593).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#define TAILOR_Q8_AVX512_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni")))
#define TAILOR_Q8_AVX512_INLINE TAILOR_Q8_AVX512_TARGET __attribute__((always_inline)) inline

namespace tailor::runtime::kernels::q8avx512 {

/// qx from t = x/s (16 lanes, int32 in [−127, 127]), the reference's f32
/// operations: floor(|t| + 0.5), min 127, t's sign.
TAILOR_Q8_AVX512_INLINE __m512i code_of(__m512 t) {
  const __m512i ti = _mm512_castps_si512(t);
  __m512 r = _mm512_add_ps(_mm512_castsi512_ps(_mm512_and_si512(ti, _mm512_set1_epi32(0x7FFFFFFF))),
                           _mm512_set1_ps(0.5f));
  r = _mm512_min_ps(_mm512_roundscale_ps(r, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC),
                    _mm512_set1_ps(127.0f));
  r = _mm512_castsi512_ps(
      _mm512_or_si512(_mm512_castps_si512(r),
                      _mm512_and_si512(ti, _mm512_set1_epi32(static_cast<int>(0x80000000u)))));
  return _mm512_cvttps_epi32(r);
}

/// The codes of the 16 values v by the reference's operations: t = v/s (a
/// division per value; `div` is s, or 1 where s = 0).
TAILOR_Q8_AVX512_INLINE __m512i code_exact(__m512 v, __m512 div) {
  return code_of(_mm512_div_ps(v, div));
}

/// The same codes without the division where that is provably safe: t' =
/// v·fl(1/s) is within three rounding errors of t = fl(v/s), |t' − t| ≤
/// 128·3·2^−24 < 2^−15 (|t| ≤ 127·(1 + 2^−23)), and the reference's
/// floor(fl(|t| + 0.5)) is the integer nearest t wherever t is more than
/// 2^−17 (half an ulp below 256) from a half-integer. So where t' lies more
/// than 2^−13 from every half-integer, t' rounded to nearest is the
/// reference's code (|t'| < 127.5: no clamp needed). Lanes closer than that,
/// or not finite (1/s overflowing), are flagged in `near`, and the caller
/// redoes them with code_exact (~2.4·10^−4 of values). rcp = fl(1/div).
TAILOR_Q8_AVX512_INLINE __m512i code_fast(__m512 v, __m512 rcp, __mmask16& near) {
  const __m512 t = _mm512_mul_ps(v, rcp);
  const __m512 e =
      _mm512_sub_ps(t, _mm512_roundscale_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  const __m512 ae =
      _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(e), _mm512_set1_epi32(0x7FFFFFFF)));
  near |= _mm512_cmp_ps_mask(ae, _mm512_set1_ps(0.5f - 0x1p-13f), _CMP_NLT_UQ);
  return _mm512_cvt_roundps_epi32(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

/// Four channels' codes (int32 in [−127, 127], 16 pixels each) → 16 dwords,
/// pixel j's holding qx + 128 of the four channels in its bytes 0–3.
TAILOR_Q8_AVX512_INLINE __m512i pack_quad(__m512i q0, __m512i q1, __m512i q2, __m512i q3) {
  // Per 128-bit lane (pixels 4L … 4L + 3): bytes q0[0..3] q1[0..3] q2[0..3]
  // q3[0..3], then a 4×4 byte transpose.
  const __m512i b = _mm512_packs_epi16(_mm512_packs_epi32(q0, q1), _mm512_packs_epi32(q2, q3));
  const __m512i t = _mm512_set4_epi32(0x0f0b0703, 0x0e0a0602, 0x0d090501, 0x0c080400);
  return _mm512_xor_si512(_mm512_shuffle_epi8(b, t), _mm512_set1_epi8(static_cast<char>(0x80)));
}

/// The packed codes (pack_quad) of four channels' 16 values each, by
/// code_fast, or by code_exact for all four where a lane is near a
/// half-integer. rcp = fl(1/div), div = s (both 1 where s = 0).
TAILOR_Q8_AVX512_INLINE __m512i quad_codes(__m512 v0, __m512 v1, __m512 v2, __m512 v3, __m512 rcp,
                                           __m512 div) {
  __mmask16 near = 0;
  const __m512i q0 = code_fast(v0, rcp, near), q1 = code_fast(v1, rcp, near);
  const __m512i q2 = code_fast(v2, rcp, near), q3 = code_fast(v3, rcp, near);
  return near == 0 ? pack_quad(q0, q1, q2, q3)
                   : pack_quad(code_exact(v0, div), code_exact(v1, div), code_exact(v2, div),
                               code_exact(v3, div));
}

/// acc = max(acc, |v|); bad |= the lanes of v holding NaN or ±Inf.
TAILOR_Q8_AVX512_INLINE void max_step(__m512 v, __m512& acc, __mmask16& bad) {
  const __m512i vi = _mm512_castps_si512(v);
  const __m512i exp_mask = _mm512_set1_epi32(0x7F800000);
  acc =
      _mm512_max_ps(acc, _mm512_castsi512_ps(_mm512_and_si512(vi, _mm512_set1_epi32(0x7FFFFFFF))));
  bad |= _mm512_cmpeq_epi32_mask(_mm512_and_si512(vi, exp_mask), exp_mask);
}

/// acc += VPDPBUSD(u, w) in place (u8 u × s8 w, four products per int32
/// lane, wrapping). Through inline asm: GCC 12 copies each accumulator of
/// _mm512_dpbusd_epi32 to a new register and back every iteration (24 moves
/// per 12 products in a 6 × 32 tile).
TAILOR_Q8_AVX512_INLINE void dpbusd(__m512i& acc, __m512i u, __m512i w) {
  asm("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(u), "v"(w));
}

}  // namespace tailor::runtime::kernels::q8avx512

#pragma GCC diagnostic pop
