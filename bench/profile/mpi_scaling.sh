#!/usr/bin/env bash
# Sharded profiling: `tailor profile` in one process and under
# `mpirun -n N`, wall time and peak RSS per process, and a check that both
# write the same profile.json byte for byte.
#
#   bench/profile/mpi_scaling.sh MODEL [TAILOR]     (default build/tailor)
#
# Also the same as N shards (`--shard I/N`, run one after another) merged by
# `tailor profile-merge`.
#
# Environment: RANKS (default 2), THREADS (per process, default 1), SCHEMES
# (passed to --schemes; default: the whole catalog), OBJECTIVE=output (adds
# `--objective output`: every candidate's output damage, each shard or rank
# measuring its own layers), PROFILE_ARGS (more profile flags, e.g.
# "--ocr-lines DIR"),
# WORK (default /tmp/tailor-mpi-scaling). Each run gets its own empty
# TAILOR_CACHE_DIR (the ranks cache every finished layer there), so neither
# reuses the other's layers. Runs as root need OMPI_ALLOW_RUN_AS_ROOT=1 and
# OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 (set here).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
model="$1"
tailor="${2:-$root/build/tailor}"
ranks="${RANKS:-2}" threads="${THREADS:-1}"
work="${WORK:-/tmp/tailor-mpi-scaling}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OPENBLAS_NUM_THREADS=$threads OMP_NUM_THREADS=$threads
extra=()
[[ -n "${SCHEMES:-}" ]] && extra=(--schemes "$SCHEMES")
[[ -n "${OBJECTIVE:-}" ]] && extra+=(--objective "$OBJECTIVE")
# shellcheck disable=SC2206
[[ -n "${PROFILE_ARGS:-}" ]] && extra+=($PROFILE_ARGS)
rm -rf "$work" && mkdir -p "$work"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
TAILOR_CACHE_DIR="$work/cache1" /usr/bin/time -f "1 process: %e s wall, %U s user, peak RSS %M KB" \
  "$tailor" profile "$model" --threads "$threads" "${extra[@]}" -o "$work/one.json" > /dev/null
TAILOR_CACHE_DIR="$work/cacheN" /usr/bin/time -f "mpirun -n $ranks: %e s wall" \
  mpirun --oversubscribe -n "$ranks" \
  /usr/bin/time -f "  a rank: %e s wall, %U s user, peak RSS %M KB" \
  "$tailor" profile "$model" --threads "$threads" "${extra[@]}" -o "$work/ranks.json" > /dev/null
shards=()
for ((i = 0; i < ranks; ++i)); do
  TAILOR_CACHE_DIR="$work/cache-shard$i" \
    /usr/bin/time -f "  shard $i/$ranks: %e s wall, %U s user, peak RSS %M KB" \
    "$tailor" profile "$model" --threads "$threads" "${extra[@]}" --shard "$i/$ranks" \
    -o "$work/shard$i.json" > /dev/null
  shards+=("$work/shard$i.json")
done
"$tailor" profile-merge "${shards[@]}" -o "$work/merged.json" > /dev/null
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
cmp "$work/one.json" "$work/ranks.json" && echo "profile.json: $ranks ranks = 1 process (byte for byte)"
cmp "$work/one.json" "$work/merged.json" &&
  echo "profile.json: $ranks shards merged = 1 process (byte for byte)"
