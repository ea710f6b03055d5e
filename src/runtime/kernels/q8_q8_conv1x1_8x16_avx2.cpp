// W8A8 1×1 convolution on integer dot products (registry.h,
// q8_q8_conv1x1_8x16_avx2 / _avx512vnni): per block of 16 output pixels, the
// 16 columns of X are quantized (the reference's codes and scales) into a u8
// panel of qx + 128 laid out in input quads, xq[k/4][16][4], which stays in
// L1 while every 8-channel panel of the packed weight sweeps it.
//   _avx512vnni: a work item's blocks (up to 8) are quantized first, 16
//     pixels to a zmm, the codes by a multiplication by fl(1/s) where that
//     provably gives the reference's rounding, else its division
//     (q8_quantize_avx512.h, shared with the k×k kernel). A tile is 8
//     channels × 2 blocks in 16 zmm int32 sums that start at the shift's
//     −128·Σ_k q[o, k]: per quad, two panel loads, one 4-byte weight
//     broadcast per channel, VPDPBUSD (u8 × s8, four products summed into
//     each int32 lane, no saturation; |Σ| ≤ 16384 quads · 4·255·128 < 2^31);
//     the rescale is applied in registers.
//   _avx2: per block, two ymm per channel (16 int32 sums for 8 channels × 16
//     pixels), quantized with the reference's division; VPMADDUBSW with the
//     sign trick (unsigned |q| ≤ 128 × signed qx·sign(q), |qx| ≤ 127: pair
//     sums ≤ 32512, exact), VPMADDWD to int32; 4 channels per pass (16 ymm
//     registers). The panel is un-shifted by XOR 0x80.
// Both sums are exact, so both kernels give the reference's bits: f32(Σ)·(s·f16(scale)),
// then bias and activation by f32_bias_act_avx2 per channel row.
#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#include "runtime/kernels/gemm_partition.h"
#include "runtime/kernels/q8_quantize_avx512.h"
#include "tailor/linalg/parallel.h"
#include "tailor/runtime/kernels/registry.h"

