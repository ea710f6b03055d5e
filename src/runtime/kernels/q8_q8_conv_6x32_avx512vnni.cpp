// q8_q8_conv_6x32_avx512vnni: the W8A8 k×k convolution (registry.h,
// Q8Q8ConvParams: one activation scale per image) on VPDPBUSD,
// AVX512-F/BW/VL/VNNI through function target attributes in the x86-64-v3
// build (the registry picks it where cpu_features() has them), on weights
// packed once at load by q8_q8_conv_pack_6x32.
//
// Three loops over parallel_for, each a partition fixed by the shape. (1)
// The image maxima: max |x| and whether any value is NaN or ±Inf, over
// fixed chunks of each image, combined in chunk order (max is exact, so the
// scale s[b] = max/127 is the reference's whatever the chunks). (2) Every
// padded input row some window reads, quantized once (one item per row of
// each image) into a buffer of the call: the codes qx + 128 as u8 laid out
// [c/4][column phase][column index][4] (phase = padded column mod stride_w,
// index = padded column / stride_w). The codes are the reference's: t =
// x·fl(1/s) rounded to nearest where that provably equals the reference's
// floor(|x/s| + 0.5) with its sign (t more than 2^−13 from a half-integer),
// else the reference's f32 operations on x/s (q8_quantize_avx512.h).
// Padding and the slack columns past the right edge hold code 128 (qx = 0),
// so a tile reads whole vectors anywhere. For output column ox and tap
// column kx the padded column is ox·stride_w + kx·dil_w: phase (kx·dil_w)
// mod stride_w, index ox + (kx·dil_w) / stride_w, so the pixels of a tile are
// consecutive dwords for any stride. (3) Bands of kBand output rows of one
// image.
//
// A register tile (the names keep the first version's 6 × 32) is 12 output
// channels (two 6-channel weight panels) × 32
// consecutive output columns of one row (6 × 32 on an odd last panel, 12 ×
// 16 and 6 × 16 for a last block of ≤ 16 columns): 24 int32 sums (two zmm
// per channel) start at the packed −128·Σ_{c, tap} q[o, c, tap] (the shift
// of the unsigned codes) and take one VPDPBUSD per tap and channel quad
// (u8 codes × the s8 weights broadcast, four products per lane, wrapping:
// the final sum is exact, |Σ| ≤ c_in·kh·kw·127·128 < 2^31). Then y =
// f32(Σ)·(s[b]·f16(scale[o])) stored (masked past the right edge), and bias
// and activation per channel over the band's rows by f32_bias_act_avx2 in
// place (its tails use the one-lane forms of its polynomials, so a value's
// result does not depend on where a span starts). Same bits as
// q8_q8_conv_ref at any thread count.
#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "runtime/kernels/gemm_partition.h"
#include "runtime/kernels/q8_quantize_avx512.h"
#include "tailor/linalg/parallel.h"
#include "tailor/runtime/kernels/registry.h"

