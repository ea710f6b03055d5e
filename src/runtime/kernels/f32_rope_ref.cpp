// Scalar reference RoPE in the rotation-matrix form (registry.h, F32RopeFn):
// per row, (x·R)[c] as an FMA chain over e ascending from +0, then
// y[c] = fma(x[c], cos[c], (x·R)[c]·sin[c]).
#include <cmath>
#include <vector>

#include "tailor/runtime/kernels/registry.h"

namespace tailor::runtime::kernels {

void f32_rope_ref(const float* x, int64_t x_stride, const float* cos, const float* sin,
                  const float* r, int64_t d, int64_t rows, float* y, int64_t y_stride) {
  for (int64_t row = 0; row < rows; ++row) {
    const float* xr = x + row * x_stride;
    float* yr = y + row * y_stride;
    for (int64_t c = 0; c < d; ++c) {
      float turned = 0.0f;
      for (int64_t e = 0; e < d; ++e) turned = std::fma(xr[e], r[e * d + c], turned);
      yr[c] = std::fma(xr[c], cos[c], turned * sin[c]);
    }
  }
}

}  // namespace tailor::runtime::kernels
