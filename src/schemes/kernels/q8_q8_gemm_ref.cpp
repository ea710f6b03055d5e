// Scalar reference of the W8A8 kernel (kernels.h, q8_q8_gemm_ref): each row
// of X quantized to int8 with its own f32 scale, exact integer dot products
// with the int8 codes, one f32 rescale per output.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "../quantized.h"
#include "tailor/core/dtype.h"
#include "tailor/core/error.h"
#include "tailor/schemes/kernels.h"

namespace tailor::schemes::kernels {

void q8_q8_gemm_ref(const PackedGemmArgs& a) {
  check(a.group >= a.in, "kernels",
        fmt::format("W8A8 takes per-channel scales only, got groups of {} for {} inputs", a.group,
                    a.in));
  const auto* q = reinterpret_cast<const int8_t*>(a.codes);
  std::vector<int8_t> qx(static_cast<size_t>(a.in));
  for (int64_t b = 0; b < a.batch; ++b) {
    const float* x = a.x + b * a.in;
    float m = 0;
    bool finite = true;
    for (int64_t j = 0; j < a.in; ++j) {
      finite = finite && std::isfinite(x[j]);
      m = std::max(m, std::abs(x[j]));
    }
    float* y = a.y + b * a.out;
    if (!finite) {
      std::fill_n(y, a.out, std::numeric_limits<float>::quiet_NaN());
      continue;
    }
    const float sx = m / 127.0f;
    for (int64_t j = 0; j < a.in; ++j)
      qx[static_cast<size_t>(j)] = sx == 0
                                       ? int8_t{0}
                                       : static_cast<int8_t>(std::clamp(
                                             detail::round_half_away(x[j] / sx), -127.0f, 127.0f));
    for (int64_t o = 0; o < a.out; ++o) {
      int64_t dot = 0;
      for (int64_t j = 0; j < a.in; ++j)
        dot += int64_t{qx[static_cast<size_t>(j)]} * q[o * a.in + j];
      y[o] = static_cast<float>(dot) * (sx * f16_to_f32(a.scales[o]));
    }
  }
}

}  // namespace tailor::schemes::kernels
