// Adam's first steps by hand, and projected dual ascent.
#include "tailor/decision/optim.h"

#include <gtest/gtest.h>

#include <cmath>

#include "tailor/core/error.h"

namespace tailor::decision {
namespace {

TEST(DecisionAdam, FirstStepsByHand) {
  // θ0 = 0, α = 0.1, β = (0.9, 0.999), ε = 1e-8; gradients 1 then −1.
  // t=1: m = 0.1, v = 0.001, m̂ = 1, v̂ = 1: θ = −0.1/(1 + 1e-8).
  // t=2: m = 0.09 − 0.1 = −0.01, v = 0.000999 + 0.001 = 0.001999,
  //      m̂ = −0.01/0.19, v̂ = 0.001999/0.001999 = 1: θ += 0.1·(0.01/0.19)/(1 + 1e-8).
  AdamOptions o;
  o.learning_rate = 0.1;
  Adam adam(1, o);
  std::vector<double> theta = {0.0};
  adam.step(theta, std::vector<double>{1.0});
  EXPECT_NEAR(theta[0], -0.1 / (1 + 1e-8), 1e-15);
  adam.step(theta, std::vector<double>{-1.0});
  EXPECT_NEAR(theta[0], -0.1 / (1 + 1e-8) + 0.1 * (0.01 / 0.19) / (1 + 1e-8), 1e-14);
  EXPECT_EQ(adam.steps(), 2);
  // A constant gradient g moves each step by α·|g|/(|g| + ε) (m̂ = g, v̂ = g²).
  Adam c(2, o);
  std::vector<double> p = {1.0, -2.0};
  for (int t = 0; t < 3; ++t) c.step(p, std::vector<double>{2.0, -0.5});
  EXPECT_NEAR(p[0], 1.0 - 3 * 0.1 * 2 / (2 + 1e-8), 1e-12);
  EXPECT_NEAR(p[1], -2.0 + 3 * 0.1 * 0.5 / (0.5 + 1e-8), 1e-12);
  EXPECT_THROW(c.step(p, std::vector<double>{1.0}), Error);
}

TEST(DecisionAdam, MinimisesAQuadratic) {
  // f(θ) = Σ_j (θ_j − c_j)², ∇f = 2(θ − c): Adam settles at c.
  AdamOptions o;
  o.learning_rate = 0.05;
  Adam adam(3, o);
  const std::vector<double> c = {3.0, -1.5, 0.25};
  std::vector<double> theta(3, 0.0), grad(3);
  for (int it = 0; it < 3000; ++it) {
    for (size_t j = 0; j < 3; ++j) grad[j] = 2 * (theta[j] - c[j]);
    adam.step(theta, grad);
  }
  for (size_t j = 0; j < 3; ++j) EXPECT_NEAR(theta[j], c[j], 1e-3) << j;
}

TEST(DecisionDualAscent, ProjectedOntoNonNegative) {
  // η = 0.5: violations 0.5, 0.2, −1 give λ = 0.25, 0.35, max(0, 0.35 − 0.5) = 0.
  DualAscent d(0.5);
  EXPECT_DOUBLE_EQ(d.update(0.5), 0.25);
  EXPECT_DOUBLE_EQ(d.update(0.2), 0.35);
  EXPECT_DOUBLE_EQ(d.update(-1.0), 0.0);
  EXPECT_DOUBLE_EQ(d.lambda(), 0.0);
  DualAscent fixed(0.0, 2.0);
  EXPECT_DOUBLE_EQ(fixed.update(10.0), 2.0);
  EXPECT_THROW(DualAscent(-1.0), Error);
  EXPECT_THROW(DualAscent(1.0, -0.5), Error);
}

}  // namespace
}  // namespace tailor::decision
