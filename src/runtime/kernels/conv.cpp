// Conv: parameter checks, path choice (depthwise direct, 1×1 GEMM, im2col +
// GEMM) and the im2col lowering.
#include <algorithm>
#include <string>
#include <vector>

#include "runtime/kernels/conv_internal.h"
#include "tailor/core/error.h"
#include "tailor/linalg/blas.h"
#include "tailor/runtime/kernels/conv.h"

namespace tailor::runtime::kernels {

namespace {

std::string dims(const Conv2dParams& p) {
  return "x [" + std::to_string(p.n) + ", " + std::to_string(p.c_in) + ", " + std::to_string(p.h) +
         ", " + std::to_string(p.w) + "], kernel " + std::to_string(p.kh) + "×" +
         std::to_string(p.kw) + ", c_out " + std::to_string(p.c_out) + ", groups " +
         std::to_string(p.groups);
}

bool is_pointwise(const Conv2dParams& p) {
  return p.kh == 1 && p.kw == 1 && p.stride_h == 1 && p.stride_w == 1 && p.pad_top == 0 &&
         p.pad_left == 0 && p.pad_bottom == 0 && p.pad_right == 0;
}

// col[(ci·kh + ky)·kw + kx, oy·ow + ox] = x[ci, oy·sh − pt + ky·dh, ox·sw − pl + kx·dw]
// (0 outside the image) for one image and one group's cig input channels.
void im2col(const Conv2dParams& p, const float* x, int64_t cig, float* col) {
  const int64_t oh = p.out_h(), ow = p.out_w(), rows = cig * p.kh * p.kw;
#pragma omp parallel for schedule(static) if (rows * oh * ow > 32768)
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t kx = r % p.kw, ky = (r / p.kw) % p.kh, ci = r / (p.kw * p.kh);
    const float* xc = x + ci * p.h * p.w;
    float* dst = col + r * oh * ow;
    const int64_t x_off = kx * p.dil_w - p.pad_left;
    // Output columns whose input column lies in [0, w): ox0 ≤ ox < ox1.
    int64_t ox0 = x_off >= 0 ? 0 : (-x_off + p.stride_w - 1) / p.stride_w;
    int64_t ox1 = p.w - x_off <= 0 ? 0 : (p.w - x_off + p.stride_w - 1) / p.stride_w;
    ox0 = std::min(ox0, ow);
    ox1 = std::clamp(ox1, ox0, ow);
    for (int64_t oy = 0; oy < oh; ++oy) {
      float* d = dst + oy * ow;
      const int64_t iy = oy * p.stride_h - p.pad_top + ky * p.dil_h;
      if (iy < 0 || iy >= p.h) {
        std::fill(d, d + ow, 0.f);
        continue;
      }
      const float* src = xc + iy * p.w + x_off;
      std::fill(d, d + ox0, 0.f);
      if (p.stride_w == 1) {
        std::copy(src + ox0, src + ox1, d + ox0);
      } else {
        for (int64_t ox = ox0; ox < ox1; ++ox) d[ox] = src[ox * p.stride_w];
      }
      std::fill(d + ox1, d + ow, 0.f);
    }
  }
}

}  // namespace

Conv2dParams Conv1dParams::as_2d() const {
  Conv2dParams p;
  p.n = n;
  p.c_in = c_in;
  p.h = 1;
  p.w = len;
  p.c_out = c_out;
  p.kh = 1;
  p.kw = k;
  p.stride_w = stride;
  p.pad_left = pad_begin;
  p.pad_right = pad_end;
  p.dil_w = dil;
  p.groups = groups;
  return p;
}

void validate(const Conv2dParams& p) {
  check(p.n >= 1 && p.c_in >= 1 && p.h >= 1 && p.w >= 1 && p.c_out >= 1 && p.kh >= 1 && p.kw >= 1,
        "", "Conv sizes must be positive: " + dims(p));
  check(p.stride_h >= 1 && p.stride_w >= 1 && p.dil_h >= 1 && p.dil_w >= 1, "",
        "Conv strides and dilations must be positive");
  check(p.pad_top >= 0 && p.pad_left >= 0 && p.pad_bottom >= 0 && p.pad_right >= 0, "",
        "Conv pads must be non-negative");
  check(p.groups >= 1 && p.c_in % p.groups == 0 && p.c_out % p.groups == 0, "",
        "Conv channels must be divisible by groups: " + dims(p));
  check(p.out_h() >= 1 && p.out_w() >= 1, "",
        "Conv output would be empty (kernel larger than the padded input): " + dims(p));
}

int64_t conv2d_scratch_size(const Conv2dParams& p) {
  if (detail::is_depthwise(p) || is_pointwise(p)) return 0;
  return p.c_in / p.groups * p.kh * p.kw * p.out_h() * p.out_w();
}

void conv2d(const Conv2dParams& p, const float* x, const float* w, const float* bias, float* y,
            const Activation& act, float* scratch) {
  validate(p);
  if (detail::is_depthwise(p)) {
    detail::conv2d_depthwise_avx2(p, x, w, bias, y, act);
    return;
  }
  const int64_t oh = p.out_h(), ow = p.out_w(), ohw = oh * ow;
  const int64_t cig = p.c_in / p.groups, cog = p.c_out / p.groups;
  const int64_t k = cig * p.kh * p.kw;
  const bool pointwise = is_pointwise(p);
  std::vector<float> owned;
  if (!pointwise && scratch == nullptr) {
    owned.resize(static_cast<size_t>(conv2d_scratch_size(p)));
    scratch = owned.data();
  }
  for (int64_t b = 0; b < p.n; ++b) {
    const float* xb = x + b * p.c_in * p.h * p.w;
    float* yb = y + b * p.c_out * ohw;
    for (int64_t g = 0; g < p.groups; ++g) {
      const float* xg = xb + g * cig * p.h * p.w;
      const float* col = xg;
      if (!pointwise) {
        im2col(p, xg, cig, scratch);
        col = scratch;
      }
      float* yg = yb + g * cog * ohw;
      linalg::sgemm(false, false, cog, ohw, k, 1.f, w + g * cog * k, k, col, ohw, 0.f, yg, ohw);
      bias_activation(act, bias ? bias + g * cog : nullptr, cog, ohw, yg, yg);
    }
  }
}

void conv1d(const Conv1dParams& p, const float* x, const float* w, const float* bias, float* y,
            const Activation& act, float* scratch) {
  conv2d(p.as_2d(), x, w, bias, y, act, scratch);
}

}  // namespace tailor::runtime::kernels
