// Scalar reference convolution, ONNX Conv by definition (every group, pad,
// stride and dilation; also the depthwise and 1×1 cases):
// y[b, o, oy, ox] = act(bias[o] + Σ_{ci, ky, kx} x[b, g·cig + ci, iy, ix]·w[o, ci, ky, kx])
// with g = o / cog, iy = oy·stride_h − pad_top + ky·dil_h, ix likewise, and
// x = 0 outside the image. The sum runs in double, rounded once.
#include <algorithm>

#include "tailor/runtime/kernels/registry.h"

namespace tailor::runtime::kernels {

void f32_conv_ref(const Conv2dParams& p, const float* x, const float* w, const float* bias,
                  float* y, const Activation& act) {
  const int64_t oh = p.out_h(), ow = p.out_w();
  const int64_t cig = p.c_in / p.groups, cog = p.c_out / p.groups;
  for (int64_t b = 0; b < p.n; ++b) {
    for (int64_t o = 0; o < p.c_out; ++o) {
      const int64_t g = o / cog;
      float* yo = y + (b * p.c_out + o) * oh * ow;
      for (int64_t oy = 0; oy < oh; ++oy) {
        for (int64_t ox = 0; ox < ow; ++ox) {
          double s = 0.0;
          for (int64_t ci = 0; ci < cig; ++ci) {
            const float* xc = x + (b * p.c_in + g * cig + ci) * p.h * p.w;
            const float* wc = w + (o * cig + ci) * p.kh * p.kw;
            for (int64_t ky = 0; ky < p.kh; ++ky) {
              const int64_t iy = oy * p.stride_h - p.pad_top + ky * p.dil_h;
              if (iy < 0 || iy >= p.h) continue;
              for (int64_t kx = 0; kx < p.kw; ++kx) {
                const int64_t ix = ox * p.stride_w - p.pad_left + kx * p.dil_w;
                if (ix < 0 || ix >= p.w) continue;
                s += static_cast<double>(xc[iy * p.w + ix]) * wc[ky * p.kw + kx];
              }
            }
          }
          yo[oy * ow + ox] = static_cast<float>(s + (bias ? bias[o] : 0.0));
        }
      }
      f32_bias_act_ref(act, 0.f, yo, yo, oh * ow);
    }
  }
}

int64_t f32_conv_pack_ref(const Conv2dParams& p, const float* w, float* packed) {
  const int64_t size = p.c_out * (p.c_in / p.groups) * p.kh * p.kw;
  if (packed != nullptr) std::copy(w, w + size, packed);
  return size;
}

}  // namespace tailor::runtime::kernels