// GCC 12's AVX-512 intrinsics pass _mm512_undefined_*() as a merge operand,
// which -Wmaybe-uninitialized reports at every use (GCC bug 105593).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace tailor::runtime::kernels {
namespace q8convk {

using namespace q8avx512;

// The largest c_in·kh·kw whose exact sums fit int32: K·127·128 < 2^31.
constexpr int64_t kMaxK = ((int64_t{1} << 31) - 1) / (127 * 128);
constexpr int64_t kRows = 6;   // output channels per weight panel
constexpr int64_t kCols = 32;  // output columns per tile (two zmm)
constexpr int64_t kBand = 8;   // output rows per work item
constexpr int64_t kLanes = 16;

struct Layout {
  int64_t panels, quads, taps, corr, scales, bytes;  // counts, then byte offsets and size
};

inline Layout layout(int64_t out, int64_t c_in, int64_t taps) {
  Layout l;
  l.panels = (out + kRows - 1) / kRows;
  l.quads = (c_in + 3) / 4;
  l.taps = taps;
  const int64_t codes = l.panels * taps * l.quads * kRows * 4;
  l.corr = (codes + 63) / 64 * 64;
  l.scales = l.corr + l.panels * kRows * 4;
  l.bytes = l.scales + l.panels * kRows * 4;
  return l;
}

// The quantized rows' geometry: a padded row holds quads·sw·nidx dwords of
// codes, nidx = the 32-column blocks' columns plus the taps' reach.
struct Geometry {
  int64_t quads, sw, nidx, wtot, row_dwords;
};

inline Geometry geometry(const Conv2dParams& c) {
  Geometry g;
  g.quads = (c.c_in + 3) / 4;
  g.sw = c.stride_w;
  const int64_t ow = c.out_w();
  g.nidx = (ow + kCols - 1) / kCols * kCols + (c.kw - 1) * c.dil_w / c.stride_w;
  g.wtot = g.sw * g.nidx;
  g.row_dwords = g.quads * g.wtot;
  return g;
}

// max |x[i]| over n floats, and whether some x[i] is NaN or ±Inf.
TAILOR_Q8_AVX512_TARGET void abs_max(const float* x, int64_t n, float* m, bool* bad) {
  __m512 v0 = _mm512_setzero_ps(), v1 = v0, v2 = v0, v3 = v0;
  __mmask16 b = 0;
  int64_t i = 0;
  for (; i + 4 * kLanes <= n; i += 4 * kLanes) {
    max_step(_mm512_loadu_ps(x + i), v0, b);
    max_step(_mm512_loadu_ps(x + i + kLanes), v1, b);
    max_step(_mm512_loadu_ps(x + i + 2 * kLanes), v2, b);
    max_step(_mm512_loadu_ps(x + i + 3 * kLanes), v3, b);
  }
  for (; i < n; i += kLanes) {
    const int64_t left = std::min(kLanes, n - i);
    max_step(_mm512_maskz_loadu_ps(static_cast<__mmask16>((1u << left) - 1), x + i), v0, b);
  }
  *m = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_max_ps(v0, v1), _mm512_max_ps(v2, v3)));
  *bad = b != 0;
}

// Padded row of an image: xr points at input row iy (c_in planes `plane`
// floats apart, w pixels). Writes codes [quad][wtot] (dwords: four u8
// qx + 128), input pixel ix at padded column pad_left + ix for the pixels
// that land in [0, wtot); every other column code 128. s: the image's scale
// (finite); rcp = fl(1/s), div = s (both 1 where s = 0).
TAILOR_Q8_AVX512_TARGET void quantize_row(const float* xr, int64_t plane, int64_t c_in, int64_t w,
                                          int64_t pad_left, const Geometry& g, float div_s,
                                          float rcp_s, uint32_t* codes) {
  const int64_t ix_lo = std::max<int64_t>(0, -pad_left);
  const int64_t ix_hi = std::min(w, g.wtot - pad_left);
  const int64_t col_lo = ix_lo < ix_hi ? pad_left + ix_lo : g.wtot;  // real columns [lo, hi)
  const int64_t col_hi = ix_lo < ix_hi ? pad_left + ix_hi : g.wtot;
  for (int64_t qd = 0; qd < g.quads; ++qd) {
    std::fill(codes + qd * g.wtot, codes + qd * g.wtot + col_lo, 0x80808080u);
    std::fill(codes + qd * g.wtot + col_hi, codes + (qd + 1) * g.wtot, 0x80808080u);
  }
  const __m512 div = _mm512_set1_ps(div_s), rcp = _mm512_set1_ps(rcp_s);
  // Quad by quad, each of its four channels' rows read front to back (four
  // sequential streams; 16-pixel blocks over every channel met the channels'
  // lines in one L1 set where the planes lie a multiple of 4 KiB apart).
  for (int64_t qd = 0; qd < g.quads; ++qd) {
    const float* xq = xr + 4 * qd * plane;
    const int64_t nk = std::min<int64_t>(4, c_in - 4 * qd);  // channels of this quad
    uint32_t* dst = codes + qd * g.wtot + pad_left;
    for (int64_t ix0 = ix_lo; ix0 < ix_hi; ix0 += kLanes) {
      const int64_t nv = std::min(kLanes, ix_hi - ix0);
      const __mmask16 m = static_cast<__mmask16>((1u << nv) - 1);
      // Inputs past c_in and lanes past nv read as 0 (code 0).
      __m512 v[4];
      for (int64_t i = 0; i < 4; ++i) {
        v[i] = i < nk ? _mm512_maskz_loadu_ps(m, xq + i * plane + ix0) : _mm512_setzero_ps();
        _mm_prefetch(reinterpret_cast<const char*>(xq + i * plane + ix0 + 8 * kLanes), _MM_HINT_T0);
      }
      const __m512i word = quad_codes(v[0], v[1], v[2], v[3], rcp, div);
      _mm512_mask_storeu_epi32(dst + ix0, m, word);
    }
  }
}

