// Conv: parameter checks, path choice (depthwise direct, 1×1 GEMM, im2col +
// GEMM) and the im2col lowering.
#include <algorithm>
#include <string>
#include <vector>

#include "runtime/kernels/conv_internal.h"
#include "runtime/kernels/epilogue.h"
#include "runtime/kernels/gemm_blocked.h"
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

// col[(ci·kh + ky)·kw + kx, j − j0] = x[ci, oy·sh − pt + ky·dh, ox·sw − pl + kx·dw]
// for output pixels j = oy·ow + ox in [j0, j0 + nb) (0 outside the image), for
// one image and one group's cig input channels; col is [cig·kh·kw, nb].
void im2col_block(const Conv2dParams& p, const float* x, int64_t cig, int64_t j0, int64_t nb,
                  float* col) {
  const int64_t ow = p.out_w(), rows = cig * p.kh * p.kw;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t kx = r % p.kw, ky = (r / p.kw) % p.kh, ci = r / (p.kw * p.kh);
    const float* xc = x + ci * p.h * p.w;
    float* d = col + r * nb;
    const int64_t x_off = kx * p.dil_w - p.pad_left;
    // Output columns whose input column lies in [0, w): ox0 ≤ ox < ox1.
    int64_t ox0 = x_off >= 0 ? 0 : (-x_off + p.stride_w - 1) / p.stride_w;
    int64_t ox1 = p.w - x_off <= 0 ? 0 : (p.w - x_off + p.stride_w - 1) / p.stride_w;
    ox0 = std::min(ox0, ow);
    ox1 = std::clamp(ox1, ox0, ow);
    int64_t j = j0;
    while (j < j0 + nb) {
      const int64_t oy = j / ow, ox_begin = j % ow;
      const int64_t ox_end = std::min(ow, ox_begin + (j0 + nb - j));
      float* dr = d + (j - j0) - ox_begin;  // dr[ox] is output column ox of row oy
      const int64_t iy = oy * p.stride_h - p.pad_top + ky * p.dil_h;
      if (iy < 0 || iy >= p.h) {
        std::fill(dr + ox_begin, dr + ox_end, 0.f);
      } else {
        const float* src = xc + iy * p.w + x_off;
        const int64_t a = std::clamp(ox0, ox_begin, ox_end), b = std::clamp(ox1, a, ox_end);
        std::fill(dr + ox_begin, dr + a, 0.f);
        if (p.stride_w == 1) {
          std::copy(src + a, src + b, dr + a);
        } else {
          for (int64_t ox = a; ox < b; ++ox) dr[ox] = src[ox * p.stride_w];
        }
        std::fill(dr + b, dr + ox_end, 0.f);
      }
      j += ox_end - ox_begin;
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
  return 0;
}

void conv2d(const Conv2dParams& p, const float* x, const float* w, const float* bias, float* y,
            const Activation& act, float* /*scratch*/) {
  validate(p);
  if (detail::is_depthwise(p)) {
    detail::conv2d_depthwise_avx2(p, x, w, bias, y, act);
    return;
  }
  const int64_t ohw = p.out_h() * p.out_w();
  const int64_t cig = p.c_in / p.groups, cog = p.c_out / p.groups;
  const int64_t k = cig * p.kh * p.kw;
  const bool pointwise = is_pointwise(p);
  // Work items: (image, group, block of output pixels), a fixed
  // partition; each is im2col of its block (in a per-thread buffer, so the
  // columns stay in cache), one single-threaded sgemm, and the epilogue.
  const int64_t bn = detail::block_columns(ohw);
  const int64_t blocks = (ohw + bn - 1) / bn;
  const int64_t items = p.n * p.groups * blocks;
  const bool parallel = detail::blas_is_serial();
#pragma omp parallel if (parallel && items > 1)
  {
    std::vector<float> col(pointwise ? 0 : static_cast<size_t>(k * bn));
#pragma omp for schedule(static)
    for (int64_t item = 0; item < items; ++item) {
      const int64_t blk = item % blocks, g = (item / blocks) % p.groups,
                    b = item / (blocks * p.groups);
      const int64_t j0 = blk * bn, nb = std::min(bn, ohw - j0);
      const float* xg = x + (b * p.c_in + g * cig) * p.h * p.w;
      float* yg = y + (b * p.c_out + g * cog) * ohw;
      if (pointwise) {
        linalg::sgemm(false, false, cog, nb, k, 1.f, w + g * cog * k, k, xg + j0, ohw, 0.f, yg + j0,
                      ohw);
      } else {
        im2col_block(p, xg, cig, j0, nb, col.data());
        linalg::sgemm(false, false, cog, nb, k, 1.f, w + g * cog * k, k, col.data(), nb, 0.f,
                      yg + j0, ohw);
      }
      for (int64_t o = 0; o < cog; ++o) {
        float* yr = yg + o * ohw + j0;
        detail::bias_activation_span(act, bias ? bias[g * cog + o] : 0.f, yr, yr, nb);
      }
    }
  }
}
void conv1d(const Conv1dParams& p, const float* x, const float* w, const float* bias, float* y,
            const Activation& act, float* scratch) {
  conv2d(p.as_2d(), x, w, bias, y, act, scratch);
}

}  // namespace tailor::runtime::kernels
