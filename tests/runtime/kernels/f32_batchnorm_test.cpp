// f32_batchnorm_avx2 against f32_batchnorm_ref on spatial sizes around the
// 8-lane width, with and without a fused activation. Tolerance: the AVX2
// kernel folds s = scale/sqrt(var + ε') (≤ 2.5ε relative), shift = bias −
// mean·s (≤ ε·|bias| + 3.5ε·|mean·s|) and one fma (≤ ε·|y| + 2.5ε·|x·s|); the
// reference rounds x − mean, the division, the product and the sum (≤ 5ε
// relative to each term): tol = 8ε·(|x·s| + |mean·s| + |bias|), then +8ε·|y|
// for the sigmoid's own error (it is 1/4-Lipschitz).
#include <cmath>

#include "runtime/kernels/kernel_compare.h"

namespace tailor::runtime::kernels::testing {
namespace {

class F32BatchNorm : public KernelVsRef {};

TEST_F(F32BatchNorm, Avx2MatchesReference) {
  const int64_t n = 2, channels = 3;
  const float eps = 1e-5f;
  const auto scale = uniform(channels, 1, 0.5, 2.0), bias = uniform(channels, 2, -1.0, 1.0);
  const auto mean = uniform(channels, 3, -1.0, 1.0), var = uniform(channels, 4, 0.1, 2.0);
  for (const int64_t spatial : {1, 7, 8, 9, 33, 100}) {
    for (const Activation& act : {Activation::none(), Activation::relu(), Activation::sigmoid()}) {
      const auto x = uniform(n * channels * spatial, 10 + spatial, -4.0, 4.0);
      std::vector<float> want(x.size()), got(x.size(), -99.f);
      ref().batch_norm(n, channels, spatial, x.data(), scale.data(), bias.data(), mean.data(),
                       var.data(), eps, want.data(), act);
      opt().batch_norm(n, channels, spatial, x.data(), scale.data(), bias.data(), mean.data(),
                       var.data(), eps, got.data(), act);
      std::vector<double> tol(x.size());
      for (size_t i = 0; i < x.size(); ++i) {
        const int64_t c = static_cast<int64_t>(i) / spatial % channels;
        const double s = scale[c] / std::sqrt(static_cast<double>(var[c]) + eps);
        tol[i] = 8 * kEps * (std::fabs(x[i] * s) + std::fabs(mean[c] * s) + std::fabs(bias[c])) +
                 8 * kEps * std::fabs(want[i]);
      }
      expect_within(got, want, tol,
                    "batch_norm spatial " + std::to_string(spatial) + " act " +
                        std::to_string(static_cast<int>(act.kind)));
    }
  }
}

TEST_F(F32BatchNorm, ReferenceByHand) {
  // x = 3, mean 1, var 3, ε' = 1: (3 − 1)/2·scale 1.5 + bias 0.25 = 1.75.
  const float x = 3.f, scale = 1.5f, bias = 0.25f, mean = 1.f, var = 3.f;
  float y = 0.f;
  f32_batchnorm_ref(1, 1, 1, &x, &scale, &bias, &mean, &var, 1.f, &y, {});
  EXPECT_EQ(y, 1.75f);
}

}  // namespace
}  // namespace tailor::runtime::kernels::testing
