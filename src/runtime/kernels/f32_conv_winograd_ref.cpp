// Winograd F(4×4, 3×3) convolution: the weight transform (shared by every
// ISA's kernel) and the scalar reference kernel (registry.h states both
// contracts; Lavin & Gray, CVPR 2016). Tiles as detail::winograd_tiles lays
// them: undilated, tile (ty, tx) covers output rows 4ty..4ty+3 and columns
// 4tx..4tx+3 and reads the 6×6 input patch from (4ty − pad_top, 4tx −
// pad_left), zero outside the image; dilated, the same on each phase's
// outputs and inputs (f32_winograd_f43.h); tiles past the output's edge are
// computed and their extra outputs dropped. A NaN or ±Inf
// input stays NaN/Inf where direct convolution has it, and also reaches the
// other outputs of every tile whose 6×6 patch holds it.
#include <algorithm>
#include <cstring>
#include <vector>

#include "runtime/kernels/f32_winograd_f43.h"
#include "runtime/kernels/gemm_partition.h"
#include "tailor/linalg/parallel.h"
#include "tailor/runtime/kernels/registry.h"

namespace tailor::runtime::kernels {

namespace {

constexpr int64_t kPanel = 6;  // output channels per packed panel

// G (6×3) of F(4, 3).
constexpr double kG[6][3] = {{1.0 / 4, 0, 0},
                             {-1.0 / 6, -1.0 / 6, -1.0 / 6},
                             {-1.0 / 6, 1.0 / 6, -1.0 / 6},
                             {1.0 / 24, 1.0 / 12, 1.0 / 6},
                             {1.0 / 24, -1.0 / 12, 1.0 / 6},
                             {0, 0, 1}};

// U = G g Gᵀ of Lanes consecutive 3×3 kernels g (row-major, 9 floats apart)
// into u[ξ][lane] (point ξ = 6i + j), in double, each point rounded once to
// float; lane by lane the same operations, which the compiler runs as
// vectors for Lanes > 1.
template <int64_t Lanes>
void weight_transform(const float* g, float (*u)[Lanes]) {
  double t[9][Lanes];
  for (int64_t l = 0; l < Lanes; ++l)
    for (int k = 0; k < 9; ++k) t[k][l] = g[l * 9 + k];
  double gt[6][3][Lanes];  // G·g
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < 3; ++j)
      for (int64_t l = 0; l < Lanes; ++l)
        gt[i][j][l] = kG[i][0] * t[j][l] + kG[i][1] * t[3 + j][l] + kG[i][2] * t[6 + j][l];
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < 6; ++j)
      for (int64_t l = 0; l < Lanes; ++l)
        u[i * 6 + j][l] = static_cast<float>(gt[i][0][l] * kG[j][0] + gt[i][1][l] * kG[j][1] +
                                             gt[i][2][l] * kG[j][2]);
}
constexpr int64_t kLanes = 8;  // kernels per vector step of the blocked pack

}  // namespace

int64_t f32_conv_winograd_f43_pack_ref(const Conv2dParams& p, const float* w, float* packed) {
  const int64_t panels = (p.c_out + kPanel - 1) / kPanel;
  const int64_t size = detail::kWinogradPoints * panels * kPanel * p.c_in;
  if (packed == nullptr) return size;
  for (int64_t o = 0; o < panels * kPanel; ++o) {
    for (int64_t ci = 0; ci < p.c_in; ++ci) {
      float u[36][1] = {};
      if (o < p.c_out) weight_transform<1>(w + (o * p.c_in + ci) * 9, u);
      for (int64_t xi = 0; xi < detail::kWinogradPoints; ++xi) {
        const int64_t pn = o / kPanel, r = o % kPanel;
        packed[((xi * panels + pn) * p.c_in + ci) * kPanel + r] = u[xi][0];
      }
    }
  }
  return size;
}