namespace tailor::runtime::kernels {
namespace q8conv {

constexpr int64_t kRows = 8;     // output channels per panel and tile
constexpr int64_t kPixels = 16;  // output pixels per block and tile

struct Layout {
  int64_t panels, quads, corr, scales, bytes;  // counts, then byte offsets and size
};

inline Layout layout(int64_t out, int64_t in) {
  Layout l;
  l.panels = (out + kRows - 1) / kRows;
  l.quads = (in + 3) / 4;
  const int64_t codes = l.panels * l.quads * kRows * 4;
  l.corr = (codes + 63) / 64 * 64;
  l.scales = l.corr + l.panels * kRows * 4;
  l.bytes = l.scales + l.panels * kRows * 4;
  return l;
}

// Columns [j0, j0 + nv) (nv ≤ 16) of xb [k_in, pix] → xq[quad][16][4] (u8
// qx + 128; inputs past k_in and pixels past nv hold 128, i.e. qx = 0) and
// s[16] (NaN for a column holding NaN or ±Inf, 0 past nv). The first pass
// copies the block into xs [k_in, 16] (contiguous) while it takes the
// maxima, the second reads the copy: the planes lie pix floats apart, at
// 160² and 320² pixels a multiple of 4 KiB, so their lines share one L1 set
// and a second pass over them went to L2 for every line (2.5× the f32
// conv's time on the detector's 48→12 layer at 160²).
// Floats ahead of a block that its first pass prefetches on each plane (the
// hardware prefetcher tracks fewer streams than a layer has inputs).
constexpr int64_t kPrefetch = 8 * kPixels;

inline void quantize_block(const float* xb, int64_t k_in, int64_t pix, int64_t j0, int64_t nv,
                           int64_t quads, float* xs, uint8_t* xq, float* s) {
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
  const __m256 sign_mask = _mm256_castsi256_ps(_mm256_set1_epi32(static_cast<int>(0x80000000u)));
  const __m256i exp_mask = _mm256_set1_epi32(0x7F800000);
  const __m256 half = _mm256_set1_ps(0.5f), top = _mm256_set1_ps(127.0f);
  const __m256i shift = _mm256_set1_epi32(128);
  const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  // Lanes past nv load as 0 (masked), so their maxima and codes are those of
  // zero columns: s = 0, qx = 0.
  const __m256i m0 = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(nv)), idx);
  const __m256i m1 = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(nv - 8)), idx);
  const bool full = nv == kPixels;  // plain loads (masked ones cost more)
  const float* xc = xb + j0;
  __m256 vmax[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
  __m256i bad[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
  for (int64_t k = 0; k < k_in; ++k) {
    const float* r = xc + k * pix;
    _mm_prefetch(reinterpret_cast<const char*>(r + kPrefetch), _MM_HINT_T0);
    const __m256 v[2] = {full ? _mm256_loadu_ps(r) : _mm256_maskload_ps(r, m0),
                         full ? _mm256_loadu_ps(r + 8) : _mm256_maskload_ps(r + 8, m1)};
    for (int h = 0; h < 2; ++h) {
      _mm256_storeu_ps(xs + k * kPixels + 8 * h, v[h]);
      vmax[h] = _mm256_max_ps(vmax[h], _mm256_and_ps(v[h], abs_mask));
      bad[h] = _mm256_or_si256(
          bad[h],
          _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_castps_si256(v[h]), exp_mask), exp_mask));
    }
  }
  for (int64_t h = 0; h < 2; ++h) {
    const __m256 sv = _mm256_div_ps(vmax[h], top);
    _mm256_storeu_ps(s + 8 * h,
                     _mm256_blendv_ps(sv, _mm256_set1_ps(std::numeric_limits<float>::quiet_NaN()),
                                      _mm256_castsi256_ps(bad[h])));
    // A zero column divides by 1 (its codes are 0 either way).
    const __m256 div = _mm256_blendv_ps(sv, _mm256_set1_ps(1.0f),
                                        _mm256_cmp_ps(sv, _mm256_setzero_ps(), _CMP_EQ_OQ));
    auto code = [&](int64_t k) {  // qx + 128 of input k for the 8 lanes, int32
      if (k >= k_in) return shift;
      const __m256 v = _mm256_div_ps(_mm256_loadu_ps(xs + k * kPixels + 8 * h), div);
      __m256 r = _mm256_floor_ps(_mm256_add_ps(_mm256_and_ps(v, abs_mask), half));
      r = _mm256_or_ps(_mm256_min_ps(r, top), _mm256_and_ps(v, sign_mask));
      return _mm256_add_epi32(_mm256_cvttps_epi32(r), shift);
    };
    for (int64_t qd = 0; qd < quads; ++qd) {
      const int64_t k = 4 * qd;
      __m256i word = code(k);
      word = _mm256_or_si256(word, _mm256_slli_epi32(code(k + 1), 8));
      word = _mm256_or_si256(word, _mm256_slli_epi32(code(k + 2), 16));
      word = _mm256_or_si256(word, _mm256_slli_epi32(code(k + 3), 24));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(xq + (qd * kPixels + 8 * h) * 4), word);
    }
  }
}

// y[o, j0 + t] = f32(acc[r][t] − corr[o])·(s[t]·scale[o]) for the tile's rows, t < nv.
inline void store_tile(const __m256i (&acc)[kRows][2], int64_t rows, const int32_t* corr,
                       const float* scale, const float* s, int64_t nv, float* y, int64_t pix) {
  const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256i m0 = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(nv)), idx);
  const __m256i m1 = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(nv - 8)), idx);
  const __m256 s0 = _mm256_loadu_ps(s), s1 = _mm256_loadu_ps(s + 8);
  for (int64_t r = 0; r < rows; ++r) {
    const __m256i c = _mm256_set1_epi32(corr[r]);
    const __m256 w = _mm256_set1_ps(scale[r]);
    const __m256 v0 =
        _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(acc[r][0], c)), _mm256_mul_ps(s0, w));
    const __m256 v1 =
        _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(acc[r][1], c)), _mm256_mul_ps(s1, w));
    float* yo = y + r * pix;
    if (nv == kPixels) {
      _mm256_storeu_ps(yo, v0);
      _mm256_storeu_ps(yo + 8, v1);
    } else {
      _mm256_maskstore_ps(yo, m0, v0);
      _mm256_maskstore_ps(yo + 8, m1, v1);
    }
  }
}

