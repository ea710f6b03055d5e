#!/usr/bin/python3
"""Independent numpy GPTQ (Frantar et al., ICLR 2023, Algorithm 1) for
tests/schemes/data_aware_test.cpp: the scale search of the -mse labels
(docs/schemes.md) and GPTQ with static scales, written from the paper.

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


def main():
    W = np.load(sys.argv[1]).astype(np.float32)
    H = np.load(sys.argv[2]).astype(np.float64)
    bits, group, act_order, block, damp = (int(sys.argv[4]), int(sys.argv[5]),
                                           sys.argv[6] == "1", int(sys.argv[7]),
                                           float(sys.argv[8]))
    out, n = W.shape
    L = 2 ** (bits - 1) - 1
    g = n if group == 0 else group
    S = np.zeros((out, n))  # scale of every element
    for o in range(out):
        for j0 in range(0, n, g):
            S[o, j0:j0 + g] = mse_scale(W[o, j0:j0 + g], L)
    perm = np.argsort(-np.diag(H), kind="stable") if act_order else np.arange(n)
    Wp = W[:, perm].astype(np.float64)
    Sp = S[:, perm]
    Hp = H[np.ix_(perm, perm)].copy()
    mean = np.mean(np.diag(Hp))
    Hp += np.eye(n) * (damp * mean if mean > 0 else 1.0)
    U = np.linalg.cholesky(np.linalg.inv(Hp)).T  # upper, H⁻¹ = UᵀU
    Q = np.zeros_like(Wp)
    for i1 in range(0, n, block):
        i2 = min(i1 + block, n)
        E = np.zeros((out, i2 - i1))
        for c in range(i1, i2):
            s = Sp[:, c]
            q = np.where(s != 0, np.clip(rnd(Wp[:, c] / np.where(s != 0, s, 1)), -L, L), 0)
            Q[:, c] = q * s
            e = (Wp[:, c] - q * s) / U[c, c]
            E[:, c - i1] = e
            Wp[:, c + 1:i2] -= np.outer(e, U[c, c + 1:i2])
        Wp[:, i2:] -= E @ U[i1:i2, i2:]
    What = np.zeros_like(Q)
    What[:, perm] = Q
    np.save(sys.argv[3], What)


if __name__ == "__main__":
    main()
