// f32_attention_avx2: scaled dot-product attention per head with the scores
// of 4 keys at a time (8-lane FMA chains over head_dim, one horizontal add
// for the 4) and their maximum alongside, Cephes exponentials 8 at a time
// (f32_math_avx2.h), the weights scaled 8 at a time, and the weighted sum of
// values in 8-lane register accumulators per head_dim chunk.
// Same contract as f32_attention_ref; the sums run in another order.
#if defined(__AVX2__) && defined(__FMA__)

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "runtime/kernels/f32_math_avx2.h"
#include "tailor/runtime/kernels/registry.h"

namespace tailor::runtime::kernels {
namespace {

using detail::exp1;
using detail::exp8;

float hsum(__m256 a) {
  const __m128 s = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
  const __m128 t = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(t, _mm_movehdup_ps(t)));
}

/// scores[j] = q·k_j·scale + mask[j] for j < keys; k_j at k + j·ks. Returns
/// their maximum (−inf when keys is 0), NaN when a score is NaN.
float scores_of(const float* q, const float* k, const float* mask, float* scores, int64_t keys,
                int64_t d, int64_t ks, float scale) {
  const int64_t d8 = d / 8 * 8;
  // Per-lane maximum and NaN flags (maxps drops a NaN in its first operand).
  __m128 best4 = _mm_set1_ps(-INFINITY), nan4 = _mm_setzero_ps();
  int64_t j = 0;
  for (; j + 4 <= keys; j += 4) {
    const float* k0 = k + j * ks;
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (int64_t c = 0; c < d8; c += 8) {
      const __m256 qv = _mm256_loadu_ps(q + c);
      a0 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k0 + c), a0);
      a1 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k0 + ks + c), a1);
      a2 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k0 + 2 * ks + c), a2);
      a3 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k0 + 3 * ks + c), a3);
    }
    // Lanes of t: [a0 pairs, a1 pairs, a2 pairs, a3 pairs] per 128-bit half.
    const __m256 t = _mm256_hadd_ps(_mm256_hadd_ps(a0, a1), _mm256_hadd_ps(a2, a3));
    __m128 dots = _mm_add_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1));
    if (d8 < d) {
      alignas(16) float tail[4] = {0, 0, 0, 0};
      for (int r = 0; r < 4; ++r)
        for (int64_t c = d8; c < d; ++c) tail[r] += q[c] * k0[r * ks + c];
      dots = _mm_add_ps(dots, _mm_load_ps(tail));
    }
    __m128 s = _mm_mul_ps(dots, _mm_set1_ps(scale));
    if (mask) s = _mm_add_ps(s, _mm_loadu_ps(mask + j));
    _mm_storeu_ps(scores + j, s);
    nan4 = _mm_or_ps(nan4, _mm_cmpunord_ps(s, s));
    best4 = _mm_max_ps(best4, s);
  }
  alignas(16) float lanes[4];
  _mm_store_ps(lanes, best4);
  float best = std::max(std::max(lanes[0], lanes[1]), std::max(lanes[2], lanes[3]));
  bool nan = _mm_movemask_ps(nan4) != 0;
  for (; j < keys; ++j) {
    const float* kj = k + j * ks;
    __m256 a = _mm256_setzero_ps();
    for (int64_t c = 0; c < d8; c += 8)
      a = _mm256_fmadd_ps(_mm256_loadu_ps(q + c), _mm256_loadu_ps(kj + c), a);
    float dot = hsum(a);
    for (int64_t c = d8; c < d; ++c) dot += q[c] * kj[c];
    scores[j] = dot * scale + (mask ? mask[j] : 0.0f);
    nan = nan || std::isnan(scores[j]);
    best = std::max(best, scores[j]);
  }
  return nan ? std::numeric_limits<float>::quiet_NaN() : best;
}

/// scores[j] = exp(scores[j] − best) (0 everywhere when best is −inf); returns their sum.
float exponentials(float* scores, int64_t keys, float best) {
  if (best == -INFINITY) {
    std::fill(scores, scores + keys, 0.0f);
    return 0.0f;
  }
  const __m256 b = _mm256_set1_ps(best);
  __m256 acc = _mm256_setzero_ps();
  int64_t j = 0;
  for (; j + 8 <= keys; j += 8) {
    const __m256 e = exp8(_mm256_sub_ps(_mm256_loadu_ps(scores + j), b));
    _mm256_storeu_ps(scores + j, e);
    acc = _mm256_add_ps(acc, e);
  }
  float sum = hsum(acc);
  for (; j < keys; ++j) {
    scores[j] = exp1(scores[j] - best);
    sum += scores[j];
  }
  return sum;
}

/// y = Σ_j (weights[j]·inv)·v_j over d columns, v_j at v + j·ks; the
/// weights are scaled by inv in place first.
void weighted_sum(float* weights, const float* v, float* y, int64_t keys, int64_t d, int64_t ks,
                  float inv) {
  int64_t j = 0;
  for (const __m256 iv = _mm256_set1_ps(inv); j + 8 <= keys; j += 8)
    _mm256_storeu_ps(weights + j, _mm256_mul_ps(_mm256_loadu_ps(weights + j), iv));
  for (; j < keys; ++j) weights[j] *= inv;
  const float* w = weights;
  const int64_t d8 = d / 8 * 8;
  for (int64_t c = 0; c < d8; c += 8) {
    __m256 a0 = _mm256_setzero_ps(), a1 = a0;
    j = 0;
    for (; j + 2 <= keys; j += 2) {
      a0 = _mm256_fmadd_ps(_mm256_broadcast_ss(w + j), _mm256_loadu_ps(v + j * ks + c), a0);
      a1 = _mm256_fmadd_ps(_mm256_broadcast_ss(w + j + 1), _mm256_loadu_ps(v + (j + 1) * ks + c),
                           a1);
    }
    if (j < keys)
      a0 = _mm256_fmadd_ps(_mm256_broadcast_ss(w + j), _mm256_loadu_ps(v + j * ks + c), a0);
    _mm256_storeu_ps(y + c, _mm256_add_ps(a0, a1));
  }
  for (int64_t c = d8; c < d; ++c) {
    float acc = 0;
    for (j = 0; j < keys; ++j) acc += w[j] * v[j * ks + c];
    y[c] = acc;
  }
}

}  // namespace

void f32_attention_avx2(const float* q, const float* k, const float* v, const float* mask, float* y,
                        int64_t heads, int64_t rows, int64_t keys, int64_t d,
                        int64_t kv_head_stride, int64_t key_stride, float scale) {
  std::vector<float> scores(static_cast<size_t>(keys));
  float* s = scores.data();
  for (int64_t h = 0; h < heads; ++h) {
    const float* kh = k + h * kv_head_stride;
    const float* vh = v + h * kv_head_stride;
    for (int64_t i = 0; i < rows; ++i) {
      // A NaN score makes best NaN, so the row NaN, as in _ref.
      const float best = scores_of(q + (h * rows + i) * d, kh, mask ? mask + i * keys : nullptr, s,
                                   keys, d, key_stride, scale);
      const float sum = exponentials(s, keys, best);
      weighted_sum(s, vh, y + (h * rows + i) * d, keys, d, key_stride, sum > 0 ? 1.0f / sum : 0.0f);
    }
  }
}

}  // namespace tailor::runtime::kernels

#endif
