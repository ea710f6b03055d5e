// Scalar reference of Softmax over the middle axis of [outer, axis, inner]
// (ONNX Softmax-13): y = exp(x − max) / Σ exp(x − max), exponentials by
// std::exp, the sum in double. A NaN in a slice makes the slice NaN.
#include <cmath>

#include "tailor/runtime/kernels/registry.h"

namespace tailor::runtime::kernels {

void f32_softmax_ref(const float* x, float* y, int64_t outer, int64_t axis, int64_t inner) {
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      const float* xs = x + o * axis * inner + i;
      float* ys = y + o * axis * inner + i;
      float mx = xs[0];
      for (int64_t a = 1; a < axis; ++a) {
        if (xs[a * inner] > mx || std::isnan(xs[a * inner])) mx = xs[a * inner];
      }
      double sum = 0.0;
      for (int64_t a = 0; a < axis; ++a) sum += std::exp(static_cast<double>(xs[a * inner] - mx));
      for (int64_t a = 0; a < axis; ++a) {
        ys[a * inner] = static_cast<float>(std::exp(static_cast<double>(xs[a * inner] - mx)) / sum);
      }
    }
  }
}

}  // namespace tailor::runtime::kernels
