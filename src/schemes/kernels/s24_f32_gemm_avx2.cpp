// AVX2/FMA 2:4-sparse kernel. Two groups (four kept values, one byte of
// 2-bit positions) expand at a time into the eight weights they stand for:
// the byte indexes a 256-entry table of vpermps lanes that places each kept
// value at its position and marks the other inputs (sign bit) for zeroing,
// so the product with X is one dense FMA over 8 inputs, without gathers.
#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)

#include <algorithm>
#include <array>

#include "../packing.h"
#include "avx2_util.h"
#include "tailor/schemes/kernels.h"

namespace tailor::schemes::kernels {
namespace {

using avx2::hsum;

// For a byte of four positions (kept values 0, 1 in group A; 2, 3 in group
// B): input lane 4·g + p takes kept value 2g (p = its first position) or 2g+1
// (p = its second), else −1. Positions within a group are distinct (the
// format's rule).
struct ExpandTable {
  alignas(32) std::array<std::array<int32_t, 8>, 256> lane;
};

constexpr ExpandTable make_expand_table() {
  ExpandTable t{};
  for (int key = 0; key < 256; ++key)
    for (int g = 0; g < 2; ++g) {
      const int p0 = (key >> (4 * g)) & 3, p1 = (key >> (4 * g + 2)) & 3;
      for (int p = 0; p < 4; ++p)
        t.lane[key][4 * g + p] = p == p0 ? 2 * g : (p == p1 ? 2 * g + 1 : -1);
    }
  return t;
}

constexpr ExpandTable kExpand = make_expand_table();

// Weights of inputs 2t … 2t+7 from kept values t … t+3 and their position byte.
inline __m256 expand8(const float* v, uint32_t key) {
  const __m256i lanes =
      _mm256_load_si256(reinterpret_cast<const __m256i*>(kExpand.lane[key].data()));
  const __m256 kept = _mm256_castps128_ps256(_mm_loadu_ps(v));
  const __m256 w = _mm256_permutevar8x32_ps(kept, lanes);
  return _mm256_blendv_ps(w, _mm256_setzero_ps(), _mm256_castsi256_ps(lanes));
}

template <int NB>
inline constexpr int kS24Chains = NB == 1 ? 4 : 1;

template <int NB>
void fused(const Sparse24GemmArgs& a, int64_t b0) {
  constexpr int C = kS24Chains<NB>;
  // Kept values of full groups: 2·floor(in/4); the rest (a short group) is scalar.
  const int64_t in = a.in, kr = sparse24_kept_per_row(in), full = 2 * (in / 4);
  const float* x = a.x + b0 * in;
#pragma omp parallel for schedule(dynamic, \
                                  avx2::kRowsPerTask) if (a.out * in >= avx2::kParallelMinWeights)
  for (int64_t o = 0; o < a.out; ++o) {
    const float* v = a.values + o * kr;
    __m256 acc[NB][C];
    for (int b = 0; b < NB; ++b)
      for (int c = 0; c < C; ++c) acc[b][c] = _mm256_setzero_ps();
    int64_t t = 0;
    for (; t + 16 <= full; t += 16) {  // 16 kept values: 32 position bits, one load
      const uint64_t bits = avx2::load_bits(a.indices, a.index_bytes, o * kr + t, 2);
      for (int c = 0; c < 4; ++c) {
        const __m256 w = expand8(v + t + 4 * c, static_cast<uint32_t>(bits >> (8 * c)) & 0xFF);
        for (int b = 0; b < NB; ++b)
          acc[b][c % C] =
              _mm256_fmadd_ps(w, _mm256_loadu_ps(x + b * in + 2 * (t + 4 * c)), acc[b][c % C]);
      }
    }
    for (; t + 4 <= full; t += 4) {
      const auto key =
          static_cast<uint32_t>(avx2::load_bits(a.indices, a.index_bytes, o * kr + t, 2)) & 0xFF;
      const __m256 w = expand8(v + t, key);
      for (int b = 0; b < NB; ++b)
        acc[b][0] = _mm256_fmadd_ps(w, _mm256_loadu_ps(x + b * in + 2 * t), acc[b][0]);
    }
    for (int b = 0; b < NB; ++b) {
      __m256 sum = acc[b][0];
      for (int c = 1; c < C; ++c) sum = _mm256_add_ps(sum, acc[b][c]);
      float y = hsum(sum);
      for (int64_t k = t; k < kr; ++k)
        y += v[k] *
             x[b * in + 4 * (k / 2) + detail::get_ucode(a.indices, a.index_bytes, o * kr + k, 2)];
      a.y[(b0 + b) * a.out + o] = y;
    }
  }
}

// Ŵ row o into `row` [in]: full groups expanded eight inputs at a time, the
// short last group (if any) zero-filled and set element by element.
void decode_row(const Sparse24GemmArgs& a, int64_t o, float* row) {
  const int64_t in = a.in, kr = sparse24_kept_per_row(in), full = 2 * (in / 4);
  const float* v = a.values + o * kr;
  int64_t t = 0;
  for (; t + 4 <= full; t += 4) {
    const auto key =
        static_cast<uint32_t>(avx2::load_bits(a.indices, a.index_bytes, o * kr + t, 2)) & 0xFF;
    _mm256_storeu_ps(row + 2 * t, expand8(v + t, key));
  }
  std::fill(row + 2 * t, row + in, 0.0f);
  for (; t < kr; ++t)
    row[4 * (t / 2) + detail::get_ucode(a.indices, a.index_bytes, o * kr + t, 2)] = v[t];
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