// Quantize, multiply and rescale every block into a work item's buffer
// ys [c_out, kItem] (contiguous: y's rows lie pix floats apart, at 160² and
// 320² pixels a multiple of 4 KiB, so tiles stored there in place shared L1
// sets), then bias and activation per channel row from ys into y. Work
// items are (image, kItem pixels), a partition fixed by the shape: a pass
// over the whole output after the products cost the detector's 16–48-channel
// layers at 160²–320² pixels as much as the products, and one epilogue call
// per 16-pixel tile row as much again in call overhead. Items and blocks
// start at multiples of 8 pixels, so f32_bias_act_avx2 meets the same 8-lane
// groups and tail as on whole rows: the same bits either way.
constexpr int64_t kItem = 8 * kPixels;

// The work items: (image, kItem pixels), a partition fixed by the shape.
struct Items {
  int64_t per_image, count;
  bool parallel;
};

inline Items items(const Q8Q8Conv1x1Params& p) {
  Items it;
  it.per_image = (p.pixels + kItem - 1) / kItem;
  it.count = p.n * it.per_image;
  it.parallel = it.count > 1 && detail::worth_threads(p.n * p.c_out * p.pixels * p.c_in);
  return it;
}

// Bias and activation per channel row of an item's ys [out, kItem] into
// yb's columns [i0, i0 + ni) (a copy where there are neither).
inline void finish_item(const float* ys, int64_t out, const float* bias, const Activation& act,
                        float* yb, int64_t pix, int64_t i0, int64_t ni) {
  const bool epilogue = bias != nullptr || act.kind != ActivationKind::none;
  for (int64_t o = 0; o < out; ++o) {
    const float* src = ys + o * kItem;
    if (epilogue)
      f32_bias_act_avx2(act, bias ? bias[o] : 0.0f, src, yb + o * pix + i0, ni);
    else
      std::copy_n(src, ni, yb + o * pix + i0);
  }
}

template <class Tile>
inline void run(const Q8Q8Conv1x1Params& p, const float* x, const float* bias, float* y,
                const Activation& act, Tile tile) {
  const Layout l = layout(p.c_out, p.c_in);
  const int64_t pix = p.pixels, out = p.c_out;
  const Items it = items(p);
  const auto* codes = reinterpret_cast<const int8_t*>(p.packed);
  const auto* scale = reinterpret_cast<const float*>(p.packed + l.scales);
  linalg::parallel_for(it.count, it.parallel, [&](int64_t item) {
    thread_local std::vector<uint8_t> xq;
    thread_local std::vector<float> xs, ys;
    xq.resize(static_cast<size_t>(l.quads * kPixels * 4));
    xs.resize(static_cast<size_t>(p.c_in * kPixels));
    ys.resize(static_cast<size_t>(l.panels * kRows * kItem));
    alignas(32) float s[kPixels];
    alignas(32) int32_t zero[kRows] = {};
    const int64_t b = item / it.per_image, i0 = (item % it.per_image) * kItem;
    const int64_t ni = std::min(kItem, pix - i0);
    const float* xb = x + b * p.c_in * pix;
    for (int64_t j0 = i0; j0 < i0 + ni; j0 += kPixels) {
      const int64_t nv = std::min(kPixels, pix - j0);
      quantize_block(xb, p.c_in, pix, j0, nv, l.quads, xs.data(), xq.data(), s);
      for (int64_t pn = 0; pn < l.panels; ++pn) {
        __m256i acc[kRows][2];
        tile(xq.data(), codes + pn * l.quads * kRows * 4, l.quads, acc);
        store_tile(acc, std::min(kRows, out - pn * kRows), zero, scale + pn * kRows, s, nv,
                   ys.data() + pn * kRows * kItem + (j0 - i0), kItem);
      }
    }
    finish_item(ys.data(), out, bias, act, y + b * out * pix, pix, i0, ni);
  });
}

}  // namespace q8conv

int64_t q8_q8_conv1x1_pack_8x16(const schemes::kernels::PackedGemmArgs& w, uint8_t* packed) {
  using namespace q8conv;
  const Layout l = layout(w.out, w.in);
  if (!packed) return l.bytes;
  std::memset(packed, 0, static_cast<size_t>(l.bytes));
  const auto* q = reinterpret_cast<const int8_t*>(w.codes);
  auto* corr = reinterpret_cast<int32_t*>(packed + l.corr);
  auto* scale = reinterpret_cast<float*>(packed + l.scales);
  for (int64_t o = 0; o < w.out; ++o) {
    const int64_t pn = o / kRows, r = o % kRows;
    int32_t sum = 0;
    for (int64_t k = 0; k < w.in; ++k) {
      const int8_t c = q[o * w.in + k];
      packed[((pn * l.quads + k / 4) * kRows + r) * 4 + k % 4] = static_cast<uint8_t>(c);
      sum += c;
    }
    corr[o] = 128 * sum;
    scale[o] = _cvtsh_ss(w.scales[o]);
  }
  return l.bytes;
}

