#!/usr/bin/python3
"""How many lines does a mean KL need? (issue 13: predictions within 0.5–2×.)

Reads the per-line table `per_line_kl` prints (line, half, frames, then one
KL column per model) and, for each model and each subset size N, draws
DRAWS random subsets of N lines without replacement (numpy
default_rng(SEED)) and prints how often the subset's mean KL per frame lands
within 0.5–2× of the mean over every line of the table, with the 5% and 95%
quantiles of that ratio. Run on a table of unseen lines (e.g. the 400 of
`ocr_lines.py OUT 400 11` without its 38 fixture lines), it says how far a
mean on N calibration (or held-out) lines can sit from the mean on many
lines by the draw of lines alone: no prediction made from N lines can be
held to 2× more often than that.

Usage: /usr/bin/python3 bench/compress/line_subsets.py TABLE [N,N,...=19,40,80,160] [DRAWS=4000] [SEED=0]
"""
import sys

import numpy as np

if len(sys.argv) < 2 or sys.argv[1].startswith("-"):
    sys.exit(__doc__.strip() if len(sys.argv) > 1 and sys.argv[1] in ("-h", "--help")
             else "usage: line_subsets.py TABLE [N,N,...] [DRAWS] [SEED]")
sizes = [int(n) for n in (sys.argv[2] if len(sys.argv) > 2 else "19,40,80,160").split(",")]
draws = int(sys.argv[3]) if len(sys.argv) > 3 else 4000
seed = int(sys.argv[4]) if len(sys.argv) > 4 else 0
frames, kl = [], []
try:
    with open(sys.argv[1], encoding="utf-8") as f:
        for line in f:
            p = line.split()
            if len(p) >= 4 and p[0].isdigit():  # per_line_kl marks a changed reading with '*'
                frames.append(int(p[2]))
                kl.append([float(x.rstrip("*")) for x in p[3:]])
except (OSError, ValueError) as e:
    sys.exit(f"{sys.argv[1]}: {e}")
if not kl or len({len(r) for r in kl}) != 1:
    sys.exit(f"{sys.argv[1]}: no per-line table of equal columns (per_line_kl's output)")
frames = np.array(frames, dtype=float)
kl = np.array(kl)
lines = len(frames)
print(f"{lines} lines, {draws} subsets per size, seed {seed}")
print(f"{'model':>5} {'all-lines mean':>14} {'N':>4} {'within 0.5-2x':>13} {'5%':>6} {'95%':>6}")
for m in range(kl.shape[1]):
    total = (kl[:, m] * frames).sum() / frames.sum()
    rng = np.random.default_rng(seed)
    for n in sizes:
        if n > lines:
            sys.exit(f"{sys.argv[1]}: a subset of {n} lines from {lines}")
        r = np.empty(draws)
        for d in range(draws):
            i = rng.choice(lines, n, replace=False)
            r[d] = (kl[i, m] * frames[i]).sum() / frames[i].sum() / total
        inside = np.mean((r >= 0.5) & (r <= 2))
        print(f"{m + 1:>5} {total:>14.4g} {n:>4} {inside:>13.2f} "
              f"{np.quantile(r, 0.05):>6.2f} {np.quantile(r, 0.95):>6.2f}")
