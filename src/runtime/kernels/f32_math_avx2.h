// Cephes exp/sigmoid/tanh on 8 AVX2/FMA lanes and the one-lane versions with
// the same polynomials (for loop tails), so a value's result does not depend
// on whether it fell in a vector or a tail. Shared by the AVX2 kernels only.
// NaN in, NaN out (vminps/vmaxps return their second operand when either is
// NaN, so the clamps put x second).
#pragma once

#if defined(__AVX2__) && defined(__FMA__)

#include <immintrin.h>

#include <bit>
#include <cmath>
#include <cstdint>

namespace tailor::runtime::kernels::detail {

// Cephes expf (S. L. Moshier): x = n·ln2 + r with |r| ≤ ln2/2, ln2 split in
// two parts for an exact reduction, e^r by a degree-6 polynomial, 2^n via the
// exponent bits.
constexpr float kExpHi = 88.7228390f;      // ln(FLT_MAX): above, the result is +inf
constexpr float kExpLo = -87.3365447504f;  // below: the result is 0 (no denormals)
constexpr float kLog2e = 1.44269504088896341f;
constexpr float kLn2Hi = 0.693359375f;
constexpr float kLn2Lo = -2.12194440e-4f;
constexpr float kP0 = 1.9875691500E-4f, kP1 = 1.3981999507E-3f, kP2 = 8.3334519073E-3f,
                kP3 = 4.1665795894E-2f, kP4 = 1.6666665459E-1f, kP5 = 5.0000001201E-1f;

inline __m256 exp8(__m256 x) {
  const __m256 lo_mask = _mm256_cmp_ps(x, _mm256_set1_ps(kExpLo), _CMP_LT_OQ);
  const __m256 hi_mask = _mm256_cmp_ps(x, _mm256_set1_ps(kExpHi), _CMP_GT_OQ);
  x = _mm256_min_ps(_mm256_set1_ps(kExpHi), x);
  x = _mm256_max_ps(_mm256_set1_ps(kExpLo), x);
  __m256 fx = _mm256_fmadd_ps(x, _mm256_set1_ps(kLog2e), _mm256_set1_ps(0.5f));
  fx = _mm256_floor_ps(fx);
  x = _mm256_fnmadd_ps(fx, _mm256_set1_ps(kLn2Hi), x);
  x = _mm256_fnmadd_ps(fx, _mm256_set1_ps(kLn2Lo), x);
  const __m256 z = _mm256_mul_ps(x, x);
  __m256 y = _mm256_set1_ps(kP0);
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(kP1));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(kP2));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(kP3));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(kP4));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(kP5));
  y = _mm256_fmadd_ps(y, z, x);
  y = _mm256_add_ps(y, _mm256_set1_ps(1.f));
  // 2^n: n in [−126, 128]; n = 128 (x near kExpHi) is split as 2·2^127.
  __m256i n = _mm256_cvttps_epi32(fx);
  const __m256i n1 = _mm256_srai_epi32(n, 1);
  const __m256i n2 = _mm256_sub_epi32(n, n1);
  const __m256 p1 =
      _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, _mm256_set1_epi32(127)), 23));
  const __m256 p2 =
      _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, _mm256_set1_epi32(127)), 23));
  y = _mm256_mul_ps(_mm256_mul_ps(y, p1), p2);
  y = _mm256_blendv_ps(y, _mm256_set1_ps(__builtin_inff()), hi_mask);
  return _mm256_andnot_ps(lo_mask, y);
}

inline float exp1(float x) {
  // Same arithmetic as exp8, one lane (FMA via std::fma so the rounding matches).
  if (std::isnan(x)) return x;
  if (x < kExpLo) return 0.f;
  if (x > kExpHi) return __builtin_inff();
  const float fx = std::floor(std::fma(x, kLog2e, 0.5f));
  x = std::fma(-fx, kLn2Hi, x);
  x = std::fma(-fx, kLn2Lo, x);
  const float z = x * x;
  float y = kP0;
  y = std::fma(y, x, kP1);
  y = std::fma(y, x, kP2);
  y = std::fma(y, x, kP3);
  y = std::fma(y, x, kP4);
  y = std::fma(y, x, kP5);
  y = std::fma(y, z, x);
  y = y + 1.f;
  // y·2^n in two exact power-of-two products (|n| ≤ 128, so each factor
  // 2^n1, 2^(n − n1) is a normal float built from its exponent bits): the
  // same correctly rounded results as ldexp, without the libm calls.
  const int n = static_cast<int>(fx);
  const int n1 = n >> 1;
  auto pow2 = [](int e) { return std::bit_cast<float>(static_cast<uint32_t>(e + 127) << 23); };
  return y * pow2(n1) * pow2(n - n1);
}

inline __m256 sigmoid8(__m256 x) {
  const __m256 e = exp8(_mm256_sub_ps(_mm256_setzero_ps(), x));
  return _mm256_div_ps(_mm256_set1_ps(1.f), _mm256_add_ps(_mm256_set1_ps(1.f), e));
}
inline float sigmoid1(float x) {
  return 1.f / (1.f + exp1(-x));
}

// Cephes tanhf: |x| < 0.625: odd polynomial; else 1 − 2/(e^{2|x|} + 1) with the sign.
constexpr float kT0 = -5.70498872745E-3f, kT1 = 2.06390887954E-2f, kT2 = -5.37397155531E-2f,
                kT3 = 1.33314422036E-1f, kT4 = -3.33332819422E-1f;

inline __m256 tanh8(__m256 x) {
  const __m256 sign = _mm256_and_ps(x, _mm256_set1_ps(-0.f));
  const __m256 ax = _mm256_andnot_ps(_mm256_set1_ps(-0.f), x);
  const __m256 z = _mm256_mul_ps(x, x);
  __m256 p = _mm256_set1_ps(kT0);
  p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(kT1));
  p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(kT2));
  p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(kT3));
  p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(kT4));
  p = _mm256_fmadd_ps(_mm256_mul_ps(p, z), x, x);
  const __m256 e = exp8(_mm256_add_ps(ax, ax));
  __m256 big =
      _mm256_sub_ps(_mm256_set1_ps(1.f),
                    _mm256_div_ps(_mm256_set1_ps(2.f), _mm256_add_ps(e, _mm256_set1_ps(1.f))));
  big = _mm256_or_ps(big, sign);
  const __m256 small = _mm256_cmp_ps(ax, _mm256_set1_ps(0.625f), _CMP_LT_OQ);
  return _mm256_blendv_ps(big, p, small);
}

inline float tanh1(float x) {
  const float ax = std::fabs(x);
  if (ax < 0.625f) {
    const float z = x * x;
    float p = kT0;
    p = std::fma(p, z, kT1);
    p = std::fma(p, z, kT2);
    p = std::fma(p, z, kT3);
    p = std::fma(p, z, kT4);
    return std::fma(p * z, x, x);
  }
  if (std::isnan(x)) return x;
  const float e = exp1(ax + ax);
  return std::copysign(1.f - 2.f / (e + 1.f), x);
}

}  // namespace tailor::runtime::kernels::detail

#endif  // __AVX2__ && __FMA__
