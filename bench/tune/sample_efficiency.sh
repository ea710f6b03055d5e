#!/usr/bin/env bash
# Sample efficiency of the tuner's search methods (issue 16, item 3): for each
# model, `tailor tune` at one thread on process CPU time with every method
# (default, random, greedy, gradient; exhaustive where the space has ≤ 512
# points) under the same measurement budget; prints the load average around
# each run, tune's method table, the best-so-far-by-measurements table, the
# measurements each method needs to reach 97% of the best found, the cost
# model's held-out Spearman and the chosen configuration's paired ratio to
# the default.
# Usage: bench/tune/sample_efficiency.sh [N] (run from the repository root;
# N measurements per method, default 48; TAILOR=build/tailor, OUT=/tmp/tune-se,
# MODELS="path:input=DIMS ..." to choose the models and their input shapes,
# TUNE_ARGS for further tune options, e.g. "--error mean --tolerance 0.01"
# to admit the approximate W8A8 kernel variant).
set -euo pipefail
n=${1:-48}
tailor=${TAILOR:-build/tailor}
out=${OUT:-/tmp/tune-se}
models=${MODELS:-"models/ch_PP-OCRv4_det_infer.onnx:x=1x3x320x320 models/ch_PP-OCRv4_rec_infer.onnx:x=1x3x48x320"}
mkdir -p "$out"
for spec in $models; do
  model=${spec%%:*}
  shape=${spec#*:}
  stem=$(basename "$model" .onnx)
  echo "== $stem ($shape), $n measurements per method, 1 thread, CPU time"
  echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
  # shellcheck disable=SC2086  # TUNE_ARGS is a list of options
  $tailor tune "$model" --input-shape "$shape" --threads 1 --clock cpu --measurements "$n" \
    ${TUNE_ARGS:-} -o "$out/$stem" | tee "$out/$stem.log"
  echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
  python3 - "$out/$stem/decisions.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
p = r["paired"]
keys = p["configs"]
dflt = ".".join(str(d["default"]) for d in r["space"]["decisions"])
chosen = r["chosen"]["key"]
lat = dict(zip([".".join(map(str, c)) for c in keys], p["latency_ms"]))
if dflt in lat:
    print(f"chosen / default paired {r['harness']['statistic']}: {lat[chosen] / lat[dflt]:.3f} "
          f"({lat[chosen]:.3f} / {lat[dflt]:.3f} ms, {len(p['rounds'])} rounds)")
PY
done
