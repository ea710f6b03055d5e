// Winograd F(4×4, 3×3) transforms shared by the scalar reference and the AVX2
// kernel (Lavin & Gray, "Fast Algorithms for Convolutional Neural Networks",
// CVPR 2016; interpolation points 0, ±1, ±2, ∞). A 6×6 input tile d and a
// 3×3 filter g give the 4×4 output tile Y = Aᵀ[(G g Gᵀ) ⊙ (Bᵀ d B)]A. The
// one-dimensional steps are written once for any V with + − and scalar ·
// (float, or GCC's __m256 vector type, lane-wise).
//
// Dilation: output (oy, ox) of a 3×3 stride-1 conv with dilation (dh, dw)
// reads inputs (oy + u·dh, ox + v·dw) (padded coordinates), so the outputs of
// one phase (oy mod dh, ox mod dw) form an undilated conv on that phase's
// inputs; tiles are laid on each phase's outputs (a dilation-1 conv has one
// phase), and a tile's 6×6 patch is read at the dilation.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "tailor/runtime/kernels/conv.h"

namespace tailor::runtime::kernels::detail {

/// Points of a tile (6×6 transformed values per input/output channel pair).
constexpr int64_t kWinogradPoints = 36;

/// One 4×4 output tile of a (possibly dilated) 3×3 stride-1 conv: its patch
/// starts at input (iy, ix) (may lie in the padding), its outputs at (oy, ox),
/// patch and outputs stepping by the dilation; rows × cols (1–4 each) of
/// its 16 outputs lie inside the output plane.
struct WinogradTile {
  int64_t iy, ix, oy, ox;
  int rows, cols;
};

/// Per axis: the first output of each tile row (column) and how many of its 4
/// outputs exist, phase by phase (phase a < min(dil, out) holds ⌈(out − a)/dil⌉
/// outputs: a, a + dil, …).
inline void winograd_axis(int64_t out, int64_t dil, std::vector<int64_t>& first,
                          std::vector<int>& valid) {
  for (int64_t a = 0; a < std::min(dil, out); ++a) {
    const int64_t count = (out - a + dil - 1) / dil;
    for (int64_t t = 0; 4 * t < count; ++t) {
      first.push_back(a + 4 * t * dil);
      valid.push_back(static_cast<int>(std::min<int64_t>(4, count - 4 * t)));
    }
  }
}

/// How many tiles winograd_tiles(p) lays.
inline int64_t winograd_tile_count(const Conv2dParams& p) {
  std::vector<int64_t> fy, fx;
  std::vector<int> vy, vx;
  winograd_axis(p.out_h(), p.dil_h, fy, vy);
  winograd_axis(p.out_w(), p.dil_w, fx, vx);
  return static_cast<int64_t>(fy.size() * fx.size());
}

/// The tiles of one image of p, phase rows outermost, then tile rows, phase
/// columns, tile columns (neighbours in the list share input rows).
inline std::vector<WinogradTile> winograd_tiles(const Conv2dParams& p) {
  std::vector<int64_t> fy, fx;
  std::vector<int> vy, vx;
  winograd_axis(p.out_h(), p.dil_h, fy, vy);
  winograd_axis(p.out_w(), p.dil_w, fx, vx);
  std::vector<WinogradTile> tiles;
  tiles.reserve(fy.size() * fx.size());
  for (size_t i = 0; i < fy.size(); ++i)
    for (size_t j = 0; j < fx.size(); ++j)
      tiles.push_back({fy[i] - p.pad_top, fx[j] - p.pad_left, fy[i], fx[j], vy[i], vx[j]});
  return tiles;
}

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
