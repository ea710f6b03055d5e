// Winograd F(4×4, 3×3) transforms shared by the scalar reference and the AVX2
// kernel (Lavin & Gray, "Fast Algorithms for Convolutional Neural Networks",
// CVPR 2016; interpolation points 0, ±1, ±2, ∞). A 6×6 input tile d and a
// 3×3 filter g give the 4×4 output tile Y = Aᵀ[(G g Gᵀ) ⊙ (Bᵀ d B)]A. The
// one-dimensional steps are written once for any V with + − and scalar ·
// (float, or GCC's __m256 vector type, lane-wise).
#pragma once

#include <cstdint>

namespace tailor::runtime::kernels::detail {

/// Points of a tile (6×6 transformed values per input/output channel pair).
constexpr int64_t kWinogradPoints = 36;

/// r = Bᵀ d for one column of six inputs d0..d5.
template <class V>
inline void winograd_f43_input(const V* d, V* r) {
  r[0] = 4.f * d[0] - 5.f * d[2] + d[4];
  r[1] = (d[3] + d[4]) - 4.f * (d[1] + d[2]);
  r[2] = (d[4] - d[3]) + 4.f * (d[1] - d[2]);
  r[3] = (d[4] - d[2]) + 2.f * (d[3] - d[1]);
  r[4] = (d[4] - d[2]) - 2.f * (d[3] - d[1]);
  r[5] = 4.f * d[1] - 5.f * d[3] + d[5];
}

/// o = Aᵀ m for one column of six products m0..m5 (four outputs).
template <class V>
inline void winograd_f43_output(const V* m, V* o) {
  const V s12 = m[1] + m[2], d12 = m[1] - m[2], s34 = m[3] + m[4], d34 = m[3] - m[4];
  o[0] = m[0] + s12 + s34;
  o[1] = d12 + 2.f * d34;
  o[2] = s12 + 4.f * s34;
  o[3] = d12 + 8.f * d34 + m[5];
}

}  // namespace tailor::runtime::kernels::detail
