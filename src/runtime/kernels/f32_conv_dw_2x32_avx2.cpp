// f32_conv_dw_2x32_avx2: direct depthwise convolution (groups == c_in ==
// c_out), AVX2/FMA, parallel over (image, channel) planes.
//
// Each (image, channel) plane is first copied into a zero-padded buffer split
// into stride_w phase planes (column j of the padded row goes to phase
// j mod stride_w at index j / stride_w), so every tap of every stride reads
// contiguous, in-bounds columns: tap (ky, kx) of output (oy, ox) is
// phase (kx·dil_w) mod s, row oy·stride_h + ky·dil_h, index ox + (kx·dil_w) / s.
// Outputs are accumulated in registers 32 columns at a time, two rows at a
// time (three for the first rows of a plane of an odd number of rows), taps
// in row-major order starting from the bias; the scalar tail uses the same
// fma order, so every output is the same sequence of FMAs whatever its path.
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

// One output row: yr[ox] = b0 + Σ_t wc[t]·base[off[t] + ox], taps in order.
void dw_row(const float* base, const int64_t* off, int64_t taps, const float* wc, float b0,
            float* yr, int64_t ow) {
  int64_t ox = 0;
  for (; ox + 32 <= ow; ox += 32) {
    __m256 a0 = _mm256_set1_ps(b0), a1 = a0, a2 = a0, a3 = a0;
    for (int64_t t = 0; t < taps; ++t) {
      const __m256 wv = _mm256_broadcast_ss(wc + t);
      const float* src = base + off[t] + ox;
      a0 = _mm256_fmadd_ps(_mm256_loadu_ps(src), wv, a0);
      a1 = _mm256_fmadd_ps(_mm256_loadu_ps(src + 8), wv, a1);
      a2 = _mm256_fmadd_ps(_mm256_loadu_ps(src + 16), wv, a2);
      a3 = _mm256_fmadd_ps(_mm256_loadu_ps(src + 24), wv, a3);
    }
    _mm256_storeu_ps(yr + ox, a0);
    _mm256_storeu_ps(yr + ox + 8, a1);
    _mm256_storeu_ps(yr + ox + 16, a2);
    _mm256_storeu_ps(yr + ox + 24, a3);
  }
  for (; ox + 8 <= ow; ox += 8) {
    __m256 a0 = _mm256_set1_ps(b0);
    for (int64_t t = 0; t < taps; ++t) {
      a0 = _mm256_fmadd_ps(_mm256_loadu_ps(base + off[t] + ox), _mm256_broadcast_ss(wc + t), a0);
    }
    _mm256_storeu_ps(yr + ox, a0);
  }
  for (; ox < ow; ++ox) {
    float a = b0;
    for (int64_t t = 0; t < taps; ++t) a = std::fma(base[off[t] + ox], wc[t], a);
    yr[ox] = a;
  }
}

// R output rows at once (R = 2: 8 independent accumulators over 32 columns,
// enough to hide the FMA latency; R = 3: 12, so a plane of an odd number of
// rows starts with three and no row is left to dw_row's four accumulators,
// which wait on the FMA latency: the classifier's 3-row planes). Row r's
// taps start r·`step` floats later and it is written r·ow floats later.
// Each element's sum has the same order as in dw_row.
template <int R>
void dw_rows(const float* base, int64_t step, const int64_t* off, int64_t taps, const float* wc,
             float b0, float* yr, int64_t ow) {
  int64_t ox = 0;
  for (; ox + 32 <= ow; ox += 32) {
    __m256 acc[R][4];
#pragma GCC unroll 3
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
      for (int q = 0; q < 4; ++q) acc[r][q] = _mm256_set1_ps(b0);
    for (int64_t t = 0; t < taps; ++t) {
      const __m256 wv = _mm256_broadcast_ss(wc + t);
      const float* src = base + off[t] + ox;
#pragma GCC unroll 3
      for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
        for (int q = 0; q < 4; ++q)
          acc[r][q] = _mm256_fmadd_ps(_mm256_loadu_ps(src + r * step + 8 * q), wv, acc[r][q]);
    }
#pragma GCC unroll 3
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
      for (int q = 0; q < 4; ++q) _mm256_storeu_ps(yr + r * ow + ox + 8 * q, acc[r][q]);
  }
  for (; ox + 8 <= ow; ox += 8) {
    __m256 acc[R];
#pragma GCC unroll 3
    for (int r = 0; r < R; ++r) acc[r] = _mm256_set1_ps(b0);
    for (int64_t t = 0; t < taps; ++t) {
      const __m256 wv = _mm256_broadcast_ss(wc + t);
#pragma GCC unroll 3
      for (int r = 0; r < R; ++r)
        acc[r] = _mm256_fmadd_ps(_mm256_loadu_ps(base + r * step + off[t] + ox), wv, acc[r]);
    }
#pragma GCC unroll 3
    for (int r = 0; r < R; ++r) _mm256_storeu_ps(yr + r * ow + ox, acc[r]);
  }
  if (ox < ow) {
    for (int64_t r = 0; r < R; ++r)
      dw_row(base + r * step + ox, off, taps, wc, b0, yr + r * ow + ox, ow - ox);
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
  const size_t buf_n = static_cast<size_t>(g.s * g.hp * g.pw);
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
    for (; oy + 2 <= oh; oy += 2) {
      dw_rows<2>(buf + oy * row_step, row_step, tap_offset.data(), taps, wc, b0, yp + oy * ow, ow);
    }
    if (oy < oh) {
      dw_row(buf + oy * row_step, tap_offset.data(), taps, wc, b0, yp + oy * ow, ow);
    }
    if (act.kind != ActivationKind::none) f32_bias_act_avx2(act, 0.f, yp, yp, oh * ow);
  };
  // Below the threads rule the planes run here, with no synchronisation at all.
  linalg::parallel_for(planes, planes > 1 && detail::worth_threads(planes * oh * ow * taps),
                       [&](int64_t plane) { one_plane(plane, phase_buffer()); });
}

}  // namespace tailor::runtime::kernels

#endif  // __AVX2__ && __FMA__
