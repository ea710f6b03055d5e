// f32_conv_winograd_f43_avx2: Winograd F(4×4, 3×3) convolution (Lavin &
// Gray, CVPR 2016) on weights transformed once at load
// (f32_conv_winograd_f43_pack). Tiles go 8 to a run (one per vector lane),
// two runs to a block of 16 (the micro-kernel's columns). Row runs: up to 8
// tiles along a tile row of an undilated conv; per run and input channel the
// 6 input rows are transformed down the columns 8 floats at a time, then a
// 4×4 transpose in each 128-bit lane splits each transformed row into its 4
// column phases (lane l holds tile 2l for l < 4, tile 2(l − 4) + 1 above), so
// the row transform runs on whole vectors; the same transpose undoes the order
// on the way out. Listed runs: 8 consecutive tiles of detail::winograd_tiles
// (any dilation, across tile rows and phases), each patch gathered lane by
// lane and each tile's outputs stored one by one; they serve dilated convs
// and planes whose tile rows would leave many lanes of row runs idle. A work
// item is one image's group of up to 4 blocks: the 36 products
// M_ξ = U_ξ·V_ξ ([c_out × c_in]·[c_in × 16] per block) use the 6×16
// micro-kernel, each 6-channel weight panel reused by every block of the
// group, K ascending in chunks of 256, so results depend neither on the
// thread count nor on the grouping.
// f32_conv_winograd_f43_avx512 is the same convolution with the products on
// AVX-512F (function target attributes, built in the x86-64-v3 build; the
// registry picks it where cpu_features() has AVX-512F): 4 blocks a work item
// (at least 2, at least one item per thread), taken in pairs, 12 output
// channels (two weight panels) × 32 tiles (two zmm) per register tile, 6 or
// fewer × 32 on a last partial panel; each output the AVX2 micro-kernel's
// FMA chain, so the two give the same bits; the transforms are the AVX2 ones.
#if defined(__AVX2__) && defined(__FMA__)

#include <immintrin.h>

#include <algorithm>
#include <vector>

#include "runtime/kernels/f32_gemm_6x16_avx2.h"
#include "runtime/kernels/f32_winograd_f43.h"
#include "runtime/kernels/gemm_partition.h"
#include "tailor/linalg/parallel.h"
#include "tailor/linalg/threads.h"
#include "tailor/runtime/kernels/registry.h"

// GCC 12's AVX-512 intrinsics pass _mm512_undefined_*() as a merge operand,
// which -Wmaybe-uninitialized reports at every use (GCC bug 105593).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace tailor::runtime::kernels {