// One tile of R output channels (R/6 consecutive 6-channel panels) × 16·C
// columns: output row oy (its first padded row rr0 in the buffer), columns
// [ox0, ox0 + nv), channels o0 … o0 + rows − 1 (wp, corr: panel o0/6's
// weights and corrections; the next panel's weights lie `wstep` bytes
// further; ws [R]: s·scale[o]); y0 points at (o0, oy, ox0) of the output,
// channels `plane` floats apart. The R·C int32 sums stay in registers (GCC
// 12 scalarizes the unrolled arrays once the products go through dpbusd's
// inline asm).
template <int R, int C>
TAILOR_Q8_AVX512_TARGET void tile(const Conv2dParams& c, const Geometry& g, const uint32_t* codes,
                                  int64_t rr0, int64_t ox0, int64_t nv, const int8_t* wp,
                                  int64_t wstep, const int32_t* corr, const float* ws, int64_t rows,
                                  float* y0, int64_t plane) {
  static_assert(R % kRows == 0 && R * C <= 24);
  __m512i a[R][C];
#pragma GCC unroll 12
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 2
    for (int h = 0; h < C; ++h) a[r][h] = _mm512_set1_epi32(corr[r]);
  const int64_t qstride = g.wtot;  // dwords from one quad to the next
  const int8_t* wq = wp;           // [tap][quad][6][4], taps in row-major order
  for (int64_t ky = 0; ky < c.kh; ++ky) {
    const uint32_t* row = codes + (rr0 + ky * c.dil_h) * g.row_dwords;
    for (int64_t kx = 0; kx < c.kw; ++kx) {
      const int64_t off = kx * c.dil_w;
      // (No division at stride 1: its latency sat on the next tap's loads.)
      const uint32_t* xp = row + ox0 + (g.sw == 1 ? off : off % g.sw * g.nidx + off / g.sw);
      for (int64_t qd = 0; qd < g.quads; ++qd, wq += kRows * 4) {
        __m512i x[C];
#pragma GCC unroll 2
        for (int h = 0; h < C; ++h) x[h] = _mm512_loadu_si512(xp + qd * qstride + h * kLanes);
#pragma GCC unroll 12
        for (int r = 0; r < R; ++r) {
          int word;
          std::memcpy(&word, wq + r / kRows * wstep + r % kRows * 4, 4);
          const __m512i w = _mm512_set1_epi32(word);
#pragma GCC unroll 2
          for (int h = 0; h < C; ++h) dpbusd(a[r][h], x[h], w);
        }
      }
    }
  }
  __mmask16 m[C];
#pragma GCC unroll 2
  for (int h = 0; h < C; ++h) {
    const int64_t left = nv - h * kLanes;
    m[h] = left >= kLanes ? 0xFFFF : left <= 0 ? 0 : static_cast<__mmask16>((1u << left) - 1);
  }
#pragma GCC unroll 12
  for (int r = 0; r < R; ++r) {
    if (r >= rows) break;
    const __m512 w = _mm512_set1_ps(ws[r]);
#pragma GCC unroll 2
    for (int h = 0; h < C; ++h)
      _mm512_mask_storeu_ps(y0 + r * plane + h * kLanes, m[h],
                            _mm512_mul_ps(_mm512_cvtepi32_ps(a[r][h]), w));
  }
}

// Padded row r of image xb (input row r − pad_top) into its codes (dst: the
// row's place in the buffer). s: the image's scale (finite).
void quantize_padded_row(const Conv2dParams& c, const Geometry& g, const float* xb, int64_t r,
                         float s, uint32_t* dst) {
  bool used = false;  // whether some window reads padded row r
  for (int64_t ky = 0; ky < c.kh && !used; ++ky) {
    const int64_t d = r - ky * c.dil_h;
    used = d >= 0 && d % c.stride_h == 0 && d / c.stride_h < c.out_h();
  }
  if (!used) return;
  const int64_t iy = r - c.pad_top;
  if (iy < 0 || iy >= c.h) {
    std::fill(dst, dst + g.row_dwords, 0x80808080u);
    return;
  }
  const float div = s == 0 ? 1.0f : s, rcp = 1.0f / div;
  const int64_t plane = c.h * c.w;
  if (g.sw == 1) {
    quantize_row(xb + iy * c.w, plane, c.c_in, c.w, c.pad_left, g, div, rcp, dst);
    return;
  }
  thread_local std::vector<uint32_t> prow;
  prow.resize(static_cast<size_t>(g.row_dwords));
  quantize_row(xb + iy * c.w, plane, c.c_in, c.w, c.pad_left, g, div, rcp, prow.data());
  for (int64_t qd = 0; qd < g.quads; ++qd)
    for (int64_t ph = 0; ph < g.sw; ++ph)
      for (int64_t i = 0; i < g.nidx; ++i)
        dst[(qd * g.sw + ph) * g.nidx + i] = prow[static_cast<size_t>(qd * g.wtot + i * g.sw + ph)];
}

