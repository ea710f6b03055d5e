// f32_bias_act_avx2 (every activation kind) and f32_exp_avx2 against their
// references (<cmath>), on lengths 0–40 (every vector tail) and 1000, in and
// out of place, with NaN, ±inf, ±0, saturating and denormal inputs.
// Tolerances, from the arithmetic: relu, clip, leaky_relu and none are exact
// (one f32 add and at most one multiply, alike in both); hard_sigmoid and
// hard_swish round α·v + β once (fma) or twice (reference):
// 2ε·(|α·v| + |β| + 1)·max(1, |v|); exp and sigmoid: Cephes ≤ 2 ulp plus the
// reference's 1 ulp, ≤ 8ε·|y|; tanh: 1 − 2/(e^{2|x|} + 1) near |x| = 0.625
// roughly doubles that, 16ε·|y|; plus 2⁻¹²⁶ where the AVX2 exp flushes results
// below FLT_MIN to 0 (x < −87.34) and the reference returns a denormal.
#include <cmath>
#include <limits>

#include "runtime/kernels/kernel_compare.h"

namespace tailor::runtime::kernels::testing {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

std::vector<float> inputs(int64_t n, uint64_t seed) {
  std::vector<float> x = uniform(n, seed, -12.0, 12.0);
  const float special[] = {std::numeric_limits<float>::quiet_NaN(),
                           kInf,
                           -kInf,
                           0.f,
                           -0.f,
                           88.5f,
                           -87.5f,
                           -88.f,
                           100.f,
                           -100.f,
                           0.625f,
                           -0.625f,
                           1e-40f,
                           -3.f,
                           3.f,
                           -2.5f};
  for (size_t i = 0; i < x.size(); i += 3) x[i] = special[(i / 3) % std::size(special)];
  return x;
}

double tolerance(const Activation& act, float v, float y) {
  switch (act.kind) {
    case ActivationKind::hard_sigmoid:
    case ActivationKind::hard_swish:
      return 2 * kEps * (std::fabs(act.alpha * v) + std::fabs(act.beta) + 1) *
             std::max(1.0, std::fabs(static_cast<double>(v)));
    case ActivationKind::sigmoid:
      return 8 * kEps * std::fabs(y) + 0x1p-126;
    case ActivationKind::tanh:
      return 16 * kEps * std::fabs(y) + 0x1p-126;
    default:
      return 0.0;
  }
}

const Activation kActs[] = {
    Activation::none(),           Activation::relu(),       Activation::clip(-0.5f, 2.f),
    Activation::hard_sigmoid(),   Activation::hard_swish(), Activation::sigmoid(),
    Activation::leaky_relu(0.1f), Activation::tanh(),       Activation::hard_sigmoid(0.7f, -0.2f)};

class F32Activation : public KernelVsRef {};

TEST_F(F32Activation, BiasActAvx2MatchesReference) {
  std::vector<int64_t> lengths;
  for (int64_t n = 0; n <= 40; ++n) lengths.push_back(n);
  lengths.push_back(1000);
  for (const Activation& act : kActs) {
    for (const float bias : {0.f, 0.75f}) {
      for (const int64_t n : lengths) {
        const auto x = inputs(n, 7 + n);
        std::vector<float> want(x.size()), got(x.size(), -99.f);
        ref().bias_act(act, bias, x.data(), want.data(), n);
        opt().bias_act(act, bias, x.data(), got.data(), n);
        std::vector<double> tol(x.size());
        for (size_t i = 0; i < x.size(); ++i) tol[i] = tolerance(act, x[i] + bias, want[i]);
        const std::string what = "activation " + std::to_string(static_cast<int>(act.kind)) +
                                 " bias " + std::to_string(bias) + " n " + std::to_string(n);
        expect_within(got, want, tol, what);
        std::vector<float> inplace = x;  // y == x
        opt().bias_act(act, bias, inplace.data(), inplace.data(), n);
        expect_within(inplace, want, tol, what + " in place");
      }
    }
  }
}

TEST_F(F32Activation, NanPropagatesThroughEveryKind) {
  // ONNX follows numpy: an activation of NaN is NaN (vector lanes and tail).
  for (const Activation& act : kActs) {
    std::vector<float> x(11, std::numeric_limits<float>::quiet_NaN()), y(11, 0.f);
    opt().bias_act(act, 0.f, x.data(), y.data(), 11);
    for (float v : y) EXPECT_TRUE(std::isnan(v)) << static_cast<int>(act.kind);
    ref().bias_act(act, 0.f, x.data(), y.data(), 11);
    for (float v : y) EXPECT_TRUE(std::isnan(v)) << static_cast<int>(act.kind);
  }
}

/// `act` with the affine maps v·s0 + t0 before it and y·s1 + t1 after it.
Activation with_affine(Activation act, float s0, float t0, float s1, float t1) {
  act.pre_scale = s0, act.pre_shift = t0, act.post_scale = s1, act.post_shift = t1;
  return act;
}

TEST_F(F32Activation, AffineMapsAroundTheActivation) {
  // By hand (powers of two and small integers: every step exact): relu with
  // v = (x + 1)·2 − 3, y = relu(v)·0.5 + 4; hard_swish (α 1/4, β 1/2: t = v/4
  // + 1/2 exact) with v = (x + 1)·(−1) + 2 = 1 − x, y = v·clamp(t)·2 − 1.
  const std::vector<float> x = {-4.f, -1.f, 0.f, 0.5f, 1.f, 3.f, 6.f, -7.f, 2.f};
  for (const KernelTable* t : {&ref(), &opt()}) {
    std::vector<float> y(x.size());
    t->bias_act(with_affine(Activation::relu(), 2.f, -3.f, 0.5f, 4.f), 1.f, x.data(), y.data(),
                static_cast<int64_t>(x.size()));
    for (size_t i = 0; i < x.size(); ++i)
      EXPECT_EQ(y[i], std::max((x[i] + 1) * 2 - 3, 0.f) * 0.5f + 4) << i;
    t->bias_act(with_affine(Activation::hard_swish(0.25f, 0.5f), -1.f, 2.f, 2.f, -1.f), 1.f,
                x.data(), y.data(), static_cast<int64_t>(x.size()));
    for (size_t i = 0; i < x.size(); ++i) {
      const float v = 1 - x[i];
      EXPECT_EQ(y[i], v * std::min(std::max(v / 4 + 0.5f, 0.f), 1.f) * 2 - 1) << i;
    }
  }
  // The AVX2 kernel against the reference on every length to 40 and 1000:
  // the maps are the same fused multiply-add in both, so kinds whose
  // activation is exact match exactly; hard_swish's differs by its bound
  // (tolerance() at v), scaled by |s1|, plus one rounding of the post map.
  const float s0 = 1.37f, t0 = 0.586f, s1 = 0.168f, t1 = -0.201f;
  for (const Activation& base :
       {Activation::relu(), Activation::clip(-0.5f, 2.f), Activation::hard_swish()}) {
    const Activation act = with_affine(base, s0, t0, s1, t1);
    std::vector<int64_t> lengths;
    for (int64_t n = 0; n <= 40; ++n) lengths.push_back(n);
    lengths.push_back(1000);
    for (const int64_t n : lengths) {
      const auto x = inputs(n, 90 + n);
      std::vector<float> want(x.size()), got(x.size());
      ref().bias_act(act, 0.25f, x.data(), want.data(), n);
      opt().bias_act(act, 0.25f, x.data(), got.data(), n);
      std::vector<double> tol(x.size());
      for (size_t i = 0; i < x.size(); ++i) {
        const float v = (x[i] + 0.25f) * s0 + t0;
        tol[i] = base.kind == ActivationKind::hard_swish
                     ? tolerance(base, v, want[i]) * std::fabs(s1) + 2 * kEps * std::fabs(want[i])
                     : 0.0;
      }
      expect_within(
          got, want, tol,
          "affine kind " + std::to_string(static_cast<int>(base.kind)) + " n " + std::to_string(n));
    }
  }
}

TEST_F(F32Activation, ExpAvx2MatchesReference) {
  for (const int64_t n : {0, 1, 7, 8, 9, 15, 17, 1000}) {
    const auto x = inputs(n, 40 + n);
    std::vector<float> want(x.size()), got(x.size());
    ref().exp(x.data(), want.data(), n);
    opt().exp(x.data(), got.data(), n);
    std::vector<double> tol(x.size());
    for (size_t i = 0; i < x.size(); ++i) tol[i] = 8 * kEps * std::fabs(want[i]) + 0x1p-126;
    expect_within(got, want, tol, "exp n " + std::to_string(n));
  }
  // Hand values: e^0 = 1 exactly, e^−inf = 0, e^inf = inf, NaN stays NaN.
  const std::vector<float> x = {0.f, -kInf, kInf, std::numeric_limits<float>::quiet_NaN()};
  std::vector<float> y(4);
  for (const KernelTable* t : {&ref(), &opt()}) {
    t->exp(x.data(), y.data(), 4);
    EXPECT_EQ(y[0], 1.f);
    EXPECT_EQ(y[1], 0.f);
    EXPECT_EQ(y[2], kInf);
    EXPECT_TRUE(std::isnan(y[3]));
  }
}

}  // namespace
}  // namespace tailor::runtime::kernels::testing
