#!/usr/bin/python3
"""Reference next-token logits of stories260K, computed with numpy only.

An independent implementation of the llama forward pass (Meta's reference
model.py formulation: RoPE as multiplication by complex numbers over
consecutive pairs, grouped KV heads repeated, causal softmax attention,
SwiGLU, RMSNorm eps 1e-5, tied classifier), reading the llama2.c checkpoint
directly. Writes tests/fixtures/llm/stories260K_logits.npy: float32
[len(TOKENS), 512], row t = logits after tokens[0..t].

Run: /usr/bin/python3 tests/llm/reference_logits.py
"""
import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "fixtures")
# The token sequence of tests/llm/llama_test.cpp (kTokens).
TOKENS = [1, 403, 407, 261, 378, 11, 300, 7, 88, 500, 2, 261, 42, 299]


def main():
    raw = open(os.path.join(FIXTURES, "stories260K.bin"), "rb").read()
    dim, hidden, n_layers, n_heads, n_kv, vocab, seq_len = np.frombuffer(raw[:28], "<i4")
    f = np.frombuffer(raw[28:], "<f4").astype(np.float64)
    hd = dim // n_heads
    kv_dim = n_kv * hd
    pos = 0

    def take(*shape):
        nonlocal pos
        n = int(np.prod(shape))
        out = f[pos:pos + n].reshape(shape)
        pos += n
        return out

    emb = take(vocab, dim)
    att_norm = take(n_layers, dim)
    wq = take(n_layers, dim, dim)
    wk = take(n_layers, kv_dim, dim)
    wv = take(n_layers, kv_dim, dim)
    wo = take(n_layers, dim, dim)
    ffn_norm = take(n_layers, dim)
    w1 = take(n_layers, hidden, dim)
    w2 = take(n_layers, dim, hidden)
    w3 = take(n_layers, hidden, dim)
    final_norm = take(dim)

    def rms(x, g):
        return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + 1e-5) * g

    T = len(TOKENS)
    freqs = 1.0 / (10000.0 ** (np.arange(0, hd, 2) / hd))        # [hd/2]
    cis = np.exp(1j * np.outer(np.arange(T), freqs))             # [T, hd/2]

    def rope(x, heads):  # x [T, heads*hd], pairs (2i, 2i+1) as complex numbers
        c = x.reshape(T, heads, hd // 2, 2)
        z = (c[..., 0] + 1j * c[..., 1]) * cis[:, None, :]
        return np.stack([z.real, z.imag], axis=-1).reshape(T, heads * hd)

    x = emb[TOKENS]
    mask = np.triu(np.full((T, T), -np.inf), 1)
    for l in range(n_layers):
        h = rms(x, att_norm[l])
        q = rope(h @ wq[l].T, n_heads).reshape(T, n_heads, hd)
        k = rope(h @ wk[l].T, n_kv).reshape(T, n_kv, hd)
        v = (h @ wv[l].T).reshape(T, n_kv, hd)
        k = np.repeat(k, n_heads // n_kv, axis=1)
        v = np.repeat(v, n_heads // n_kv, axis=1)
        s = np.einsum("thd,shd->hts", q, k) / np.sqrt(hd) + mask
        a = np.exp(s - s.max(-1, keepdims=True))
        a /= a.sum(-1, keepdims=True)
        o = np.einsum("hts,shd->thd", a, v).reshape(T, dim)
        x = x + o @ wo[l].T
        h = rms(x, ffn_norm[l])
        g = h @ w1[l].T
        x = x + ((g / (1 + np.exp(-g))) * (h @ w3[l].T)) @ w2[l].T
    logits = rms(x, final_norm) @ emb.T
    os.makedirs(os.path.join(FIXTURES, "llm"), exist_ok=True)
    np.save(os.path.join(FIXTURES, "llm", "stories260K_logits.npy"), logits.astype(np.float32))


if __name__ == "__main__":
    main()
