// f32_conv_dw_2x32_avx2: direct depthwise convolution (groups == c_in ==
// c_out), AVX2/FMA, parallel over (image, channel) planes.
//
// Each (image, channel) plane is first copied into a zero-padded buffer split
// into stride_w phase planes (column j of the padded row goes to phase
// j mod stride_w at index j / stride_w), so every tap of every stride reads
// contiguous, in-bounds columns: tap (ky, kx) of output (oy, ox) is
// phase (kx·dil_w) mod s, row oy·stride_h + ky·dil_h, index ox + (kx·dil_w) / s.
// Outputs are accumulated in registers 32 columns at a time, two rows at a
// time (three for the first rows of a plane of an odd number of rows, four
// where a row is at most 16 columns), taps in row-major order starting from
// the bias; the last 1..31 columns of a row are one block of up to four
// vectors, the last masked (no scalar tail, so a narrow plane, 20 or 10
// columns, keeps 6–12 FMA chains in flight). Every output is the same
// sequence of FMAs whatever its path.
#if defined(__AVX2__) && defined(__FMA__)

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <vector>

#include "runtime/kernels/gemm_partition.h"
#include "tailor/linalg/parallel.h"
#include "tailor/runtime/kernels/registry.h"

namespace tailor::runtime::kernels {

namespace {

struct Geometry {
  int64_t hp, wp;  // padded plane
  int64_t s;       // stride_w: number of phases
  int64_t pw;      // columns per phase row
};

// Deinterleaves row `src` (w floats) into its two stride-2 phase rows:
// src[2m] → even_dst[m], src[2m + 1] → odd_dst[m], 16 floats at a time.
void split_row_s2(const float* src, int64_t w, float* even_dst, float* odd_dst) {
  int64_t m = 0;  // pair index: src[2m] → even_dst[m], src[2m + 1] → odd_dst[m]
  for (; 2 * m + 16 <= w; m += 8) {
    const __m256 lo = _mm256_loadu_ps(src + 2 * m), hi = _mm256_loadu_ps(src + 2 * m + 8);
    // shuffle_ps picks within 128-bit lanes; permute4x64 restores the order.
    const __m256 ev = _mm256_shuffle_ps(lo, hi, 0x88), od = _mm256_shuffle_ps(lo, hi, 0xDD);
    _mm256_storeu_ps(even_dst + m,
                     _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(ev), 0xD8)));
    _mm256_storeu_ps(odd_dst + m,
                     _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(od), 0xD8)));
  }
  for (; 2 * m < w; ++m) {
    even_dst[m] = src[2 * m];
    if (2 * m + 1 < w) odd_dst[m] = src[2 * m + 1];
  }
}

// The zero-padded plane split into stride_w phases: column col of padded row
// r goes to buf[((col mod s)·hp + r)·pw + col / s]. No division per element:
// each phase takes every s-th input element from its first one on. Writes
// the same positions for every plane and leaves the rest (the padding) as it
// is: buf is zeroed once per call, before its first plane.
void fill_phases(const Conv2dParams& p, const Geometry& g, const float* x, float* buf) {
  for (int64_t iy = 0; iy < p.h; ++iy) {
    const float* src = x + iy * p.w;
    const int64_t r = iy + p.pad_top;
    if (g.s == 1) {
      std::copy(src, src + p.w, buf + r * g.pw + p.pad_left);
      continue;
    }
    if (g.s == 2) {
      // Element ix lands in phase (ix + pl) mod 2 at index (ix + pl) / 2.
      const int64_t pl = p.pad_left;
      split_row_s2(src, p.w, buf + ((pl % 2) * g.hp + r) * g.pw + pl / 2,
                   buf + (((pl + 1) % 2) * g.hp + r) * g.pw + (pl + 1) / 2);
      continue;
    }
    for (int64_t ph = 0; ph < g.s; ++ph) {
      // First ix with (ix + pad_left) mod s == ph, then every s-th.
      const int64_t ix0 = ((ph - p.pad_left) % g.s + g.s) % g.s;
      float* dst = buf + (ph * g.hp + r) * g.pw + (ix0 + p.pad_left) / g.s;
      for (int64_t ix = ix0; ix < p.w; ix += g.s) *dst++ = src[ix];
    }
  }
}

// Lanes [0, n) of a 256-bit vector, n in 1..8.
inline __m256i first_lanes(int64_t n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)),
                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// R output rows × NV vectors of 8 columns at once: yr[r·ow + ox] = b0 +
// Σ_t wc[t]·base[r·step + off[t] + ox], taps in order, one accumulator per
// (row, vector) (R·NV independent FMA chains hide the FMA latency). The last
// vector keeps its first `last` lanes (1..8): it reads up to 7 floats past
// the row's last tap, which the phase buffer's slack and the next row hold,
// and stores only its own columns. Row r's taps start r·`step` floats later
// and it is written r·ow floats later.
template <int R, int NV>
void dw_block(const float* base, int64_t step, const int64_t* off, int64_t taps, const float* wc,
              float b0, float* yr, int64_t ow, int64_t last) {
  __m256 acc[R][NV];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int q = 0; q < NV; ++q) acc[r][q] = _mm256_set1_ps(b0);
  for (int64_t t = 0; t < taps; ++t) {
    const __m256 wv = _mm256_broadcast_ss(wc + t);
    const float* src = base + off[t];
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
      for (int q = 0; q < NV; ++q)
        acc[r][q] = _mm256_fmadd_ps(_mm256_loadu_ps(src + r * step + 8 * q), wv, acc[r][q]);
  }
  const __m256i mask = first_lanes(last);
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int q = 0; q + 1 < NV; ++q) _mm256_storeu_ps(yr + r * ow + 8 * q, acc[r][q]);
    if (last == 8)
      _mm256_storeu_ps(yr + r * ow + 8 * (NV - 1), acc[r][NV - 1]);
    else
      _mm256_maskstore_ps(yr + r * ow + 8 * (NV - 1), mask, acc[r][NV - 1]);
  }
}

