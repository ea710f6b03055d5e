#!/usr/bin/env bash
# tailor vs onnxruntime, side by side: median latency on the issue-5 speed
# models (the goal: tailor within 1.5x of onnxruntime at each thread count).
#   PP-OCRv4 recogniser  x [1, 3, 48, 320]
#   PP-OCRv4 detector    x [1, 3, 640, 640]  (--det-size S: [1, 3, S, S])
#   ISNet fp16 (medium)  input [1, 3, 1024, 1024]  (only if fetched: make models-bench)
#   PP-OCR classifier    x [1, 3, 48, 192]   (cls; not in the default list)
#   compressed demo      x [1, 3, 48, 320]   (demo: demo-out/model.onnx from make demo,
#                                             or --demo PATH)
# With --tuning DIR, a third column runs tailor with the tuned decisions
# applied (`tailor run MODEL --tuning DIR/<model>/decisions.json`, the
# record of `tailor tune MODEL -o DIR/<model>`; <model> is rec, cls, det,
# demo or isnet; --threads overrides the record's thread count), in the same
# alternation (tailor, tailor tuned, ORT). With --baseline PATH, another
# tailor binary (a build of main, say) runs the same model in the same
# alternation (tailor, [tuned,] baseline, ORT): before/after columns from one run.
# Both runtimes get the same seeded input .npy (uniform in [-1, 1), xorshift32
# seed 1, written by bench/runtime/ort_latency.sh's generator). For each model
# and thread count the two are run alternately ROUNDS times (tailor, ORT,
# tailor, ORT, ...), each process doing one warm-up and RUNS timed runs, so
# both share the machine's load; the reported median is the median over all
# timed runs' per-process medians. OMP_WAIT_POLICY=passive (spinning OpenMP
# workers are several times slower on a machine with more runnable threads
# than cores).
#   bench/runtime/latency_vs_ort.sh [--threads "1 2"] [--runs N] [--rounds R]
#                                   [--models "rec det isnet cls demo"] [--tailor PATH]
#                                   [--tuning DIR] [--baseline PATH] [--det-size S] [--demo PATH]
# Prints one table: model, threads, tailor median ms, [tuned median ms,]
# [baseline median ms,] ORT median ms, ratio (tailor / ORT; below 1.5 meets
# the goal) [, tuned / ORT] [, baseline / ORT].
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
threads="1 2"
runs=10
rounds=2
models="rec det isnet"
tailor="$root/build/tailor"
tuning=""
baseline=""
det_size=640
demo="$root/demo-out/model.onnx"
while [ $# -gt 0 ]; do
  case "$1" in
    --threads) threads=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --models) models=$2; shift 2 ;;
    --tailor) tailor=$2; shift 2 ;;
    --tuning) tuning=$2; shift 2 ;;
    --baseline) baseline=$2; shift 2 ;;
    --det-size) det_size=$2; shift 2 ;;
    --demo) demo=$2; shift 2 ;;
    *) echo "usage: $0 [--threads \"1 2\"] [--runs N] [--rounds R] [--models \"rec det isnet cls demo\"] [--tailor PATH] [--tuning DIR] [--baseline PATH] [--det-size S] [--demo PATH]" >&2; exit 2 ;;
  esac
done
[ -x "$tailor" ] || { echo "latency_vs_ort: no tailor binary at $tailor (cmake --build build --target tailor)" >&2; exit 1; }
[ -z "$baseline" ] || [ -x "$baseline" ] || { echo "latency_vs_ort: no baseline binary at $baseline" >&2; exit 1; }
bash "$root/scripts/install-ort.sh" >/dev/null
export OMP_WAIT_POLICY=passive
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The seeded input generator shared with ort_latency.sh (same data).
source <(sed -n '/^random_input()/,/^}/p' "$root/bench/runtime/ort_latency.sh")

median() { sort -g | awk '{v[NR]=$1} END {if (NR==0) print "-"; else if (NR%2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}'; }

echo "# $(date -u +%FT%TZ) $(uptime | sed 's/.*load/load/'), $(nproc) cores; runs=$runs rounds=$rounds"
if [ -n "$tuning" ]; then
  printf '%-14s %-16s %7s %11s %11s %11s %7s %7s' model input threads tailor_ms tuned_ms ort_ms ratio tuned_r
