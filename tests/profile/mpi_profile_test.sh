#!/usr/bin/env bash
# `mpirun -n 2 tailor profile` writes the same profile.json, byte for byte, as
# one process, with output damage too; a rerun finds every layer in the layer
# cache the ranks filled.
# tailor links no MPI library; its module is found in an install layout
# (bin/MODULE_DIR), and a missing module or an error met before any layer is
# one line without the rerun hint.
#   mpi_profile_test.sh MPIEXEC TAILOR MODEL MODULE MODULE_DIR
set -euo pipefail
mpiexec="$1" tailor="$2" model="$3" module="$4" module_dir="$5"
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
if ldd "$tailor" | grep -qi mpi; then echo "tailor links MPI:"; ldd "$tailor"; exit 1; fi
# Installed: bin/tailor and bin/MODULE_DIR/libtailor_mpi.so.
mkdir -p "$work/inst/bin" "$work/inst/bin/$module_dir"
cp "$tailor" "$work/inst/bin/tailor"
cp "$module" "$work/inst/bin/$module_dir/"
unset TAILOR_CACHE_DIR
export TAILOR_CACHE_DIR="$work/cache2"
"$mpiexec" --oversubscribe -n 2 "$work/inst/bin/tailor" profile "$model" --threads 1 \
  -o "$work/inst.json" > /dev/null
cmp "$work/one.json" "$work/inst.json"
# An unknown scheme: no layer was measured, so no rerun hint.
if "$mpiexec" --oversubscribe -n 2 "$tailor" profile "$model" --schemes nope -o "$work/x.json" \
  > "$work/bad.log" 2>&1; then echo "an unknown scheme passed"; exit 1; fi
grep -q "nope" "$work/bad.log" || { cat "$work/bad.log"; exit 1; }
if grep -q "rerun" "$work/bad.log"; then cat "$work/bad.log"; exit 1; fi
# The module missing: one line naming it.
rm "$work/inst/bin/$module_dir/$(basename "$module")"
if "$mpiexec" --oversubscribe -n 2 "$work/inst/bin/tailor" profile "$model" -o "$work/x.json" \
  > "$work/missing.log" 2>&1; then echo "ran without its MPI module"; exit 1; fi
grep -q "libtailor_mpi.so is not installed" "$work/missing.log" || { cat "$work/missing.log"; exit 1; }
# A launcher's variables without the launcher: MPI sees 1 rank, not 2; refused
# (every process would otherwise profile every layer into the same file).
if OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_RANK=0 "$tailor" profile "$model" -o "$work/y.json" \
  > "$work/nolauncher.log" 2>&1; then echo "ran as 1 of 2 ranks without mpirun"; exit 1; fi
grep -q "says 2 ranks .* but MPI sees 1" "$work/nolauncher.log" || { cat "$work/nolauncher.log"; exit 1; }
[[ ! -e "$work/y.json" ]] || { echo "wrote y.json"; exit 1; }
# --objective output: each rank runs the whole model but measures the output
# damage of its own layers only; rank 0's file equals the one-process one.
export TAILOR_CACHE_DIR="$work/cache3"
damage=(--objective output --schemes int8,int4 --sequences 2 --length 16 --threads 1)
"$tailor" profile "$model" "${damage[@]}" -o "$work/d1.json" > /dev/null
"$mpiexec" --oversubscribe -n 2 "$tailor" profile "$model" "${damage[@]}" -o "$work/d2.json" \
  > /dev/null
cmp "$work/d1.json" "$work/d2.json"
grep -q '"output_damage"' "$work/d1.json" || { echo "no output_damage in d1.json"; exit 1; }
echo "2-rank profile equals the 1-process one ($layers layers, output damage too)"