namespace {

using detail::kKc;
using detail::kMr;
using detail::kNr;
using detail::kWinogradPoints;

constexpr int64_t kRun = 8;         // tiles per run (one vector)
constexpr int64_t kRowFloats = 40;  // a run's input row: 4·8 + 2 columns, 5 vectors
constexpr int64_t kOutFloats = 32;  // a run's output row: 4·8 columns

// The 4×4 transpose of a, b, c, d within each 128-bit lane.
inline void transpose4_lanes(__m256& a, __m256& b, __m256& c, __m256& d) {
  const __m256 t0 = _mm256_unpacklo_ps(a, b), t1 = _mm256_unpackhi_ps(a, b);
  const __m256 t2 = _mm256_unpacklo_ps(c, d), t3 = _mm256_unpackhi_ps(c, d);
  a = _mm256_shuffle_ps(t0, t2, 0x44);
  b = _mm256_shuffle_ps(t0, t2, 0xEE);
  c = _mm256_shuffle_ps(t1, t3, 0x44);
  d = _mm256_shuffle_ps(t1, t3, 0xEE);
}

// A run of up to 8 tiles (len 0: none, its lanes zero). Row run: tiles
// tx0 … tx0 + len − 1 of tile row ty (undilated); listed run: `tiles`.
struct Run {
  int64_t ty = 0, tx0 = 0, len = 0;
  const detail::WinogradTile* tiles = nullptr;
};

// V[ξ][ci][lane0 + l] (at v[(ξ·vstride + ci)·16 + lane0 + l]) for the run's
// 8 tiles and every input channel of image xb.
void input_transform(const Conv2dParams& p, const float* xb, const Run& run, int64_t lane0,
                     int64_t vstride, float* v) {
  alignas(32) float vt[6][kRowFloats];
  const int64_t iy0 = 4 * run.ty - p.pad_top, ix0 = 4 * run.tx0 - p.pad_left;
  const bool cols_inside = ix0 >= 0 && ix0 + kRowFloats <= p.w;
  // Columns [c0, c1) of a run row (relative to ix0) lie in the image.
  const int64_t c0 = std::max<int64_t>(0, -ix0), c1 = std::min<int64_t>(kRowFloats, p.w - ix0);
  // Lane l of the row's vector q loads column 8q + l when c0 ≤ 8q + l < c1
  // (masked-off lanes read nothing and give zero).
  __m256i col_mask[kRowFloats / 8];
  for (int64_t q = 0; q < kRowFloats / 8; ++q) {
    const __m256i col = _mm256_add_epi32(_mm256_set1_epi32(static_cast<int>(8 * q)),
                                         _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    col_mask[q] =
        _mm256_and_si256(_mm256_cmpgt_epi32(col, _mm256_set1_epi32(static_cast<int>(c0) - 1)),
                         _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(c1)), col));
  }
  // The run's rows of channel ci + kAhead are requested while channel ci is
  // transformed: each row segment is a few cache lines of a different plane,
  // too scattered for the hardware prefetchers, and waiting on them cost more
  // than the transform itself (perf on the detector's 96→24 convs, 160×160).
  constexpr int64_t kAhead = 4;
  const int64_t r0 = std::max<int64_t>(0, -iy0), r1 = std::min<int64_t>(6, p.h - iy0);
  const int64_t pf_last = c1 - 1;  // last column read, relative to ix0
  for (int64_t ci = 0; ci < p.c_in; ++ci) {
    const float* xc = xb + ci * p.h * p.w;
    if (ci + kAhead < p.c_in && c1 > c0) {
      const float* xa = xc + kAhead * p.h * p.w + ix0;
      for (int64_t r = r0; r < r1; ++r) {
        const float* row = xa + (iy0 + r) * p.w;
        for (int64_t c = c0; c < c1; c += 16)
          _mm_prefetch(reinterpret_cast<const char*>(row + c), _MM_HINT_T0);
        _mm_prefetch(reinterpret_cast<const char*>(row + pf_last), _MM_HINT_T0);
      }
    }
    // Down the columns: vt = Bᵀ d, 8 columns at a time. Rows in the padding
    // read as zeros; at the plane's left and right edges only the columns
    // [c0, c1) are loaded (masked), the rest zero, as the padding is.
    for (int64_t c = 0; c < kRowFloats; c += 8) {
      __m256 d[6], t[6];
      for (int r = 0; r < 6; ++r) {
        const int64_t iy = iy0 + r;
        if (iy < 0 || iy >= p.h) {
          d[r] = _mm256_setzero_ps();
        } else if (cols_inside) {
          d[r] = _mm256_loadu_ps(xc + iy * p.w + ix0 + c);
        } else {
          d[r] = _mm256_maskload_ps(xc + iy * p.w + ix0 + c, col_mask[c / 8]);
        }
      }
      detail::winograd_f43_input(d, t);
      for (int r = 0; r < 6; ++r) _mm256_store_ps(vt[r] + c, t[r]);
    }
    // Along each row: column phases 0–3 of tile t, and 0–1 of tile t + 1.
    for (int r = 0; r < 6; ++r) {
      __m256 a0 = _mm256_load_ps(vt[r]), a1 = _mm256_load_ps(vt[r] + 8);
      __m256 a2 = _mm256_load_ps(vt[r] + 16), a3 = _mm256_load_ps(vt[r] + 24);
      __m256 b0 = _mm256_loadu_ps(vt[r] + 4), b1 = _mm256_loadu_ps(vt[r] + 12);
      __m256 b2 = _mm256_loadu_ps(vt[r] + 20), b3 = _mm256_loadu_ps(vt[r] + 28);
      transpose4_lanes(a0, a1, a2, a3);
      transpose4_lanes(b0, b1, b2, b3);
      const __m256 d[6] = {a0, a1, a2, a3, b0, b1};
      __m256 o[6];
      detail::winograd_f43_input(d, o);
      for (int c = 0; c < 6; ++c)
        _mm256_storeu_ps(v + ((r * 6 + c) * vstride + ci) * kNr + lane0, o[c]);
    }
  }
}

