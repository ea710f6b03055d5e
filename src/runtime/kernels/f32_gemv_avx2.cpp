// f32_gemv_avx2: one row times a matrix (a decoder step's projections, Gemm
// and MatMul with m = 1) without BLAS's per-call setup. Bᵀ stored [n, k]
// (a weight in [out, in] orientation): 8 output columns at a time, each an
// 8-lane FMA chain over k (the k % 8 tail by masked loads) summed across its
// lanes as ((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7)). B stored
// [k, n]: 32, then 8, then fewer (masked) columns at a time, each column one
// FMA chain over l ascending. Either way y[j] is computed from column j by
// the same operations wherever j falls in a block, so any split of the
// columns gives the same values (F32GemvFn's contract).
#if defined(__AVX2__) && defined(__FMA__)

#include <immintrin.h>

#include "tailor/runtime/kernels/registry.h"

namespace tailor::runtime::kernels {
namespace {

/// Lanes l < r set (r in [0, 8]).
__m256i lane_mask(int64_t r) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(r)),
                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/// y = alpha·s + beta·y (beta = 0: y not read), 8 columns.
__m256 epilogue8(__m256 s, float alpha, float beta, const float* y) {
  const __m256 r = _mm256_mul_ps(s, _mm256_set1_ps(alpha));
  return beta == 0.f ? r : _mm256_fmadd_ps(_mm256_set1_ps(beta), _mm256_loadu_ps(y), r);
}

/// Bᵀ form, columns 0 … kCount − 1 of b (kCount ≤ 8, rows ldb apart): each
/// column's 8-lane FMA chain over k, summed across its lanes, in lane c.
template <int kCount>
__m256 dots(const float* x, const float* b, int64_t ldb, int64_t k, __m256i tail) {
  __m256 acc[8];
  for (int c = 0; c < 8; ++c) acc[c] = _mm256_setzero_ps();
  const int64_t k8 = k / 8 * 8;
  for (int64_t l = 0; l < k8; l += 8) {
    const __m256 xv = _mm256_loadu_ps(x + l);
    for (int c = 0; c < kCount; ++c)
      acc[c] = _mm256_fmadd_ps(xv, _mm256_loadu_ps(b + c * ldb + l), acc[c]);
  }
  if (k8 < k) {
    const __m256 xv = _mm256_maskload_ps(x + k8, tail);
    for (int c = 0; c < kCount; ++c)
      acc[c] = _mm256_fmadd_ps(xv, _mm256_maskload_ps(b + c * ldb + k8, tail), acc[c]);
  }
  // Per 128-bit half, lane c of lo (c < 4) or hi (c ≥ 4): the pair sums of
  // acc c added in pairs; the halves' sum is ((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7)).
  const __m256 lo = _mm256_hadd_ps(_mm256_hadd_ps(acc[0], acc[1]), _mm256_hadd_ps(acc[2], acc[3]));
  const __m256 hi =
      kCount > 4 ? _mm256_hadd_ps(_mm256_hadd_ps(acc[4], acc[5]), _mm256_hadd_ps(acc[6], acc[7]))
                 : _mm256_setzero_ps();
  return _mm256_add_ps(_mm256_permute2f128_ps(lo, hi, 0x20), _mm256_permute2f128_ps(lo, hi, 0x31));
}

void gemv_bt(int64_t n, int64_t k, float alpha, const float* x, const float* b, int64_t ldb,
             float beta, float* y) {
  const __m256i tail = lane_mask(k % 8);
  int64_t j = 0;
  for (; j + 8 <= n; j += 8)
    _mm256_storeu_ps(y + j, epilogue8(dots<8>(x, b + j * ldb, ldb, k, tail), alpha, beta, y + j));
  // The last columns one at a time: the same chain, lane sums and epilogue
  // as a column inside a block of 8.
  for (; j < n; ++j) {
    float yj[8] = {y[j]};
    const __m256 r = epilogue8(dots<1>(x, b + j * ldb, ldb, k, tail), alpha, beta, yj);
    y[j] = _mm256_cvtss_f32(r);
  }
}

/// B form, columns [j, j + 8·kVectors) (the last vector masked by `mask`
/// when `masked`): y = alpha·Σ_l x[l]·B[l, ·] + beta·y.
template <int kVectors, bool kMasked>
void columns(int64_t k, float alpha, const float* x, const float* b, int64_t ldb, float beta,
             float* y, __m256i mask) {
  __m256 acc[kVectors];
  for (int v = 0; v < kVectors; ++v) acc[v] = _mm256_setzero_ps();
  for (int64_t l = 0; l < k; ++l) {
    const __m256 xl = _mm256_broadcast_ss(x + l);
    const float* row = b + l * ldb;
    for (int v = 0; v < kVectors; ++v) {
      const __m256 bv = kMasked && v + 1 == kVectors ? _mm256_maskload_ps(row + 8 * v, mask)
                                                     : _mm256_loadu_ps(row + 8 * v);
      acc[v] = _mm256_fmadd_ps(xl, bv, acc[v]);
    }
  }
  const __m256 al = _mm256_set1_ps(alpha), be = _mm256_set1_ps(beta);
  for (int v = 0; v < kVectors; ++v) {
    const bool last_masked = kMasked && v + 1 == kVectors;
    __m256 r = _mm256_mul_ps(acc[v], al);
    if (beta != 0.f) {
      const __m256 old =
          last_masked ? _mm256_maskload_ps(y + 8 * v, mask) : _mm256_loadu_ps(y + 8 * v);
      r = _mm256_fmadd_ps(be, old, r);
    }
    if (last_masked)
      _mm256_maskstore_ps(y + 8 * v, mask, r);
    else
      _mm256_storeu_ps(y + 8 * v, r);
  }
}

void gemv_b(int64_t n, int64_t k, float alpha, const float* x, const float* b, int64_t ldb,
            float beta, float* y) {
  const __m256i none = _mm256_setzero_si256();
  int64_t j = 0;
  for (; j + 32 <= n; j += 32) columns<4, false>(k, alpha, x, b + j, ldb, beta, y + j, none);
  for (; j + 8 <= n; j += 8) columns<1, false>(k, alpha, x, b + j, ldb, beta, y + j, none);
  if (j < n) columns<1, true>(k, alpha, x, b + j, ldb, beta, y + j, lane_mask(n - j));
}

}  // namespace

void f32_gemv_avx2(bool trans_b, int64_t n, int64_t k, float alpha, const float* x, const float* b,
                   int64_t ldb, float beta, float* y) {
  if (n <= 0) return;
  if (trans_b)
    gemv_bt(n, k, alpha, x, b, ldb, beta, y);
  else
    gemv_b(n, k, alpha, x, b, ldb, beta, y);
}

}  // namespace tailor::runtime::kernels

#endif
