// Resize operator: parameter checks, then the registry's resize kernel.
#include "tailor/runtime/kernels/resize.h"

#include <string>

#include "tailor/core/error.h"
#include "tailor/runtime/kernels/registry.h"

namespace tailor::runtime::kernels {

void validate(const ResizeParams& p) {
  check(p.n >= 1 && p.c >= 1 && p.in_h >= 1 && p.in_w >= 1 && p.out_h >= 1 && p.out_w >= 1, "",
        "Resize sizes must be positive: input " + std::to_string(p.in_h) + "×" +
            std::to_string(p.in_w) + ", output " + std::to_string(p.out_h) + "×" +
            std::to_string(p.out_w));
  check(p.scale_h >= 0.f && p.scale_w >= 0.f, "", "Resize scales must be positive");
}

void resize2d(const ResizeParams& p, const float* x, float* y) {
  validate(p);
  active_kernels().resize(p, x, y);
}

}  // namespace tailor::runtime::kernels