// V[ξ][ci][lane0 + l] for a listed run: each tile's 6×6 patch gathered at
// the dilation (zero in the padding) into lane l, then transformed down the
// columns and along the rows on whole vectors.
void input_transform_listed(const Conv2dParams& p, const float* xb, const Run& run, int64_t lane0,
                            int64_t vstride, float* v) {
  int64_t off[6][6][kRun];  // offset in a channel plane, −1 in the padding
  for (int64_t l = 0; l < kRun; ++l) {
    for (int r = 0; r < 6; ++r) {
      for (int c = 0; c < 6; ++c) {
        off[r][c][l] = -1;
        if (l >= run.len) continue;
        const int64_t iy = run.tiles[l].iy + r * p.dil_h, ix = run.tiles[l].ix + c * p.dil_w;
        if (iy >= 0 && iy < p.h && ix >= 0 && ix < p.w) off[r][c][l] = iy * p.w + ix;
      }
    }
  }
  alignas(32) float d[6][6][kRun];
  alignas(32) float vt[6][6][kRun];
  for (int64_t ci = 0; ci < p.c_in; ++ci) {
    const float* xc = xb + ci * p.h * p.w;
    for (int r = 0; r < 6; ++r)
      for (int c = 0; c < 6; ++c)
        for (int64_t l = 0; l < kRun; ++l) d[r][c][l] = off[r][c][l] < 0 ? 0.f : xc[off[r][c][l]];
    for (int c = 0; c < 6; ++c) {  // down the columns: vt[·][c] = Bᵀ d[·][c]
      __m256 col[6], t[6];
      for (int r = 0; r < 6; ++r) col[r] = _mm256_load_ps(d[r][c]);
      detail::winograd_f43_input(col, t);
      for (int r = 0; r < 6; ++r) _mm256_store_ps(vt[r][c], t[r]);
    }
    for (int r = 0; r < 6; ++r) {  // along the rows
      __m256 row[6], o[6];
      for (int c = 0; c < 6; ++c) row[c] = _mm256_load_ps(vt[r][c]);
      detail::winograd_f43_input(row, o);
      for (int c = 0; c < 6; ++c)
        _mm256_storeu_ps(v + ((r * 6 + c) * vstride + ci) * kNr + lane0, o[c]);
    }
  }
}

// out[i][j] (lane l: tile l's output (i, j)) = Aᵀ M A for 8 tiles, M at m
// with `point` floats between points.
void output_tiles(const float* m, int64_t point, __m256 out[4][4]) {
  __m256 h[6][4];
  for (int r = 0; r < 6; ++r) {
    __m256 row[6];
    for (int c = 0; c < 6; ++c) row[c] = _mm256_loadu_ps(m + (r * 6 + c) * point);
    detail::winograd_f43_output(row, h[r]);
  }
  for (int j = 0; j < 4; ++j) {
    const __m256 col[6] = {h[0][j], h[1][j], h[2][j], h[3][j], h[4][j], h[5][j]};
    __m256 res[4];
    detail::winograd_f43_output(col, res);
    for (int i = 0; i < 4; ++i) out[i][j] = res[i];
  }
}

