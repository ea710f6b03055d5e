// Resize of NCHW f32 over H and W: nearest and bilinear, ONNX coordinate
// transformations, computed in f32 as onnxruntime's upsample does so that
// nearest-mode ties fall the same way.
#include "tailor/runtime/kernels/resize.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "tailor/core/error.h"

namespace tailor::runtime::kernels {

namespace {

float original_coordinate(CoordinateTransform t, int64_t x, float scale, int64_t in, int64_t out) {
  const float xr = static_cast<float>(x);
  switch (t) {
    case CoordinateTransform::half_pixel:
      return (xr + 0.5f) / scale - 0.5f;
    case CoordinateTransform::pytorch_half_pixel:
      return out > 1 ? (xr + 0.5f) / scale - 0.5f : 0.f;
    case CoordinateTransform::align_corners:
      return out == 1 ? 0.f : xr * static_cast<float>(in - 1) / static_cast<float>(out - 1);
    case CoordinateTransform::asymmetric:
      return xr / scale;
    case CoordinateTransform::tf_half_pixel_for_nearest:
      return (xr + 0.5f) / scale;
  }
  throw Error("", "unknown coordinate transformation");
}

int64_t nearest_index(NearestMode m, float x, int64_t in) {
  int64_t i = 0;
  switch (m) {
    case NearestMode::round_prefer_floor:
      i = x == std::floor(x) + 0.5f ? static_cast<int64_t>(std::floor(x))
                                    : static_cast<int64_t>(std::round(x));
      break;
    case NearestMode::round_prefer_ceil:
      i = x == std::floor(x) + 0.5f ? static_cast<int64_t>(std::ceil(x))
                                    : static_cast<int64_t>(std::round(x));
      break;
    case NearestMode::floor:
      i = static_cast<int64_t>(std::floor(x));
      break;
    case NearestMode::ceil:
      i = static_cast<int64_t>(std::ceil(x));
      break;
  }
  return std::clamp<int64_t>(i, 0, in - 1);
}

float axis_scale(float given, int64_t in, int64_t out) {
  return given > 0.f ? given : static_cast<float>(out) / static_cast<float>(in);
}

// Linear interpolation table of one axis: lower/upper index and their weights.
struct LinearTap {
  int64_t i0, i1;
  float w0, w1;  // weight of i0 and of i1
};

std::vector<LinearTap> linear_taps(const ResizeParams& p, int64_t in, int64_t out, float scale) {
  std::vector<LinearTap> taps(static_cast<size_t>(out));
  for (int64_t o = 0; o < out; ++o) {
    float x = original_coordinate(p.transform, o, scale, in, out);
    x = std::max(0.f, std::min(x, static_cast<float>(in - 1)));
    const int64_t i0 = std::min(static_cast<int64_t>(x), in - 1);
    const int64_t i1 = std::min(i0 + 1, in - 1);
    float d0 = std::fabs(x - static_cast<float>(i0)), d1 = std::fabs(x - static_cast<float>(i1));
    if (i0 == i1) d0 = d1 = 0.5f;
    taps[o] = {i0, i1, d1, d0};  // the nearer index gets the larger weight
  }
  return taps;
}

}  // namespace

void validate(const ResizeParams& p) {
  check(p.n >= 1 && p.c >= 1 && p.in_h >= 1 && p.in_w >= 1 && p.out_h >= 1 && p.out_w >= 1, "",
        "Resize sizes must be positive: input " + std::to_string(p.in_h) + "×" +
            std::to_string(p.in_w) + ", output " + std::to_string(p.out_h) + "×" +
            std::to_string(p.out_w));
  check(p.scale_h >= 0.f && p.scale_w >= 0.f, "", "Resize scales must be positive");
}

void resize2d(const ResizeParams& p, const float* x, float* y) {
  validate(p);
  const float sh = axis_scale(p.scale_h, p.in_h, p.out_h);
  const float sw = axis_scale(p.scale_w, p.in_w, p.out_w);
  const int64_t planes = p.n * p.c, in_hw = p.in_h * p.in_w, out_hw = p.out_h * p.out_w;
  if (p.mode == ResizeMode::nearest) {
    std::vector<int64_t> iy(static_cast<size_t>(p.out_h)), ix(static_cast<size_t>(p.out_w));
    for (int64_t o = 0; o < p.out_h; ++o) {
      iy[o] = nearest_index(p.nearest, original_coordinate(p.transform, o, sh, p.in_h, p.out_h),
                            p.in_h);
    }
    for (int64_t o = 0; o < p.out_w; ++o) {
      ix[o] = nearest_index(p.nearest, original_coordinate(p.transform, o, sw, p.in_w, p.out_w),
                            p.in_w);
    }
#pragma omp parallel for schedule(static) if (planes * out_hw > 16384)
    for (int64_t pl = 0; pl < planes; ++pl) {
      const float* xp = x + pl * in_hw;
      float* yp = y + pl * out_hw;
      for (int64_t oy = 0; oy < p.out_h; ++oy) {
        const float* xr = xp + iy[oy] * p.in_w;
        float* yr = yp + oy * p.out_w;
        for (int64_t ox = 0; ox < p.out_w; ++ox) yr[ox] = xr[ix[ox]];
      }
    }
    return;
  }
  const std::vector<LinearTap> ty = linear_taps(p, p.in_h, p.out_h, sh);
  const std::vector<LinearTap> tx = linear_taps(p, p.in_w, p.out_w, sw);
#pragma omp parallel for schedule(static) if (planes * out_hw > 16384)
  for (int64_t pl = 0; pl < planes; ++pl) {
    const float* xp = x + pl * in_hw;
    float* yp = y + pl * out_hw;
    for (int64_t oy = 0; oy < p.out_h; ++oy) {
      const LinearTap& a = ty[oy];
      const float* r0 = xp + a.i0 * p.in_w;
      const float* r1 = xp + a.i1 * p.in_w;
      float* yr = yp + oy * p.out_w;
      for (int64_t ox = 0; ox < p.out_w; ++ox) {
        const LinearTap& b = tx[ox];
        // onnxruntime's order: x11·w + x21·w + x12·w + x22·w (x along the first index).
        yr[ox] = b.w0 * a.w0 * r0[b.i0] + b.w1 * a.w0 * r0[b.i1] + b.w0 * a.w1 * r1[b.i0] +
                 b.w1 * a.w1 * r1[b.i1];
      }
    }
  }
}

}  // namespace tailor::runtime::kernels