void q8_q8_conv1x1_8x16_avx2(const Q8Q8Conv1x1Params& p, const float* x, const float* bias,
                             float* y, const Activation& act) {
  using namespace q8conv;
  q8conv::run(p, x, bias, y, act,
              [](const uint8_t* xq, const int8_t* wp, int64_t quads, __m256i(&acc)[kRows][2]) {
                const __m256i ones = _mm256_set1_epi16(1);
                const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80));
                for (int64_t r0 = 0; r0 < kRows; r0 += 4) {
                  __m256i a[4][2];
                  for (auto& t : a) t[0] = t[1] = _mm256_setzero_si256();
                  for (int64_t qd = 0; qd < quads; ++qd) {
                    const auto* xp = reinterpret_cast<const __m256i*>(xq + qd * kPixels * 4);
                    const __m256i x0 = _mm256_xor_si256(_mm256_loadu_si256(xp), flip);
                    const __m256i x1 = _mm256_xor_si256(_mm256_loadu_si256(xp + 1), flip);
                    const int8_t* wq = wp + (qd * kRows + r0) * 4;
                    for (int r = 0; r < 4; ++r) {
                      int32_t word;
                      std::memcpy(&word, wq + r * 4, 4);
                      const __m256i wb = _mm256_set1_epi32(word);
                      const __m256i aw = _mm256_abs_epi8(wb);
                      a[r][0] = _mm256_add_epi32(
                          a[r][0], _mm256_madd_epi16(
                                       _mm256_maddubs_epi16(aw, _mm256_sign_epi8(x0, wb)), ones));
                      a[r][1] = _mm256_add_epi32(
                          a[r][1], _mm256_madd_epi16(
                                       _mm256_maddubs_epi16(aw, _mm256_sign_epi8(x1, wb)), ones));
                    }
                  }
                  for (int r = 0; r < 4; ++r) {
                    acc[r0 + r][0] = a[r][0];
                    acc[r0 + r][1] = a[r][1];
                  }
                }
              });
}

// GCC 12's AVX-512 intrinsics pass _mm512_undefined_*() as a merge operand,
// which -Wmaybe-uninitialized reports at every use (GCC bug 105593).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace q8conv {

using namespace q8avx512;

// The first 64-byte boundary in v, resized to hold n elements past it.
template <class T>
T* aligned64(std::vector<T>& v, int64_t n) {
  v.resize(static_cast<size_t>(n) + 64 / sizeof(T));
  const auto a = reinterpret_cast<uintptr_t>(v.data());
  return reinterpret_cast<T*>((a + 63) & ~uintptr_t{63});
}

// A block's scales from its four partial maxima of |x|'s bit patterns (see
// quantize_block_zmm): s (NaN for a column holding NaN or ±Inf) stored, the
// divisor (s, or 1 where s = 0) and fl(1/divisor) returned.
TAILOR_Q8_AVX512_INLINE void block_scales(const __m512i (&mk)[4], float* s, __m512& div,
                                          __m512& rcp) {
  const __m512i mx =
      _mm512_max_epi32(_mm512_max_epi32(mk[0], mk[1]), _mm512_max_epi32(mk[2], mk[3]));
  const __mmask16 bad = _mm512_cmpge_epi32_mask(mx, _mm512_set1_epi32(0x7F800000));
  const __m512 one = _mm512_set1_ps(1.0f);
  const __m512 sv = _mm512_div_ps(_mm512_castsi512_ps(mx), _mm512_set1_ps(127.0f));
  _mm512_storeu_ps(
      s, _mm512_mask_blend_ps(bad, sv, _mm512_set1_ps(std::numeric_limits<float>::quiet_NaN())));
  // A zero column divides by 1 (its codes are 0 either way).
  div = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(sv, _mm512_setzero_ps(), _CMP_EQ_OQ), sv, one);
  rcp = _mm512_div_ps(one, div);
}

/// Inputs up to which quantize_block_zmm holds a block in registers.
constexpr int64_t kRegInputs = 24;

