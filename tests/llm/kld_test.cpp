#include "tailor/llm/kld.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "llm/stories.h"
#include "tailor/core/error.h"
#include "tailor/io/llama_graph.h"
#include "test_util.h"

namespace tailor::llm {
namespace {

using testing::expect_error_naming;
using testing::fixture_path;

const std::string kStories = fixture_path("stories260K.bin");

std::vector<float> logs(const std::vector<double>& p, double shift) {
  std::vector<float> out;
  for (double v : p) out.push_back(static_cast<float>(std::log(v) + shift));
  return out;
}

TEST(KlDivergence, HandComputedDistributions) {
  // P = (1/2, 1/4, 1/4), Q = (1/4, 1/4, 1/2):
  // KL = 1/2·ln 2 + 1/4·ln 1 + 1/4·ln(1/2) = ln 2 / 4.
  EXPECT_NEAR(kl_divergence(logs({0.5, 0.25, 0.25}, 0), logs({0.25, 0.25, 0.5}, 0)),
              std::log(2.0) / 4, 1e-7);
  // Logits are defined up to a constant: shifting either side changes nothing.
  EXPECT_NEAR(kl_divergence(logs({0.5, 0.25, 0.25}, 3.0), logs({0.25, 0.25, 0.5}, -7.0)),
              std::log(2.0) / 4, 1e-6);
  // P = (0.7, 0.2, 0.1), Q = (0.5, 0.3, 0.2):
  // 0.7·ln 1.4 + 0.2·ln(2/3) + 0.1·ln 0.5 = 0.08512283 (python3 math.log)
  EXPECT_NEAR(kl_divergence(logs({0.7, 0.2, 0.1}, 0), logs({0.5, 0.3, 0.2}, 0)), 0.08512283, 1e-6);
  // A token P never produces contributes nothing: P = (1, 0), Q = (1/2, 1/2): ln 2.
  const std::vector<float> p = {0.0f, -INFINITY}, q = {0.0f, 0.0f};
  EXPECT_NEAR(kl_divergence(p, q), std::log(2.0), 1e-7);
  EXPECT_EQ(kl_divergence(q, q), 0.0);
  expect_error_naming([&] { kl_divergence(p, std::vector<float>{0.0f}); }, "kl_divergence",
                      "equal size");
}

TEST(CompareModels, ModelAgainstItselfHasZeroKl) {
  const graph::Model a = load_llama_graph(kStories), b = load_llama_graph(kStories);
  const CompareResult r = compare_models(a, b, {.seed = 3, .sequences = 2, .length = 24});
  EXPECT_EQ(r.positions, 48);
  EXPECT_LE(r.mean_kl, 1e-12);
  EXPECT_LE(r.max_kl, 1e-12);
  EXPECT_EQ(r.top1_agreement, 1.0);
  EXPECT_EQ(r.ppl_orig, r.ppl_comp);
  EXPECT_GT(r.ppl_orig, 1.0);
  EXPECT_LT(r.ppl_orig, 512.0);
}

TEST(CompareModels, SamplingIsSeededAndTemperatureOne) {
  const graph::Model m = load_llama_graph(kStories);
  CompareOptions o{.seed = 11, .sequences = 3, .length = 10};
  const auto s1 = sample_sequences(m, o), s2 = sample_sequences(m, o);
  EXPECT_EQ(s1, s2);
  ASSERT_EQ(s1.size(), 3u);
  for (const auto& s : s1) {
    ASSERT_EQ(s.size(), 11u);
    EXPECT_EQ(s[0], 1);
    for (int32_t t : s) EXPECT_TRUE(t >= 0 && t < 512);
  }
  o.seed = 12;
  EXPECT_NE(sample_sequences(m, o), s1);
  // The first sampled token follows softmax(logits after BOS): its empirical
  // frequency over 600 draws is within 4 standard errors of the probability.
  o.sequences = 600;
  o.length = 1;
  const std::vector<float> logits = testing::logits_of(m, {1});
  double z = 0, m0 = *std::max_element(logits.begin(), logits.end());
  for (float l : logits) z += std::exp(l - m0);
  const size_t top =
      static_cast<size_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
  const double p = 1.0 / z;  // exp(max − max) / Z
  int hits = 0;
  for (const auto& s : sample_sequences(m, o)) hits += s[1] == static_cast<int32_t>(top);
  EXPECT_NEAR(hits / 600.0, p, 4 * std::sqrt(p * (1 - p) / 600));
}

TEST(CompareModels, PerturbedCopyMatchesADirectComputation) {
  const graph::Model a = load_llama_graph(kStories);
  std::map<std::string, std::string> labels;
  for (const std::string& name : linear_weights(a))
    if (name.find("layers.") != std::string::npos) labels[name] = "int4";
  const graph::Model b = compress::rewrite_tailor(a, testing::encode_labels(a, labels));
  const CompareOptions o{.seed = 5, .sequences = 3, .length = 20};
  const CompareResult r = compare_models(a, b, o);

  // The same statistics by their definitions, one position at a time.
  double sum = 0, sum2 = 0, nll_a = 0, nll_b = 0;
  int same = 0, n = 0;
  std::vector<double> all, per_sequence;
  for (const std::vector<int32_t>& seq : sample_sequences(a, o)) {
    Decoder sa(a), sb(b);
    per_sequence.push_back(0);
    for (size_t t = 0; t + 1 < seq.size(); ++t) {
      const std::vector<float> la = sa.forward({&seq[t], 1}), lb = sb.forward({&seq[t], 1});
      double za = 0, zb = 0;
      for (size_t v = 0; v < la.size(); ++v) {
        za += std::exp(static_cast<double>(la[v]));
        zb += std::exp(static_cast<double>(lb[v]));
      }
      double kl = 0;
      for (size_t v = 0; v < la.size(); ++v) {
        const double pa = std::exp(static_cast<double>(la[v])) / za;
        const double pb = std::exp(static_cast<double>(lb[v])) / zb;
        kl += pa * std::log(pa / pb);
      }
      sum += kl;
      per_sequence.back() += kl;
      sum2 += kl * kl;
      all.push_back(kl);
      same += std::max_element(la.begin(), la.end()) - la.begin() ==
              std::max_element(lb.begin(), lb.end()) - lb.begin();
      nll_a -= std::log(std::exp(static_cast<double>(la[seq[t + 1]])) / za);
      nll_b -= std::log(std::exp(static_cast<double>(lb[seq[t + 1]])) / zb);
      ++n;
    }
  }
  ASSERT_EQ(r.positions, n);
  const double mean = sum / n;
  EXPECT_GT(mean, 1e-3);  // int4 everywhere is a visible perturbation
  EXPECT_NEAR(r.mean_kl, mean, 1e-4 * mean);
  EXPECT_NEAR(r.kl_stderr, std::sqrt((sum2 / n - mean * mean) / (n - 1)), 1e-3 * r.kl_stderr);
  EXPECT_NEAR(r.top1_agreement, static_cast<double>(same) / n, 1.0 / n + 1e-12);
  EXPECT_NEAR(r.ppl_orig, std::exp(nll_a / n), 1e-4 * r.ppl_orig);
  EXPECT_NEAR(r.ppl_comp, std::exp(nll_b / n), 1e-4 * r.ppl_comp);
  EXPECT_LT(r.top1_agreement, 1.0);
  // 60 positions: the median is the 30th smallest, the 99th percentile the
  // 60th (ceil(59.4)), i.e. the largest.
  ASSERT_EQ(n, 60);
  std::sort(all.begin(), all.end());
  EXPECT_NEAR(r.kl_median, all[29], 1e-4 * all[29] + 1e-12);
  EXPECT_NEAR(r.kl_p99, all[59], 1e-4 * all[59]);
  EXPECT_EQ(r.kl_p99, r.max_kl);
  // Each sequence's summed KL over its 20 positions, for the interval.
  ASSERT_EQ(r.sequence_kl_sum.size(), 3u);
  for (size_t k = 0; k < 3; ++k) {
    EXPECT_NEAR(r.sequence_kl_sum[k], per_sequence[k], 1e-4 * per_sequence[k]) << k;
    EXPECT_EQ(r.sequence_positions[k], 20);
  }
}

TEST(CompareModels, RejectsBadOptions) {
  const graph::Model m = load_llama_graph(kStories);
  expect_error_naming([&] { sample_sequences(m, {.sequences = 0}); }, "compare", "sequences");
  expect_error_naming([&] { sample_sequences(m, {.length = 512}); }, "compare",
                      "context length 512");
  expect_error_naming([&] { sample_sequences(m, {.temperature = 0}); }, "compare", "temperature");
}

// mean_kl's interval resamples whole sequences: sequence 1 sums KL 2 over 2
// positions (mean 1), sequence 2 sums 0 over 2; a draw is both of one (1 or
// 0, each with probability ¼) or one of each (0.5), so the interval is [0, 1].
TEST(Compare, TheMeanKlIntervalResamplesSequences) {
  CompareResult r;
  r.sequence_kl_sum = {2.0, 0.0};
  r.sequence_positions = {2, 2};
  const Interval i = mean_kl_interval(r, 0);
  EXPECT_EQ(i.low, 0.0);
  EXPECT_EQ(i.high, 1.0);
  r.sequence_kl_sum = {2.0};
  r.sequence_positions = {2};
  EXPECT_TRUE(std::isnan(mean_kl_interval(r, 0).low));
  r.sequence_positions = {2, 2};
  expect_error_naming([&] { mean_kl_interval(r, 0); }, "compare", "differ in count");
}

}  // namespace
}  // namespace tailor::llm