else
  printf '%-14s %-16s %7s %11s %11s %7s' model input threads tailor_ms ort_ms ratio
fi
if [ -n "$baseline" ]; then printf ' %11s %7s\n' base_ms base_r; else echo; fi
row() {  # LABEL KEY MODEL INPUT_NAME RUNS d0 d1 d2 d3
  local label=$1 key=$2 model=$3 name=$4 n=$5; shift 5
  local shape; shape=$(IFS=x; echo "$*")
  if [ ! -f "$model" ]; then
    printf '%-14s %-16s %7s %11s %11s %7s\n' "$label" "$shape" - "(not fetched)" - -
    return
  fi
  local record=""
  if [ -n "$tuning" ]; then
    record="$tuning/$key/decisions.json"
    [ -f "$record" ] || { echo "latency_vs_ort: no $record (tailor tune $model -o $tuning/$key)" >&2; exit 1; }
  fi
  random_input "$tmp/$label.npy" "$@"
  local t r ours tuned theirs
  for t in $threads; do
    : >"$tmp/ours" ; : >"$tmp/tuned" ; : >"$tmp/base" ; : >"$tmp/theirs"
    for ((r = 0; r < rounds; r++)); do
      "$tailor" run "$model" --input "$name=$tmp/$label.npy" --threads "$t" --time "$n" |
        sed -n 's/^latency: median \([0-9.]*\) ms.*/\1/p' >>"$tmp/ours"
      if [ -n "$record" ]; then
        "$tailor" run "$model" --tuning "$record" --input "$name=$tmp/$label.npy" --threads "$t" --time "$n" |
          sed -n 's/^latency: median \([0-9.]*\) ms.*/\1/p' >>"$tmp/tuned"
      fi
      if [ -n "$baseline" ]; then
        "$baseline" run "$model" --input "$name=$tmp/$label.npy" --threads "$t" --time "$n" |
          sed -n 's/^latency: median \([0-9.]*\) ms.*/\1/p' >>"$tmp/base"
      fi
      node "$root/tools/ort/run.js" "$model" --input "$name=$tmp/$label.npy" --threads "$t" --time "$n" |
        sed -n 's/^median_ms=\([0-9.]*\).*/\1/p' >>"$tmp/theirs"
    done
    ours=$(median <"$tmp/ours"); theirs=$(median <"$tmp/theirs")
    if [ -n "$record" ]; then
      tuned=$(median <"$tmp/tuned")
      printf '%-14s %-16s %7s %11.2f %11.2f %11.2f %7.2f %7.2f' "$label" "$shape" "$t" "$ours" "$tuned" "$theirs" \
        "$(awk -v a="$ours" -v b="$theirs" 'BEGIN {print a / b}')" \
        "$(awk -v a="$tuned" -v b="$theirs" 'BEGIN {print a / b}')"
    else
      printf '%-14s %-16s %7s %11.2f %11.2f %7.2f' "$label" "$shape" "$t" "$ours" "$theirs" \
        "$(awk -v a="$ours" -v b="$theirs" 'BEGIN {print a / b}')"
    fi
    if [ -n "$baseline" ]; then
      local base; base=$(median <"$tmp/base")
      printf ' %11.2f %7.2f\n' "$base" "$(awk -v a="$base" -v b="$theirs" 'BEGIN {print a / b}')"
    else
      echo
    fi
  done
}
for m in $models; do
  case "$m" in
    rec) row ppocr_v4_rec rec "$root/models/ch_PP-OCRv4_rec_infer.onnx" x "$runs" 1 3 48 320 ;;
    det) row ppocr_v4_det det "$root/models/ch_PP-OCRv4_det_infer.onnx" x "$runs" 1 3 "$det_size" "$det_size" ;;
    isnet) row isnet_fp16 isnet "$root/models/isnet_fp16.onnx" input "$(( runs < 3 ? runs : 3 ))" 1 3 1024 1024 ;;
    cls) row ppocr_cls cls "$root/models/ch_ppocr_mobile_v2.0_cls_infer.onnx" x "$runs" 1 3 48 192 ;;
    demo) row demo_rec_25pct demo "$demo" x "$runs" 1 3 48 320 ;;
    *) echo "latency_vs_ort: unknown model '$m' (rec, det, isnet, cls, demo)" >&2; exit 2 ;;
  esac
done
echo "# $(uptime | sed 's/.*load/load/') at the end"