int64_t f32_conv_winograd_f43_pack(const Conv2dParams& p, const float* w, float* packed) {
  const int64_t panels = (p.c_out + kPanel - 1) / kPanel;
  const int64_t size = detail::kWinogradPoints * panels * kPanel * p.c_in;
  if (packed == nullptr) return size;
  // One item: a panel's 6 rows on a block of input channels, transformed
  // into a buffer laid out as the destination's 36 runs (one per point) of
  // the block's channels × 6 rows, then copied out run by run. The
  // reference's row-by-row order writes 36 floats 24 bytes apart per (row,
  // channel) across the whole 36·P·6·c_in array: ISNet's 1024 → 512 conv
  // spent 0.14 s on it per call at 1 thread, where the packed codes of a
  // compressed layer are transformed on every call. (Writing the points to
  // their places from the block, without the buffer, ran ISNet's int8 file
  // 6% slower.)
  constexpr int64_t kBlock = 64;
  const int64_t blocks = (p.c_in + kBlock - 1) / kBlock;
  const int64_t items = panels * blocks;
  linalg::parallel_for(
      items, items > 1 && detail::worth_threads(panels * kPanel * p.c_in * 162), [&](int64_t item) {
        const int64_t pn = item / blocks, c0 = (item % blocks) * kBlock;
        const int64_t nc = std::min(kBlock, p.c_in - c0);
        alignas(64) float buf[detail::kWinogradPoints][kBlock][kPanel];
        for (int64_t r = 0; r < kPanel; ++r) {
          const int64_t o = pn * kPanel + r;
          if (o >= p.c_out) {
            for (int64_t xi = 0; xi < detail::kWinogradPoints; ++xi)
              for (int64_t ci = 0; ci < nc; ++ci) buf[xi][ci][r] = 0.f;
            continue;
          }
          int64_t ci = 0;
          for (; ci + kLanes <= nc; ci += kLanes) {
            float u[36][kLanes];
            weight_transform<kLanes>(w + (o * p.c_in + c0 + ci) * 9, u);
            for (int64_t xi = 0; xi < detail::kWinogradPoints; ++xi)
              for (int64_t l = 0; l < kLanes; ++l) buf[xi][ci + l][r] = u[xi][l];
          }
          for (; ci < nc; ++ci) {
            float u[36][1];
            weight_transform<1>(w + (o * p.c_in + c0 + ci) * 9, u);
            for (int64_t xi = 0; xi < detail::kWinogradPoints; ++xi) buf[xi][ci][r] = u[xi][0];
          }
        }
        for (int64_t xi = 0; xi < detail::kWinogradPoints; ++xi)
          std::memcpy(packed + ((xi * panels + pn) * p.c_in + c0) * kPanel, &buf[xi][0][0],
                      static_cast<size_t>(nc * kPanel) * sizeof(float));
      });
  return size;
}

void f32_conv_winograd_f43_ref(const Conv2dParams& p, const float* x, const float* packed,
                               const float* bias, float* y, const Activation& act) {
  const int64_t oh = p.out_h(), ow = p.out_w();
  const int64_t panels = (p.c_out + kPanel - 1) / kPanel;
  const std::vector<detail::WinogradTile> tiles = detail::winograd_tiles(p);
  std::vector<float> v(static_cast<size_t>(p.c_in * 36));  // [ci][ξ]
  for (int64_t b = 0; b < p.n; ++b) {
    for (const detail::WinogradTile& tile : tiles) {
      // V = Bᵀ d B per input channel, d read at the dilation.
      for (int64_t ci = 0; ci < p.c_in; ++ci) {
        const float* xc = x + (b * p.c_in + ci) * p.h * p.w;
        float d[6][6], t[6][6];
        for (int64_t r = 0; r < 6; ++r) {
          for (int64_t c = 0; c < 6; ++c) {
            const int64_t iy = tile.iy + r * p.dil_h, ix = tile.ix + c * p.dil_w;
            d[r][c] = (iy >= 0 && iy < p.h && ix >= 0 && ix < p.w) ? xc[iy * p.w + ix] : 0.f;
          }
        }
        for (int c = 0; c < 6; ++c) {  // columns: t[·][c] = Bᵀ d[·][c]
          float col[6], out[6];
          for (int r = 0; r < 6; ++r) col[r] = d[r][c];
          detail::winograd_f43_input(col, out);
          for (int r = 0; r < 6; ++r) t[r][c] = out[r];
        }
        for (int r = 0; r < 6; ++r) detail::winograd_f43_input(t[r], v.data() + ci * 36 + r * 6);
      }
      for (int64_t o = 0; o < p.c_out; ++o) {
        // M = Σ_ci U ⊙ V, then Y = Aᵀ M A.
        float m[6][6], h[6][4];
        for (int64_t xi = 0; xi < 36; ++xi) {
          double s = 0.0;
          const float* u = packed + ((xi * panels + o / kPanel) * p.c_in) * kPanel + o % kPanel;
          for (int64_t ci = 0; ci < p.c_in; ++ci)
            s += static_cast<double>(u[ci * kPanel]) * v[ci * 36 + xi];
          m[xi / 6][xi % 6] = static_cast<float>(s);
        }
        for (int r = 0; r < 6; ++r) detail::winograd_f43_output(m[r], h[r]);
        for (int j = 0; j < 4; ++j) {
          float col[6], out[4];
          for (int r = 0; r < 6; ++r) col[r] = h[r][j];
          detail::winograd_f43_output(col, out);
          for (int i = 0; i < 4; ++i) {
            if (i >= tile.rows || j >= tile.cols) continue;
            const int64_t oy = tile.oy + i * p.dil_h, ox = tile.ox + j * p.dil_w;
            y[((b * p.c_out + o) * oh + oy) * ow + ox] = out[i];
          }
        }
      }
    }
    for (int64_t o = 0; o < p.c_out; ++o) {
      float* yo = y + (b * p.c_out + o) * oh * ow;
      f32_bias_act_ref(act, bias ? bias[o] : 0.f, yo, yo, oh * ow);
    }
  }
}

}  // namespace tailor::runtime::kernels
