#!/usr/bin/env bash
# onnxruntime's median latency on the issue-5 speed models, the reference
# column of the runtime speed goal (tailor within 1.5x of it):
#   PP-OCRv4 recogniser  x [1, 3, 48, 320]
#   PP-OCRv4 detector    x [1, 3, 640, 640]
#   ISNet fp16 (medium)  input [1, 3, 1024, 1024]  (only if fetched: make models-bench)
# at 1 and 2 intra-op threads (CPU execution provider, tools/ort/run.js): one
# warm-up run, then the median of RUNS timed runs (default 20; ISNet 5).
# Inputs are uniform in [-1, 1), seeded, the same every time.
#   bench/runtime/ort_latency.sh [--threads "1 2"] [--runs N]
# Prints a table: model, input shape, threads, median ms.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
threads="1 2"
runs=20
while [ $# -gt 0 ]; do
  case "$1" in
    --threads) threads=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    *) echo "usage: $0 [--threads \"1 2\"] [--runs N]" >&2; exit 2 ;;
  esac
done

bash "$root/scripts/install-ort.sh" >/dev/null
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# random_input FILE d0 d1 ...: f32 uniform in [-1, 1), xorshift32 seeded with 1.
random_input() {
  node -e '
    const { writeNpy } = require(process.argv[1]);
    const dims = process.argv.slice(3).map(Number);
    const n = dims.reduce((a, b) => a * b, 1);
    const data = new Float32Array(n);
    let s = 1;
    for (let i = 0; i < n; i++) {
      s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0;
      data[i] = s / 2147483648 - 1;
    }
    writeNpy(process.argv[2], "float32", dims, data);
  ' "$root/tools/ort/npy.js" "$@"
}

printf '%-22s %-16s %7s %10s\n' model input threads ort_ms
row() {  # LABEL MODEL INPUT_NAME RUNS d0 d1 d2 d3
  local label=$1 model=$2 name=$3 n=$4; shift 4
  if [ ! -f "$model" ]; then
    printf '%-22s %-16s %7s %10s\n' "$label" "$(IFS=x; echo "$*")" - "(not fetched)"
    return
  fi
  random_input "$tmp/$label.npy" "$@"
  local t line
  for t in $threads; do
    line=$(node "$root/tools/ort/run.js" "$model" --input "$name=$tmp/$label.npy" --threads "$t" --time "$n")
    printf '%-22s %-16s %7s %10s\n' "$label" "$(IFS=x; echo "$*")" "$t" "$(sed -n 's/^median_ms=\([0-9.]*\).*/\1/p' <<<"$line")"
  done
}

row ppocr_v4_rec "$root/models/ch_PP-OCRv4_rec_infer.onnx" x "$runs" 1 3 48 320
row ppocr_v4_det "$root/models/ch_PP-OCRv4_det_infer.onnx" x "$runs" 1 3 640 640
row isnet_fp16 "$root/models/isnet_fp16.onnx" input "$(( runs < 5 ? runs : 5 ))" 1 3 1024 1024