// Y = Aᵀ M A for a row run's 8 tiles and output channel o (M at m, stride
// `point` floats between points), plus bias and activation, into image yb.
void output_transform(const Conv2dParams& p, const float* m, int64_t point, const Run& run,
                      int64_t o, float bias, const Activation& act, float* yb) {
  const int64_t oh = p.out_h(), ow = p.out_w();
  __m256 out[4][4];  // [i][j]: output row i, column phase j
  output_tiles(m, point, out);
  const int64_t ox0 = 4 * run.tx0, cols = std::min<int64_t>(4 * run.len, ow - ox0);
  float* yo = yb + o * oh * ow;
  for (int i = 0; i < 4; ++i) {
    const int64_t oy = 4 * run.ty + i;
    if (oy >= oh) break;
    transpose4_lanes(out[i][0], out[i][1], out[i][2], out[i][3]);
    alignas(32) float tmp[kOutFloats];
    for (int q = 0; q < 4; ++q) _mm256_store_ps(tmp + 8 * q, out[i][q]);
    f32_bias_act_avx2(act, bias, tmp, yo + oy * ow + ox0, cols);
  }
}

// The same for a listed run: each tile's outputs inside the plane stored at
// the dilation.
void output_transform_listed(const Conv2dParams& p, const float* m, int64_t point, const Run& run,
                             int64_t o, float bias, const Activation& act, float* yb) {
  const int64_t ow = p.out_w();
  __m256 out[4][4];
  output_tiles(m, point, out);
  alignas(32) float tmp[16 * kRun];  // [i·4 + j][lane]
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) _mm256_store_ps(tmp + (i * 4 + j) * kRun, out[i][j]);
  f32_bias_act_avx2(act, bias, tmp, tmp, 16 * kRun);
  float* yo = yb + o * p.out_h() * ow;
  for (int64_t l = 0; l < run.len; ++l) {
    const detail::WinogradTile& t = run.tiles[l];
    for (int i = 0; i < t.rows; ++i)
      for (int j = 0; j < t.cols; ++j)
        yo[(t.oy + i * p.dil_h) * ow + t.ox + j * p.dil_w] = tmp[(i * 4 + j) * kRun + l];
  }
}

// The 36 products' micro-kernel over a work item's blocks: for each block
// g < nblk, the tile m + g·m_step (+)= u·(v + g·v_step) of `rows` (1–12)
// output channels × 16 columns, k values of v, per output one FMA chain in
// ascending k (from +0, or from m with accumulate). Rows past 6 are a second
// weight panel, at u + u_panel; the tile's rows lie 16 floats apart.
using WinogradPanelsFn = void (*)(int64_t rows, bool accumulate, int64_t k, const float* u,
                                  int64_t u_panel, const float* v, int64_t v_step, float* m,
                                  int64_t m_step, int64_t nblk);

// The AVX2 form: the 6×16 micro-kernel on each panel and block.
void panels_6x16_avx2(int64_t rows, bool accumulate, int64_t k, const float* u, int64_t u_panel,
                      const float* v, int64_t v_step, float* m, int64_t m_step, int64_t nblk) {
  for (int64_t h = 0; h * kMr < rows; ++h)
    for (int64_t g = 0; g < nblk; ++g)
      detail::kernel_panel(std::min(kMr, rows - h * kMr), accumulate, k, u + h * u_panel,
                           v + g * v_step, m + h * kMr * kNr + g * m_step);
}

