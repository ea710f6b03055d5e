#!/usr/bin/python3
"""Independent numpy GPTQ (Frantar et al., ICLR 2023, Algorithm 1) for
tests/schemes/data_aware_test.cpp: the scale search of the -mse labels
(docs/schemes.md), GPTQ with static scales, written from the paper, and the
two least-squares scale refits after it (docs/schemes.md's -gptq row).

usage: gptq_reference.py W.npy H.npy OUT.npy BITS GROUP ACT_ORDER BLOCK DAMP
W [out, in] f32, H [in, in] f64; writes Ŵ = q·s [out, in] f64 (s the f16 scales)."""
import sys

import numpy as np


def rnd(x):
    """round half away from zero"""
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


def f16(x):
    return float(np.float32(np.float16(np.float32(x))))


def group_err(w, s, L):
    q = np.zeros_like(w) if s == 0 else np.clip(rnd(w / np.float32(s)), -L, L).astype(np.float32)
    return float(np.sum((w.astype(np.float64) - (q * np.float32(s)).astype(np.float64)) ** 2)), q


def mse_scale(w, L):
    m = float(np.max(np.abs(w)))
    if m == 0:
        return 1.0
    best = f16(np.float32(m) / np.float32(L))
    best_e, _ = group_err(w, best, L)
    cands = [f16(np.float32(m) * (np.float32(0.5) + np.float32(0.02) * np.float32(k)) / np.float32(L))
             for k in range(31)]
    for s in cands:
        if s > 0 and np.isfinite(s):
            e, _ = group_err(w, s, L)
            if e < best_e:
                best, best_e = s, e
    for _ in range(2):
        _, q = group_err(w, best, L)
        qq = float(np.sum(q.astype(np.float64) ** 2))
        if qq > 0:
            s = f16(np.float32(np.sum(w.astype(np.float64) * q) / qq))
            if s > 0 and np.isfinite(s):
                e, _ = group_err(w, s, L)
                if e < best_e:
                    best, best_e = s, e
    return best


def gptq_pass(W, S, U, perm, L, block):
    """Algorithm 1 with the element scales S [out, n]; returns the codes in W's order."""
    out, n = W.shape
    Wp = W[:, perm].astype(np.float64)
    Sp = S[:, perm]
    Q = np.zeros_like(Wp)
    for i1 in range(0, n, block):
        i2 = min(i1 + block, n)
        E = np.zeros((out, i2 - i1))
        for c in range(i1, i2):
            s = Sp[:, c]
            q = np.where(s != 0, np.clip(rnd(Wp[:, c] / np.where(s != 0, s, 1)), -L, L), 0)
            Q[:, c] = q
            e = (Wp[:, c] - q * s) / U[c, c]
            E[:, c - i1] = e
            Wp[:, c + 1:i2] -= np.outer(e, U[c, c + 1:i2])
        Wp[:, i2:] -= E @ U[i1:i2, i2:]
    codes = np.zeros_like(Q)
    codes[:, perm] = Q
    return codes


def quadratic(w, q, H, g):
    """A, b, c of e(s) = ||X(w - sum_k s_k q_k)||^2 = c - 2 b.s + s.A.s, q_k: q on group k."""
    n = len(w)
    M = np.zeros((n, (n + g - 1) // g))
    for k in range(M.shape[1]):
        M[k * g:(k + 1) * g, k] = q[k * g:(k + 1) * g]
    return M.T @ H @ M, M.T @ H @ w, float(w @ H @ w)


def err(A, b, c, s):
    return c - 2 * float(b @ s) + float(s @ A @ s)


def main():
    W = np.load(sys.argv[1]).astype(np.float32)
    H = np.load(sys.argv[2]).astype(np.float64)
    bits, group, act_order, block, damp = (int(sys.argv[4]), int(sys.argv[5]),
                                           sys.argv[6] == "1", int(sys.argv[7]),
                                           float(sys.argv[8]))
    out, n = W.shape
    L = 2 ** (bits - 1) - 1
    g = n if group == 0 else group
    G = (n + g - 1) // g
    scales = np.zeros((out, G))  # f16 values as float64
    for o in range(out):
        for k in range(G):
            scales[o, k] = mse_scale(W[o, k * g:(k + 1) * g], L)
    expand = lambda sc: np.repeat(sc, g, axis=1)[:, :n]
    perm = np.argsort(-np.diag(H), kind="stable") if act_order else np.arange(n)
    Hp = H[np.ix_(perm, perm)].copy()
    mean = np.mean(np.diag(Hp))
    Hp += np.eye(n) * (damp * mean if mean > 0 else 1.0)
    U = np.linalg.cholesky(np.linalg.inv(Hp)).T  # upper, H⁻¹ = UᵀU
    codes = gptq_pass(W, expand(scales), U, perm, L, block)
    w64 = W.astype(np.float64)
    # Two refits: least-squares scales for the codes in the output metric
    # (undamped H), GPTQ again with them, and per row the best so far.
    for _ in range(2):
        refit = scales.copy()
        best = np.zeros(out)
        for o in range(out):
            A, b, c = quadratic(w64[o], codes[o], H, g)
            best[o] = err(A, b, c, scales[o])
            if not np.all(np.diag(A) > 0):
                continue
            r = np.array([f16(x) for x in np.linalg.solve(A, b)])
            if not np.all((r > 0) & np.isfinite(r)):
                continue
            refit[o] = r
            e = err(A, b, c, r)
            if e < best[o]:
                best[o], scales[o] = e, r
        again = gptq_pass(W, expand(refit), U, perm, L, block)
        for o in range(out):
            A, b, c = quadratic(w64[o], again[o], H, g)
            e = err(A, b, c, refit[o])
            if e < best[o]:
                best[o], codes[o], scales[o] = e, again[o], refit[o]
    What = codes.astype(np.float32) * expand(scales).astype(np.float32)
    np.save(sys.argv[3], What.astype(np.float64))


if __name__ == "__main__":
    main()
