#!/usr/bin/env bash
# Tailor's default plan against every uniform scheme at exactly its bytes
# (issue 13): for each label U, `tailor compress MODEL --uniform U`, then
# `tailor compress MODEL --budget <U's bytes>`, both verified on inputs the
# calibration never saw; one table row per U: bytes, measured output damage
# (and the plan's predicted one), ratio, task metric of both. Beside each row,
# the data-aware labels applied uniformly (DATA_AWARE, default the GPTQ ones):
# the one of lowest measured damage among those at no more than U's bytes.
# Usage: bench/compress/uniform_vs_plan.sh MODEL [LABELS...] (run from the repository root;
# TAILOR=build/tailor, EXTRA="--calib DIR" to pass more options, OUT=/tmp/uniform-vs-plan,
# DATA_AWARE="int8-gptq int4-gptq ..." or DATA_AWARE="" for none).
set -euo pipefail
model=$1
shift
labels=("$@")
[ ${#labels[@]} -eq 0 ] && labels=(int8 int4-g32 int4-g64 int4-g128 int4 int3)
read -r -a data_aware <<<"${DATA_AWARE-int8-gptq int4-g32-gptq int4-g64-gptq int4-g128-gptq int4-gptq int3-gptq}"
tailor=${TAILOR:-build/tailor}
out=${OUT:-/tmp/uniform-vs-plan}
mkdir -p "$out"
stem=$(basename "$model")
metric() { grep -m1 -E "^  (OCR character accuracy:|top-1 agreement:|saliency mask IoU)" "$1" |
  sed -E 's/.*compressed ([-0-9.]+).*/\1/;s/.*IoU \(> [0-9.]+\) ([0-9.]+).*/\1/' || true; }
total_bytes() { grep -m1 "  total " "$1" | sed -E 's/  total ([0-9,]+).*/\1/' | tr -d ,; }
measured() { grep -m1 "^  output damage (" "$1" | sed -E 's/.*measured ([-0-9.e+na]+) \(verification.*/\1/'; }
predicted() { grep -m1 "^  output damage (" "$1" | sed -E 's/.*predicted ([-0-9.e+na]+) .*/\1/'; }
uniform() { # label → log file (run once)
  local log="$out/$stem-u-$1.log"
  [ -s "$log" ] && grep -q "^  output damage (" "$log" ||
    $tailor compress "$model" --uniform "$1" -o "$out/$stem-u-$1" ${EXTRA:-} >"$log" 2>&1 ||
    { echo "$1: uniform failed, see $log" >&2; return 1; }
  echo "$log"
}
# The data-aware uniform points: label bytes damage task.
da_points=()
for d in ${data_aware[@]+"${data_aware[@]}"}; do
  log=$(uniform "$d") || continue
  da_points+=("$d $(total_bytes "$log") $(measured "$log") $(metric "$log")")
done
printf "%-28s %-10s %10s %10s %10s %10s %6s %7s %7s %-16s %10s %6s\n" model U bytes "U damage" \
  "plan dmg" "plan pred" ratio "U task" "plantask" "best data-aware" "its dmg" "plan/it"
for u in "${labels[@]}"; do
  ulog=$(uniform "$u") || continue
  bytes=$(total_bytes "$ulog")
  blog="$out/$stem-b-$u.log"
  $tailor compress "$model" --budget "$bytes" -o "$out/$stem-b-$u" ${EXTRA:-} >"$blog" 2>&1 ||
    { echo "$u: plan failed, see $blog"; continue; }
  ud=$(measured "$ulog")
  pd=$(measured "$blog")
  pp=$(predicted "$blog")
  best="-" bd="-"
  for p in "${da_points[@]:-}"; do
    [ -z "$p" ] && continue
    read -r dl db dd _ <<<"$p"
    if [ "$db" -le "$bytes" ] && { [ "$bd" = "-" ] || python3 -c "import sys; sys.exit(0 if $dd < $bd else 1)"; }; then
      best=$dl bd=$dd
    fi
  done
  ratio=$(python3 -c "print(f'{float(\"$pd\")/float(\"$ud\"):.3f}' if float(\"$ud\")>0 else '-')")
  vs=$( [ "$bd" = "-" ] && echo - || python3 -c "print(f'{float(\"$pd\")/float(\"$bd\"):.3f}' if float(\"$bd\")>0 else '-')")
  printf "%-28s %-10s %10s %10s %10s %10s %6s %7s %7s %-16s %10s %6s\n" "$stem" "$u" "$bytes" "$ud" \
    "$pd" "$pp" "$ratio" "$(metric "$ulog")" "$(metric "$blog")" "$best" "$bd" "$vs"
done
for p in ${da_points[@]+"${da_points[@]}"}; do echo "data-aware uniform: $p"; done
