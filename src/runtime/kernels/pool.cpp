// MaxPool, AveragePool, GlobalAveragePool (NCHW f32), onnxruntime's rules for
// ceil_mode and count_include_pad.
#include "tailor/runtime/kernels/pool.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "tailor/core/error.h"

namespace tailor::runtime::kernels {

namespace {

int64_t pool_out(int64_t in, int64_t k, int64_t stride, int64_t pad_begin, int64_t pad_end,
                 int64_t dil, bool ceil_mode) {
  const int64_t num = in + pad_begin + pad_end - dil * (k - 1) - 1;
  if (num < 0) return 0;
  if (!ceil_mode) return num / stride + 1;
  int64_t out = (num + stride - 1) / stride + 1;
  // The last window must start inside the image or the leading padding
  // (onnx/onnx#5741; PyTorch's rule).
  if ((out - 1) * stride >= in + pad_begin) --out;
  return out;
}

}  // namespace

int64_t Pool2dParams::out_h() const {
  return pool_out(h, kh, stride_h, pad_top, pad_bottom, dil_h, ceil_mode);
}
int64_t Pool2dParams::out_w() const {
  return pool_out(w, kw, stride_w, pad_left, pad_right, dil_w, ceil_mode);
}

void validate(const Pool2dParams& p) {
  check(p.n >= 1 && p.c >= 1 && p.h >= 1 && p.w >= 1 && p.kh >= 1 && p.kw >= 1, "",
        "pool sizes and kernel must be positive");
  check(p.stride_h >= 1 && p.stride_w >= 1 && p.dil_h >= 1 && p.dil_w >= 1, "",
        "pool strides and dilations must be positive");
  check(p.pad_top >= 0 && p.pad_left >= 0 && p.pad_bottom >= 0 && p.pad_right >= 0, "",
        "pool pads must be non-negative");
  check(p.pad_top < p.kh && p.pad_bottom < p.kh && p.pad_left < p.kw && p.pad_right < p.kw, "",
        "pool pads must be smaller than the kernel");
  check(p.out_h() >= 1 && p.out_w() >= 1, "",
        "pool output would be empty: input " + std::to_string(p.h) + "×" + std::to_string(p.w) +
            ", kernel " + std::to_string(p.kh) + "×" + std::to_string(p.kw));
}

namespace {

// Max over the in-image part of the window of output (oy, ox).
float window_max(const Pool2dParams& p, const float* xp, int64_t oy, int64_t ox) {
  const int64_t y0 = oy * p.stride_h - p.pad_top, x0 = ox * p.stride_w - p.pad_left;
  float m = -std::numeric_limits<float>::infinity();
  for (int64_t ky = 0; ky < p.kh; ++ky) {
    const int64_t iy = y0 + ky * p.dil_h;
    if (iy < 0 || iy >= p.h) continue;
    for (int64_t kx = 0; kx < p.kw; ++kx) {
      const int64_t ix = x0 + kx * p.dil_w;
      if (ix < 0 || ix >= p.w) continue;
      const float v = xp[iy * p.w + ix];
      if (v > m || std::isnan(v)) m = v;
    }
  }
  return m;
}

// 2×2 windows, stride 2, no pads: outputs [ox, ox + 8) of row oy from two
// input rows, for 2·ox + 16 ≤ w. NaN handling follows vmaxps (a NaN in the
// window may be dropped), as in onnxruntime's vectorised pooling.
inline void max_2x2s2_8(const float* r0, const float* r1, float* out) {
  const __m256 m0 = _mm256_max_ps(_mm256_loadu_ps(r0), _mm256_loadu_ps(r1));
  const __m256 m1 = _mm256_max_ps(_mm256_loadu_ps(r0 + 8), _mm256_loadu_ps(r1 + 8));
  const __m256 even = _mm256_shuffle_ps(m0, m1, 0x88), odd = _mm256_shuffle_ps(m0, m1, 0xDD);
  const __m256 m = _mm256_max_ps(even, odd);  // lanes in order 0 1 4 5 2 3 6 7 (by 64-bit pairs)
  _mm256_storeu_ps(out, _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(m), 0xD8)));
}

}  // namespace

