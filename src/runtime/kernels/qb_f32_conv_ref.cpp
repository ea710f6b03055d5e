// qb_f32_conv_ref: the scalar reference of the conv on packed-code weights:
// Ŵ decoded whole by the schemes' scalar decoder (a reference may), then
// f32_conv_ref, the ONNX Conv definition.
#include <vector>

#include "tailor/runtime/kernels/registry.h"

namespace tailor::runtime::kernels {

void qb_f32_conv_ref(const QbConvParams& p, const float* x, const float* bias, float* y,
                     const Activation& act) {
  const schemes::kernels::PackedGemmArgs& w = p.w;
  std::vector<float> dense(static_cast<size_t>(w.out * w.in));
  schemes::kernels::gemm_kernels(Isa::ref).decode(p.bits)(w, 0, w.out, dense.data());
  f32_conv_ref(p.conv, x, dense.data(), bias, y, act);
}

}  // namespace tailor::runtime::kernels
