// Scalar reference of Resize over H and W (ONNX Resize-19, NCHW f32), per
// output pixel from the operator's definition: the original coordinate of
// each axis by the coordinate transformation (in f32, as onnxruntime, so that
// nearest-mode ties fall alike), then nearest: x at the rounded, clamped
// index; linear: the original coordinate clamped to [0, in − 1] and the four
// neighbours weighted (1 − ty)(1 − tx), (1 − ty)·tx, ty·(1 − tx), ty·tx, the
// sum in double.
#include <cmath>

#include "tailor/runtime/kernels/registry.h"

namespace tailor::runtime::kernels {
namespace {

float resize_ref_source(const ResizeParams& p, int64_t o, float given_scale, int64_t in,
                        int64_t out) {
  const float scale =
      given_scale > 0.f ? given_scale : static_cast<float>(out) / static_cast<float>(in);
  const float xo = static_cast<float>(o);
  switch (p.transform) {
    case CoordinateTransform::half_pixel:
      return (xo + 0.5f) / scale - 0.5f;
    case CoordinateTransform::pytorch_half_pixel:
      return out > 1 ? (xo + 0.5f) / scale - 0.5f : 0.f;
    case CoordinateTransform::align_corners:
      return out == 1 ? 0.f : xo * static_cast<float>(in - 1) / static_cast<float>(out - 1);
    case CoordinateTransform::asymmetric:
      return xo / scale;
    case CoordinateTransform::tf_half_pixel_for_nearest:
      return (xo + 0.5f) / scale;
  }
  return 0.f;
}

int64_t resize_ref_nearest(NearestMode m, float x, int64_t in) {
  const float f = std::floor(x);
  const float frac = x - f;
  int64_t i = static_cast<int64_t>(f);
  switch (m) {
    case NearestMode::round_prefer_floor:
      if (frac > 0.5f) ++i;
      break;
    case NearestMode::round_prefer_ceil:
      if (frac >= 0.5f) ++i;
      break;
    case NearestMode::floor:
      break;
    case NearestMode::ceil:
      if (frac > 0.f) ++i;
      break;
  }
  return i < 0 ? 0 : (i > in - 1 ? in - 1 : i);
}

}  // namespace

void f32_resize_ref(const ResizeParams& p, const float* x, float* y) {
  for (int64_t plane = 0; plane < p.n * p.c; ++plane) {
    const float* xp = x + plane * p.in_h * p.in_w;
    float* yp = y + plane * p.out_h * p.out_w;
    for (int64_t oy = 0; oy < p.out_h; ++oy) {
      const float sy = resize_ref_source(p, oy, p.scale_h, p.in_h, p.out_h);
      for (int64_t ox = 0; ox < p.out_w; ++ox) {
        const float sx = resize_ref_source(p, ox, p.scale_w, p.in_w, p.out_w);
        if (p.mode == ResizeMode::nearest) {
          const int64_t iy = resize_ref_nearest(p.nearest, sy, p.in_h);
          const int64_t ix = resize_ref_nearest(p.nearest, sx, p.in_w);
          yp[oy * p.out_w + ox] = xp[iy * p.in_w + ix];
          continue;
        }
        const float cy = std::fmin(std::fmax(sy, 0.f), static_cast<float>(p.in_h - 1));
        const float cx = std::fmin(std::fmax(sx, 0.f), static_cast<float>(p.in_w - 1));
        const int64_t y0 = static_cast<int64_t>(std::floor(cy));
        const int64_t x0 = static_cast<int64_t>(std::floor(cx));
        const int64_t y1 = y0 + 1 < p.in_h ? y0 + 1 : y0;
        const int64_t x1 = x0 + 1 < p.in_w ? x0 + 1 : x0;
        const double ty = static_cast<double>(cy) - static_cast<double>(y0);
        const double tx = static_cast<double>(cx) - static_cast<double>(x0);
        const double v = (1 - ty) * (1 - tx) * xp[y0 * p.in_w + x0] +
                         (1 - ty) * tx * xp[y0 * p.in_w + x1] +
                         ty * (1 - tx) * xp[y1 * p.in_w + x0] + ty * tx * xp[y1 * p.in_w + x1];
        yp[oy * p.out_w + ox] = static_cast<float>(v);
      }
    }
  }
}

}  // namespace tailor::runtime::kernels
