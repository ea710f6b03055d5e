// compress's uniform guard: the pick rule on given values; PlanDamage equals
// the relative error computed here by hand; and a model built so that the
// per-layer damages mislead the solver (two int4 errors cancel exactly) where
// the guard must keep uniform int4.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>

#include "tailor/compress/compress.h"
#include "tailor/compress/output_damage.h"
#include "tailor/core/error.h"
#include "tailor/graph/weights.h"
#include "tailor/io/npy.h"
#include "tailor/io/onnx.h"
#include "test_util.h"

namespace tailor {
namespace {
namespace fs = std::filesystem;
using testing::TempDir;
using Matrix = std::vector<std::vector<double>>;  // [out][in]

constexpr int kN = 16, kK = 5 * kN;

// A = B' blocks: A's rows [7, 3.4] and [0, 7] quantize under int4 (s = 7 / 7
// = 1) to [7, 3] and [0, 7]; B's [7, 2.6] to [7, 3]. (BA)[0][1] = 7·3.4 +
// 2.6·7 = 42 = 7·3 + 3·7: int4 on both cancels exactly, int4 on one does not.
Matrix block_matrix(double corner) {
  Matrix w(kN, std::vector<double>(kN, 0.0));
  for (int b = 0; b < kN; b += 2) {
    w[b][b] = 7;
    w[b][b + 1] = corner;
    w[b + 1][b + 1] = 7;
  }
  return w;
}

// C's entries are 0 or ±21: int4 (s = 3) and int3 (s = 7) store it exactly.
Matrix c_matrix() {
  Matrix w(kK, std::vector<double>(kN, 0.0));
  for (int o = 0; o < kK; ++o)
    for (int i = 0; i < kN; ++i) w[o][i] = 21.0 * ((o * 7 + i * 5) % 3 - 1);
  return w;
}

Matrix int4_by_hand(const Matrix& w) {  // DESIGN.md's int4 where every row max is 7 or 21
  Matrix q = w;
  for (auto& row : q) {
    double m = 0;
    for (double v : row) m = std::max(m, std::abs(v));
    const double s = m / 7;                           // 1 or 3: exact in f16
    for (double& v : row) v = std::round(v / s) * s;  // no .5 ties here
  }
  return q;
}

Tensor in_out(const Matrix& w) {  // MatMul's [in, out] initializer
  std::vector<float> v;
  for (size_t i = 0; i < w[0].size(); ++i)
    for (size_t o = 0; o < w.size(); ++o) v.push_back(static_cast<float>(w[o][i]));
  return Tensor::from_f32({static_cast<int64_t>(w[0].size()), static_cast<int64_t>(w.size())}, v);
}

// x [1, 16] → MatMul A → MatMul B → MatMul C → y [1, 80] (a map: relative error).
graph::Model cancelling_model() {
  graph::Model m;
  m.opset = 13;
  m.graph.inputs = {"x"};
  m.graph.types["x"] = graph::ValueType{DType::f32, graph::sym_shape_of({1, kN})};
  std::string prev = "x";
  const std::vector<std::pair<std::string, Matrix>> layers = {
      {"a", block_matrix(3.4)}, {"b", block_matrix(2.6)}, {"c", c_matrix()}};
  for (const auto& [name, w] : layers) {
    m.graph.add_initializer(name, in_out(w));
    testing::append_matmul(m.graph, prev, name);
  }
  m.graph.outputs = {prev};
  return m;
}

std::vector<double> input(int k) {
  std::vector<double> x(kN);
  for (int i = 0; i < kN; ++i) x[i] = std::sin(0.7 * i + 1.3 * k) + 0.1 * k;
  return x;
}

std::vector<double> matvec(const Matrix& w, const std::vector<double>& x) {
  std::vector<double> y(w.size(), 0.0);
  for (size_t o = 0; o < w.size(); ++o)
    for (size_t i = 0; i < x.size(); ++i) y[o] += w[o][i] * x[i];
  return y;
}

std::map<std::string, Tensor> feed(int k) {
  const std::vector<double> x = input(k);
  return {{"x", Tensor::from_f32({1, kN}, std::vector<float>(x.begin(), x.end()))}};
}

TEST(UniformGuard, PicksTheLowestMeasuredDamageWithinTheBudgetAndTiesKeepThePlan) {
  using compress::guard_pick;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(
      guard_pick({{"plan", 100, 0.5}, {"u1", 90, 0.2}, {"u2", 120, 0.01}, {"u3", 95, nan}}, 100),
      1u);  // u2 is over the budget, u3 NaN
  EXPECT_EQ(guard_pick({{"plan", 100, 0.2}, {"u1", 90, 0.2}}, 100), 0u);
  EXPECT_EQ(guard_pick({{"plan", 100, 0.1}, {"u1", 90, 0.2}, {"u2", 80, 0.3}}, 100), 0u);
  EXPECT_EQ(guard_pick({{"plan", 100, nan}, {"u1", 90, 0.3}}, 100), 1u);
  EXPECT_EQ(guard_pick({{"plan", 100, 0.3}, {"u1", 100, 0.1}, {"u2", 60, 0.05}}, 100), 2u);
  testing::expect_error_naming([] { guard_pick({}, 100); }, "guard", "no plan");
}

// The geometric mean of a point's per-input damages, computed here only to
// show that it ranks the example below the other way round from the mean.
double geometric_mean(const std::vector<double>& v) {
  double log_sum = 0;
  for (double x : v) log_sum += std::log(x);
  return std::exp(log_sum / static_cast<double>(v.size()));
}

TEST(UniformGuard, RanksByTheMeanDamageNotTheGeometricMean) {
  using compress::best_uniform;
  using compress::difference_bound;
  using compress::guard_pick;
  using compress::GuardPoint;
  // The issue-13 shape: u1 is tiny on two inputs and large on the third, u2
  // is moderate everywhere. Means (the `damage`, as for KL over inputs of
  // equal rows): u1 (0.001 + 0.001 + 0.4) / 3 = 0.134, u2 0.1; geometric
  // means: u1 (0.0004)^(1/3) = 0.0737, u2 0.1. By the mean u2 is the best
  // uniform, by the geometric mean u1.
  const GuardPoint u1{"u1", 100, 0.134, {0.001, 0.001, 0.4}};
  const GuardPoint u2{"u2", 100, 0.1, {0.1, 0.1, 0.1}};
  EXPECT_LT(geometric_mean(u1.per_input), geometric_mean(u2.per_input));
  EXPECT_EQ(best_uniform({{"plan", 100, 1.0}, u1, u2}, 100), 2u);
  EXPECT_EQ(best_uniform({{"plan", 100, 1.0}, u2, u1}, 100), 1u);
  // The plan: mean 0.06. Against u2, d_i = plan_i − u2_i = −0.05, −0.04,
  // −0.03: mean −0.04, s = 0.01, bound = −0.04 + 2.920 · 0.01 / √3 =
  // −0.023141 < 0: kept. (Against u1 it would not be: d = 0.049, 0.059,
  // −0.33, bound +0.29986; the geometric-mean rule compared it with u1.)
  const GuardPoint plan{"plan", 100, 0.06, {0.05, 0.06, 0.07}};
  EXPECT_NEAR(difference_bound(plan, u2), -0.0231414, 1e-7);
  EXPECT_NEAR(difference_bound(plan, u1), 0.299855, 1e-6);
  EXPECT_EQ(guard_pick({plan, u1, u2}, 100), 0u);
  // A plan of lower mean (0.09) that is not lower with confidence: d_i =
  // −0.09, −0.08, +0.14, mean −0.01, s = √((0.08² + 0.07² + 0.15²) / 2) =
  // 0.13, bound −0.01 + 2.920 · 0.13 / √3 = 0.209162 ≥ 0: u2 is kept.
  const GuardPoint noisy{"plan", 100, 0.09, {0.01, 0.02, 0.24}};
  EXPECT_NEAR(difference_bound(noisy, u2), 0.209162, 1e-6);
  EXPECT_EQ(guard_pick({noisy, u1, u2}, 100), 2u);
  EXPECT_EQ(guard_pick({noisy, u1, u2}, 99), 0u);  // no uniform within the budget
  // n = 4 (t_{0.95, 3} = 2.353): d = −0.1, −0.05, 0.02, −0.08, mean
  // −0.0525, Σ(d − d̄)² = 0.008275, s = √(0.008275 / 3) = 0.0525198, bound
  // −0.0525 + 2.353 · 0.0525198 / 2 = 0.0092896: the plan's mean 0.2125
  // against 0.265 is not enough.
  const GuardPoint p4{"plan", 10, 0.2125, {0.2, 0.1, 0.3, 0.25}};
  const GuardPoint u4{"u", 10, 0.265, {0.3, 0.15, 0.28, 0.33}};
  EXPECT_NEAR(difference_bound(p4, u4), 0.0092896, 1e-7);
  EXPECT_EQ(guard_pick({p4, u4}, 10), 1u);
  // One calibration input: no bound; the lower damage, ties keep the plan.
  EXPECT_TRUE(std::isnan(difference_bound({"p", 1, 0.05, {0.05}}, {"u", 1, 0.06, {0.06}})));
  EXPECT_EQ(guard_pick({{"p", 1, 0.05, {0.05}}, {"u", 1, 0.06, {0.06}}}, 1), 0u);
  EXPECT_EQ(guard_pick({{"p", 1, 0.07, {0.07}}, {"u", 1, 0.06, {0.06}}}, 1), 1u);
  EXPECT_EQ(guard_pick({{"p", 1, 0.06, {0.06}}, {"u", 1, 0.06, {0.06}}}, 1), 0u);
  // NaN stays NaN: a NaN input makes the bound NaN; a NaN uniform is never
  // the rival, a NaN plan never holds against a finite uniform.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_TRUE(std::isnan(difference_bound({"p", 1, nan, {0.1, nan}}, {"u", 1, 0.1, {0.1, 0.1}})));
  EXPECT_EQ(guard_pick({plan, {"n", 90, nan, {0.0, nan}}}, 100), 0u);
  EXPECT_EQ(guard_pick({{"p", 100, nan, {0.1, nan, 0.1}}, u2}, 100), 1u);
}

// The pick is not monotone in the points measured so far: the plan fails
// against a worse uniform and then passes against a better one, so compress
// must write the layers of the final pick, not of the last point that led
// (before, model.onnx could hold uniform u1's layers in this case).
// Per input: plan {0, 0.4, 0, 0.4} (mean 0.2), u1 {0.5, 0, 0.5, 0} (mean
// 0.25), u2 {0.02, 0.43, 0.02, 0.43} (mean 0.225, lower than u1's).
// plan − u1 = {−0.5, 0.4, −0.5, 0.4}: mean −0.05, s = √(4·0.45²/3) = 0.5196,
// bound −0.05 + 2.353·0.5196/2 = +0.561 ≥ 0, so u1 is kept.
// plan − u2 = {−0.02, −0.03, −0.02, −0.03}: mean −0.025, s = √(4·0.005²/3)
// = 0.005774, bound −0.025 + 2.353·0.005774/2 = −0.0182 < 0: the plan.
TEST(UniformGuard, ThePickReturnsToThePlanWhenABetterUniformArrives) {
  using compress::best_uniform;
  using compress::difference_bound;
  using compress::guard_pick;
  const compress::GuardPoint plan{"plan", 100, 0.2, {0, 0.4, 0, 0.4}};
  const compress::GuardPoint u1{"u1", 90, 0.25, {0.5, 0, 0.5, 0}};
  const compress::GuardPoint u2{"u2", 90, 0.225, {0.02, 0.43, 0.02, 0.43}};
  EXPECT_NEAR(difference_bound(plan, u1), 0.5613, 1e-3);
  EXPECT_NEAR(difference_bound(plan, u2), -0.0182, 1e-3);
  EXPECT_EQ(guard_pick({plan, u1}, 100), 1u);
  EXPECT_EQ(best_uniform({plan, u1, u2}, 100), 2u);
  EXPECT_EQ(guard_pick({plan, u1, u2}, 100), 0u);
}

// The verdict line compress prints, for the points of the test above
// (bounds by hand there: −0.0231414 against u2 for `plan`, +0.209162 for
// `noisy`), printed to 3 significant digits.
TEST(UniformGuard, TheVerdictSaysWhatWasKeptAndOnWhatEvidence) {
  using compress::guard_verdict;
  using compress::GuardPoint;
  const GuardPoint u1{"uniform u1", 100, 0.134, {0.001, 0.001, 0.4}};
  const GuardPoint u2{"uniform u2", 100, 0.1, {0.1, 0.1, 0.1}};
  const GuardPoint over{"uniform u3", 101, 0.001, {0.001, 0.001, 0.001}};
  const GuardPoint plan{"plan (exact)", 100, 0.06, {0.05, 0.06, 0.07}};
  EXPECT_EQ(guard_verdict({plan, u1, u2, over}, 0, 100, "kl (mean)", 1),
            "kept the plan (exact): calibration kl (mean) 0.06; against the best uniform, "
            "uniform u2 (0.1), 0.6× its damage, below the 0.8× margin; paired 95% upper bound "
            "of the mean per-input difference plan − it -0.0231 < 0; Wilcoxon signed-rank p 0.125 "
            "for the plan lower, 1 for it lower (level 0.05), the plan lower on 3 of 3 inputs (2 "
            "uniform schemes within the budget, 1 over it compared)");
  // A uniform kept over a plan of lower mean, the uniform not lower by rank:
  // the line says more inputs narrow the tests.
  const GuardPoint noisy{"plan (exact)", 100, 0.09, {0.01, 0.02, 0.24}};
  EXPECT_EQ(guard_verdict({noisy, u1, u2}, 2, 100, "kl (mean)", 3),
            "kept uniform u2: calibration kl (mean) 0.1, the lowest of the uniform schemes within "
            "the budget; plan (exact)'s 0.09 holds by none of the rules: not lower on the mean "
            "with 95% confidence, nor lower on the mean and by rank, nor below 0.8× it with the "
            "uniform not lower by rank (paired 95% upper bound "
            "of the mean per-input difference plan − it 0.209 ≥ 0; Wilcoxon signed-rank p 0.625 "
            "for the plan lower, 0.625 for it lower (level 0.05), the plan lower on 2 of 3 "
            "inputs; 2 uniform schemes within the budget, 0 over it; -gptq layers cross-fitted in "
            "3 folds compared); the plan is lower on the mean, but neither test shows it over 3 "
            "calibration inputs: more inputs narrow them; uniform u2 is lower than uniform u1 "
            "(0.134) on the mean only: neither paired test ranks the two over 3 calibration "
            "inputs, and more inputs may rank them the other way");
  // Over a plan of higher mean, no such advice.
  const GuardPoint worse{"plan (exact)", 100, 0.12, {0.11, 0.12, 0.13}};
  const std::string kept_u2 = guard_verdict({worse, u2}, 1, 100, "kl (mean)", 1);
  EXPECT_EQ(kept_u2.find("more inputs"), std::string::npos) << kept_u2;
  EXPECT_NE(kept_u2.find("1 uniform scheme within the budget, 0 over it compared)"),
            std::string::npos)
      << kept_u2;
  // The kept uniform lower than the next on every input by the same amount:
  // the bound is below 0 (differences −0.1 each, s = 0), no draw is said.
  const GuardPoint u4{"uniform u4", 100, 0.2, {0.2, 0.2, 0.2}};
  const std::string kept_over_u4 = guard_verdict({worse, u2, u4}, 1, 100, "kl (mean)", 1);
  EXPECT_EQ(kept_over_u4.find("on the mean only"), std::string::npos) << kept_over_u4;
  EXPECT_NE(guard_verdict({worse, u2, u1}, 1, 100, "kl (mean)", 1)
                .find("uniform u2 is lower than uniform u1 (0.134) on the mean only"),
            std::string::npos);
  testing::expect_error_naming(
      [&] {
        guard_verdict({worse, u2}, 2, 100, "kl (mean)", 1);
      },
      "guard", "kept point 2 of 2");
}

// signed_rank_p by brute force from the definition: every one of the 2^m
// sign patterns of the non-zero |d_i|, ranked by counting (average ranks
// for ties), W⁺ of each pattern against the observed one.
double signed_rank_by_enumeration(const std::vector<double>& all) {
  std::vector<double> d;
  for (double v : all)
    if (v != 0) d.push_back(v);
  const size_t m = d.size();
  std::vector<double> rank(m);
  for (size_t i = 0; i < m; ++i) {
    double below = 0, equal = 0;
    for (size_t j = 0; j < m; ++j) {
      below += std::abs(d[j]) < std::abs(d[i]);
      equal += std::abs(d[j]) == std::abs(d[i]);
    }
    rank[i] = below + (equal + 1) / 2;  // the average of ranks below+1 .. below+equal
  }
  double observed = 0;
  for (size_t i = 0; i < m; ++i) observed += d[i] > 0 ? rank[i] : 0;
  size_t at_most = 0;
  for (size_t bits = 0; bits < (size_t{1} << m); ++bits) {
    double w = 0;
    for (size_t i = 0; i < m; ++i) w += (bits >> i & 1) ? rank[i] : 0;
    at_most += w <= observed + 1e-9;
  }
  return static_cast<double>(at_most) / static_cast<double>(size_t{1} << m);
}

compress::GuardPoint point_of(const std::vector<double>& per_input) {
  double sum = 0;
  for (double v : per_input) sum += v;
  return {"p", 1, sum / static_cast<double>(per_input.size()), per_input};
}

TEST(UniformGuard, SignedRankPIsTheWilcoxonTestFromItsDefinition) {
  using compress::signed_rank_p;
  const compress::GuardPoint zero = point_of(std::vector<double>(12, 0.0));
  auto p = [&](std::vector<double> d) {  // a = d, b = 0: the differences are d
    const size_t n = d.size();
    return signed_rank_p(point_of(d), point_of(std::vector<double>(n, 0.0)));
  };
  // By hand: all five lower, only W⁺ = 0 of 32 patterns: 1/32; with four,
  // 1/16 (five inputs are the fewest that can reach 0.05). {−1..−4, +5}:
  // W⁺ = 5; the subsets of {1..5} summing to ≤ 5 are {}, five singletons,
  // {1,2}, {1,3}, {1,4}, {2,3}: 10/32.
  EXPECT_DOUBLE_EQ(p({-1, -2, -3, -4, -5}), 1.0 / 32);
  EXPECT_DOUBLE_EQ(p({-1, -2, -3, -4}), 1.0 / 16);
  EXPECT_DOUBLE_EQ(p({-1, -2, -3, -4, 5}), 10.0 / 32);
  // Zeros are dropped; ties share their average rank: {−1, −1, +1, −2} has
  // ranks 2, 2, 2, 4 and W⁺ = 2: the patterns at ≤ 2 are {} and the three
  // single 2s, 4/16.
  EXPECT_DOUBLE_EQ(p({0, -1, -2, -3, 0, -4, -5}), 1.0 / 32);
  EXPECT_DOUBLE_EQ(p({-1, -1, 1, -2}), 4.0 / 16);
  EXPECT_DOUBLE_EQ(p({0, 0, 0}), 1.0);
  // Against enumeration on seeded draws with ties and zeros (halves of −6..6).
  uint64_t state = 38;
  for (int trial = 0; trial < 200; ++trial) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    const size_t n = 1 + (state >> 33) % 12;
    std::vector<double> d(n);
    for (double& v : d) {
      state = state * 6364136223846793005ULL + 1442695040888963407ULL;
      v = static_cast<double>(static_cast<int>((state >> 33) % 13) - 6) / 2;
    }
    if (std::all_of(d.begin(), d.end(), [](double v) { return v == 0; })) continue;
    EXPECT_NEAR(p(d), signed_rank_by_enumeration(d), 1e-12) << "trial " << trial;
  }
  // Above kSignedRankExactMax, the normal approximation: ranks 1..400, the
  // pairs (k, 401 − k) for k ≤ 100 positive, so W⁺ = 100 · 401 = 40100, its
  // mean 400 · 401 / 4; variance 400 · 401 · 801 / 24 = 5,353,350; z = 0.5 /
  // 2313.7308 = 2.16101e-4, p = Φ(z) = 0.5 + z / √(2π) = 0.50008621.
  std::vector<double> big(400);
  for (int k = 1; k <= 400; ++k) big[k - 1] = -k;
  for (int k = 1; k <= 100; ++k) {
    big[k - 1] = k;
    big[400 - k] = 401 - k;
  }
  EXPECT_NEAR(p(big), 0.50008621, 1e-8);
  // One group of ties, either side of kSignedRankExactMax: m differences of
  // ±1, 130 positive. Every rank is (m + 1)/2, so W⁺ = 130·(m + 1)/2 and the
  // test is the sign test: at m = 300, exact, P(Binomial(300, ½) ≤ 130),
  // summed here; at m = 301 the normal approximation with the tie term: W⁺ =
  // 130 · 151 = 19630, mean 301 · 302 / 4 = 22725.5, variance 301 · 302 ·
  // 603 / 24 − (301³ − 301) / 48 = 2,283,912.75 − 568,137.5 = 1,715,775.25
  // (= 151² · 301 / 4, the sign test's), z = (19630 + 0.5 − 22725.5) /
  // 1309.8761 = −2.3628190, p = Φ(z) = 0.00906826 (without the tie term z
  // would be −2.0479, p 0.0203).
  ASSERT_EQ(compress::kSignedRankExactMax, 300u);
  auto signs = [](int m, int positive) {
    std::vector<double> d(static_cast<size_t>(m), -1.0);
    std::fill(d.begin(), d.begin() + positive, 1.0);
    return d;
  };
  double binomial = 0;
  for (int i = 0; i <= 130; ++i)
    binomial += std::exp(std::lgamma(301.0) - std::lgamma(i + 1.0) - std::lgamma(301.0 - i) -
                         300 * std::log(2.0));
  EXPECT_NEAR(p(signs(300, 130)), binomial, 1e-12);
  EXPECT_NEAR(binomial, 0.0120910, 1e-7);
  EXPECT_NEAR(p(signs(301, 130)), 0.00906826, 1e-8);
  // NaN stays NaN; counts that differ or no inputs: NaN.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_TRUE(std::isnan(p({-1, nan, -2})));
  EXPECT_TRUE(std::isnan(signed_rank_p(point_of({1, 2}), zero)));
  EXPECT_TRUE(std::isnan(signed_rank_p({"a", 1, 0.1, {}}, {"b", 1, 0.2, {}})));
  EXPECT_EQ(compress::lower_count(point_of({1, 2, 3}), point_of({2, 2, 4})), 2u);
}

// The verdict guard_verdict prints for `points` (kept, budget 100, KL, one
// fold) holds `text`, whose figures the calling test derives by hand.
void expect_verdict_holds(const std::vector<compress::GuardPoint>& points, size_t kept,
                          const std::string& text) {
  const std::string verdict = compress::guard_verdict(points, kept, 100, "kl (mean)", 1);
  EXPECT_NE(verdict.find(text), std::string::npos) << verdict;
}

// Below kPlanMargin (0.8×) of the best uniform's calibration damage the
// plan holds without paired evidence, unless the uniform is lower by rank.
// plan {0.01, 0.02, 0.24} (mean 0.09) against u {0.1, 0.1, 0.2} (mean 0.4/3
// = 0.13333): 0.675×. d = −0.09, −0.08, +0.04, mean −0.043333, s =
// √((0.046667² + 0.036667² + 0.083333²) / 2) = 0.072342, bound −0.043333 +
// 2.920 · 0.072342 / √3 = 0.078625 ≥ 0; three inputs cannot show a rank
// either way (1/8 at best): the margin holds. At 0.9× (u's inputs scaled so
// its mean is 0.1) it does not and u is kept.
TEST(UniformGuard, APlanBelowTheMarginHoldsWithoutPairedEvidence) {
  using compress::difference_bound;
  using compress::guard_pick;
  using compress::GuardPoint;
  EXPECT_EQ(compress::kPlanMargin, 0.8);
  const GuardPoint plan{"plan", 100, 0.09, {0.01, 0.02, 0.24}};
  const GuardPoint u{"u", 100, 0.4 / 3, {0.1, 0.1, 0.2}};
  EXPECT_NEAR(difference_bound(plan, u), 0.078625, 1e-6);
  EXPECT_TRUE(compress::plan_holds(plan, u));
  EXPECT_EQ(guard_pick({plan, u}, 100), 0u);
  const GuardPoint u9{"u", 100, 0.1, {0.075, 0.075, 0.15}};
  EXPECT_GT(difference_bound(plan, u9), 0.0);
  EXPECT_FALSE(compress::plan_holds(plan, u9));
  EXPECT_EQ(guard_pick({plan, u9}, 100), 1u);
  expect_verdict_holds({plan, u}, 0,
                       "0.675× its damage, below the 0.8× margin; paired 95% upper bound of the "
                       "mean per-input difference plan − it 0.0786 ≥ 0; Wilcoxon signed-rank p "
                       "0.25 for the plan lower, 0.875 for it lower (level 0.05), the plan lower "
                       "on 2 of 3 inputs");
}

// Heavy-tailed per-input damage, both ways round. Lower on nine of ten
// inputs, higher on one (t_{0.95, 9} = 1.833): d = −0.04 × 9, +0.3, means
// 0.059 and 0.065 (0.908×, above the margin), d̄ −0.006, s = √((9 · 0.034² +
// 0.306²) / 9) = 0.107517, t bound −0.006 + 1.833 · 0.107517 / √10 =
// +0.056322 ≥ 0; ranks 5 (× 9, tied) and 10, W⁺ = 10, P(W⁺ ≤ 10) = (1 + 9 +
// 36 + 1) / 1024 = 47/1024 = 0.045898 < 0.05: it holds by rank.
// Below the margin through two inputs only (the recogniser at int8's
// bytes, stop 37): 20 inputs, d = +0.01 × 18, −0.29 × 2, means 0.019 and
// 0.039 (0.487×), d̄ −0.02, s = √((18 · 0.03² + 2 · 0.27²) / 19) =
// 0.0923381, bound −0.02 + 1.729 · 0.0923381 / √20 = +0.0156994; for the
// uniform lower, its d = −0.01 × 18 (rank 9.5), +0.29 × 2 (rank 19.5), W⁺
// = 39, P(W⁺ ≤ 39) = (Σ_{a≤4} C(18, a) + 2 Σ_{a≤2} C(18, a) + 1) / 2²⁰ =
// (4048 + 344 + 1) / 1048576 = 0.0041895 < 0.05: the uniform is lower by
// rank, and kept.
TEST(UniformGuard, ThePlanHoldsByRankAndTheMarginYieldsToRank) {
  using compress::difference_bound;
  using compress::guard_pick;
  using compress::GuardPoint;
  using compress::signed_rank_p;
  std::vector<double> p9(9, 0.01), u9(9, 0.05);
  p9.push_back(0.5);
  u9.push_back(0.2);
  const GuardPoint plan = point_of(p9), uniform = point_of(u9);
  EXPECT_GT(plan.damage, compress::kPlanMargin * uniform.damage);
  EXPECT_NEAR(difference_bound(plan, uniform), 0.056322, 1e-6);
  EXPECT_DOUBLE_EQ(signed_rank_p(plan, uniform), 47.0 / 1024);
  EXPECT_TRUE(compress::plan_holds(plan, uniform));
  EXPECT_EQ(guard_pick({plan, uniform}, 100), 0u);
  // The same ranks with the plan's mean above the uniform's: not kept.
  std::vector<double> p_high = p9;
  p_high.back() = 0.9;  // d = −0.04 × 9, +0.7: mean +0.034
  EXPECT_DOUBLE_EQ(signed_rank_p(point_of(p_high), uniform), 47.0 / 1024);
  EXPECT_FALSE(compress::plan_holds(point_of(p_high), uniform));

  std::vector<double> p18(18, 0.02), u18(18, 0.01);
  p18.insert(p18.end(), {0.01, 0.01});
  u18.insert(u18.end(), {0.3, 0.3});
  const GuardPoint two_inputs = point_of(p18), steady = point_of(u18);
  EXPECT_NEAR(two_inputs.damage / steady.damage, 0.019 / 0.039, 1e-12);
  EXPECT_NEAR(difference_bound(two_inputs, steady), 0.0156994, 1e-6);
  EXPECT_NEAR(signed_rank_p(steady, two_inputs), 4393.0 / 1048576, 1e-15);
  EXPECT_FALSE(compress::plan_holds(two_inputs, steady));
  EXPECT_EQ(guard_pick({two_inputs, steady}, 100), 1u);
  // The uniform lower by rank: no advice that more inputs would help.
  const std::string vetoed = compress::guard_verdict({two_inputs, steady}, 1, 100, "kl (mean)", 1);
  EXPECT_NE(vetoed.find("0.00419 for it lower (level 0.05), the plan lower on 2 of 20 inputs"),
            std::string::npos)
      << vetoed;
  EXPECT_EQ(vetoed.find("more inputs"), std::string::npos) << vetoed;
  expect_verdict_holds({plan, uniform}, 0,
                       "0.908× its damage; paired 95% upper bound of the mean per-input "
                       "difference plan − it 0.0563 ≥ 0; Wilcoxon signed-rank p 0.0459 for the "
                       "plan lower, 0.99 for it lower (level 0.05), the plan lower on 9 of 10 "
                       "inputs");
}

TEST(UniformGuard, StudentTQuantilesFromTablesAndExpansion) {
  using compress::student_t95;
  EXPECT_EQ(student_t95(1), 6.314);
  EXPECT_EQ(student_t95(2), 2.920);
  EXPECT_EQ(student_t95(18), 1.734);
  EXPECT_EQ(student_t95(30), 1.697);
  EXPECT_NEAR(student_t95(40), 1.684, 1e-3);   // tables: 1.684
  EXPECT_NEAR(student_t95(120), 1.658, 1e-3);  // tables: 1.658
  EXPECT_NEAR(student_t95(1000000), 1.6448536, 1e-5);
  testing::expect_error_naming([] { student_t95(0); }, "guard", "df");
}

TEST(UniformGuard, ThePlanStaysAgainstTheBestUniformOnlyOnPairedEvidence) {
  using compress::difference_bound;
  using compress::guard_pick;
  using compress::GuardPoint;
  const std::vector<double> base = {0.01, 0.02, 0.04};
  auto shifted = [&](const std::string& name, const std::vector<double>& add, int64_t bytes) {
    GuardPoint p{name, bytes, 0.0, {}};
    for (size_t i = 0; i < base.size(); ++i) p.per_input.push_back(base[i] + add[i]);
    p.damage = (p.per_input[0] + p.per_input[1] + p.per_input[2]) / 3;
    return p;
  };
  const GuardPoint plan{"plan", 100, (0.01 + 0.02 + 0.04) / 3, base};
  // plan_i − u_i = −0.001, −0.002, −0.003: mean −0.002, s = 0.001, bound =
  // −0.002 + 2.920 · 0.001 / √3 = −0.00031414 < 0: lower on every input, it stays.
  const GuardPoint steady = shifted("steady", {0.001, 0.002, 0.003}, 100);
  EXPECT_NEAR(difference_bound(plan, steady), -0.00031414, 1e-8);
  EXPECT_EQ(guard_pick({plan, steady}, 100), 0u);
  // plan_i − u_i = −0.001, −0.002, −0.006: the plan's mean is lower (by
  // 0.003), but s = √((0.002² + 0.001² + 0.003²) / 2) = 0.0026458 and the
  // bound −0.003 + 2.920 · 0.0026458 / √3 = 0.0014604 ≥ 0: not shown, the
  // uniform is kept.
  const GuardPoint noisy = shifted("noisy", {0.001, 0.002, 0.006}, 100);
  EXPECT_NEAR(difference_bound(plan, noisy), 0.0014604, 1e-7);
  EXPECT_LT(plan.damage, noisy.damage);
  EXPECT_EQ(guard_pick({plan, noisy}, 100), 1u);
  // Only the best uniform within the budget is the rival (steady, mean
  // 0.025333, against noisy's 0.026333).
  EXPECT_EQ(compress::best_uniform({plan, steady, noisy}, 100), 1u);
  EXPECT_EQ(guard_pick({plan, steady, noisy}, 100), 0u);
  EXPECT_EQ(guard_pick({plan, shifted("steady", {0.001, 0.002, 0.003}, 101), noisy}, 100), 2u);
  // No uniform within the budget: the plan; a NaN plan: the best uniform.
  EXPECT_EQ(guard_pick({plan, shifted("big", {1, 1, 1}, 101)}, 100), 0u);
  EXPECT_EQ(guard_pick({{"nan", 100, std::nan(""), {0.1, std::nan(""), 0.1}}, steady}, 100), 1u);
  // Fewer than two inputs, or counts that differ: no bound.
  EXPECT_TRUE(std::isnan(difference_bound({"a", 1, 0.1, {0.1}}, {"b", 1, 0.2, {0.2}})));
  EXPECT_TRUE(std::isnan(difference_bound(steady, {"b", 1, 0.2, {0.2, 0.1}})));
}

TEST(UniformGuard, PlanDamageIsTheRelativeErrorOfTheWholeReplacedModel) {
  const graph::Model m = cancelling_model();
  const std::vector<graph::WeightView> ws = graph::weights(m);
  const Matrix a = block_matrix(3.4), b = block_matrix(2.6), c = c_matrix();
  std::vector<std::map<std::string, Tensor>> inputs = {feed(0), feed(1), feed(2)};
  const compress::PlanDamage one(m, inputs, compress::DamageMetric::relative_error, {}, 1);
  const compress::PlanDamage two(m, inputs, compress::DamageMetric::relative_error, {}, 2);
  auto enc = [&](const std::string& name) {
    return compress::encode_layer(*graph::find_weight(ws, name), "int4", {}, 0x7a11, 0);
  };
  // Σ_k ‖y − ŷ‖² / Σ_k ‖y‖², in double here.
  auto by_hand = [&](const Matrix& a2, const Matrix& b2, const Matrix& c2) {
    double dd = 0, yy = 0;
    for (int k = 0; k < 3; ++k) {
      const auto y = matvec(c, matvec(b, matvec(a, input(k))));
      const auto h = matvec(c2, matvec(b2, matvec(a2, input(k))));
      for (size_t i = 0; i < y.size(); ++i) {
        dd += (y[i] - h[i]) * (y[i] - h[i]);
        yy += y[i] * y[i];
      }
    }
    return dd / yy;
  };
  EXPECT_EQ(one.measure({}), 0.0);
  const double a_only = by_hand(int4_by_hand(a), b, c);
  ASSERT_GT(a_only, 1e-4);
  EXPECT_NEAR(one.measure({enc("a")}), a_only, 1e-5 * a_only);
  const double b_c = by_hand(a, int4_by_hand(b), int4_by_hand(c));
  EXPECT_NEAR(one.measure({enc("b"), enc("c")}), b_c, 1e-5 * b_c);
  EXPECT_EQ(one.measure({enc("b"), enc("c")}), two.measure({enc("b"), enc("c")}));
  // Per input: input k's own ‖y − ŷ‖² / ‖y‖².
  std::vector<double> each;
  one.measure({enc("a")}, &each);
  ASSERT_EQ(each.size(), 3u);
  for (int k = 0; k < 3; ++k) {
    const auto y = matvec(c, matvec(b, matvec(a, input(k))));
    const auto h = matvec(c, matvec(b, matvec(int4_by_hand(a), input(k))));
    double dd = 0, yy = 0;
    for (size_t i = 0; i < y.size(); ++i) {
      dd += (y[i] - h[i]) * (y[i] - h[i]);
      yy += y[i] * y[i];
    }
    EXPECT_NEAR(each[static_cast<size_t>(k)], dd / yy, 1e-4 * dd / yy) << k;  // f32 run
  }
  // Cross-fitted in two folds: inputs 0 and 2 run fold 0's layers (a at
  // int4), input 1 fold 1's (b at int4); Σ‖y − ŷ‖² / Σ‖y‖² over both.
  {
    std::vector<double> fold_each;
    const double pooled = two.measure_cross_fitted({{enc("a")}, {enc("b")}}, &fold_each);
    double dd = 0, yy = 0;
    for (int k = 0; k < 3; ++k) {
      const auto y = matvec(c, matvec(b, matvec(a, input(k))));
      const auto h = k == 1 ? matvec(c, matvec(int4_by_hand(b), matvec(a, input(k))))
                            : matvec(c, matvec(b, matvec(int4_by_hand(a), input(k))));
      double dk = 0, yk = 0;
      for (size_t i = 0; i < y.size(); ++i) {
        dk += (y[i] - h[i]) * (y[i] - h[i]);
        yk += y[i] * y[i];
      }
      ASSERT_EQ(fold_each.size(), 3u);
      EXPECT_NEAR(fold_each[static_cast<size_t>(k)], dk / yk, 1e-4 * dk / yk) << k;
      dd += dk;
      yy += yk;
    }
    EXPECT_NEAR(pooled, dd / yy, 1e-4 * dd / yy);
    EXPECT_EQ(one.measure_cross_fitted({{enc("a")}}), one.measure({enc("a")}));
    testing::expect_error_naming([&] { one.measure_cross_fitted({}); }, "output damage", "no fold");
  }
  // Both int4: the two errors cancel (f32 rounding only).
  EXPECT_LT(one.measure({enc("a"), enc("b"), enc("c")}), 1e-10);
  testing::expect_error_naming(
      [&] {
        compress::EncodedLayer e = enc("a");
        e.name = "no-such";
        one.measure({e});
      },
      "no-such", "not a value");
}

TEST(UniformGuard, KeepsUniformInt4WhereThePerLayerDamagesMisleadTheSolver) {
  TempDir dir;
  graph::write_onnx(cancelling_model(), dir.file("m.onnx"));
  fs::create_directories(dir.file("calib"));
  for (int k = 0; k < 4; ++k)  // even-numbered calibrate, odd-numbered verify
    write_npy(dir.file("calib/" + std::to_string(k) + ".npy"), feed(k).at("x"));
  compress::CompressOptions o;
  o.model = dir.file("m.onnx");
  o.calib_dir = dir.file("calib");
  o.cache = false;
  o.threads = 1;
  o.min_params = 1;
  o.schemes = {"dense", "int8", "int4", "int3"};
  o.uniform = "int4";
  o.out_dir = dir.file("u");
  const compress::CompressResult u = compress::compress_model(o);
  EXPECT_LT(u.verification.measured_damage, 1e-10);
  // At uniform int4's bytes C may drop to int3 (free: exact) and pay for one
  // of A, B at int8: Σ D says that halves the damage (one int4 error instead
  // of two); measured, the two int4 errors cancel and the plan loses.
  o.uniform.clear();
  o.budget = std::to_string(u.plan.total_bytes);
  o.uniform_guard = false;
  o.out_dir = dir.file("solver");
  const compress::CompressResult s = compress::compress_model(o);
  EXPECT_TRUE(s.guard.empty());
  int int8 = 0;
  for (const plan::PlanChoice& c : s.plan.choices) int8 += c.label == "int8";
  EXPECT_EQ(int8, 1);
  EXPECT_LT(s.verification.predicted_damage, u.verification.predicted_damage);
  EXPECT_GT(s.verification.measured_damage, 1e-4);
  // Each damage's interval over its two inputs: a draw of the same input
  // twice has probability ¼ ≫ 2.5%, so it spans the two inputs' own damages
  // (the mixed draw pools between them) and holds the figure.
  const Interval& mi = s.verification.measured_interval;
  EXPECT_LE(mi.low, s.verification.measured_damage);
  EXPECT_GE(mi.high, s.verification.measured_damage);
  EXPECT_LT(mi.low, mi.high);

  o.uniform_guard = true;
  o.out_dir = dir.file("guarded");
  const compress::CompressResult g = compress::compress_model(o);
  ASSERT_EQ(g.guard.size(), 4u);  // the plan, uniform int8 (over the budget), int4, int3
  EXPECT_EQ(g.guard_folds, 1u);   // no -gptq layer: nothing cross-fitted
  EXPECT_EQ(g.guard[1].name, "uniform int8");
  EXPECT_GT(g.guard[1].bytes, u.plan.total_bytes);
  EXPECT_EQ(g.guard[0].name, "plan (exact)");
  EXPECT_GT(g.guard[0].damage, 1e-4);
  EXPECT_EQ(g.guard[g.guard_kept].name, "uniform int4");
  EXPECT_LT(g.guard[g.guard_kept].damage, 1e-10);
  for (const plan::PlanChoice& c : g.plan.choices) EXPECT_EQ(c.label, "int4") << c.layer;
  EXPECT_EQ(g.plan.total_bytes, u.plan.total_bytes);
  EXPECT_LT(g.verification.measured_damage, 1e-10);
  // The points' intervals span their two calibration inputs' own damages.
  for (const compress::GuardPoint& p : g.guard) {
    ASSERT_EQ(p.per_input.size(), 2u) << p.name;
    EXPECT_EQ(p.interval.low, std::min(p.per_input[0], p.per_input[1])) << p.name;
    EXPECT_EQ(p.interval.high, std::max(p.per_input[0], p.per_input[1])) << p.name;
  }
  EXPECT_LT(g.guard[0].interval.low, g.guard[0].interval.high);
  // The written plan's figure on the calibration inputs is the kept point's;
  // without the guard, the plan without -gptq layers is measured after the
  // rewrite: the solver's plan there is the guard's first point, the same
  // figure and interval.
  EXPECT_EQ(g.verification.calibration_damage, g.guard[g.guard_kept].damage);
  EXPECT_EQ(g.verification.calibration_interval.high, g.guard[g.guard_kept].interval.high);
  EXPECT_NEAR(s.verification.calibration_damage, g.guard[0].damage, 1e-12);
  EXPECT_NEAR(s.verification.calibration_interval.low, g.guard[0].interval.low, 1e-12);
  EXPECT_NEAR(s.verification.calibration_interval.high, g.guard[0].interval.high, 1e-12);
  EXPECT_LT(u.verification.calibration_damage, 1e-10);
}

}  // namespace
}  // namespace tailor