// The AVX-512F form (function target attributes; the registry picks it where
// cpu_features() has AVX-512F): blocks in pairs, R rows × 32 columns (two
// blocks of 16, one zmm each: 2R accumulators; per k two loads of v and R
// broadcasts of u feed 2R FMAs), a last odd block R × 16; two full weight
// panels at once (R = 12: 24 accumulators, half the loads of v per FMA of
// R = 6). Each output is the AVX2 kernel's FMA chain (same products, same
// order), so the two give the same bits.
template <int R, bool kAccumulate, int kBlocks>
__attribute__((target("avx512f"), always_inline)) inline void tile_rx32_avx512(
    int64_t k, const float* u, int64_t u_panel, const float* v0, const float* v1, float* m0,
    float* m1) {
  __m512 acc[R][kBlocks];
#pragma GCC unroll 12
  for (int r = 0; r < R; ++r) {
    acc[r][0] = kAccumulate ? _mm512_loadu_ps(m0 + r * kNr) : _mm512_setzero_ps();
    if constexpr (kBlocks == 2)
      acc[r][1] = kAccumulate ? _mm512_loadu_ps(m1 + r * kNr) : _mm512_setzero_ps();
  }
  for (int64_t i = 0; i < k; ++i) {
    const __m512 b0 = _mm512_loadu_ps(v0 + i * kNr);
    __m512 b1;
    if constexpr (kBlocks == 2) b1 = _mm512_loadu_ps(v1 + i * kNr);
    const float* ui = u + i * kMr;
#pragma GCC unroll 12
    for (int r = 0; r < R; ++r) {
      const __m512 a = _mm512_set1_ps(r < kMr ? ui[r] : ui[u_panel + r - kMr]);
      acc[r][0] = _mm512_fmadd_ps(a, b0, acc[r][0]);
      if constexpr (kBlocks == 2) acc[r][1] = _mm512_fmadd_ps(a, b1, acc[r][1]);
    }
  }
#pragma GCC unroll 12
  for (int r = 0; r < R; ++r) {
    _mm512_storeu_ps(m0 + r * kNr, acc[r][0]);
    if constexpr (kBlocks == 2) _mm512_storeu_ps(m1 + r * kNr, acc[r][1]);
  }
}

template <int R>
__attribute__((target("avx512f"))) void panels_rx32_avx512(bool accumulate, int64_t k,
                                                           const float* u, int64_t u_panel,
                                                           const float* v, int64_t v_step, float* m,
                                                           int64_t m_step, int64_t nblk) {
  int64_t g = 0;
  for (; g + 2 <= nblk; g += 2) {
    const float* v0 = v + g * v_step;
    float* m0 = m + g * m_step;
    if (accumulate) {
      tile_rx32_avx512<R, true, 2>(k, u, u_panel, v0, v0 + v_step, m0, m0 + m_step);
    } else {
      tile_rx32_avx512<R, false, 2>(k, u, u_panel, v0, v0 + v_step, m0, m0 + m_step);
    }
  }
  if (g < nblk) {
    if (accumulate) {
      tile_rx32_avx512<R, true, 1>(k, u, u_panel, v + g * v_step, nullptr, m + g * m_step, nullptr);
    } else {
      tile_rx32_avx512<R, false, 1>(k, u, u_panel, v + g * v_step, nullptr, m + g * m_step,
                                    nullptr);
    }
  }
}

void panels_12x32_avx512(int64_t rows, bool accumulate, int64_t k, const float* u, int64_t u_panel,
                         const float* v, int64_t v_step, float* m, int64_t m_step, int64_t nblk) {
  if (rows == 2 * kMr)
    return panels_rx32_avx512<2 * kMr>(accumulate, k, u, u_panel, v, v_step, m, m_step, nblk);
  if (rows > kMr) {  // a full panel, then a partial one
    panels_12x32_avx512(kMr, accumulate, k, u, 0, v, v_step, m, m_step, nblk);
    return panels_12x32_avx512(rows - kMr, accumulate, k, u + u_panel, 0, v, v_step, m + kMr * kNr,
                               m_step, nblk);
  }
  switch (rows) {
    case 1:
      return panels_rx32_avx512<1>(accumulate, k, u, 0, v, v_step, m, m_step, nblk);
    case 2:
      return panels_rx32_avx512<2>(accumulate, k, u, 0, v, v_step, m, m_step, nblk);
    case 3:
      return panels_rx32_avx512<3>(accumulate, k, u, 0, v, v_step, m, m_step, nblk);
    case 4:
      return panels_rx32_avx512<4>(accumulate, k, u, 0, v, v_step, m, m_step, nblk);
    case 5:
      return panels_rx32_avx512<5>(accumulate, k, u, 0, v, v_step, m, m_step, nblk);
    default:
      return panels_rx32_avx512<6>(accumulate, k, u, 0, v, v_step, m, m_step, nblk);
  }
}

