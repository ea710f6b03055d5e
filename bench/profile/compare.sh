#!/usr/bin/env bash
# Profiling speed, tailor vs a plain numpy/LAPACK implementation of the same
# catalog (bench/profile/profile_vs_numpy.py, full SVDs), on the same layers
# in one run, with a check that both give the same rel_error per candidate.
#
#   bench/profile/compare.sh [TAILOR]        (default build/tailor)
#
# Environment: THREADS (default "1 2": each value runs both sides with that
# many threads: `tailor profile --threads T`, OPENBLAS_NUM_THREADS =
# OMP_NUM_THREADS = T for both), CASES (default "rec sq ffn": the PP-OCRv4
# recogniser, a synthetic Gaussian 4096×4096 and 4096×11008 layer, N(0, 0.02²)),
# SCHEMES (passed to `tailor profile --schemes`, default: the whole catalog;
# the numpy side always runs the whole catalog and only shared labels are
# compared), WORK (default /tmp/tailor-profile-compare).
#
# Prints one table: case × threads × (layers, tailor layers/s, numpy
# layers/s, ratio tailor/numpy, candidates compared, largest error gaps:
# absolute for the deterministic schemes, relative to numpy's error ≥ 1e-3 for
# the decompositions, labels only one side has, mismatches).
# Agreement: quantizers, ternary, 2:4 and monarch are deterministic and must
# agree to |Δ| ≤ 1e-4·e + 1e-6; lowrank, tucker and tt use randomized SVDs in
# tailor (power iterations) and full gesdd in numpy, so tailor's error may be
# up to 1% above numpy's (+1e-5 absolute for near-exact factorizations).
# Energy ranks are compared as label sets: tailor's estimate never picks a
# rank below the full-spectrum one and may pick one or two above.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
tailor="${1:-$root/build/tailor}"
py=/usr/bin/python3
work="${WORK:-/tmp/tailor-profile-compare}"
threads="${THREADS:-1 2}"
cases="${CASES:-rec sq ffn}"
mkdir -p "$work"

model_of() {
  case "$1" in
    rec) echo "$root/models/ch_PP-OCRv4_rec_infer.onnx" ;;
    sq) echo "$work/gaussian_4096x4096.safetensors" ;;
    ffn) echo "$work/gaussian_4096x11008.safetensors" ;;
    sqd) echo "$work/decaying_4096x4096.safetensors" ;;
    ffnd) echo "$work/decaying_4096x11008.safetensors" ;;
    *) echo "unknown case $1" >&2; exit 2 ;;
  esac
}

synth() {  # path out in kind
  [[ -f "$1" ]] || "$py" "$here/profile_vs_numpy.py" --synthetic "$1" "$2" "$3" "$4"
}

now() { date +%s.%N; }

rows="$work/rows.jsonl"
: > "$rows"
for c in $cases; do
  m="$(model_of "$c")"
  case "$c" in
    sq) synth "$m" 4096 4096 gaussian ;;
    ffn) synth "$m" 4096 11008 gaussian ;;
    sqd) synth "$m" 4096 4096 decaying ;;
    ffnd) synth "$m" 4096 11008 decaying ;;
  esac
  "$tailor" inspect --json "$m" > "$work/$c.inspect.json"
  for t in $threads; do
    export OPENBLAS_NUM_THREADS=$t OMP_NUM_THREADS=$t
    extra=()
    [[ -n "${SCHEMES:-}" ]] && extra=(--schemes "$SCHEMES")
    t0=$(now)
    "$tailor" profile "$m" -o "$work/$c.t$t.tailor.json" --threads "$t" "${extra[@]}" > /dev/null
    t1=$(now)
    "$py" "$here/profile_vs_numpy.py" "$m" "$work/$c.inspect.json" -o "$work/$c.t$t.numpy.json" \
      2> "$work/$c.t$t.numpy.log"
    t2=$(now)
    echo "{\"case\": \"$c\", \"threads\": $t, \"tailor_s\": $(echo "$t1 - $t0" | bc), \"numpy_s\": $(echo "$t2 - $t1" | bc), \"tailor\": \"$work/$c.t$t.tailor.json\", \"numpy\": \"$work/$c.t$t.numpy.json\"}" >> "$rows"
    echo "done: $c threads=$t" >&2
  done
done

"$py" - "$rows" <<'EOF'
import json, sys
EXACT = ("dense", "int8", "int4", "int3", "int4-g", "ternary", "sparse-2:4", "monarch")
print(f"{'case':6} {'thr':>3} {'layers':>6} {'tailor l/s':>11} {'numpy l/s':>10} {'ratio':>7} "
      f"{'compared':>8} {'quant max|Δ|':>12} {'decomp max|Δ|/e':>15} {'only tailor/numpy':>18} fails")
for line in open(sys.argv[1]):
    r = json.loads(line)
    t, n = json.load(open(r["tailor"])), json.load(open(r["numpy"]))
    nl = {l["name"]: l["candidates"] for l in n["layers"]}
    compared = fails = only_t = only_n = 0
    qmax = dmax = 0.0
    for l in t["layers"]:
        nc = nl[l["name"]]
        labels = {c["label"] for c in l["candidates"]}
        only_n += len(set(nc) - labels)
        for c in l["candidates"]:
            lab, e = c["label"], c["rel_error"]
            if lab not in nc:
                only_t += 1
                continue
            ref = nc[lab]
            compared += 1
            if lab.startswith(EXACT):
                qmax = max(qmax, abs(e - ref))
                ok = abs(e - ref) <= 1e-4 * max(e, ref) + 1e-6
            else:
                if ref >= 1e-3:  # relative gaps of near-exact factorizations are rounding
                    dmax = max(dmax, abs(e - ref) / ref)
                ok = e <= 1.01 * ref + 1e-5 and e >= ref * (1 - 1e-3) - 1e-5
            if not ok:
                fails += 1
                print(f"  MISMATCH {r['case']} {l['name']} {lab}: tailor {e:.6g} numpy {ref:.6g}")
    k = len(t["layers"])
    tl, nls = k / r["tailor_s"], k / r["numpy_s"]
    print(f"{r['case']:6} {r['threads']:>3} {k:>6} {tl:>11.3f} {nls:>10.3f} {tl / nls:>7.2f} "
          f"{compared:>8} {qmax:>12.2e} {dmax:>15.2e} {str(only_t) + '/' + str(only_n):>18} {fails}")
EOF
