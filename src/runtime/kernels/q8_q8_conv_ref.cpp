// q8_q8_conv_ref: the scalar reference of the W8A8 k×k convolution
// (registry.h, Q8Q8ConvParams): each image quantized to int8 with one f32
// scale, one exact integer sum per output over every tap and channel (int64),
// one f32 rescale per output by (image scale · channel scale), then bias and
// activation.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "tailor/core/dtype.h"
#include "tailor/runtime/kernels/registry.h"

namespace tailor::runtime::kernels {

int64_t q8_q8_conv_pack_ref(const schemes::kernels::PackedGemmArgs& w, int64_t /*kh*/,
                            int64_t /*kw*/, uint8_t* packed) {
  return q8_q8_conv1x1_pack_ref(w, packed);  // the same bytes: codes as stored, f32 scales
}

void q8_q8_conv_ref(const Q8Q8ConvParams& p, const float* x, const float* bias, float* y,
                    const Activation& act) {
  const Conv2dParams& c = p.conv;
  const int64_t c_in = c.c_in, out = c.c_out, h = c.h, w = c.w;
  const int64_t oh = c.out_h(), ow = c.out_w(), taps = c.kh * c.kw, k = c_in * taps;
  const int64_t plane = h * w, image = c_in * plane;
  const auto* q = reinterpret_cast<const int8_t*>(p.packed);
  std::vector<float> scale(static_cast<size_t>(out));
  std::memcpy(scale.data(), p.packed + out * k, scale.size() * sizeof(float));
  std::vector<int8_t> qx(static_cast<size_t>(image));  // the image's codes [c][iy][ix]
  std::vector<float> v(static_cast<size_t>(out * oh * ow));
  for (int64_t b = 0; b < c.n; ++b) {
    const float* xb = x + b * image;
    float m = 0;
    bool finite = true;
    for (int64_t i = 0; i < image; ++i) {
      finite = finite && std::isfinite(xb[i]);
      m = std::max(m, std::abs(xb[i]));
    }
    const float s = finite ? m / 127.0f : std::nanf("");
    for (int64_t i = 0; i < image; ++i) {
      const float t = s == 0 || !finite ? 0.0f : xb[i] / s;
      const float r = t < 0 ? -std::floor(-t + 0.5f) : std::floor(t + 0.5f);
      qx[static_cast<size_t>(i)] = static_cast<int8_t>(std::clamp(r, -127.0f, 127.0f));
    }
    for (int64_t o = 0; o < out; ++o) {
      const float so = s * scale[static_cast<size_t>(o)];
      for (int64_t oy = 0; oy < oh; ++oy)
        for (int64_t ox = 0; ox < ow; ++ox) {
          int64_t dot = 0;
          for (int64_t ci = 0; ci < c_in; ++ci)
            for (int64_t ky = 0; ky < c.kh; ++ky)
              for (int64_t kx = 0; kx < c.kw; ++kx) {
                const int64_t iy = oy * c.stride_h - c.pad_top + ky * c.dil_h;
                const int64_t ix = ox * c.stride_w - c.pad_left + kx * c.dil_w;
                if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;  // padding: qx = 0
                dot += int64_t{qx[static_cast<size_t>(ci * plane + iy * w + ix)]} *
                       q[o * k + (ci * c.kh + ky) * c.kw + kx];
              }
          v[static_cast<size_t>((o * oh + oy) * ow + ox)] = static_cast<float>(dot) * so;
        }
    }
    for (int64_t o = 0; o < out; ++o)
      f32_bias_act_ref(act, bias ? bias[o] : 0.0f, v.data() + o * oh * ow,
                       y + (b * out + o) * oh * ow, oh * ow);
  }
}

}  // namespace tailor::runtime::kernels
