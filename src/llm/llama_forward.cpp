// The llama forward pass with a KV cache, and greedy decoding.
#include <algorithm>
#include <cmath>

#include "tailor/core/error.h"
#include "tailor/llm/llama.h"

namespace tailor::llm {
namespace {

// out[t] = x[t] / sqrt(mean(x[t]²) + eps) ⊙ gain, for n rows of size d.
void rms_norm(const float* x, const std::vector<float>& gain, float eps, int64_t n, int64_t d,
              float* out) {
  for (int64_t t = 0; t < n; ++t) {
    const float* xr = x + t * d;
    double ss = 0;
    for (int64_t j = 0; j < d; ++j) ss += static_cast<double>(xr[j]) * xr[j];
    const float inv = static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(d) + eps));
    for (int64_t j = 0; j < d; ++j) out[t * d + j] = xr[j] * inv * gain[j];
  }
}

// Rotates every head of one row in place: the pair (a, b) of pair index p
// turns by angle pos·theta^(−2p/hd); which dimensions form the pair depends on
// `pairing`. cos_sin holds [hd/2] cosines then [hd/2] sines for this position.
void rope_row(float* row, int64_t n_heads, int64_t hd, RopePairing pairing,
              const std::vector<float>& cos_sin) {
  const int64_t half = hd / 2;
  for (int64_t h = 0; h < n_heads; ++h) {
    float* v = row + h * hd;
    for (int64_t p = 0; p < half; ++p) {
      const int64_t a = pairing == RopePairing::interleaved ? 2 * p : p;
      const int64_t b = pairing == RopePairing::interleaved ? 2 * p + 1 : p + half;
      const float c = cos_sin[p], s = cos_sin[half + p];
      const float x0 = v[a], x1 = v[b];
      v[a] = x0 * c - x1 * s;
      v[b] = x0 * s + x1 * c;
    }
  }
}

}  // namespace

LlamaSession::LlamaSession(const LlamaModel& model) : model_(model), k_cache_(), v_cache_() {}

