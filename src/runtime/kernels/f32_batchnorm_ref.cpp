// Scalar reference of inference BatchNormalization (ONNX, training_mode = 0):
// y = (x − mean[c]) / sqrt(var[c] + epsilon)·scale[c] + bias[c], then act,
// in that order of operations.
#include <cmath>

#include "tailor/runtime/kernels/registry.h"

namespace tailor::runtime::kernels {

void f32_batchnorm_ref(int64_t n, int64_t channels, int64_t spatial, const float* x,
                       const float* scale, const float* bias, const float* mean, const float* var,
                       float epsilon, float* y, const Activation& act) {
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t c = 0; c < channels; ++c) {
      const float sd = std::sqrt(var[c] + epsilon);
      const int64_t base = (b * channels + c) * spatial;
      for (int64_t i = 0; i < spatial; ++i) {
        y[base + i] = (x[base + i] - mean[c]) / sd * scale[c] + bias[c];
      }
      f32_bias_act_ref(act, 0.f, y + base, y + base, spatial);
    }
  }
}

}  // namespace tailor::runtime::kernels