// quantize_block on zmm (one 16-pixel block per vector), the codes by
// q8avx512::quad_codes (a multiplication by fl(1/s), a division only for
// quads near a half-integer): the same codes and s as quantize_block. xq
// gets the block's panel [quads][16][4], s its 16 scales. Up to kRegInputs
// inputs the block stays in registers, else it is copied to xs [k_in, 16].
TAILOR_Q8_AVX512_TARGET void quantize_block_zmm(const float* xb, int64_t k_in, int64_t pix,
                                                int64_t j0, int64_t nv, int64_t quads, float* xs,
                                                uint8_t* xq, float* s) {
  // Lanes past nv load as 0: s = 0, qx = 0.
  const __mmask16 m = nv >= kPixels ? 0xFFFF : static_cast<__mmask16>((1u << nv) - 1);
  const float* xc = xb + j0;
  // max |x| on the bit patterns as int32 (ordered as the magnitudes; NaN
  // and ±Inf at or above 0x7F800000), in four independent maxima (a single
  // one made the pass one VPMAXSD latency per input).
  const __m512i abs_bits = _mm512_set1_epi32(0x7FFFFFFF);
  __m512i mk[4] = {_mm512_setzero_si512(), _mm512_setzero_si512(), _mm512_setzero_si512(),
                   _mm512_setzero_si512()};
  auto load = [&](int64_t k, int i) TAILOR_Q8_AVX512_TARGET {
    const float* r = xc + k * pix;
    _mm_prefetch(reinterpret_cast<const char*>(r + kPrefetch), _MM_HINT_T0);
    const __m512 v = _mm512_maskz_loadu_ps(m, r);
    mk[i] = _mm512_max_epi32(mk[i], _mm512_and_si512(_mm512_castps_si512(v), abs_bits));
    return v;
  };
  __m512 div, rcp;
  if (k_in <= kRegInputs) {
    __m512 v[kRegInputs];
#pragma GCC unroll 24
    for (int k = 0; k < kRegInputs; ++k) v[k] = k < k_in ? load(k, k % 4) : _mm512_setzero_ps();
    block_scales(mk, s, div, rcp);
#pragma GCC unroll 6
    for (int qd = 0; qd < kRegInputs / 4; ++qd)
      if (qd < quads)
        _mm512_store_si512(
            xq + qd * kPixels * 4,
            quad_codes(v[4 * qd], v[4 * qd + 1], v[4 * qd + 2], v[4 * qd + 3], rcp, div));
    return;
  }
  int64_t k = 0;
  for (; k + 4 <= k_in; k += 4)
    for (int i = 0; i < 4; ++i) _mm512_store_ps(xs + (k + i) * kPixels, load(k + i, i));
  for (; k < k_in; ++k) _mm512_store_ps(xs + k * kPixels, load(k, 0));
  block_scales(mk, s, div, rcp);
  for (int64_t qd = 0; qd < quads; ++qd) {
    __m512 v[4];  // inputs past k_in: 0
    for (int64_t i = 0; i < 4; ++i)
      v[i] = 4 * qd + i < k_in ? _mm512_load_ps(xs + (4 * qd + i) * kPixels) : _mm512_setzero_ps();
    _mm512_store_si512(xq + qd * kPixels * 4, quad_codes(v[0], v[1], v[2], v[3], rcp, div));
  }
}

// C adjacent blocks' 8 × 16 tiles in one pass over a weight panel wp: the
// blocks' panels lie `bstride` bytes apart from xq, their scales s[16·C]
// consecutive. 8·C zmm int32 sums start at −corr[r] (the codes' shift:
// −128·Σ_k q[o, k]) and take one VPDPBUSD per quad, channel and block;
// then y[r, 16·h + t] = f32(Σ)·(s[16·h + t]·scale[r]) for all 8 rows
// (rows past c_out have zero weights and scales), rows `ystride` floats
// apart.
template <int C>
TAILOR_Q8_AVX512_TARGET void tile_zmm(const uint8_t* xq, int64_t bstride, const int8_t* wp,
                                      int64_t quads, const int32_t* corr, const float* scale,
                                      const float* s, float* y, int64_t ystride) {
  __m512i a[kRows][C];
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r)
#pragma GCC unroll 4
    for (int h = 0; h < C; ++h) a[r][h] = _mm512_set1_epi32(-corr[r]);
  for (int64_t qd = 0; qd < quads; ++qd) {
    __m512i xv[C];
#pragma GCC unroll 4
    for (int h = 0; h < C; ++h) xv[h] = _mm512_loadu_si512(xq + h * bstride + qd * kPixels * 4);
    const int8_t* wq = wp + qd * kRows * 4;
#pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r) {
      int word;
      std::memcpy(&word, wq + r * 4, 4);
      const __m512i w = _mm512_set1_epi32(word);
#pragma GCC unroll 4
      for (int h = 0; h < C; ++h) dpbusd(a[r][h], xv[h], w);
    }
  }