void max_pool2d(const Pool2dParams& p, const float* x, float* y) {
  validate(p);
  const int64_t oh = p.out_h(), ow = p.out_w(), planes = p.n * p.c;
  const bool k2s2 = p.kh == 2 && p.kw == 2 && p.stride_h == 2 && p.stride_w == 2 &&
                    p.pad_top == 0 && p.pad_left == 0 && p.dil_h == 1 && p.dil_w == 1;
#pragma omp parallel for schedule(static) if (planes * oh * ow > 16384)
  for (int64_t pl = 0; pl < planes; ++pl) {
    const float* xp = x + pl * p.h * p.w;
    float* yp = y + pl * oh * ow;
    for (int64_t oy = 0; oy < oh; ++oy) {
      int64_t ox = 0;
      if (k2s2 && 2 * oy + 1 < p.h) {
        const float* r0 = xp + 2 * oy * p.w;
        for (; 2 * ox + 16 <= p.w && ox + 8 <= ow; ox += 8) {
          max_2x2s2_8(r0 + 2 * ox, r0 + p.w + 2 * ox, yp + oy * ow + ox);
        }
      }
      for (; ox < ow; ++ox) yp[oy * ow + ox] = window_max(p, xp, oy, ox);
    }
  }
}

void average_pool2d(const Pool2dParams& p, const float* x, float* y) {
  validate(p);
  check(p.dil_h == 1 && p.dil_w == 1, "", "AveragePool with dilations is not supported");
  const int64_t oh = p.out_h(), ow = p.out_w(), planes = p.n * p.c;
#pragma omp parallel for schedule(static) if (planes * oh * ow > 16384)
  for (int64_t pl = 0; pl < planes; ++pl) {
    const float* xp = x + pl * p.h * p.w;
    float* yp = y + pl * oh * ow;
    for (int64_t oy = 0; oy < oh; ++oy) {
      const int64_t y0 = oy * p.stride_h - p.pad_top;
      const int64_t y1 = std::min(y0 + p.kh, p.h + p.pad_bottom);
      const int64_t ys = std::max<int64_t>(y0, 0), ye = std::min(y1, p.h);
      for (int64_t ox = 0; ox < ow; ++ox) {
        const int64_t x0 = ox * p.stride_w - p.pad_left;
        const int64_t x1 = std::min(x0 + p.kw, p.w + p.pad_right);
        const int64_t xs = std::max<int64_t>(x0, 0), xe = std::min(x1, p.w);
        float sum = 0.f;
        for (int64_t iy = ys; iy < ye; ++iy) {
          for (int64_t ix = xs; ix < xe; ++ix) sum += xp[iy * p.w + ix];
        }
        const int64_t count = p.count_include_pad ? (y1 - y0) * (x1 - x0) : (ye - ys) * (xe - xs);
        yp[oy * ow + ox] = count > 0 ? sum / static_cast<float>(count) : 0.f;
      }
    }
  }
}

void global_average_pool(int64_t planes, int64_t spatial, const float* x, float* y) {
  check(planes >= 0 && spatial >= 1, "", "GlobalAveragePool needs a non-empty spatial extent");
#pragma omp parallel for schedule(static) if (planes * spatial > 16384)
  for (int64_t pl = 0; pl < planes; ++pl) {
    const float* xp = x + pl * spatial;
    // Eight interleaved partial sums (fixed order), then combined: vectorisable.
    float part[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t i = 0;
    for (; i + 8 <= spatial; i += 8) {
      for (int j = 0; j < 8; ++j) part[j] += xp[i + j];
    }
    float sum =
        ((part[0] + part[1]) + (part[2] + part[3])) + ((part[4] + part[5]) + (part[6] + part[7]));
    for (; i < spatial; ++i) sum += xp[i];
    y[pl] = sum / static_cast<float>(spatial);
  }
}

}  // namespace tailor::runtime::kernels
