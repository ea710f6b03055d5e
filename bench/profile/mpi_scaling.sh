#!/usr/bin/env bash
# Sharded profiling: `tailor profile` in one process and under
# `mpirun -n N`, wall time and peak RSS per process, and a check that both
# write the same profile.json byte for byte.
#
#   bench/profile/mpi_scaling.sh MODEL [TAILOR]     (default build/tailor)
#
# Environment: RANKS (default 2), THREADS (per process, default 1), SCHEMES
# (passed to --schemes; default: the whole catalog),
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
rm -rf "$work" && mkdir -p "$work"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
TAILOR_CACHE_DIR="$work/cache1" /usr/bin/time -f "1 process: %e s wall, %U s user, peak RSS %M KB" \
  "$tailor" profile "$model" --threads "$threads" "${extra[@]}" -o "$work/one.json" > /dev/null
TAILOR_CACHE_DIR="$work/cacheN" /usr/bin/time -f "mpirun -n $ranks: %e s wall" \
  mpirun --oversubscribe -n "$ranks" \
  /usr/bin/time -f "  a rank: %e s wall, %U s user, peak RSS %M KB" \
  "$tailor" profile "$model" --threads "$threads" "${extra[@]}" -o "$work/ranks.json" > /dev/null
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
cmp "$work/one.json" "$work/ranks.json" && echo "profile.json: $ranks ranks = 1 process (byte for byte)"