// The band of output rows [oy0, oy0 + nb) of one image from its quantized
// rows (codes) and scale s, then bias and activation over the band's rows.
void band(const Q8Q8ConvParams& p, const Layout& l, const Geometry& g, const uint32_t* codes,
          float s, const float* bias, float* yb, const Activation& act, int64_t oy0, int64_t nb) {
  const Conv2dParams& c = p.conv;
  const int64_t oh = c.out_h(), ow = c.out_w(), plane_out = oh * ow;
  const auto* wcodes = reinterpret_cast<const int8_t*>(p.packed);
  const auto* corr = reinterpret_cast<const int32_t*>(p.packed + l.corr);
  const auto* scale = reinterpret_cast<const float*>(p.packed + l.scales);
  // s·scale[o] in f32, the reference's first product (the padded rows 0).
  alignas(64) float ws[2 * kRows];
  const int64_t wstep = l.taps * l.quads * kRows * 4;
  for (int64_t oy = oy0; oy < oy0 + nb; ++oy)
    for (int64_t ox0 = 0; ox0 < ow; ox0 += kCols) {
      const int64_t nv = std::min(kCols, ow - ox0);
      for (int64_t pn = 0; pn < l.panels;) {
        const int64_t o0 = pn * kRows, pair = pn + 1 < l.panels ? 2 : 1;
        for (int64_t r = 0; r < pair * kRows; ++r) ws[r] = s * scale[o0 + r];
        const int8_t* wp = wcodes + pn * wstep;
        const int32_t* cp = corr + o0;
        const int64_t rows = std::min(pair * kRows, c.c_out - o0);
        float* y0 = yb + (o0 * oh + oy) * ow + ox0;
        const int64_t rr0 = oy * c.stride_h;
        if (nv > kLanes && pair == 2)
          tile<12, 2>(c, g, codes, rr0, ox0, nv, wp, wstep, cp, ws, rows, y0, plane_out);
        else if (nv > kLanes)
          tile<6, 2>(c, g, codes, rr0, ox0, nv, wp, wstep, cp, ws, rows, y0, plane_out);
        else if (pair == 2)
          tile<12, 1>(c, g, codes, rr0, ox0, nv, wp, wstep, cp, ws, rows, y0, plane_out);
        else
          tile<6, 1>(c, g, codes, rr0, ox0, nv, wp, wstep, cp, ws, rows, y0, plane_out);
        pn += pair;
      }
    }
  // Always (as the reference): x + 0 turns a −0 into +0.
  for (int64_t o = 0; o < c.c_out; ++o) {
    float* yo = yb + (o * oh + oy0) * ow;
    f32_bias_act_avx2(act, bias ? bias[o] : 0.0f, yo, yo, nb * ow);
  }
}

}  // namespace q8convk

int64_t q8_q8_conv_pack_6x32(const schemes::kernels::PackedGemmArgs& w, int64_t kh, int64_t kw,
                             uint8_t* packed) {
  using namespace q8convk;
  const int64_t taps = kh * kw, c_in = w.in / taps;
  if (w.in > kMaxK) return q8_q8_conv_pack_ref(w, kh, kw, packed);
  const Layout l = layout(w.out, c_in, taps);
  if (!packed) return l.bytes;
  std::memset(packed, 0, static_cast<size_t>(l.bytes));
  const auto* q = reinterpret_cast<const int8_t*>(w.codes);
  auto* corr = reinterpret_cast<int32_t*>(packed + l.corr);
  auto* scale = reinterpret_cast<float*>(packed + l.scales);
  for (int64_t o = 0; o < w.out; ++o) {
    const int64_t pn = o / kRows, r = o % kRows;
    int32_t sum = 0;
    for (int64_t tap = 0; tap < taps; ++tap)
      for (int64_t ci = 0; ci < c_in; ++ci) {
        const int8_t v = q[o * w.in + ci * taps + tap];
        packed[(((pn * taps + tap) * l.quads + ci / 4) * kRows + r) * 4 + ci % 4] =
            static_cast<uint8_t>(v);
        sum += v;
      }
    corr[o] = -128 * sum;
    scale[o] = _cvtsh_ss(w.scales[o]);
  }
  return l.bytes;
}

