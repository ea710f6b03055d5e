#!/usr/bin/env bash
# `mpirun -n 2 tailor profile` writes the same profile.json, byte for byte, as
# one process; a rerun finds every layer in the layer cache the ranks filled.
#   mpi_profile_test.sh MPIEXEC TAILOR MODEL
set -euo pipefail
mpiexec="$1" tailor="$2" model="$3"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export TAILOR_CACHE_DIR="$work/cache"
"$tailor" profile "$model" --threads 1 -o "$work/one.json" > /dev/null
"$mpiexec" --oversubscribe -n 2 "$tailor" profile "$model" --threads 1 -o "$work/two.json" \
  > "$work/two.log"
cmp "$work/one.json" "$work/two.json"
grep -q "wrote $work/two.json (2 ranks)" "$work/two.log"
# Every profiled layer is in the cache once (the 1-process run stores none).
layers=$(grep -c '"shape_out_in"' "$work/one.json")
cached=$(ls "$TAILOR_CACHE_DIR/profiles" | wc -l)
[[ "$cached" == "$layers" ]] || { echo "cache holds $cached entries, expected $layers"; exit 1; }
echo "2-rank profile equals the 1-process one ($layers layers)"
