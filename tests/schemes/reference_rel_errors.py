#!/usr/bin/env python3
"""Independent numpy implementation of the scheme catalog's rel_error.

Writes the fixture the C++ test `SchemesFixture` compares against:

  tests/fixtures/schemes/<name>.f32   the test matrices, raw little-endian
                                      float32, row-major [out, in]
  tests/fixtures/schemes/rel_errors.csv
                                      matrix,out,in,label,options,rel_error

Run once with Debian's python3 (python3-numpy) from the repository root:

  /usr/bin/python3 tests/schemes/reference_rel_errors.py

Definitions follow ../shared/DESIGN.md ("Scheme semantics") and nothing in
tailor's C++: quantizers in float32 exactly as written there, the
factorizations in float64 with numpy.linalg.svd (exact SVDs, so low-rank is
the Eckart-Young optimum the randomized SVD must come within 1% of).
"""
import csv
import math
import os
import sys

import numpy as np

OUT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "schemes")


# ---------------------------------------------------------------- matrices
def matrices():
    rng = np.random.default_rng(20240607)
    # 81x81 (Monarch applies, m = 9): Gaussian weights, a few large outliers,
    # an all-zero row, a row on a regular grid.
    a = (0.02 * rng.standard_normal((81, 81))).astype(np.float32)
    for r, c in [(3, 5), (10, 70), (40, 40), (66, 2), (80, 80)]:
        a[r, c] = np.float32(0.5 * (1 if (r + c) % 2 else -1))
    a[7, :] = 0
    a[12, :] = np.float32(1.0 / 127.0) * np.arange(-40, 41, dtype=np.float32) * np.float32(1.5)
    # 96x160: slowly decaying spectrum sigma_i = 1/sqrt(i+1) plus noise.
    u, _ = np.linalg.qr(rng.standard_normal((96, 96)))
    v, _ = np.linalg.qr(rng.standard_normal((160, 96)))
    s = 1.0 / np.sqrt(np.arange(96) + 1.0)
    b = ((u * s) @ v.T + 0.003 * rng.standard_normal((96, 160))).astype(np.float32)
    # 37x75 (odd in, in < 128, a 3-wide last 2:4 group): heavy tails, a zero row.
    c = (0.05 * rng.standard_t(3, size=(37, 75))).astype(np.float32)
    c[20, :] = 0
    return {"outliers_81x81": a, "decay_96x160": b, "odd_37x75": c}


# ---------------------------------------------------------------- quantizers
def round_half_away(x):
    return np.sign(x) * np.floor(np.abs(x) + np.float32(0.5))


def quantize(w, bits, group):
    """Symmetric per-row (group = in) or per-group quantization, f16 scales."""
    L = np.float32(2 ** (bits - 1) - 1)
    out, n = w.shape
    wh = np.zeros_like(w)
    for j0 in range(0, n, group):
        g = w[:, j0 : j0 + group]
        m = np.max(np.abs(g), axis=1)
        s = (m / L).astype(np.float16).astype(np.float32)
        s[m == 0] = np.float32(1.0)
        q = np.zeros_like(g)
        nz = s != 0
        q[nz] = np.clip(round_half_away(g[nz] / s[nz, None]), -L, L)
        wh[:, j0 : j0 + group] = q * s[:, None]
    return wh


def ternary(w):
    w64 = w.astype(np.float64)
    wh = np.zeros_like(w)
    for o in range(w.shape[0]):
        a = np.abs(w64[o])
        delta = 0.7 * a.mean()
        keep = a > delta
        alpha = np.float32(a[keep].mean()) if keep.any() else np.float32(0)
        alpha = np.float32(np.float16(alpha))
        wh[o] = np.where(keep, alpha * np.sign(w[o]), 0).astype(np.float32)
    return wh


def sparse24(w):
    wh = np.zeros_like(w)
    out, n = w.shape
    for o in range(out):
        for j0 in range(0, n, 4):
            g = w[o, j0 : j0 + 4]
            # Larger magnitude first, lower index first among equals.
            order = sorted(range(len(g)), key=lambda k: (-abs(float(g[k])), k))
            for k in order[: min(2, len(g))]:
                wh[o, j0 + k] = g[k]
    return wh


# ---------------------------------------------------------------- factorizations
def lowrank(w, r):
    u, s, vt = np.linalg.svd(w.astype(np.float64), full_matrices=False)
    return (u[:, :r] * s[:r]) @ vt[:r]


def monarch(w):
    n = w.shape[0]
    m = math.isqrt(n)
    assert m * m == n == w.shape[1]
    wh = np.zeros((n, n))
    w64 = w.astype(np.float64)
    for l in range(m):
        for ri in range(m):
            blk = w64[l * m : (l + 1) * m, ri * m : (ri + 1) * m]
            u, s, vt = np.linalg.svd(blk)
            wh[l * m : (l + 1) * m, ri * m : (ri + 1) * m] = s[0] * np.outer(u[:, 0], vt[0])
    return wh