void q8_q8_conv_6x32_avx512vnni(const Q8Q8ConvParams& p, const float* x, const float* bias,
                                float* y, const Activation& act) {
  using namespace q8convk;
  const Conv2dParams& c = p.conv;
  if (c.c_in * c.kh * c.kw > kMaxK) {  // packed in the reference's layout (q8_q8_conv_pack_6x32)
    q8_q8_conv_ref(p, x, bias, y, act);
    return;
  }
  const int64_t oh = c.out_h(), ow = c.out_w();
  if (c.n <= 0 || c.c_out <= 0 || oh <= 0 || ow <= 0) return;
  const Layout l = layout(c.c_out, c.c_in, c.kh * c.kw);
  const Geometry g = geometry(c);
  const int64_t plane_in = c.h * c.w, plane_out = oh * ow, image = c.c_in * plane_in;
  const bool parallel = detail::worth_threads(c.n * c.c_out * oh * ow * c.c_in * c.kh * c.kw);
  // (1) Each image's scale from the maxima of fixed chunks.
  constexpr int64_t kMaxChunk = 1 << 16;  // floats
  const int64_t chunks = std::max<int64_t>(1, (image + kMaxChunk - 1) / kMaxChunk);
  thread_local std::vector<float> part;
  thread_local std::vector<uint8_t> part_bad;
  part.resize(static_cast<size_t>(c.n * chunks));
  part_bad.resize(static_cast<size_t>(c.n * chunks));
  float* const pm = part.data();
  uint8_t* const pb = part_bad.data();
  linalg::parallel_for(c.n * chunks, parallel && c.n * chunks > 1, [&](int64_t item) {
    const int64_t b = item / chunks, i0 = item % chunks * kMaxChunk;
    bool bad = false;
    abs_max(x + b * image + i0, std::min(kMaxChunk, image - i0), pm + item, &bad);
    pb[item] = bad;
  });
  std::vector<float> s(static_cast<size_t>(c.n));
  for (int64_t b = 0; b < c.n; ++b) {
    float m = 0;
    bool bad = false;
    for (int64_t i = b * chunks; i < (b + 1) * chunks; ++i) {
      m = std::max(m, pm[i]);
      bad = bad || pb[i] != 0;
    }
    s[static_cast<size_t>(b)] = bad ? std::numeric_limits<float>::quiet_NaN() : m / 127.0f;
  }
  // (2) The padded rows every window reads, quantized once. An image holding
  // NaN or ±Inf has NaN outputs whatever its codes: left as they are.
  const int64_t rows = (oh - 1) * c.stride_h + (c.kh - 1) * c.dil_h + 1;
  thread_local std::vector<uint32_t> codes;
  codes.resize(static_cast<size_t>(c.n * rows * g.row_dwords));
  uint32_t* const qc = codes.data();
  linalg::parallel_for(c.n * rows, parallel && c.n * rows > 1, [&](int64_t item) {
    const int64_t b = item / rows, r = item % rows;
    const float sb = s[static_cast<size_t>(b)];
    if (!std::isnan(sb)) quantize_padded_row(c, g, x + b * image, r, sb, qc + item * g.row_dwords);
  });
  // (3) Bands of output rows.
  const int64_t bands = (oh + kBand - 1) / kBand;
  linalg::parallel_for(c.n * bands, parallel && c.n * bands > 1, [&](int64_t item) {
    const int64_t b = item / bands, oy0 = item % bands * kBand;
    band(p, l, g, qc + b * rows * g.row_dwords, s[static_cast<size_t>(b)], bias,
         y + b * c.c_out * plane_out, act, oy0, std::min(kBand, oh - oy0));
  });
}

}  // namespace tailor::runtime::kernels

#pragma GCC diagnostic pop

#endif  // __AVX2__ && __FMA__ && __F16C__
