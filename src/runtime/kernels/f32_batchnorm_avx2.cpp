// f32_batchnorm_avx2: inference BatchNormalization as one fma per element,
// y = x·s + (bias − mean·s) with s = scale/sqrt(var + epsilon), 8 lanes at a
// time, then the activation; parallel over (image, channel) planes.
#if defined(__AVX2__) && defined(__FMA__)

#include <immintrin.h>

#include <cmath>

#include "runtime/kernels/gemm_partition.h"
#include "tailor/linalg/parallel.h"
#include "tailor/runtime/kernels/registry.h"

namespace tailor::runtime::kernels {

void f32_batchnorm_avx2(int64_t n, int64_t channels, int64_t spatial, const float* x,
                        const float* scale, const float* bias, const float* mean, const float* var,
                        float epsilon, float* y, const Activation& act) {
  linalg::parallel_for(
      n * channels, detail::worth_threads_elements(n * channels * spatial), [&](int64_t bc) {
        const int64_t c = bc % channels;
        const float s = scale[c] / std::sqrt(var[c] + epsilon);
        const float shift = bias[c] - mean[c] * s;
        const float* xs = x + bc * spatial;
        float* ys = y + bc * spatial;
        const __m256 sv = _mm256_set1_ps(s), tv = _mm256_set1_ps(shift);
        int64_t i = 0;
        for (; i + 8 <= spatial; i += 8) {
          _mm256_storeu_ps(ys + i, _mm256_fmadd_ps(_mm256_loadu_ps(xs + i), sv, tv));
        }
        for (; i < spatial; ++i) ys[i] = std::fma(xs[i], s, shift);
        if (act.kind != ActivationKind::none) f32_bias_act_avx2(act, 0.f, ys, ys, spatial);
      });
}

}  // namespace tailor::runtime::kernels

#endif  // __AVX2__ && __FMA__
