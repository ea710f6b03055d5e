// The 6×16 register-tiled FMA micro-kernel (Goto & van de Geijn, "Anatomy of
// high-performance matrix multiplication", TOMS 34(3), 2008) shared by the
// conv kernels: f32_conv_gemm_6x16_avx2 (implicit im2col) and
// f32_conv_winograd_f43_avx2 (one product per Winograd point) feed it packed
// panels, ap[k·6 + r] (6 output channels, k-major) and bp[k·16 + t] (16
// columns); qb_f32_conv_6x16_avx2 its strided form on decoded weight rows.
#pragma once

#if defined(__AVX2__) && defined(__FMA__)

#include <immintrin.h>

#include <cstdint>

namespace tailor::runtime::kernels::detail {

constexpr int64_t kMr = 6;    // output channels per tile
constexpr int64_t kNr = 16;   // output pixels per tile
constexpr int64_t kKc = 256;  // reduction chunk: a 16·256 B panel (16 KB) stays in L1

// c[r·16 + t] (+)= Σ_{i<k} a[r·a_row + i·a_k]·b[i·b_k + t] for r < R,
// t < 16 (c a contiguous 6×16 tile); with kAccumulate the sums continue from
// c. R < 6 serves a last panel of fewer channels without computing the
// padding rows. The strides serve both packed panels (a_row 1, a_k 6, b_k 16)
// and rows read in place (a row-major Ŵ with a_row = its row length, a_k 1).
template <int R, bool kAccumulate>
__attribute__((always_inline)) inline void kernel_rx16_strided(int64_t k, const float* a,
                                                               int64_t a_row, int64_t a_k,
                                                               const float* b, int64_t b_k,
                                                               float* c) {
  __m256 acc[R][2];
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r) {
    acc[r][0] = kAccumulate ? _mm256_loadu_ps(c + r * kNr) : _mm256_setzero_ps();
    acc[r][1] = kAccumulate ? _mm256_loadu_ps(c + r * kNr + 8) : _mm256_setzero_ps();
  }
  for (int64_t i = 0; i < k; ++i) {
    const __m256 b0 = _mm256_loadu_ps(b + i * b_k), b1 = _mm256_loadu_ps(b + i * b_k + 8);
    const float* ai = a + i * a_k;
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      const __m256 av = _mm256_broadcast_ss(ai + r * a_row);
      acc[r][0] = _mm256_fmadd_ps(av, b0, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(av, b1, acc[r][1]);
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r) {
    _mm256_storeu_ps(c + r * kNr, acc[r][0]);
    _mm256_storeu_ps(c + r * kNr + 8, acc[r][1]);
  }
}

// The packed-panel form: c[r·16 + t] (+)= Σ_k ap[k·6 + r]·bp[k·16 + t].
template <int R, bool kAccumulate>
inline void kernel_rx16(int64_t k, const float* ap, const float* bp, float* c) {
  kernel_rx16_strided<R, kAccumulate>(k, ap, 1, kMr, bp, kNr, c);
}

template <int R>
inline void kernel_rx16_dispatch(bool accumulate, int64_t k, const float* ap, const float* bp,
                                 float* c) {
  if (accumulate) {
    kernel_rx16<R, true>(k, ap, bp, c);
  } else {
    kernel_rx16<R, false>(k, ap, bp, c);
  }
}

// The micro-kernel for a panel of `rows` (1–6) output channels.
inline void kernel_panel(int64_t rows, bool accumulate, int64_t k, const float* ap, const float* bp,
                         float* c) {
  switch (rows) {
    case 1:
      return kernel_rx16_dispatch<1>(accumulate, k, ap, bp, c);
    case 2:
      return kernel_rx16_dispatch<2>(accumulate, k, ap, bp, c);
    case 3:
      return kernel_rx16_dispatch<3>(accumulate, k, ap, bp, c);
    case 4:
      return kernel_rx16_dispatch<4>(accumulate, k, ap, bp, c);
    case 5:
      return kernel_rx16_dispatch<5>(accumulate, k, ap, bp, c);
    default:
      return kernel_rx16_dispatch<6>(accumulate, k, ap, bp, c);
  }
}

// kernel_rx16_strided for a panel of `rows` (1–6) output channels.
inline void kernel_panel_strided(int64_t rows, bool accumulate, int64_t k, const float* a,
                                 int64_t a_row, int64_t a_k, const float* b, int64_t b_k,
                                 float* c) {
  auto run = [&]<int R>() {
    if (accumulate) {
      kernel_rx16_strided<R, true>(k, a, a_row, a_k, b, b_k, c);
    } else {
      kernel_rx16_strided<R, false>(k, a, a_row, a_k, b, b_k, c);
    }
  };
  switch (rows) {
    case 1:
      return run.template operator()<1>();
    case 2:
      return run.template operator()<2>();
    case 3:
      return run.template operator()<3>();
    case 4:
      return run.template operator()<4>();
    case 5:
      return run.template operator()<5>();
    default:
      return run.template operator()<6>();
  }
}

}  // namespace tailor::runtime::kernels::detail

#endif  // __AVX2__ && __FMA__