// R output rows (R = 2 in pairs; 3 for the first rows of a plane of an odd
// number of rows, so no row is left alone: the classifier's 3-row planes; 4
// on planes of at most 16 columns, whose blocks have at most 2 vectors, so
// at most 8 accumulators; 1 for a last row left over): 32 columns at a time,
// then the rest (1..31 columns) as one block of 1..4 vectors, the last
// masked. Each element's sum is the same FMA chain on every path.
template <int R>
void dw_rows(const float* base, int64_t step, const int64_t* off, int64_t taps, const float* wc,
             float b0, float* yr, int64_t ow) {
  int64_t ox = 0;
  for (; ox + 32 <= ow; ox += 32)
    dw_block<R, 4>(base + ox, step, off, taps, wc, b0, yr + ox, ow, 8);
  const int64_t rest = ow - ox;
  if (rest == 0) return;
  const int64_t nv = (rest + 7) / 8, last = rest - 8 * (nv - 1);
  switch (nv) {
    case 1:
      dw_block<R, 1>(base + ox, step, off, taps, wc, b0, yr + ox, ow, last);
      break;
    case 2:
      dw_block<R, 2>(base + ox, step, off, taps, wc, b0, yr + ox, ow, last);
      break;
    case 3:
      dw_block<R, 3>(base + ox, step, off, taps, wc, b0, yr + ox, ow, last);
      break;
    default:
      dw_block<R, 4>(base + ox, step, off, taps, wc, b0, yr + ox, ow, last);
      break;
  }
}

}  // namespace

void f32_conv_dw_2x32_avx2(const Conv2dParams& p, const float* x, const float* w, const float* bias,
                           float* y, const Activation& act) {
  const int64_t oh = p.out_h(), ow = p.out_w(), taps = p.kh * p.kw;
  Geometry g;
  g.hp = p.h + p.pad_top + p.pad_bottom;
  g.wp = p.w + p.pad_left + p.pad_right;
  g.s = p.stride_w;
  g.pw = (g.wp + g.s - 1) / g.s;
  // Per tap: offset of its first element in the phase buffer, relative to
  // row oy·stride_h (times pw) and column ox.
  std::vector<int64_t> tap_offset(static_cast<size_t>(taps));
  for (int64_t ky = 0; ky < p.kh; ++ky) {
    for (int64_t kx = 0; kx < p.kw; ++kx) {
      const int64_t col = kx * p.dil_w;
      tap_offset[ky * p.kw + kx] = ((col % g.s) * g.hp + ky * p.dil_h) * g.pw + col / g.s;
    }
  }
  const int64_t planes = p.n * p.c_in;
  // Plus 8 floats of slack: a masked block's loads run up to 7 floats past
  // the last row's last tap (dw_block).
  const size_t buf_n = static_cast<size_t>(g.s * g.hp * g.pw + 8);
  // One phase buffer per thread, kept across calls (no allocation per call),
  // zeroed once per call on each thread that runs planes of it (the call's
  // number tells): fill_phases rewrites only the interior.
  static std::atomic<uint64_t> calls{0};
  const uint64_t call = calls.fetch_add(1, std::memory_order_relaxed) + 1;
  const auto phase_buffer = [buf_n, call] {
    thread_local std::vector<float> phase_buf;
    thread_local uint64_t zeroed_for = 0;
    if (zeroed_for != call) {
      if (phase_buf.size() < buf_n) phase_buf.resize(buf_n);
      std::fill(phase_buf.begin(), phase_buf.begin() + static_cast<std::ptrdiff_t>(buf_n), 0.f);
      zeroed_for = call;
    }
    return phase_buf.data();
  };
  const auto one_plane = [&](int64_t plane, float* buf) {
    const int64_t c = plane % p.c_in;
    const float* wc = w + c * taps;
    const float b0 = bias ? bias[c] : 0.f;
    fill_phases(p, g, x + plane * p.h * p.w, buf);
    float* yp = y + plane * oh * ow;
    const int64_t row_step = p.stride_h * g.pw;  // buffer offset between output rows
    int64_t oy = 0;
    if (oh % 2 == 1 && oh >= 3) {
      dw_rows<3>(buf, row_step, tap_offset.data(), taps, wc, b0, yp, ow);
      oy = 3;
    }
    // A plane of at most 16 columns (two vectors a row) takes four rows at
    // a time: eight FMA chains in flight instead of four.
    if (ow <= 16)
      for (; oy + 4 <= oh; oy += 4)
        dw_rows<4>(buf + oy * row_step, row_step, tap_offset.data(), taps, wc, b0, yp + oy * ow,
                   ow);
    for (; oy + 2 <= oh; oy += 2) {
      dw_rows<2>(buf + oy * row_step, row_step, tap_offset.data(), taps, wc, b0, yp + oy * ow, ow);
    }
    if (oy < oh)
      dw_rows<1>(buf + oy * row_step, row_step, tap_offset.data(), taps, wc, b0, yp + oy * ow, ow);
    if (act.kind != ActivationKind::none) f32_bias_act_avx2(act, 0.f, yp, yp, oh * ow);
  };
  // Below the threads rule the planes run here, with no synchronisation at all.
  linalg::parallel_for(planes, planes > 1 && detail::worth_threads(planes * oh * ow * taps),
                       [&](int64_t plane) { one_plane(plane, phase_buffer()); });
}

}  // namespace tailor::runtime::kernels

#endif  // __AVX2__ && __FMA__
