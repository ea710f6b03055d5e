// AVX2/FMA 2:4-sparse kernel: four groups (eight kept values) at a time, the
// 2-bit positions unpacked with vpsrlvd and the matching activations fetched
// with one gather per row of X.
#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)

#include <algorithm>
#include <vector>

#include "../packing.h"
#include "avx2_util.h"
#include "tailor/schemes/kernels.h"

namespace tailor::schemes::kernels {
namespace {

using avx2::hsum;

// Input offsets of kept values t … t+7 (t even) relative to group t/2's first input.
inline __m256i offsets8(const Sparse24GemmArgs& a, int64_t index) {
  const uint32_t w = avx2::load_bits(a.indices, a.index_bytes, index, 2);
  const __m256i pos =
      _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(static_cast<int32_t>(w)),
                                         _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14)),
                       _mm256_set1_epi32(3));
  return _mm256_add_epi32(pos, _mm256_setr_epi32(0, 0, 4, 4, 8, 8, 12, 12));
}

template <int NB>
void fused(const Sparse24GemmArgs& a, int64_t b0) {
  const int64_t in = a.in, kr = sparse24_kept_per_row(in), body = 2 * (in / 4) / 8 * 8;
  const float* x = a.x + b0 * in;
#pragma omp parallel for schedule(dynamic, \
                                  avx2::kRowsPerTask) if (a.out * in >= avx2::kParallelMinWeights)
  for (int64_t o = 0; o < a.out; ++o) {
    const float* v = a.values + o * kr;
    __m256 acc[NB];
    for (int b = 0; b < NB; ++b) acc[b] = _mm256_setzero_ps();
    for (int64_t t = 0; t < body; t += 8) {
      const __m256i off = offsets8(a, o * kr + t);
      const __m256 vals = _mm256_loadu_ps(v + t);
      const int64_t j0 = 2 * t;  // first input of group t/2
      for (int b = 0; b < NB; ++b)
        acc[b] = _mm256_fmadd_ps(vals, _mm256_i32gather_ps(x + b * in + j0, off, 4), acc[b]);
    }
    for (int b = 0; b < NB; ++b) {
      float y = hsum(acc[b]);
      for (int64_t t = body; t < kr; ++t)
        y += v[t] *
             x[b * in + 4 * (t / 2) + detail::get_ucode(a.indices, a.index_bytes, o * kr + t, 2)];
      a.y[(b0 + b) * a.out + o] = y;
    }
  }
}

// Ŵ row o into `row` [in]: zeros, then the kept values at their positions.
void decode_row(const Sparse24GemmArgs& a, int64_t o, float* row) {
  const int64_t kr = sparse24_kept_per_row(a.in);
  std::fill(row, row + a.in, 0.0f);
  for (int64_t t = 0; t < kr; ++t)
    row[4 * (t / 2) + detail::get_ucode(a.indices, a.index_bytes, o * kr + t, 2)] +=
        a.values[o * kr + t];
}

}  // namespace

void s24_f32_gemm_avx2(const Sparse24GemmArgs& a) {
  if (a.batch > avx2::kFusedMaxBatch) {
    avx2::panel_gemm(a.out, a.in, a.x, a.batch, a.y,
                     [&a](int64_t o, float* row) { decode_row(a, o, row); });
    return;
  }
  int64_t b = 0;
  for (; b + avx2::kBatchTile <= a.batch; b += avx2::kBatchTile) fused<avx2::kBatchTile>(a, b);
  for (; b < a.batch; ++b) fused<1>(a, b);
}

}  // namespace tailor::schemes::kernels

#endif
