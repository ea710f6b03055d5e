// f32_rope_avx2: RoPE in the rotation-matrix form (registry.h, F32RopeFn),
// 8 columns of a row at a time (the last ones by masked loads and stores):
// (x·R) as 8-lane FMA chains over e, x[e] broadcast against row e of R, then
// fma(x, cos, (x·R)·sin). The lanes run f32_rope_ref's operations in its
// order, so the two agree bit for bit.
#if defined(__AVX2__) && defined(__FMA__)

#include <immintrin.h>

#include "tailor/runtime/kernels/registry.h"

namespace tailor::runtime::kernels {
namespace {

/// Columns [c0, c0 + 8) of one row (lanes past `mask` neither read nor written when kMasked).
template <bool kMasked>
void rope8(const float* x, const float* cos, const float* sin, const float* r, int64_t d,
           int64_t c0, float* y, __m256i mask) {
  auto load = [&](const float* p) {
    return kMasked ? _mm256_maskload_ps(p, mask) : _mm256_loadu_ps(p);
  };
  __m256 turned = _mm256_setzero_ps();
  for (int64_t e = 0; e < d; ++e)
    turned = _mm256_fmadd_ps(_mm256_broadcast_ss(x + e), load(r + e * d + c0), turned);
  const __m256 out =
      _mm256_fmadd_ps(load(x + c0), load(cos + c0), _mm256_mul_ps(turned, load(sin + c0)));
  if (kMasked)
    _mm256_maskstore_ps(y + c0, mask, out);
  else
    _mm256_storeu_ps(y + c0, out);
}

}  // namespace

void f32_rope_avx2(const float* x, int64_t x_stride, const float* cos, const float* sin,
                   const float* r, int64_t d, int64_t rows, float* y, int64_t y_stride) {
  const int64_t d8 = d / 8 * 8;
  const __m256i tail = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(d - d8)),
                                          _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  const __m256i none = _mm256_setzero_si256();
  for (int64_t row = 0; row < rows; ++row) {
    const float* xr = x + row * x_stride;
    float* yr = y + row * y_stride;
    for (int64_t c0 = 0; c0 < d8; c0 += 8) rope8<false>(xr, cos, sin, r, d, c0, yr, none);
    if (d8 < d) rope8<true>(xr, cos, sin, r, d, d8, yr, tail);
  }
}

}  // namespace tailor::runtime::kernels

#endif
