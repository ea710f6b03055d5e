// Vectorised exp/sigmoid/tanh against the C library in double, activations
// against their ONNX formulas, BatchNormalization and its folding into conv
// weights, Softmax in both axis semantics.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "runtime/kernel_test_util.h"
#include "tailor/core/error.h"
#include "tailor/runtime/kernels/conv.h"
#include "tailor/runtime/kernels/elementwise.h"

namespace tailor::runtime::kernels {
namespace {

using testing::random_values;

// Inputs spanning the range that matters (|x| ≤ 20, dense near 0) plus the
// special points of each polynomial branch; odd count so the scalar tail runs.
std::vector<float> sweep() {
  std::vector<float> v;
  for (int i = -20000; i <= 20000; ++i) v.push_back(static_cast<float>(i) * 1e-3f);
  for (float s : {0.625f, -0.625f, 1e-6f, -1e-6f, 1e-30f, 0.f, -0.f, 88.f, -87.f, -100.f, 30.f})
    v.push_back(s);
  v.push_back(0.1f);
  return v;
}

TEST(UnaryMath, ExpSigmoidTanhWithinFewUlp) {
  const auto x = sweep();
  std::vector<float> e(x.size()), s(x.size()), t(x.size());
  kernels::exp(x.data(), e.data(), static_cast<int64_t>(x.size()));
  sigmoid(x.data(), s.data(), static_cast<int64_t>(x.size()));
  kernels::tanh(x.data(), t.data(), static_cast<int64_t>(x.size()));
  // Relative error bound 4 ulp (2⁻²¹ ≈ 4.8e-7): Cephes documents ≤ 2 ulp for
  // expf/tanhf; sigmoid adds one rounding of 1 + e and one division.
  const double ulp4 = 4.0 * std::ldexp(1.0, -23);
  for (size_t i = 0; i < x.size(); ++i) {
    const double xd = x[i];
    const double ew = std::exp(xd), sw = 1.0 / (1.0 + std::exp(-xd)), tw = std::tanh(xd);
    if (ew > 1e-37 && ew < 3e38) {
      EXPECT_NEAR(e[i], ew, ulp4 * ew) << "exp(" << x[i] << ")";
    }
    if (sw > 1e-37) {
      EXPECT_NEAR(s[i], sw, ulp4 * sw) << "sigmoid(" << x[i] << ")";
    }
    EXPECT_NEAR(t[i], tw, ulp4 * std::fabs(tw) + 1e-45) << "tanh(" << x[i] << ")";
  }
  // Saturation: exp of very negative is 0, of 100 is +inf; sigmoid(−100) ≈ 3.7e-44 → 0 or denormal.
  float big = 100.f, out = 0;
  kernels::exp(&big, &out, 1);
  EXPECT_TRUE(std::isinf(out) || out > 3e38f);
}

TEST(UnaryMath, ActivationsFollowOnnxFormulas) {
  // Hand-computed points: relu(−2) = 0; clip(7; 0, 6) = 6; hard_sigmoid(1; 0.2, 0.5) = 0.7;
  // hard_swish(3) = 3·min(1, 3/6 + 0.5) = 3; hard_swish(−1) = −1·(0.5 − 1/6) = −1/3;
  // leaky_relu(−2; 0.1) = −0.2; sigmoid(0) = 0.5; tanh(0) = 0.
  struct Case {
    Activation act;
    float x, want;
  };
  for (const Case& c :
       {Case{Activation::relu(), -2.f, 0.f}, Case{Activation::relu(), 2.f, 2.f},
        Case{Activation::clip(0, 6), 7.f, 6.f}, Case{Activation::clip(0, 6), -1.f, 0.f},
        Case{Activation::hard_sigmoid(0.2f, 0.5f), 1.f, 0.7f},
        Case{Activation::hard_sigmoid(0.2f, 0.5f), 10.f, 1.f},
        Case{Activation::hard_swish(), 3.f, 3.f}, Case{Activation::hard_swish(), -1.f, -1.f / 3.f},
        Case{Activation::leaky_relu(0.1f), -2.f, -0.2f}, Case{Activation::sigmoid(), 0.f, 0.5f},
        Case{Activation::tanh(), 0.f, 0.f}, Case{Activation::none(), -3.f, -3.f}}) {
    // 9 copies so both the vector body and the tail see the value.
    std::vector<float> in(9, c.x), out(9);
    apply_activation(c.act, in.data(), out.data(), 9);
    for (float v : out) EXPECT_NEAR(v, c.want, 1e-7) << "kind " << int(c.act.kind) << " x " << c.x;
  }
  // bias_activation adds the per-channel bias first: relu(−1 + 3) = 2, relu(−1 − 3) = 0.
  std::vector<float> x(4, -1.f), y(4);
  const float bias[2] = {3.f, -3.f};
  bias_activation(Activation::relu(), bias, 2, 2, x.data(), y.data());
  EXPECT_EQ(y, (std::vector<float>{2, 2, 0, 0}));
}

TEST(BatchNormKernel, FormulaAndFolding) {
  // Hand: x = 3, mean 1, var 3, eps 1, scale 2, bias 0.5 → (3 − 1)/2·2 + 0.5 = 2.5.
  const float x = 3, scale = 2, bias = 0.5f, mean = 1, var = 3;
  float y = 0;
  batch_norm(1, 1, 1, &x, &scale, &bias, &mean, &var, 1.f, &y);
  EXPECT_FLOAT_EQ(y, 2.5f);
  // Random [2, 3, 17] against the formula in double.
  const int64_t n = 2, c = 3, sp = 17;
  const auto xs = random_values(n * c * sp, 1), sc = random_values(c, 2), bi = random_values(c, 3),
             mu = random_values(c, 4);
  auto va = random_values(c, 5);
  for (float& v : va) v = std::fabs(v) + 0.1f;
  std::vector<float> ys(xs.size());
  batch_norm(n, c, sp, xs.data(), sc.data(), bi.data(), mu.data(), va.data(), 1e-5f, ys.data(),
             Activation::relu());
  for (int64_t i = 0; i < n * c * sp; ++i) {
    const int64_t ch = (i / sp) % c;
    const double want = std::max(
        0.0,
        (xs[i] - double(mu[ch])) / std::sqrt(double(va[ch]) + double(1e-5f)) * sc[ch] + bi[ch]);
    ASSERT_NEAR(ys[i], want, 1e-5) << i;
  }
  // Folding into a 1×1 conv (w = identity 3×3, no bias) gives the same output.
  std::vector<float> w(9, 0.f), wf(9), bf(3);
  for (int i = 0; i < 3; ++i) w[i * 3 + i] = 1.f;
  fold_batch_norm(3, 3, w.data(), nullptr, sc.data(), bi.data(), mu.data(), va.data(), 1e-5f,
                  wf.data(), bf.data());
  Conv2dParams p;
  p.n = n, p.c_in = c, p.c_out = c, p.h = 1, p.w = sp;
  std::vector<float> yc(xs.size());
  conv2d(p, xs.data(), wf.data(), bf.data(), yc.data(), Activation::relu());
  for (size_t i = 0; i < yc.size(); ++i) ASSERT_NEAR(yc[i], ys[i], 1e-5) << i;
}

TEST(SoftmaxKernel, HandComputedAndAxisSemantics) {
  // softmax([1, 2, 3]) = e^{k−3}/(e^{−2} + e^{−1} + 1) = [0.09003057, 0.24472847, 0.66524096].
  const std::vector<float> x = {1, 2, 3};
  std::vector<float> y(3);
  softmax(x.data(), y.data(), 1, 3, 1);
  EXPECT_NEAR(y[0], 0.09003057, 1e-7);
  EXPECT_NEAR(y[1], 0.24472847, 1e-7);
  EXPECT_NEAR(y[2], 0.66524096, 1e-7);
  // Large inputs do not overflow (max subtracted): [1000, 1000] → [0.5, 0.5].
  const std::vector<float> big = {1000, 1000};
  softmax(big.data(), y.data(), 1, 2, 1);
  EXPECT_EQ(y[0], 0.5f);
  // x [2, 3, 4] random: opset-13 axis 1 (inner 4) vs the definition, and the
  // opset-<13 coerced form with axis 1 (one softmax over 12 values per batch).
  const auto r = random_values(24, 9);
  std::vector<float> per_axis(24), coerced(24);
  softmax(r.data(), per_axis.data(), 2, 3, 4);
  softmax(r.data(), coerced.data(), 2, 12, 1);
  for (int b = 0; b < 2; ++b) {
    for (int i = 0; i < 4; ++i) {
      double sum = 0;
      for (int a = 0; a < 3; ++a) sum += std::exp(double(r[b * 12 + a * 4 + i]));
      for (int a = 0; a < 3; ++a)
        ASSERT_NEAR(per_axis[b * 12 + a * 4 + i], std::exp(double(r[b * 12 + a * 4 + i])) / sum,
                    1e-7);
    }
    double sum = 0;
    for (int j = 0; j < 12; ++j) sum += std::exp(double(r[b * 12 + j]));
    for (int j = 0; j < 12; ++j)
      ASSERT_NEAR(coerced[b * 12 + j], std::exp(double(r[b * 12 + j])) / sum, 1e-7);
  }
  EXPECT_THROW(softmax(x.data(), y.data(), 1, 0, 1), Error);
}

}  // namespace
}  // namespace tailor::runtime::kernels
