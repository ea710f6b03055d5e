// Cost model: Adam recovers known non-negative coefficients; Spearman by hand.
#include <gtest/gtest.h>

#include <cmath>

#include "tailor/core/error.h"
#include "tailor/core/rng.h"
#include "tailor/tune/cost_model.h"
#include "test_util.h"

namespace tailor::tune {
namespace {

TEST(TuneCostModel, AdamRecoversKnownCoefficients) {
  // y = X·c exactly for a known non-negative c (one coefficient zero): the
  // log-latency loss has its minimum (0) at softplus(θ) = c.
  const std::vector<double> c = {0.5, 2.0, 0.0, 3.0};
  Rng rng(7);
  std::vector<std::vector<double>> X;
  std::vector<double> y;
  for (int i = 0; i < 200; ++i) {
    std::vector<double> f = {1.0, rng.uniform(0, 2), rng.uniform(0, 2), rng.uniform(0, 2)};
    double t = 0;
    for (size_t j = 0; j < f.size(); ++j) t += c[j] * f[j];
    X.push_back(f);
    y.push_back(t);
  }
  CostModel m(4, 1.0);
  const double loss = m.fit(X, y, 10000, 0.05);
  EXPECT_LT(loss, 1e-6);
  const auto got = m.coefficients();
  for (size_t j = 0; j < c.size(); ++j) {
    EXPECT_GE(got[j], 0.0);
    EXPECT_NEAR(got[j], c[j], 0.01) << "coefficient " << j;
  }
  // JSON round trip keeps θ exactly.
  const auto names = std::vector<std::string>{"a", "b", "c", "d"};
  EXPECT_EQ(CostModel::from_json(m.to_json(names), names).theta(), m.theta());
  const std::vector<std::string> other = {"a", "b"};
  EXPECT_THROW(CostModel::from_json(m.to_json(names), other), Error);
  // A θ of 1e308 (finite) made every prediction inf, the fit NaN and the
  // written cost model null: refused on reading, naming the term.
  nlohmann::json huge = m.to_json(names);
  huge["theta"][2] = 1e308;
  testing::expect_error_naming([&] { CostModel::from_json(huge, names); }, "cost model",
                               "theta of term \"c\" must be finite and within ±1000000");
  // A fit that would step past the bound stops at its last θ in range:
  // latencies 10⁶× the model's prediction pull every θ up, and Adam's first
  // step, of about the learning rate (10⁷), would leave the bound.
  std::vector<double> slow = y;
  for (double& v : slow) v *= 1e6;
  CostModel edge = m;
  edge.fit(X, slow, 5, 1e7);
  EXPECT_EQ(edge.theta(), m.theta());  // no step stayed in range
  EXPECT_NO_THROW(CostModel::from_json(edge.to_json(names), names));
}

TEST(TuneCostModel, SpearmanByHand) {
  // Same order: 1; reversed: −1; ranks (1, 2, 3, 4) vs (2, 1, 4, 3):
  // Σd² = 4, ρ = 1 − 6·4/(4·15) = 0.6.
  EXPECT_DOUBLE_EQ(spearman({1, 2, 3, 4}, {10, 20, 30, 40}), 1.0);
  EXPECT_DOUBLE_EQ(spearman({1, 2, 3, 4}, {4, 3, 2, 1}), -1.0);
  EXPECT_NEAR(spearman({1, 2, 3, 4}, {2, 1, 4, 3}), 0.6, 1e-12);
  EXPECT_EQ(spearman({1, 1, 1}, {1, 2, 3}), 0.0);
}

TEST(TuneCostModel, SoftplusIsStable) {
  EXPECT_NEAR(softplus(0.0), std::log(2.0), 1e-15);
  EXPECT_EQ(softplus(1000.0), 1000.0);
  EXPECT_GT(softplus(-50.0), 0.0);
}

}  // namespace
}  // namespace tailor::tune
