// Scalar reference of MaxPool (ONNX MaxPool, NCHW f32): y[n, c, oy, ox] =
// max of x[n, c, oy·stride_h − pad_top + ky·dil_h, ox·stride_w − pad_left + kx·dil_w]
// over the window positions inside the image (padding never wins); a NaN
// there makes the output NaN.
#include <cmath>
#include <limits>

#include "tailor/runtime/kernels/registry.h"

namespace tailor::runtime::kernels {

void f32_maxpool_ref(const Pool2dParams& p, const float* x, float* y) {
  const int64_t oh = p.out_h(), ow = p.out_w();
  for (int64_t plane = 0; plane < p.n * p.c; ++plane) {
    const float* xp = x + plane * p.h * p.w;
    float* yp = y + plane * oh * ow;
    for (int64_t oy = 0; oy < oh; ++oy) {
      for (int64_t ox = 0; ox < ow; ++ox) {
        float m = -std::numeric_limits<float>::infinity();
        bool nan = false;
        for (int64_t ky = 0; ky < p.kh; ++ky) {
          const int64_t iy = oy * p.stride_h - p.pad_top + ky * p.dil_h;
          for (int64_t kx = 0; kx < p.kw; ++kx) {
            const int64_t ix = ox * p.stride_w - p.pad_left + kx * p.dil_w;
            if (iy < 0 || iy >= p.h || ix < 0 || ix >= p.w) continue;
            const float v = xp[iy * p.w + ix];
            nan = nan || std::isnan(v);
            if (v > m) m = v;
          }
        }
        yp[oy * ow + ox] = nan ? std::numeric_limits<float>::quiet_NaN() : m;
      }
    }
  }
}

}  // namespace tailor::runtime::kernels
