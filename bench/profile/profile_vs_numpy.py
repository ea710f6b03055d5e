#!/usr/bin/python3
"""A plain numpy/LAPACK implementation of `tailor profile`'s catalog, the peer
that bench/profile/compare.sh times tailor against.

Same layers, same definitions (DESIGN.md, "Scheme semantics"), same error
(‖W − Ŵ‖_F / ‖W‖_F on the decoded stored factors), but every decomposition
takes a full SVD (numpy.linalg.svd: LAPACK gesdd):

  dense; int8, int4, int3 (symmetric per output channel, f16 scales);
  int4-g32/64/128; ternary (TWN); sparse-2:4; lowrank-r{R} at the ranks
  holding 90%, 99%, 99.9% of ‖W‖_F² (from the full spectrum) and
  ⌊p·out·in/(out + in)⌋, p = 1/2, 1/4, 1/8, only R with R·(out + in) < out·in;
  monarch (square n = m², block-wise rank-1); tucker (HOSVD: Tucker-2 of a
  conv kernel's (out, cin) modes, else [out, c1, c2] with every mode at
  ceil(0.25·d)); tt (TT-SVD, 3 balanced cores per side, bond ranks ≤ 64).

Usage:
  profile_vs_numpy.py MODEL INSPECT.json -o OUT.json [--min-params 4096]
      MODEL is .onnx (python3-onnx) or .safetensors; INSPECT.json is
      `tailor inspect --json MODEL` (tensor names, layouts, [out, in] views):
      every tensor with a view and at least --min-params elements is profiled,
      as `tailor profile` does.
  profile_vs_numpy.py --synthetic OUT.safetensors OUT IN KIND [--seed S]
      writes one f32 layer "w" [OUT, IN]: KIND gaussian (N(0, 0.02²)) or
      decaying (G_u·diag(0.02·(i+1)^-1)·G_v / sqrt(IN), G Gaussian).

OUT.json: {"seconds": wall seconds of the profile (reading included),
"layers": [{"name", "shape_out_in", "seconds", "candidates": {label: rel_error}}]}.
Threads: numpy's BLAS obeys OPENBLAS_NUM_THREADS / OMP_NUM_THREADS.
"""
import argparse
import json
import math
import struct
import sys
import time

import numpy as np

ENERGY_LEVELS = (0.9, 0.99, 0.999)


# ---------------------------------------------------------------- reading

def read_safetensors(path):
    dtypes = {"F32": np.float32, "F16": np.float16, "F64": np.float64, "I64": np.int64,
              "I32": np.int32, "I8": np.int8, "U8": np.uint8}
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        base = 8 + n
    data = np.memmap(path, dtype=np.uint8, mode="r")
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        if t["dtype"] == "BF16":
            begin, end = t["data_offsets"]
            raw = np.frombuffer(data[base + begin:base + end], dtype=np.uint16)
            out[name] = (raw.astype(np.uint32) << 16).view(np.float32).reshape(t["shape"])
            continue
        begin, end = t["data_offsets"]
        out[name] = np.frombuffer(data[base + begin:base + end],
                                  dtype=dtypes[t["dtype"]]).reshape(t["shape"])
    return out


def read_onnx(path):
    import onnx
    from onnx import numpy_helper
    model = onnx.load(path)
    out = {}

    def walk(graph):
        for t in graph.initializer:
            out[t.name] = numpy_helper.to_array(t)
        for node in graph.node:
            if node.op_type == "Constant":
                for a in node.attribute:
                    if a.name == "value":
                        out[node.output[0]] = numpy_helper.to_array(a.t)
            for a in node.attribute:
                if a.type == onnx.AttributeProto.GRAPH:
                    walk(a.g)
                for g in a.graphs:
                    walk(g)

    walk(model.graph)
    return out


def out_in_view(t, layout):
    """The [out, in] view (docs/formats.md, "Weight orientation")."""
    t = np.asarray(t, dtype=np.float32)
    if layout == "out_in":
        return t.reshape(t.shape[0], -1)
    if layout == "in_out":
        return np.ascontiguousarray(t.reshape(t.shape[0], -1).T)
    if layout == "conv":
        return t.reshape(t.shape[0], -1)
    if layout == "conv_transpose":  # [in, out/g, kh, kw] → [out/g, in·kh·kw]
        return np.ascontiguousarray(np.moveaxis(t, 1, 0).reshape(t.shape[1], -1))
    raise ValueError(layout)


# ---------------------------------------------------------------- catalog

def f16(x):
    return np.asarray(x, dtype=np.float32).astype(np.float16).astype(np.float32)


def round_half_away(x):
    return np.sign(x) * np.floor(np.abs(x) + np.float32(0.5))


def rel_error(w, w_hat, norm):
    if norm == 0:
        return 0.0
    d = w.astype(np.float64) - w_hat.astype(np.float64)
    return float(np.sqrt(np.sum(d * d)) / norm)


