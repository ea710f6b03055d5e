// tune keeps the default unless a one-sided sign test over the paired rounds
// shows a candidate faster (issue 16, item 2). Values by hand: binomial
// tails of n fair coin flips.
#include <gtest/gtest.h>

#include "tailor/tune/tune.h"

namespace tailor::tune {
namespace {

TEST(TuneSignTest, TailOfFairCoinFlips) {
  // Candidate 0 against baseline 1, seven rounds.
  std::vector<std::vector<double>> all(7, {1.0, 2.0});
  EXPECT_DOUBLE_EQ(sign_test_p_value(all, 0, 1), 1.0 / 128);  // 7 of 7
  EXPECT_DOUBLE_EQ(sign_test_p_value(all, 1, 0), 1.0);        // 0 of 7: P(X ≥ 0)
  std::vector<std::vector<double>> six = all;
  six[3] = {3.0, 2.0};
  EXPECT_DOUBLE_EQ(sign_test_p_value(six, 0, 1), 8.0 / 128);  // C(7,6) + C(7,7)
  EXPECT_GT(sign_test_p_value(six, 0, 1), kReplaceDefaultAlpha);
  EXPECT_LE(sign_test_p_value(all, 0, 1), kReplaceDefaultAlpha);
  // Ties are dropped: 2 wins of 2 differing rounds.
  std::vector<std::vector<double>> ties = {{1, 1}, {1, 1}, {1, 1}, {1, 2}, {1, 3}};
  EXPECT_DOUBLE_EQ(sign_test_p_value(ties, 0, 1), 0.25);
  // No differing round: no evidence.
  EXPECT_DOUBLE_EQ(sign_test_p_value({{1, 1}, {2, 2}}, 0, 1), 1.0);
}

TEST(TuneSignTest, TheFastestCandidateThatBeatsTheDefaultInEveryRound) {
  // Pool: the default {0}, candidates {1}, {2}, {3}; 7 rounds, columns in
  // pool order. Candidate 1 is fastest but one round (index 2) is slow;
  // candidate 2 wins all 7; candidate 3 wins all 7 but is slower than 2.
  const std::vector<Configuration> pool = {{0}, {1}, {2}, {3}};
  std::vector<std::vector<double>> rounds(7, {10.0, 6.5, 6.7, 9.0});
  rounds[2][1] = 32.6;
  const std::vector<double> medians = {10.0, 6.5, 6.7, 9.0};
  // p = 8/128 for candidate 1 and 1/128 for 2 and 3, against 0.05 / 3
  // (three candidates below the default).
  EXPECT_EQ(pick_winner(pool, medians, rounds, {0}), 2u);
  // One candidate winning 7 of 7 (p 1/128 ≤ 0.05): chosen; with one slow
  // round of 7 it is not, and the default stays.
  EXPECT_EQ(
      pick_winner({{0}, {1}}, {10.0, 6.5}, std::vector<std::vector<double>>(7, {10.0, 6.5}), {0}),
      1u);
  std::vector<std::vector<double>> one_slow(7, {10.0, 6.5});
  one_slow[4][1] = 32.6;
  EXPECT_EQ(pick_winner({{0}, {1}}, {10.0, 6.5}, one_slow, {0}), 0u);
  // 7 of 7 (1/128 = 0.0078) passes 0.05 / 3 but not 0.05 / 8 (0.00625):
  // against 8 candidates below the default, 7 rounds cannot replace it;
  // candidates slower than the default are not tested (0.05 / 1 below).
  std::vector<Configuration> big = {{0}};
  std::vector<double> big_medians = {10.0};
  std::vector<std::vector<double>> big_rounds(7, {10.0});
  for (int i = 1; i <= 8; ++i) {
    big.push_back({i});
    big_medians.push_back(6.0 + 0.1 * i);
    for (auto& r : big_rounds) r.push_back(6.0 + 0.1 * i);
  }
  EXPECT_EQ(pick_winner(big, big_medians, big_rounds, {0}), 0u);
  for (auto& r : big_rounds)
    for (size_t i = 2; i < r.size(); ++i) r[i] = 12.0;
  for (size_t i = 2; i < big_medians.size(); ++i) big_medians[i] = 12.0;
  EXPECT_EQ(pick_winner(big, big_medians, big_rounds, {0}), 1u);
  // The default not in the pool: the least median.
  EXPECT_EQ(
      pick_winner({{1}, {2}}, {6.7, 6.5}, std::vector<std::vector<double>>(7, {6.7, 6.5}), {0}),
      1u);
}

}  // namespace
}  // namespace tailor::tune