std::vector<float> LlamaSession::forward(std::span<const int32_t> tokens) {
  const LlamaConfig& c = model_.config();
  const int64_t n = static_cast<int64_t>(tokens.size());
  check(n > 0, "llama", "forward needs at least one token");
  check(pos_ + n <= c.seq_len, "llama",
        "sequence of " + std::to_string(pos_ + n) + " positions passes the context length " +
            std::to_string(c.seq_len));
  const int64_t dim = c.dim, hd = c.head_dim(), n_heads = c.n_heads;
  const int64_t kv_dim = static_cast<int64_t>(c.n_kv_heads) * hd;
  const int64_t group = n_heads / c.n_kv_heads, hidden = c.hidden_dim;
  const int64_t n_layers = c.n_layers, end = pos_ + n;
  // Grow the cache [layer][position][kv_dim] to `end` positions (layer-major
  // storage is re-laid out on growth; the copy is linear in what is cached).
  const int64_t old_cap = static_cast<int64_t>(k_cache_.size()) / (n_layers * kv_dim);
  if (end > old_cap) {
    const int64_t cap = std::min<int64_t>(c.seq_len, std::max<int64_t>(end, 2 * old_cap));
    std::vector<float> k(static_cast<size_t>(n_layers * cap * kv_dim));
    std::vector<float> v(k.size());
    for (int64_t l = 0; l < n_layers; ++l) {
      std::copy_n(k_cache_.begin() + l * old_cap * kv_dim, pos_ * kv_dim,
                  k.begin() + l * cap * kv_dim);
      std::copy_n(v_cache_.begin() + l * old_cap * kv_dim, pos_ * kv_dim,
                  v.begin() + l * cap * kv_dim);
    }
    k_cache_.swap(k);
    v_cache_.swap(v);
  }
  const int64_t cap = static_cast<int64_t>(k_cache_.size()) / (n_layers * kv_dim);

  std::vector<float> x(static_cast<size_t>(n * dim));
  for (int64_t t = 0; t < n; ++t) {
    const std::span<const float> e = model_.embedding(tokens[static_cast<size_t>(t)]);
    std::copy(e.begin(), e.end(), x.begin() + t * dim);
  }
  // cos/sin per new position: [n][hd/2 cos, hd/2 sin].
  std::vector<std::vector<float>> rot(static_cast<size_t>(n), std::vector<float>(hd));
  for (int64_t t = 0; t < n; ++t)
    for (int64_t p = 0; p < hd / 2; ++p) {
      const double freq =
          std::pow(static_cast<double>(c.rope_theta), -2.0 * p / static_cast<double>(hd));
      const double angle = static_cast<double>(pos_ + t) * freq;
      rot[t][p] = static_cast<float>(std::cos(angle));
      rot[t][hd / 2 + p] = static_cast<float>(std::sin(angle));
    }

  std::vector<float> xb(x.size()), q(x.size()), att(x.size()), proj(x.size());
  std::vector<float> k(static_cast<size_t>(n * kv_dim)), v(k.size());
  std::vector<float> gate(static_cast<size_t>(n * hidden)), up(gate.size());
  std::vector<float> scores(static_cast<size_t>(end));
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(hd)));
  for (int64_t l = 0; l < n_layers; ++l) {
    const LlamaLayer& layer = model_.layers()[static_cast<size_t>(l)];
    rms_norm(x.data(), layer.attn_norm, c.rms_norm_eps, n, dim, xb.data());
    layer.wq->forward(xb.data(), n, q.data());
    layer.wk->forward(xb.data(), n, k.data());
    layer.wv->forward(xb.data(), n, v.data());
    float* kc = k_cache_.data() + l * cap * kv_dim;
    float* vc = v_cache_.data() + l * cap * kv_dim;
    for (int64_t t = 0; t < n; ++t) {
      rope_row(q.data() + t * dim, n_heads, hd, model_.rope_pairing(), rot[t]);
      rope_row(k.data() + t * kv_dim, c.n_kv_heads, hd, model_.rope_pairing(), rot[t]);
      std::copy_n(k.begin() + t * kv_dim, kv_dim, kc + (pos_ + t) * kv_dim);
      std::copy_n(v.begin() + t * kv_dim, kv_dim, vc + (pos_ + t) * kv_dim);
    }
    // Causal attention: position pos_ + t attends to 0 … pos_ + t; query head
    // h reads key/value head h / group (grouped-query attention).
    for (int64_t t = 0; t < n; ++t) {
      const int64_t span = pos_ + t + 1;
      for (int64_t h = 0; h < n_heads; ++h) {
        const float* qh = q.data() + t * dim + h * hd;
        const int64_t kvh = h / group;
        float best = -INFINITY;
        for (int64_t s = 0; s < span; ++s) {
          const float* ks = kc + s * kv_dim + kvh * hd;
          float dot = 0;
          for (int64_t j = 0; j < hd; ++j) dot += qh[j] * ks[j];
          scores[s] = dot * scale;
          best = std::max(best, scores[s]);
        }
        float sum = 0;
        for (int64_t s = 0; s < span; ++s) {
          scores[s] = std::exp(scores[s] - best);
          sum += scores[s];
        }
        float* out = att.data() + t * dim + h * hd;
        std::fill(out, out + hd, 0.0f);
        for (int64_t s = 0; s < span; ++s) {
          const float a = scores[s] / sum;
          const float* vs = vc + s * kv_dim + kvh * hd;
          for (int64_t j = 0; j < hd; ++j) out[j] += a * vs[j];
        }
      }
    }
    layer.wo->forward(att.data(), n, proj.data());
    for (size_t i = 0; i < x.size(); ++i) x[i] += proj[i];
    // SwiGLU: w2(silu(w1·x) ⊙ w3·x).
    rms_norm(x.data(), layer.ffn_norm, c.rms_norm_eps, n, dim, xb.data());
    layer.w1->forward(xb.data(), n, gate.data());
    layer.w3->forward(xb.data(), n, up.data());
    for (size_t i = 0; i < gate.size(); ++i) {
      const float g = gate[i];
      gate[i] = g / (1.0f + std::exp(-g)) * up[i];
    }
    layer.w2->forward(gate.data(), n, proj.data());
    for (size_t i = 0; i < x.size(); ++i) x[i] += proj[i];
  }
  rms_norm(x.data(), model_.final_norm(), c.rms_norm_eps, n, dim, xb.data());
  std::vector<float> logits(static_cast<size_t>(n * c.vocab_size));
  model_.classifier().forward(xb.data(), n, logits.data());
  pos_ = static_cast<int32_t>(end);
  return logits;
}

std::vector<int32_t> generate_greedy(const LlamaModel& model, std::span<const int32_t> prompt,
                                     int32_t n_tokens, int32_t stop_token) {
  check(!prompt.empty(), "generate", "the prompt is empty (give at least BOS)");
  check(n_tokens >= 0, "generate", "the token count is negative");
  const int64_t vocab = model.config().vocab_size;
  check(static_cast<int64_t>(prompt.size()) + n_tokens <= model.config().seq_len + 1, "generate",
        "prompt of " + std::to_string(prompt.size()) + " tokens + " + std::to_string(n_tokens) +
            " new tokens passes the context length " + std::to_string(model.config().seq_len));
  LlamaSession session(model);
  std::vector<float> logits = session.forward(prompt);
  std::vector<int32_t> out;
  for (int32_t i = 0; i < n_tokens; ++i) {
    const float* last = logits.data() + (logits.size() - static_cast<size_t>(vocab));
    const int32_t next = static_cast<int32_t>(std::max_element(last, last + vocab) - last);
    out.push_back(next);
    if (next == stop_token || i + 1 == n_tokens) break;
    logits = session.forward({&out.back(), 1});
  }
  return out;
}

}  // namespace tailor::llm
