#!/usr/bin/env bash
# Tailor's default plan against every uniform scheme at exactly its bytes
# (issue 13): for each label U, `tailor compress MODEL --uniform U`, then
# `tailor compress MODEL --budget <U's bytes>`, both verified on inputs the
# calibration never saw; one table row per U: bytes, measured output damage
# (and the plan's predicted one), ratio, task metric of both.
# Usage: bench/compress/uniform_vs_plan.sh MODEL [LABELS...] (run from the repository root;
# TAILOR=build/tailor, EXTRA="--calib DIR" to pass more options, OUT=/tmp/uniform-vs-plan).
set -euo pipefail
model=$1
shift
labels=("$@")
[ ${#labels[@]} -eq 0 ] && labels=(int8 int4-g32 int4-g64 int4-g128 int4 int3)
tailor=${TAILOR:-build/tailor}
out=${OUT:-/tmp/uniform-vs-plan}
mkdir -p "$out"
stem=$(basename "$model")
field() { grep -m1 "$1" "$2" | sed -E "s/.*$1[^0-9-]*([-0-9.e+]+).*/\1/"; }
metric() { grep -m1 -E "OCR character accuracy:|top-1 agreement|saliency mask IoU" "$1" |
  sed -E 's/.*compressed ([-0-9.]+).*/\1/;s/.*IoU \(> [0-9.]+\) ([0-9.]+).*/\1/' || true; }
printf "%-28s %-10s %12s %12s %12s %12s %7s %9s %9s\n" model U bytes "U damage" "plan damage" \
  "plan pred" ratio "U task" "plan task"
for u in "${labels[@]}"; do
  $tailor compress "$model" --uniform "$u" -o "$out/$stem-u-$u" ${EXTRA:-} >"$out/$stem-u-$u.log" 2>&1 ||
    { echo "$u: uniform failed, see $out/$stem-u-$u.log"; continue; }
  bytes=$(grep -m1 "  total " "$out/$stem-u-$u.log" | sed -E 's/  total ([0-9,]+).*/\1/' | tr -d ,)
  $tailor compress "$model" --budget "$bytes" -o "$out/$stem-b-$u" ${EXTRA:-} >"$out/$stem-b-$u.log" 2>&1 ||
    { echo "$u: plan failed, see $out/$stem-b-$u.log"; continue; }
  ud=$(grep -m1 "^  output damage (" "$out/$stem-u-$u.log" | sed -E 's/.*measured ([-0-9.e+na]+) \(verification.*/\1/')
  pd=$(grep -m1 "^  output damage (" "$out/$stem-b-$u.log" | sed -E 's/.*measured ([-0-9.e+na]+) \(verification.*/\1/')
  pp=$(grep -m1 "^  output damage (" "$out/$stem-b-$u.log" | sed -E 's/.*predicted ([-0-9.e+na]+) .*/\1/')
  ratio=$(python3 -c "print(f'{float(\"$pd\")/float(\"$ud\"):.3f}' if float(\"$ud\")>0 else '-')")
  printf "%-28s %-10s %12s %12s %12s %12s %7s %9s %9s\n" "$stem" "$u" "$bytes" "$ud" "$pd" "$pp" \
    "$ratio" "$(metric "$out/$stem-u-$u.log")" "$(metric "$out/$stem-b-$u.log")"
done
