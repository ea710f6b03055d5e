// KL-divergence verification of a compressed llama against its original.
#include "tailor/llm/kld.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "tailor/core/error.h"
#include "tailor/core/rng.h"

namespace tailor::llm {
namespace {

// log softmax in double: l_v − max − log Σ exp(l_u − max).
std::vector<double> log_softmax(const float* logits, size_t n) {
  const double m = *std::max_element(logits, logits + n);
  double sum = 0;
  for (size_t i = 0; i < n; ++i) sum += std::exp(static_cast<double>(logits[i]) - m);
  const double log_z = m + std::log(sum);
  std::vector<double> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<double>(logits[i]) - log_z;
  return out;
}

double kl_from_log_probs(const std::vector<double>& lp, const std::vector<double>& lq) {
  double kl = 0;
  for (size_t i = 0; i < lp.size(); ++i) {
    const double p = std::exp(lp[i]);
    if (p > 0) kl += p * (lp[i] - lq[i]);
  }
  return std::max(kl, 0.0);  // rounding can leave −1e-17 for equal distributions
}

void check_options(const DecoderSignature& sig, const CompareOptions& o) {
  check(o.sequences >= 1, "compare", "sequences must be at least 1");
  check(o.length >= 1, "compare", "length must be at least 1");
  check(std::isfinite(o.temperature) && o.temperature > 0, "compare",
        "temperature must be positive");
  check(sig.context == 0 || static_cast<int64_t>(o.length) + 1 <= sig.context, "compare",
        "1 + length = " + std::to_string(static_cast<int64_t>(o.length) + 1) +
            " passes the context length " + std::to_string(sig.context));
  check(o.bos_token >= 0 && o.bos_token < sig.vocab, "compare",
        "BOS token " + std::to_string(o.bos_token) + " is outside the vocabulary");
}

}  // namespace

double kl_divergence(std::span<const float> p_logits, std::span<const float> q_logits) {
  check(!p_logits.empty() && p_logits.size() == q_logits.size(), "kl_divergence",
        "distributions must be non-empty and of equal size, found " +
            std::to_string(p_logits.size()) + " and " + std::to_string(q_logits.size()));
  return kl_from_log_probs(log_softmax(p_logits.data(), p_logits.size()),
                           log_softmax(q_logits.data(), q_logits.size()));
}

std::vector<std::vector<int32_t>> sample_sequences(const graph::Model& model,
                                                   const CompareOptions& options) {
  check_options(decoder_signature(model), options);
  Decoder d(model);
  return sample_sequences(d, options);
}

std::vector<std::vector<int32_t>> sample_sequences(Decoder& model, const CompareOptions& options) {
  check_options(model.signature(), options);
  const size_t vocab = static_cast<size_t>(model.signature().vocab);
  const Rng base(options.seed);
  std::vector<std::vector<int32_t>> sequences;
  std::vector<double> weights(vocab);
  for (int32_t s = 0; s < options.sequences; ++s) {
    Rng rng = base.split(static_cast<uint64_t>(s));
    model.reset();
    std::vector<int32_t> seq{options.bos_token};
    std::vector<float> logits = model.forward(seq);
    for (int32_t i = 0; i < options.length; ++i) {
      // Inverse CDF of softmax(logits / T).
      const double m = *std::max_element(logits.begin(), logits.end());
      double total = 0;
      for (size_t v = 0; v < vocab; ++v) {
        weights[v] = std::exp((static_cast<double>(logits[v]) - m) / options.temperature);
        total += weights[v];
      }
      const double u = rng.uniform_open() * total;
      double cum = 0;
      int32_t next = static_cast<int32_t>(std::max_element(weights.begin(), weights.end()) -
                                          weights.begin());  // fallback for rounding at the top
      for (size_t v = 0; v < vocab; ++v) {
        cum += weights[v];
        if (u < cum) {
          next = static_cast<int32_t>(v);
          break;
        }
      }
      seq.push_back(next);
      if (i + 1 < options.length) logits = model.forward({&seq.back(), 1});
    }
    sequences.push_back(std::move(seq));
  }
  return sequences;
}

CompareResult compare_models(const graph::Model& original, const graph::Model& compressed,
                             const CompareOptions& options) {
  const DecoderSignature so = decoder_signature(original), sc = decoder_signature(compressed);
  check(so.vocab == sc.vocab, "compare",
        "vocabularies differ: " + std::to_string(so.vocab) + " and " + std::to_string(sc.vocab) +
            " tokens");
  check_options(so, options);
  check(sc.context == 0 || static_cast<int64_t>(options.length) + 1 <= sc.context, "compare",
        "the compressed model's context is shorter than 1 + length");
  Decoder dec_o(original), dec_c(compressed);
  const std::vector<std::vector<int32_t>> sequences = sample_sequences(dec_o, options);
  const size_t vocab = static_cast<size_t>(so.vocab);
  double sum_kl = 0, sum_kl2 = 0, max_kl = 0, nll_orig = 0, nll_comp = 0;
  int64_t same_top = 0, n = 0;
  std::vector<double> kls;
  std::vector<double> sequence_kl_sum;
  std::vector<int64_t> sequence_positions;
  for (const std::vector<int32_t>& seq : sequences) {
    const std::span<const int32_t> context(seq.data(), seq.size() - 1);
    sequence_kl_sum.push_back(0);
    sequence_positions.push_back(static_cast<int64_t>(context.size()));
    dec_o.reset();
    dec_c.reset();
    const std::vector<float> lo = dec_o.forward(context);
    const std::vector<float> lc = dec_c.forward(context);
    for (size_t t = 0; t < context.size(); ++t) {
      const float* po = lo.data() + t * vocab;
      const float* pc = lc.data() + t * vocab;
      const std::vector<double> lpo = log_softmax(po, vocab), lpc = log_softmax(pc, vocab);
      const double kl = kl_from_log_probs(lpo, lpc);
      sum_kl += kl;
      sequence_kl_sum.back() += kl;
      sum_kl2 += kl * kl;
      max_kl = std::max(max_kl, kl);
      kls.push_back(kl);
      const size_t top_o = static_cast<size_t>(std::max_element(po, po + vocab) - po);
      const size_t top_c = static_cast<size_t>(std::max_element(pc, pc + vocab) - pc);
      same_top += top_o == top_c;
      const size_t next = static_cast<size_t>(seq[t + 1]);
      nll_orig -= lpo[next];
      nll_comp -= lpc[next];
      ++n;
    }
  }
  CompareResult r;
  const double dn = static_cast<double>(n);
  r.positions = n;
  r.mean_kl = sum_kl / dn;
  r.max_kl = max_kl;
  std::sort(kls.begin(), kls.end());
  auto percentile = [&](double q) {
    const auto rank = static_cast<size_t>(std::ceil(q * dn));
    return kls[std::clamp<size_t>(rank, 1, kls.size()) - 1];
  };
  r.kl_median = percentile(0.5);
  r.kl_p99 = percentile(0.99);
  r.kl_stderr =
      n > 1 ? std::sqrt(std::max(0.0, sum_kl2 / dn - r.mean_kl * r.mean_kl) / (dn - 1)) : 0.0;
  r.top1_agreement = static_cast<double>(same_top) / dn;
  r.top1_stderr = n > 1 ? std::sqrt(r.top1_agreement * (1 - r.top1_agreement) / (dn - 1)) : 0.0;
  r.ppl_orig = std::exp(nll_orig / dn);
  r.ppl_comp = std::exp(nll_comp / dn);
  r.sequence_kl_sum = std::move(sequence_kl_sum);
  r.sequence_positions = std::move(sequence_positions);
  return r;
}

Interval mean_kl_interval(const CompareResult& r, uint64_t seed) {
  check(r.sequence_kl_sum.size() == r.sequence_positions.size(), "compare",
        "per-sequence KL sums and positions differ in count");
  return bootstrap_interval(
      r.sequence_kl_sum.size(),
      [&](const std::vector<size_t>& drawn) {
        double kl = 0;
        int64_t n = 0;
        for (size_t i : drawn) {
          kl += r.sequence_kl_sum[i];
          n += r.sequence_positions[i];
        }
        return n > 0 ? kl / static_cast<double>(n) : std::numeric_limits<double>::quiet_NaN();
      },
      seed);
}

}  // namespace tailor::llm