#pragma GCC unroll 4
  for (int h = 0; h < C; ++h) {
    const __m512 sh = _mm512_loadu_ps(s + h * kPixels);
#pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r)
      _mm512_storeu_ps(
          y + r * ystride + h * kPixels,
          _mm512_mul_ps(_mm512_cvtepi32_ps(a[r][h]), _mm512_mul_ps(sh, _mm512_set1_ps(scale[r]))));
  }
}

/// Blocks per weight pass of the _avx512vnni kernel (8·kTileBlocks
/// accumulators; 3 measured no faster on w8a8_conv1x1_bench), the last
/// block of an odd count alone.
constexpr int kTileBlocks = 2;

}  // namespace q8conv

// Per work item: every block quantized into the item's panels (xq
// [block][quads][16][4]), then per weight panel the blocks kTileBlocks at a
// time (tile_zmm: sums, shift and rescale in registers) into ys, then
// finish_item.
void q8_q8_conv1x1_8x16_avx512vnni(const Q8Q8Conv1x1Params& p, const float* x, const float* bias,
                                   float* y, const Activation& act) {
  using namespace q8conv;
  const Layout l = layout(p.c_out, p.c_in);
  const int64_t pix = p.pixels, out = p.c_out, bstride = l.quads * kPixels * 4;
  const Items it = items(p);
  const auto* codes = reinterpret_cast<const int8_t*>(p.packed);
  const auto* corr = reinterpret_cast<const int32_t*>(p.packed + l.corr);
  const auto* scale = reinterpret_cast<const float*>(p.packed + l.scales);
  linalg::parallel_for(it.count, it.parallel, [&](int64_t item) {
    // 64-byte aligned (a zmm a cache line: unaligned, every load and store
    // of the panels and tiles spans two).
    thread_local std::vector<uint8_t> xq_buf;
    thread_local std::vector<float> xs_buf, ys_buf;
    uint8_t* const xq = aligned64(xq_buf, kItem / kPixels * bstride);
    float* const xs = aligned64(xs_buf, p.c_in * kPixels);
    float* const ys = aligned64(ys_buf, l.panels * kRows * kItem);
    alignas(64) float s[kItem];
    const int64_t b = item / it.per_image, i0 = (item % it.per_image) * kItem;
    const int64_t ni = std::min(kItem, pix - i0), nb = (ni + kPixels - 1) / kPixels;
    const float* xb = x + b * p.c_in * pix;
    for (int64_t blk = 0; blk < nb; ++blk) {
      const int64_t j0 = i0 + blk * kPixels;
      quantize_block_zmm(xb, p.c_in, pix, j0, std::min(kPixels, pix - j0), l.quads, xs,
                         xq + blk * bstride, s + blk * kPixels);
    }
    for (int64_t pn = 0; pn < l.panels; ++pn) {
      const int8_t* wp = codes + pn * l.quads * kRows * 4;
      for (int64_t blk = 0; blk < nb; blk += kTileBlocks) {
        const uint8_t* xp = xq + blk * bstride;
        const int64_t o0 = pn * kRows, j = blk * kPixels;
        float* yt = ys + o0 * kItem + j;
        if (nb - blk >= kTileBlocks)
          tile_zmm<kTileBlocks>(xp, bstride, wp, l.quads, corr + o0, scale + o0, s + j, yt, kItem);
        else
          tile_zmm<1>(xp, bstride, wp, l.quads, corr + o0, scale + o0, s + j, yt, kItem);
      }
    }
    finish_item(ys, out, bias, act, y + b * out * pix, pix, i0, ni);
  });
}

#pragma GCC diagnostic pop

}  // namespace tailor::runtime::kernels

#endif  // __AVX2__ && __FMA__ && __F16C__