def balanced_factors(n, count):
    """Largest prime first onto the currently smallest factor; non-increasing."""
    primes, p, r = [], 2, n
    while r > 1:
        if p * p > r:
            primes.append(r)
            break
        while r % p == 0:
            primes.append(p)
            r //= p
        p += 1
    f = [1] * count
    for q in sorted(primes, reverse=True):
        f[f.index(min(f))] *= q
    return sorted(f, reverse=True)


def tucker(w, fraction):
    out, n = w.shape
    c1, c2 = balanced_factors(n, 2)
    t = w.astype(np.float64).reshape(out, c1, c2)
    dims = t.shape
    total = out * n
    factors = []
    for k in range(3):
        d = dims[k]
        r = min(max(1, math.ceil(fraction * d - 1e-9)), d, total // d)
        unfold = np.moveaxis(t, k, 0).reshape(d, -1)
        u, _, _ = np.linalg.svd(unfold, full_matrices=False)
        factors.append(u[:, :r])
    core = np.einsum("abc,ap,bq,ct->pqt", t, *factors)
    wh = np.einsum("pqt,ap,bq,ct->abc", core, *factors)
    return wh.reshape(out, n)


def tt(w, cores, cap):
    out, n = w.shape
    o = balanced_factors(out, cores)
    i = balanced_factors(n, cores)
    d = len(o)
    t = w.astype(np.float64).reshape(o + i)
    t = np.transpose(t, [x for k in range(d) for x in (k, d + k)])
    modes = [o[k] * i[k] for k in range(d)]
    ranks = [1]
    for k in range(1, d):
        right = int(np.prod(modes[k:]))
        r = min(ranks[k - 1] * modes[k - 1], right)
        if cap > 0:
            r = min(r, cap)
        ranks.append(r)
    ranks.append(1)
    c = t.reshape(-1)
    gs = []
    for k in range(d - 1):
        c = c.reshape(ranks[k] * modes[k], -1)
        u, s, vt = np.linalg.svd(c, full_matrices=False)
        r = ranks[k + 1]
        gs.append(u[:, :r].reshape(ranks[k], modes[k], r))
        c = s[:r, None] * vt[:r]
    gs.append(c.reshape(ranks[d - 1], modes[d - 1], 1))
    full = gs[0]
    for g in gs[1:]:
        full = np.tensordot(full, g, axes=([-1], [0]))
    full = full.reshape([x for k in range(d) for x in (o[k], i[k])])
    full = np.transpose(full, [2 * k for k in range(d)] + [2 * k + 1 for k in range(d)])
    return full.reshape(out, n)


# ---------------------------------------------------------------- driver
def rel_error(w, wh):
    w64 = w.astype(np.float64)
    den = np.linalg.norm(w64)
    return 0.0 if den == 0 else float(np.linalg.norm(w64 - np.asarray(wh, np.float64)) / den)


def cases(name, w):
    out, n = w.shape
    yield "dense", "", w
    yield "int8", "", quantize(w, 8, n)
    yield "int4", "", quantize(w, 4, n)
    yield "int3", "", quantize(w, 3, n)
    for g in (32, 64, 128):
        yield f"int4-g{g}", "", quantize(w, 4, g)
    yield "ternary", "", ternary(w)
    yield "sparse-2:4", "", sparse24(w)
    for r in (4, 16):
        yield f"lowrank-r{r}", "", lowrank(w, r)
    if out == n and math.isqrt(n) ** 2 == n:
        yield "monarch", "", monarch(w)
    for f in (0.25, 0.5):
        yield "tucker", f"tucker_rank_fraction={f}", tucker(w, f)
    for cap in (4, 12):
        yield "tt", f"tt_cores=3;tt_max_rank={cap}", tt(w, 3, cap)
    yield "tt", "tt_cores=2;tt_max_rank=2", tt(w, 2, 2)


def main():
    os.makedirs(OUT_DIR, exist_ok=True)
    rows = []
    for name, w in matrices().items():
        assert w.dtype == np.float32
        w.astype("<f4").tofile(os.path.join(OUT_DIR, name + ".f32"))
        for label, options, wh in cases(name, w):
            rows.append([name, w.shape[0], w.shape[1], label, options, f"{rel_error(w, wh):.9g}"])
    with open(os.path.join(OUT_DIR, "rel_errors.csv"), "w", newline="") as f:
        out = csv.writer(f, lineterminator="\n")
        out.writerow(["matrix", "out", "in", "label", "options", "rel_error"])
        out.writerows(rows)
    print(f"wrote {len(rows)} expected rel_errors to {os.path.normpath(OUT_DIR)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
