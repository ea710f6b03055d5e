// The decision layer's categoricals: softmax of known logits, its
// vector-Jacobian product and the straight-through gradient against finite
// differences, Gumbel-max frequencies against the softmax probabilities.
#include "tailor/decision/categorical.h"

#include <gtest/gtest.h>

#include <cmath>

#include "tailor/core/error.h"

namespace tailor::decision {
namespace {

TEST(DecisionSoftmax, KnownLogits) {
  // softmax(0, ln 3) = (1/4, 3/4).
  const std::vector<double> two = softmax(std::vector<double>{0.0, std::log(3.0)});
  EXPECT_NEAR(two[0], 0.25, 1e-15);
  EXPECT_NEAR(two[1], 0.75, 1e-15);
  // softmax(1, 2, 3) = (e, e², e³)/(e + e² + e³) = 1/(1 + e + e²)·(1, e, e²):
  // 1 + e + e² = 1 + 2.718281828459045 + 7.38905609893065 = 11.107337927389695.
  const std::vector<double> three = softmax(std::vector<double>{1.0, 2.0, 3.0});
  EXPECT_NEAR(three[0], 1 / 11.107337927389695, 1e-15);
  EXPECT_NEAR(three[1], 2.718281828459045 / 11.107337927389695, 1e-15);
  EXPECT_NEAR(three[2], 7.38905609893065 / 11.107337927389695, 1e-15);
  // Large logits do not overflow (the maximum is subtracted first).
  const std::vector<double> big = softmax(std::vector<double>{1000.0, 1000.0 + std::log(3.0)});
  EXPECT_NEAR(big[0], 0.25, 1e-12);
  EXPECT_NEAR(big[1], 0.75, 1e-12);
  EXPECT_THROW(softmax(std::vector<double>{}), Error);
}

TEST(DecisionSoftmax, BackwardIsTheJacobianProduct) {
  // ∂/∂z_k Σ_j softmax(z)_j a_j, by central differences.
  const std::vector<double> z = {0.3, -1.2, 0.8, 2.0}, a = {4.0, -1.0, 0.5, 3.0};
  std::vector<double> grad(z.size());
  const double e = softmax_backward(softmax(z), a, grad);
  EXPECT_NEAR(e, expectation(softmax(z), a), 1e-15);
  const double h = 1e-6;
  double total = 0;
  for (size_t k = 0; k < z.size(); ++k) {
    auto up = z, down = z;
    up[k] += h;
    down[k] -= h;
    const double fd = (expectation(softmax(up), a) - expectation(softmax(down), a)) / (2 * h);
    EXPECT_NEAR(grad[k], fd, 1e-8) << k;
    total += grad[k];
  }
  // Shifting every logit leaves the softmax unchanged: the gradient sums to 0.
  EXPECT_NEAR(total, 0.0, 1e-14);
}

TEST(DecisionGumbel, HardSampleIsTheArgmaxOfPerturbedLogits) {
  // g = −log(−log u), u ∈ (0, 1) from Rng::uniform_open, drawn in choice order.
  Rng a(11), b(11);
  const std::vector<double> logits = {0.3, -1.0, 2.0};
  for (int i = 0; i < 10000; ++i) {
    const GumbelSample s = gumbel_softmax(logits, 0.5, a);
    size_t want = 0;
    double best = -INFINITY;
    std::vector<double> z(3);
    for (size_t c = 0; c < 3; ++c) {
      const double u = b.uniform_open();
      ASSERT_GT(u, 0.0);
      ASSERT_LT(u, 1.0);
      z[c] = (logits[c] - std::log(-std::log(u))) / 0.5;
      if (z[c] > best) best = z[c], want = c;
    }
    ASSERT_EQ(s.hard, want);
    const std::vector<double> y = softmax(z);
    for (size_t c = 0; c < 3; ++c) ASSERT_NEAR(s.soft[c], y[c], 1e-12);
    // The straight-through gradient is finite and the forward value the hard one.
    const std::vector<double> table = {1.0, 2.0, 3.0};
    std::vector<double> grad(3);
    ASSERT_EQ(straight_through(s, table, 0.5, grad), table[want]);
    for (double g : grad) ASSERT_TRUE(std::isfinite(g));
  }
  Rng r(0);
  EXPECT_THROW(gumbel_softmax(logits, 0.0, r), Error);
}

TEST(DecisionGumbel, HardSampleFrequenciesConvergeToTheSoftmax) {
  // The Gumbel-max trick: P(argmax(θ + g) = j) = softmax(θ)_j. 200,000 draws:
  // each frequency's standard deviation is below 0.0012, the bound 0.006.
  const std::vector<double> logits = {0.5, -1.0, 1.2, 0.0};
  const std::vector<double> p = softmax(logits);
  Rng rng(2024);
  std::vector<int> count(logits.size(), 0);
  const int n = 200000;
  for (int i = 0; i < n; ++i) ++count[gumbel_softmax(logits, 1.0, rng).hard];
  for (size_t j = 0; j < logits.size(); ++j)
    EXPECT_NEAR(static_cast<double>(count[j]) / n, p[j], 0.006) << j;
}

TEST(DecisionGumbel, StraightThroughIsTheRelaxedSamplesGradient) {
  // With the noise g fixed, the backward pass is ∂/∂θ Σ_j softmax((θ + g)/τ)_j a_j.
  const std::vector<double> theta = {0.2, -0.4, 1.1}, a = {2.0, 5.0, -1.0};
  for (double tau : {0.5, 1.0, 2.0}) {
    Rng r1(5), r2(5);
    const GumbelSample s = gumbel_softmax(theta, tau, r1);
    std::vector<double> g(3);
    for (double& v : g) v = r2.gumbel();
    std::vector<double> grad(3);
    EXPECT_EQ(straight_through(s, a, tau, grad), a[s.hard]);
    auto relaxed = [&](std::vector<double> t) {
      for (size_t j = 0; j < 3; ++j) t[j] = (t[j] + g[j]) / tau;
      return expectation(softmax(t), a);
    };
    const double h = 1e-6;
    for (size_t k = 0; k < 3; ++k) {
      auto up = theta, down = theta;
      up[k] += h;
      down[k] -= h;
      EXPECT_NEAR(grad[k], (relaxed(up) - relaxed(down)) / (2 * h), 1e-8) << tau << " " << k;
    }
  }
}

TEST(DecisionSpace, ExpectedCostOverDecisionsMatchesFiniteDifferences) {
  // E = Σ_d Σ_c softmax(logits_d)_c·table_dc over 4 decisions of 2..5 choices
  // (the tuner's expected cost), its gradient decision by decision.
  Space s;
  Rng rng(3);
  for (size_t d = 0; d < 4; ++d) s.add("d" + std::to_string(d), d + 2);
  std::vector<double> logits(s.logit_count()), table(s.logit_count());
  for (size_t j = 0; j < logits.size(); ++j) logits[j] = rng.normal(), table[j] = rng.uniform(0, 5);
  auto expected = [&](const std::vector<double>& l, std::vector<double>* grad) {
    double e = 0;
    for (size_t d = 0; d < s.size(); ++d) {
      const std::vector<double> p = softmax(s.slice(std::span<const double>(l), d));
      const auto a = s.slice(std::span<const double>(table), d);
      if (grad)
        e += softmax_backward(p, a, s.slice(std::span<double>(*grad), d));
      else
        e += expectation(p, a);
    }
    return e;
  };
  std::vector<double> grad(s.logit_count());
  expected(logits, &grad);
  const double h = 1e-6;
  for (size_t j = 0; j < logits.size(); ++j) {
    auto up = logits, down = logits;
    up[j] += h;
    down[j] -= h;
    EXPECT_NEAR(grad[j], (expected(up, nullptr) - expected(down, nullptr)) / (2 * h), 1e-7) << j;
  }
  // E itself by definition: softmax(0, ln 3) = (1/4, 3/4) on table (4, 8).
  EXPECT_NEAR(
      expectation(softmax(std::vector<double>{0.0, std::log(3.0)}), std::vector<double>{4.0, 8.0}),
      0.25 * 4 + 0.75 * 8, 1e-12);
}

TEST(DecisionSpace, FlatLogitsPerDecision) {
  Space s({{"pass", 2}, {"threads", 3}});
  s.add("block", 1);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s.logit_count(), 6u);
  EXPECT_EQ(s.offset(0), 0u);
  EXPECT_EQ(s.offset(1), 2u);
  EXPECT_EQ(s.offset(2), 5u);
  EXPECT_EQ(s[1].name, "threads");
  std::vector<double> logits = {0.1, 0.2, 3.0, 3.0, -1.0, 7.0};
  EXPECT_EQ(s.argmax(logits), (std::vector<int>{1, 0, 0}));  // ties: the first
  std::span<double> t = s.slice(std::span<double>(logits), 1);
  ASSERT_EQ(t.size(), 3u);
  t[2] = 9.0;
  EXPECT_EQ(logits[4], 9.0);
  EXPECT_EQ(s.logits(0.5), std::vector<double>(6, 0.5));
  std::vector<double> short_vec(5);
  EXPECT_THROW(s.slice(std::span<double>(short_vec), 0), Error);
  EXPECT_THROW(s.add("none", 0), Error);
}

}  // namespace
}  // namespace tailor::decision
