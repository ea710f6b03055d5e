// Verification of a compressed language model against its original by the
// statistics llama.cpp's `perplexity --kl-divergence` reports
// (tools/perplexity/perplexity.cpp): per predicted position, the KL divergence
// of the compressed model's next-token distribution from the original's,
// whether both put the same token first, and each model's negative
// log-likelihood of the token that actually follows.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "tailor/core/bootstrap.h"
#include "tailor/graph/graph.h"
#include "tailor/llm/llama.h"

namespace tailor::llm {

/// KL(P ‖ Q) = Σ_v P(v)·(log P(v) − log Q(v)) in nats, with P = softmax(p_logits)
/// and Q = softmax(q_logits), computed in double from log-softmax (terms with
/// P(v) = 0 contribute 0). Throws Error when the sizes differ or are zero.
double kl_divergence(std::span<const float> p_logits, std::span<const float> q_logits);

/// How compare_models samples its sequences.
struct CompareOptions {
  uint64_t seed = 1;
  /// Sequences sampled from the original.
  int32_t sequences = 16;
  /// Tokens sampled per sequence after BOS; each sequence scores `length`
  /// predictions (positions 0 … length − 1 predicting tokens 1 … length).
  int32_t length = 128;
  /// Sampling temperature (the original's logits are divided by it).
  double temperature = 1.0;
  /// The first token of every sequence.
  int32_t bos_token = 1;
};

/// Statistics over all n = sequences·length predicted positions.
struct CompareResult {
  /// Mean KL(P_orig ‖ P_comp) in nats, and its standard error
  /// sqrt((mean(kl²) − mean(kl)²)/(n − 1)), as llama.cpp reports "Mean KLD".
  double mean_kl = 0, kl_stderr = 0;
  /// Median, 99th percentile and largest per-position KL (nats); the q-th
  /// percentile is the nearest-rank value sorted[ceil(q·n) − 1].
  double kl_median = 0, kl_p99 = 0, max_kl = 0;
  /// Fraction of positions where both models' argmax token agree (llama.cpp's
  /// "Same top p"), and its binomial standard error sqrt(p(1 − p)/(n − 1)).
  double top1_agreement = 0, top1_stderr = 0;
  /// Perplexity exp(mean NLL of the sampled next token) of each model.
  double ppl_orig = 0, ppl_comp = 0;
  /// Positions scored.
  int64_t positions = 0;
  /// Each sampled sequence's summed KL over its positions (nats) and its
  /// positions, in sampling order: a bootstrap over sequences
  /// (mean_kl_interval) resamples these.
  std::vector<double> sequence_kl_sum;
  std::vector<int64_t> sequence_positions;
};

/// mean_kl's 95% percentile bootstrap interval over the sampled sequences
/// (bootstrap_interval with Rng(seed): each draw's Σ sequence_kl_sum /
/// Σ sequence_positions over the drawn sequences). Positions within a
/// sequence are not independent, so sequences are the unit resampled. NaN,
/// NaN for fewer than two sequences.
Interval mean_kl_interval(const CompareResult& r, uint64_t seed);

/// `options.sequences` sequences of 1 + length tokens: BOS, then tokens drawn
/// from the model's softmax(logits / temperature) one at a time (inverse CDF
/// with tailor::Rng(seed), one stream per sequence), so a seed gives the same
/// sequences on every machine. `model` is a decoder graph (llama.h), run by
/// the executor one token per step. Throws Error (source "compare") for
/// sequences or length < 1, temperature ≤ 0, or 1 + length > the context.
std::vector<std::vector<int32_t>> sample_sequences(const graph::Model& model,
                                                   const CompareOptions& options);
/// The same on a Decoder already compiled (reset before each sequence).
std::vector<std::vector<int32_t>> sample_sequences(Decoder& model, const CompareOptions& options);

/// Runs `original` and `compressed` (decoder graphs, e.g. a llama and its
/// rewrite with a plan's compressed linears) over
/// sample_sequences(original, options), each sequence in one step, and
/// returns the statistics above. The models must share the vocabulary.
/// Throws Error (source "compare") when the vocabularies differ and as
/// sample_sequences does.
CompareResult compare_models(const graph::Model& original, const graph::Model& compressed,
                             const CompareOptions& options);

}  // namespace tailor::llm