// The convolution, the 36 products by `panels`; with pair_blocks a work
// item holds an even number of blocks where it can (the AVX-512 kernel's
// pairs).
void winograd_f43(const Conv2dParams& p, const float* x, const float* packed, const float* bias,
                  float* y, const Activation& act, WinogradPanelsFn panels_fn, bool pair_blocks) {
  const int64_t oh = p.out_h(), ow = p.out_w();
  const int64_t th = (oh + 3) / 4, tw = (ow + 3) / 4;
  const int64_t runs_per_row = (tw + kRun - 1) / kRun;
  // Listed runs for dilated convs, and where row runs would leave over a
  // quarter more runs (idle lanes) than listing the tiles does, unless the
  // channels are so few that the gathering transforms would cost more.
  const bool dilated = p.dil_h > 1 || p.dil_w > 1;
  const bool listed =
      dilated || (3 * th * runs_per_row > 4 * ((th * tw + kRun - 1) / kRun) && p.c_out >= 32);
  const std::vector<detail::WinogradTile> tiles =
      listed ? detail::winograd_tiles(p) : std::vector<detail::WinogradTile>();
  const int64_t ntiles = static_cast<int64_t>(tiles.size());
  const int64_t runs = listed ? (ntiles + kRun - 1) / kRun : th * runs_per_row;
  const int64_t blocks = (runs + 1) / 2;
  // Blocks per item: a 6-channel weight panel is loaded once for `group`
  // blocks, which pays where the weights (36·c_in·c_out floats) outgrow the
  // caches; at least two items per image where there are two blocks. With
  // pair_blocks (the AVX-512 products) 4 blocks, at least 2, and at least
  // one item per thread of the team: one thread streamed all of U per 2
  // blocks before (kernels_bench BM_Conv3x3Isnet, Zen 5, 1 thread: 512→512
  // on 32×32 389 → 562 GFLOP/s). The grouping changes no result.
  int64_t group = std::min(std::clamp<int64_t>(p.c_in * p.c_out / 16384, 1, 4),
                           std::max<int64_t>(1, blocks / 2));
  if (pair_blocks)
    group = std::min<int64_t>(4, std::max<int64_t>(2, blocks / std::max(1, linalg::threads())));
  const int64_t items_per_image = (blocks + group - 1) / group, items = p.n * items_per_image;
  const int64_t panels = (p.c_out + kMr - 1) / kMr, cop = panels * kMr;
  // V's points lie vstride = c_in + 1 rows of 16 apart: at c_in rows (a
  // multiple of 4 KiB for c_in a multiple of 64) the 36 stores of a channel's
  // transform all fell in one L1 set and evicted each other (perf on ISNet's
  // 64-channel 3×3 convs: a third of the time in the input transform).
  const int64_t vstride = p.c_in + 1;
  const int64_t v_block = kWinogradPoints * vstride * kNr, m_block = kWinogradPoints * cop * kNr;
  const auto run_of = [&](int64_t r) {
    Run run;
    if (r >= runs) return run;
    if (listed) {
      run.tiles = tiles.data() + r * kRun;
      run.len = std::min(kRun, ntiles - r * kRun);
      return run;
    }
    run.ty = r / runs_per_row, run.tx0 = r % runs_per_row * kRun;
    run.len = std::min(kRun, tw - run.tx0);
    return run;
  };
  const bool parallel = items > 1 && detail::worth_threads(p.n * p.c_out * oh * ow * p.c_in * 4);
  linalg::parallel_for(items, parallel, [&](int64_t item) {
    // Per block of the group: V [36][vstride][16] and M [36][c_out rounded up
    // to 6][16], per thread, kept from call to call (every element used is
    // written first: a fresh allocation per call cost a page fault per 4 KiB).
    thread_local std::vector<float> v, m;
    v.resize(std::max(v.size(), static_cast<size_t>(group * v_block)));
    m.resize(std::max(m.size(), static_cast<size_t>(group * m_block)));
    const int64_t b = item / items_per_image, blk0 = item % items_per_image * group;
    const int64_t nblk = std::min(group, blocks - blk0);
    const float* xb = x + b * p.c_in * p.h * p.w;
    for (int64_t g = 0; g < nblk; ++g) {
      const Run pair[2] = {run_of(2 * (blk0 + g)), run_of(2 * (blk0 + g) + 1)};
      float* vg = v.data() + g * v_block;
      for (int q = 0; q < 2; ++q) {
        if (pair[q].len > 0 && listed) {
          input_transform_listed(p, xb, pair[q], q * kRun, vstride, vg);
        } else if (pair[q].len > 0) {
          input_transform(p, xb, pair[q], q * kRun, vstride, vg);
        } else {
          for (int64_t xi = 0; xi < kWinogradPoints; ++xi)
            for (int64_t ci = 0; ci < p.c_in; ++ci)
              std::fill_n(vg + (xi * vstride + ci) * kNr + q * kRun, kRun, 0.f);
        }
      }
    }
    for (int64_t xi = 0; xi < kWinogradPoints; ++xi) {
      for (int64_t k0 = 0; k0 < p.c_in; k0 += kKc) {
        const int64_t kc = std::min(kKc, p.c_in - k0);
        for (int64_t pn = 0; pn < panels; pn += 2) {  // two panels a call
          const float* u = packed + ((xi * panels + pn) * p.c_in + k0) * kMr;
          panels_fn(std::min(2 * kMr, p.c_out - pn * kMr), k0 > 0, kc, u, p.c_in * kMr,
                    v.data() + (xi * vstride + k0) * kNr, v_block,
                    m.data() + (xi * cop + pn * kMr) * kNr, m_block, nblk);
        }
      }
    }
    float* yb = y + b * p.c_out * oh * ow;
    for (int64_t g = 0; g < nblk; ++g) {
      const float* mg = m.data() + g * m_block;
      for (int q = 0; q < 2; ++q) {
        const Run run = run_of(2 * (blk0 + g) + q);
        if (run.len == 0) continue;
        for (int64_t o = 0; o < p.c_out; ++o) {
          const float bo = bias ? bias[o] : 0.f;
          if (listed) {
            output_transform_listed(p, mg + o * kNr + q * kRun, cop * kNr, run, o, bo, act, yb);
          } else {
            output_transform(p, mg + o * kNr + q * kRun, cop * kNr, run, o, bo, act, yb);
          }
        }
      }
    }
  });
}

}  // namespace

void f32_conv_winograd_f43_avx2(const Conv2dParams& p, const float* x, const float* packed,
                                const float* bias, float* y, const Activation& act) {
  winograd_f43(p, x, packed, bias, y, act, panels_6x16_avx2, false);
}

void f32_conv_winograd_f43_avx512(const Conv2dParams& p, const float* x, const float* packed,
                                  const float* bias, float* y, const Activation& act) {
  winograd_f43(p, x, packed, bias, y, act, panels_12x32_avx512, true);
}

}  // namespace tailor::runtime::kernels

#pragma GCC diagnostic pop

#endif  // __AVX2__ && __FMA__
