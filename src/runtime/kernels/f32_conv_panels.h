// Conv weights in panels of Mr output channels, k-major, the layout the
// register-tiled conv kernels read one contiguous Mr-float column of per
// reduction step: per group g, ap[g][panel][k][r] = w[g·cog + panel·Mr + r][k]
// (K = c_in/groups·kh·kw, w [c_out, K] row-major), rows past cog zero.
#pragma once

#include <cstdint>

#include "tailor/runtime/kernels/conv.h"

namespace tailor::runtime::kernels::detail {

/// Packs w into Mr-row panels (layout above) when `packed` is not null;
/// returns the size, groups·⌈cog/Mr⌉·Mr·K floats.
inline int64_t pack_conv_panels(const Conv2dParams& p, const float* w, int64_t mr, float* packed) {
  const int64_t cog = p.c_out / p.groups, k = p.c_in / p.groups * p.kh * p.kw;
  const int64_t panels = (cog + mr - 1) / mr;
  if (packed == nullptr) return p.groups * panels * mr * k;
  for (int64_t g = 0; g < p.groups; ++g) {
    const float* wg = w + g * cog * k;
    float* ag = packed + g * panels * mr * k;
    for (int64_t pn = 0; pn < panels; ++pn) {
      for (int64_t i = 0; i < k; ++i) {
        for (int64_t r = 0; r < mr; ++r) {
          const int64_t o = pn * mr + r;
          ag[(pn * k + i) * mr + r] = o < cog ? wg[o * k + i] : 0.f;
        }
      }
    }
  }
  return p.groups * panels * mr * k;
}

}  // namespace tailor::runtime::kernels::detail