def quantize(w, bits, group):
    out, n = w.shape
    g = n if group == 0 else group
    limit = np.float32(2 ** (bits - 1) - 1)
    w_hat = np.empty_like(w)
    for j0 in range(0, n, g):
        blk = w[:, j0:j0 + g]
        s = f16(np.abs(blk).max(axis=1) / limit)
        s = np.where(np.abs(blk).max(axis=1) == 0, np.float32(1), s)
        safe = np.where(s == 0, np.float32(1), s)[:, None]
        q = np.clip(round_half_away(blk / safe), -limit, limit)
        w_hat[:, j0:j0 + g] = np.where(s[:, None] == 0, 0, q * safe)
    return w_hat


def ternary(w):
    a = np.abs(w.astype(np.float64))
    delta = 0.7 * a.mean(axis=1, keepdims=True)
    keep = a > delta
    kept = keep.sum(axis=1)
    alpha = np.where(kept > 0, (a * keep).sum(axis=1) / np.maximum(kept, 1), 0.0)
    alpha = f16(alpha.astype(np.float32))
    return np.where(keep, np.sign(w) * alpha[:, None], 0).astype(np.float32)


def sparse_2_4(w):
    out, n = w.shape
    w_hat = np.zeros_like(w)
    full = n - n % 4
    if full:
        g = w[:, :full].reshape(out, full // 4, 4)
        order = np.argsort(-np.abs(g), axis=2, kind="stable")[:, :, :2]
        mask = np.zeros(g.shape, dtype=bool)
        np.put_along_axis(mask, order, True, axis=2)
        w_hat[:, :full] = np.where(mask, g, 0).reshape(out, full)
    if n % 4:
        g = w[:, full:]
        order = np.argsort(-np.abs(g), axis=1, kind="stable")[:, :min(2, n % 4)]
        mask = np.zeros(g.shape, dtype=bool)
        np.put_along_axis(mask, order, True, axis=1)
        w_hat[:, full:] = np.where(mask, g, 0)
    return w_hat


def lowrank_ranks(s, out, n):
    kmax = min(min(out, n), (out * n - 1) // (out + n))
    if kmax < 1:
        return []
    ranks = {max(1, out * n // (p * (out + n))) for p in (2, 4, 8)}
    ranks = {r for r in ranks if r <= kmax}
    e = np.cumsum(s.astype(np.float64) ** 2)
    if e[-1] > 0:
        for level in ENERGY_LEVELS:
            r = int(np.argmax(e >= level * e[-1])) + 1  # smallest r with Σ_{i≤r} σ² ≥ level·total
            if r <= kmax:
                ranks.add(r)
    return sorted(ranks)


def exact_sqrt(n):
    m = int(round(math.sqrt(n)))
    return m if m * m == n else 0


def monarch(w):
    n = w.shape[0]
    m = exact_sqrt(n)
    blocks = w.reshape(m, m, m, m).transpose(0, 2, 1, 3)  # [l, ri, s, j]
    u, s, vt = np.linalg.svd(blocks)
    approx = s[..., 0, None, None] * u[..., :, 0, None] * vt[..., 0, None, :]
    return np.ascontiguousarray(approx.transpose(0, 2, 1, 3)).reshape(n, n)


def balanced_factors(n, count):
    primes, r, p = [], n, 2
    while r > 1:
        if p * p > r:
            primes.append(r)
            break
        while r % p == 0:
            primes.append(p)
            r //= p
        p += 1
    primes.sort(reverse=True)
    f = [1] * max(count, 1)
    for q in primes:
        f[f.index(min(f))] *= q
    return sorted(f, reverse=True)


def leading(unfolding, r):
    return np.linalg.svd(unfolding, full_matrices=False)[0][:, :r]


def tucker(w, shape4, fraction=0.25):
    out, n = w.shape
    if shape4 is not None:
        dims, factor2 = [shape4[0], shape4[1], shape4[2] * shape4[3]], False
    else:
        c = balanced_factors(n, 2)
        dims, factor2 = [out, c[0], c[1]], True
    total = dims[0] * dims[1] * dims[2]
    ranks = []
    for k, d in enumerate(dims):
        r = min(max(math.ceil(fraction * d - 1e-9), 1), min(d, total // d))
        ranks.append(d if (k == 2 and not factor2) else r)
    x = w.reshape(dims)
    u0 = leading(x.reshape(dims[0], -1), ranks[0])
    u1 = leading(x.transpose(1, 0, 2).reshape(dims[1], -1), ranks[1])
    u2 = leading(x.transpose(2, 0, 1).reshape(dims[2], -1), ranks[2]) if factor2 else None
    core = np.einsum("abc,ap,bq->pqc", x, u0, u1, optimize=True)
    if factor2:
        core = core @ u2
        w_hat = np.einsum("pqt,ap,bq,ct->abc", core, u0, u1, u2, optimize=True)
    else:
        w_hat = np.einsum("pqc,ap,bq->abc", core, u0, u1, optimize=True)
    return w_hat.reshape(out, n).astype(np.float32)


def tt(w, cores=3, max_rank=64):
    out, n = w.shape
    o, i = balanced_factors(out, cores), balanced_factors(n, cores)
    d = len(o)
    modes = [o[k] * i[k] for k in range(d)]
    r = [1] * (d + 1)
    for k in range(1, d):
        right = int(np.prod(modes[k:]))
        r[k] = min(r[k - 1] * modes[k - 1], right, max_rank if max_rank > 0 else right)
    perm = [x for k in range(d) for x in (k, d + k)]
    c = w.reshape(o + i).transpose(perm).reshape(-1)
    gs = []
    for k in range(d - 1):
        rows = r[k] * modes[k]
        u, s, vt = np.linalg.svd(c.reshape(rows, -1), full_matrices=False)
        gs.append(u[:, :r[k + 1]])
        c = (s[:r[k + 1], None] * vt[:r[k + 1]]).reshape(-1)
    m = gs[0]
    for k in range(1, d - 1):
        m = (m @ gs[k].reshape(r[k], -1)).reshape(-1, r[k + 1])
    m = m @ c.reshape(r[d - 1], -1)  # [(o1 i1 … o_d i_d)]
    inv = [2 * k for k in range(d)] + [2 * k + 1 for k in range(d)]
    dims = [x for k in range(d) for x in (o[k], i[k])]
    return m.reshape(dims).transpose(inv).reshape(out, n).astype(np.float32)


def profile_layer(w, shape4):
    out, n = w.shape
    norm = float(np.sqrt(np.sum(w.astype(np.float64) ** 2)))
    c = {"dense": 0.0}
    c["int8"] = rel_error(w, quantize(w, 8, 0), norm)
    c["int4"] = rel_error(w, quantize(w, 4, 0), norm)
    c["int3"] = rel_error(w, quantize(w, 3, 0), norm)
    for g in (32, 64, 128):
        c[f"int4-g{g}"] = rel_error(w, quantize(w, 4, g), norm)
    c["ternary"] = rel_error(w, ternary(w), norm)
    c["sparse-2:4"] = rel_error(w, sparse_2_4(w), norm)
    u, s, vt = np.linalg.svd(w, full_matrices=False)  # the full SVD
    for r in lowrank_ranks(s, out, n):
        a = (u[:, :r] * s[:r]).astype(np.float32)
        b = vt[:r].astype(np.float32)
        c[f"lowrank-r{r}"] = rel_error(w, a @ b, norm)
    if out == n and exact_sqrt(n):
        c["monarch"] = rel_error(w, monarch(w), norm)
    c["tucker"] = rel_error(w, tucker(w, shape4), norm)
    c["tt"] = rel_error(w, tt(w), norm)
    return c


# ---------------------------------------------------------------- main

def synthetic(path, out, n, kind, seed):
    rng = np.random.default_rng(seed)
    if kind == "gaussian":
        w = (0.02 * rng.standard_normal((out, n))).astype(np.float32)
    elif kind == "decaying":
        k = min(out, n)
        gu = rng.standard_normal((out, k)).astype(np.float32)
        gv = rng.standard_normal((k, n)).astype(np.float32)
        scale = (0.02 / (np.arange(k) + 1.0) / math.sqrt(n)).astype(np.float32)
        w = ((gu * scale) @ gv).astype(np.float32)
    else:
        raise SystemExit(f"unknown kind {kind}")
    header = json.dumps({"w": {"dtype": "F32", "shape": [out, n],
                               "data_offsets": [0, w.nbytes]}}).encode()
    header += b" " * (-len(header) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(header)))
        f.write(header)
        w.tofile(f)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model", nargs="?")
    ap.add_argument("inspect", nargs="?")
    ap.add_argument("-o", "--output")
    ap.add_argument("--min-params", type=int, default=4096)
    ap.add_argument("--synthetic", nargs=4, metavar=("PATH", "OUT", "IN", "KIND"))
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    if a.synthetic:
        path, out, n, kind = a.synthetic
        synthetic(path, int(out), int(n), kind, a.seed)
        return
    if not (a.model and a.inspect and a.output):
        ap.error("MODEL, INSPECT.json and -o are required")
    t0 = time.perf_counter()
    tensors = read_onnx(a.model) if a.model.endswith(".onnx") else read_safetensors(a.model)
    layers = []
    for t in json.load(open(a.inspect))["tensors"]:
        if t["layout"] == "none" or t["numel"] < a.min_params:
            continue
        t1 = time.perf_counter()
        w = out_in_view(tensors[t["name"]], t["layout"])
        if not np.all(np.isfinite(w)):
            raise SystemExit(f"{t['name']}: non-finite weight")
        shape4 = t["shape"] if t["layout"] == "conv" and len(t["shape"]) == 4 else None
        cands = profile_layer(w, shape4)
        layers.append({"name": t["name"], "shape_out_in": list(w.shape),
                       "seconds": time.perf_counter() - t1, "candidates": cands})
        print(f"numpy: {t['name']} {list(w.shape)} {layers[-1]['seconds']:.2f} s",
              file=sys.stderr, flush=True)
    result = {"model": a.model, "seconds": time.perf_counter() - t0, "layers": layers}
    with open(a.output, "w") as f:
        json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
