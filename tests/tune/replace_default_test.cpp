// tune keeps the default unless a one-sided sign test over the paired rounds
// shows the candidate faster (issue 16, item 2). Values by hand: binomial
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

}  // namespace
}  // namespace tailor::tune
