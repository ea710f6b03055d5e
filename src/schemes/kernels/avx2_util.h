// Pieces the AVX2/FMA kernels share: horizontal sums, bounded unaligned
// loads of packed codes, and the decoded-panel GEMM used for larger batches.
#pragma once

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

namespace tailor::schemes::kernels::avx2 {

/// Batches up to this many rows fuse decoding into the dot products (each
/// decoded chunk of weights feeds every row of X); larger batches decode
/// panels of Ŵ rows once into a per-thread buffer and reuse them for the batch.
inline constexpr int64_t kFusedMaxBatch = 8;
/// Rows of X handled together by the fused path.
inline constexpr int kBatchTile = 4;
/// Output rows per OpenMP task of the fused path. Tasks are handed out
/// dynamically: on a shared machine a descheduled thread then delays only its
/// current task, not a fixed half of the rows.
inline constexpr int64_t kRowsPerTask = 64;
/// Weights (elements) below which the kernels stay on one thread.
inline constexpr int64_t kParallelMinWeights = int64_t{1} << 16;
/// Ŵ rows decoded per panel (per thread) and the reduction block of the panel GEMM.
inline constexpr int64_t kPanelRows = 16;
inline constexpr int64_t kPanelKBlock = 1024;

/// Sum of the 8 lanes.
inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

/// 8 bytes of `stream` from byte `byte` (a stream of `bytes` bytes),
/// little-endian, zero-filled past the end: never reads out of bounds.
inline uint64_t load_u64(const uint8_t* stream, uint64_t bytes, uint64_t byte) {
  uint64_t v = 0;
  if (byte + 8 <= bytes) {
    std::memcpy(&v, stream + byte, 8);
  } else {
    for (uint64_t k = byte; k < bytes; ++k)
      v |= static_cast<uint64_t>(stream[k]) << (8 * (k - byte));
  }
  return v;
}

/// The bits of codes index, index+1, … (`bits` each) from bit 0 on; at least
/// 57 valid bits, enough for 8 codes of up to 7 bits.
inline uint64_t load_bits(const uint8_t* stream, uint64_t bytes, int64_t index, int bits) {
  const uint64_t bit = static_cast<uint64_t>(index) * static_cast<uint64_t>(bits);
  return load_u64(stream, bytes, bit >> 3) >> (bit & 7);
}

/// A batch-1 GEMV's rows: blocks of PassRows rows (rows(o) computes rows o …
/// o + PassRows − 1) handed to OpenMP threads kRowsPerTask rows at a time (whole
/// cache lines of y per task: no false sharing), the last out mod PassRows rows
/// one by one (row(o)). Below kParallelMinWeights no parallel region is
/// entered at all (a decode step of a small model makes dozens of such calls).
/// Each row is computed by one thread alone, so the output does not depend on
/// the number of threads.
template <int PassRows, class Rows, class Row>
void gemv_over_rows(int64_t out, int64_t in, const Rows& rows, const Row& row) {
  static_assert(kRowsPerTask % PassRows == 0 && kRowsPerTask * sizeof(float) % 64 == 0);
  const int64_t full = out / PassRows * PassRows, tasks = (full + kRowsPerTask - 1) / kRowsPerTask;
  if (out * in >= kParallelMinWeights) {
#pragma omp parallel for schedule(dynamic, 1)
    for (int64_t t = 0; t < tasks; ++t) {
      const int64_t end = std::min(full, (t + 1) * kRowsPerTask);
      for (int64_t o = t * kRowsPerTask; o < end; o += PassRows) rows(o);
    }
  } else {
    for (int64_t o = 0; o < full; o += PassRows) rows(o);
  }
  for (int64_t o = full; o < out; ++o) row(o);
}

// acc[m][r] += Σ_k x[m][k]·w[r][k] over k < kn for an MB×NR tile.
template <int MB, int NR>
inline void panel_tile(const float* x, int64_t ldx, const float* w, int64_t ldw, int64_t kn,
                       float* y, int64_t ldy) {
  __m256 acc[MB][NR];
  for (int m = 0; m < MB; ++m)
    for (int r = 0; r < NR; ++r) acc[m][r] = _mm256_setzero_ps();
  int64_t k = 0;
  for (; k + 8 <= kn; k += 8) {
    __m256 wv[NR];
    for (int r = 0; r < NR; ++r) wv[r] = _mm256_loadu_ps(w + r * ldw + k);
    for (int m = 0; m < MB; ++m) {
      const __m256 xv = _mm256_loadu_ps(x + m * ldx + k);
      for (int r = 0; r < NR; ++r) acc[m][r] = _mm256_fmadd_ps(xv, wv[r], acc[m][r]);
    }
  }
  for (int m = 0; m < MB; ++m)
    for (int r = 0; r < NR; ++r) {
      float s = hsum(acc[m][r]);
      for (int64_t t = k; t < kn; ++t) s += x[m * ldx + t] * w[r * ldw + t];
      y[m * ldy + r] += s;
    }
}

/// Y[batch, out] = X[batch, in]·Ŵᵀ where decode_row(o, row) writes Ŵ row o
/// (f32 [in]). Each thread decodes panels of kPanelRows rows into its own
/// buffer and multiplies them with register-blocked 4×2 tiles, k blocked by
/// kPanelKBlock so a tile's operands stay in L1.
template <class DecodeRow>
void panel_gemm(int64_t out, int64_t in, const float* x, int64_t batch, float* y,
                const DecodeRow& decode_row) {
  const int64_t panels = (out + kPanelRows - 1) / kPanelRows;
#pragma omp parallel if (out * in >= kParallelMinWeights)
  {
    std::vector<float> w(static_cast<size_t>(kPanelRows * in));
    std::vector<float> acc(static_cast<size_t>(batch * kPanelRows));
#pragma omp for schedule(dynamic, 1)
    for (int64_t p = 0; p < panels; ++p) {
      const int64_t o0 = p * kPanelRows, nr = std::min(kPanelRows, out - o0);
      for (int64_t r = 0; r < nr; ++r) decode_row(o0 + r, w.data() + r * in);
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (int64_t k0 = 0; k0 < in; k0 += kPanelKBlock) {
        const int64_t kn = std::min(kPanelKBlock, in - k0);
        const float* wk = w.data() + k0;
        int64_t b = 0;
        for (; b + 4 <= batch; b += 4) {
          const float* xb = x + b * in + k0;
          float* yb = acc.data() + b * kPanelRows;
          int64_t r = 0;
          for (; r + 2 <= nr; r += 2)
            panel_tile<4, 2>(xb, in, wk + r * in, in, kn, yb + r, kPanelRows);
          for (; r < nr; ++r) panel_tile<4, 1>(xb, in, wk + r * in, in, kn, yb + r, kPanelRows);
        }
        for (; b < batch; ++b) {
          const float* xb = x + b * in + k0;
          float* yb = acc.data() + b * kPanelRows;
          int64_t r = 0;
          for (; r + 2 <= nr; r += 2)
            panel_tile<1, 2>(xb, in, wk + r * in, in, kn, yb + r, kPanelRows);
          for (; r < nr; ++r) panel_tile<1, 1>(xb, in, wk + r * in, in, kn, yb + r, kPanelRows);
        }
      }
      for (int64_t b = 0; b < batch; ++b)
        std::copy_n(acc.data() + b * kPanelRows, nr, y + b * out + o0);
    }
  }
}

}  // namespace tailor::schemes::kernels::avx2

#endif
