#!/usr/bin/env bash
# Runs one ONNX model in tailor's runtime and in onnxruntime on the same seeded
# random inputs and prints, per output, max |Δ| and max |Δ| / max |y_ort|.
# Exit 1 when any output differs by more than TOL relative (default 1e-4),
# 0 with a message when onnxruntime is not installed (scripts/install-ort.sh).
#
#   scripts/ort-check.sh MODEL.onnx NAME=D0xD1x... [NAME=...] [TAILOR]
#
# Inputs are f32, drawn from N(0, 1) with seed SEED (default 0).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
model=${1:?usage: scripts/ort-check.sh MODEL.onnx NAME=SHAPE... [TAILOR]}
shift
tailor="$root/build/tailor"
specs=()
for a in "$@"; do
  case "$a" in
    *=*) specs+=("$a") ;;
    *) tailor=$a ;;
  esac
done
[ ${#specs[@]} -gt 0 ] || { echo "ort-check: give at least one NAME=SHAPE input" >&2; exit 2; }
[ -f "$model" ] || { echo "ort-check: $model: no such file" >&2; exit 2; }
for s in "${specs[@]}"; do
  [[ "$s" =~ ^[^=]+=[1-9][0-9]*(x[1-9][0-9]*)*$ ]] || {
    echo "ort-check: input \"$s\": expected NAME=D0xD1x... with positive dims" >&2
    exit 2
  }
done
if [ ! -d "$root/.ort/node_modules/onnxruntime-node" ] || ! command -v node >/dev/null; then
  echo "ort-check: onnxruntime not installed (scripts/install-ort.sh); cross-check skipped"
  exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
args=()
for s in "${specs[@]}"; do
  name=${s%%=*} shape=${s#*=}
  /usr/bin/python3 -c '
import sys, numpy as np
shape = [int(d) for d in sys.argv[2].split("x")]
np.save(sys.argv[1], np.random.default_rng(int(sys.argv[3])).standard_normal(shape).astype(np.float32))
' "$tmp/$name.npy" "$shape" "${SEED:-0}"
  args+=(--input "$name=$tmp/$name.npy")
done
"$tailor" run "$model" "${args[@]}" --output "$tmp/tailor" >/dev/null
node "$root/tools/ort/run.js" "$model" "${args[@]}" --output "$tmp/ort" >/dev/null
/usr/bin/python3 - "$tmp" "${TOL:-1e-4}" <<'PY'
import os, sys, numpy as np
tmp, tol = sys.argv[1], float(sys.argv[2])
bad = 0
for f in sorted(os.listdir(f"{tmp}/ort")):
    o = np.load(f"{tmp}/ort/{f}").astype(np.float64)
    t = np.load(f"{tmp}/tailor/{f}").astype(np.float64)
    if o.shape != t.shape:
        print(f"ort-check: output {f[:-4]}: shape {t.shape} (tailor) vs {o.shape} (onnxruntime)")
        bad = 1
        continue
    d = float(np.max(np.abs(o - t))) if o.size else 0.0
    rel = d / max(float(np.max(np.abs(o))) if o.size else 0.0, 1e-30)
    ok = rel <= tol
    bad |= not ok
    print(f"onnxruntime vs tailor, output {f[:-4]} {list(o.shape)}: max |d| {d:.3g}, "
          f"relative {rel:.3g} ({'within' if ok else 'OVER'} {tol:g})")
sys.exit(bad)
PY
