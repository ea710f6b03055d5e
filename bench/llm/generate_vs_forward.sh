#!/usr/bin/env bash
# Interleaved CPU-time comparison of two `tailor generate` binaries: the
# executor-run decoder graph (NEW) against another build, e.g. the hand-written
# forward pass of commit f1831e7 (OLD). Each pair runs OLD then NEW on the same
# greedy continuation at one thread; prints user+sys CPU seconds per run, the
# NEW/OLD ratio per pair, their median, and the load average, and checks that
# both print the same text.
#
#   bench/llm/generate_vs_forward.sh OLD_TAILOR [NEW_TAILOR] [PAIRS] [TOKENS] [MODEL]
#
# Defaults: NEW_TAILOR build/tailor, 10 pairs, 500 tokens, the stories260K
# fixture (its tok512.bin beside it). Build OLD without touching a worktree:
#   mkdir -p /tmp/old && git archive f1831e7 | tar -x -C /tmp/old
#   cmake -S /tmp/old -B /tmp/old/build <the same flags> && cmake --build /tmp/old/build --target tailor
set -euo pipefail

here="$(cd "$(dirname "$0")/../.." && pwd)"
old="${1:?usage: generate_vs_forward.sh OLD_TAILOR [NEW_TAILOR] [PAIRS] [TOKENS] [MODEL]}"
new="${2:-$here/build/tailor}"
pairs="${3:-10}"
tokens="${4:-500}"
model="${5:-$here/tests/fixtures/stories260K.bin}"
for b in "$old" "$new"; do [[ -x "$b" ]] || { echo "not an executable: $b" >&2; exit 2; }; done
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 OMP_WAIT_POLICY=passive

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
# CPU seconds (user + sys) of one run, from the child's rusage in
# microseconds (/usr/bin/time prints 10 ms steps, too coarse for a 0.1 s run);
# its text goes to $tmp/$2.txt.
cpu() {
  /usr/bin/python3 - "$1" "$model" "$tokens" "$tmp/$2.txt" <<'PY'
import resource, subprocess, sys
exe, model, tokens, out = sys.argv[1:]
with open(out, "wb") as f:
    subprocess.run([exe, "generate", model, "--tokens", tokens, "--prompt", "Once upon a time"],
                   stdout=f, check=True)
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print(f"{r.ru_utime + r.ru_stime:.4f}")
PY
}

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
printf "%-5s %9s %9s %7s\n" pair old_s new_s new/old
ratios=()
for ((i = 1; i <= pairs; ++i)); do
  o="$(cpu "$old" old)"
  n="$(cpu "$new" new)"
  r="$(awk -v n="$n" -v o="$o" 'BEGIN { printf "%.3f", (o > 0 ? n / o : 0) }')"
  ratios+=("$r")
  printf "%-5d %9s %9s %7s\n" "$i" "$o" "$n" "$r"
  cmp -s "$tmp/old.txt" "$tmp/new.txt" || { echo "the two binaries print different text" >&2; exit 1; }
done
median="$(printf "%s\n" "${ratios[@]}" | sort -g | awk '{ v[NR] = $1 } END {
  print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }')"
echo "median new/old CPU time: $median over $pairs pairs of $tokens tokens"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
