// q8_q8_conv1x1_ref: the scalar reference of the W8A8 1×1 convolution
// (registry.h, Q8Q8Conv1x1Params): each pixel's column of X quantized to int8
// with its own f32 scale, exact integer sums with the int8 codes, one f32
// rescale per output, then bias and activation.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "tailor/core/dtype.h"
#include "tailor/runtime/kernels/registry.h"

namespace tailor::runtime::kernels {

int64_t q8_q8_conv1x1_pack_ref(const schemes::kernels::PackedGemmArgs& w, uint8_t* packed) {
  const int64_t codes = w.out * w.in;
  const int64_t bytes = codes + w.out * static_cast<int64_t>(sizeof(float));
  if (!packed) return bytes;
  std::memcpy(packed, w.codes, static_cast<size_t>(codes));
  for (int64_t o = 0; o < w.out; ++o) {
    const float s = f16_to_f32(w.scales[o]);
    std::memcpy(packed + codes + o * static_cast<int64_t>(sizeof(float)), &s, sizeof(float));
  }
  return bytes;
}

void q8_q8_conv1x1_ref(const Q8Q8Conv1x1Params& p, const float* x, const float* bias, float* y,
                       const Activation& act) {
  const int64_t k_in = p.c_in, out = p.c_out, pix = p.pixels;
  const auto* q = reinterpret_cast<const int8_t*>(p.packed);
  std::vector<float> scale(static_cast<size_t>(out));
  std::memcpy(scale.data(), p.packed + out * k_in, scale.size() * sizeof(float));
  std::vector<int8_t> qx(static_cast<size_t>(k_in));
  std::vector<float> v(static_cast<size_t>(out * pix));
  for (int64_t b = 0; b < p.n; ++b) {
    const float* xb = x + b * k_in * pix;
    for (int64_t j = 0; j < pix; ++j) {
      float m = 0;
      bool finite = true;
      for (int64_t k = 0; k < k_in; ++k) {
        const float e = xb[k * pix + j];
        finite = finite && std::isfinite(e);
        m = std::max(m, std::abs(e));
      }
      const float s = m / 127.0f;
      for (int64_t k = 0; k < k_in; ++k) {
        const float t = s == 0 || !finite ? 0.0f : xb[k * pix + j] / s;
        const float r = t < 0 ? -std::floor(-t + 0.5f) : std::floor(t + 0.5f);
        qx[static_cast<size_t>(k)] = static_cast<int8_t>(std::clamp(r, -127.0f, 127.0f));
      }
      for (int64_t o = 0; o < out; ++o) {
        int64_t dot = 0;
        for (int64_t k = 0; k < k_in; ++k)
          dot += int64_t{qx[static_cast<size_t>(k)]} * q[o * k_in + k];
        v[static_cast<size_t>(o * pix + j)] =
            finite ? static_cast<float>(dot) * (s * scale[static_cast<size_t>(o)])
                   : std::numeric_limits<float>::quiet_NaN();
      }
    }
    for (int64_t o = 0; o < out; ++o)
      f32_bias_act_ref(act, bias ? bias[o] : 0.0f, v.data() + o * pix, y + (b * out + o) * pix,
                       pix);
  }
}

}  // namespace tailor::runtime::kernels
