#!/usr/bin/env bash
# Peak memory of `tailor profile` on a model much larger than one layer: a
# synthetic safetensors file of LAYERS weights [OUT, IN] (f16 by default, so
# 24 × 4096 × 11008 ≈ 2.16 GB), profiled with a short scheme list under
# /usr/bin/time -v. The issue's bound: peak RSS < 3 × the largest layer's f32
# size + 200 MB (holding only the layers in flight, never the whole file).
#
#   bench/profile/memory_check.sh [TAILOR]      (default build/tailor)
#
# Environment: LAYERS (24), OUT (4096), IN (11008), DTYPE (F16 or F32),
# SCHEMES (int8,int4), THREADS (1), MODEL (/tmp/tailor-memory-check.safetensors;
# written once, reused when present with the same size). Exit 1 when over the bound.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
tailor="${1:-$root/build/tailor}"
layers="${LAYERS:-24}" out="${OUT:-4096}" in="${IN:-11008}" dtype="${DTYPE:-F16}"
schemes="${SCHEMES:-int8,int4}" threads="${THREADS:-1}"
model="${MODEL:-/tmp/tailor-memory-check.safetensors}"

/usr/bin/python3 - "$model" "$layers" "$out" "$in" "$dtype" <<'EOF'
import json, os, struct, sys
import numpy as np
path, layers, out, n, dtype = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
np_dtype = {"F16": np.float16, "F32": np.float32}[dtype]
size = out * n * np.dtype(np_dtype).itemsize
header, offset = {}, 0
for i in range(layers):
    header[f"layers.{i}.mlp.up_proj.weight"] = {"dtype": dtype, "shape": [out, n],
                                                 "data_offsets": [offset, offset + size]}
    offset += size
text = json.dumps(header).encode()
text += b" " * (-len(text) % 8)
total = 8 + len(text) + offset
if os.path.exists(path) and os.path.getsize(path) == total:
    sys.exit(0)
rng = np.random.default_rng(7)
with open(path + ".tmp", "wb") as f:  # one layer in memory at a time
    f.write(struct.pack("<Q", len(text)))
    f.write(text)
    for i in range(layers):
        (0.02 * rng.standard_normal((out, n), dtype=np.float32)).astype(np_dtype).tofile(f)
os.replace(path + ".tmp", path)
EOF

file_mb=$(( $(stat -c %s "$model") / 1000000 ))
layer_f32=$(( 4 * out * in ))
bound_kb=$(( (3 * layer_f32 + 200 * 1000 * 1000) / 1024 ))
log="$(mktemp)"
/usr/bin/time -v "$tailor" profile "$model" --schemes "$schemes" --threads "$threads" \
  -o "$(mktemp --suffix=.json)" > /dev/null 2> "$log"
peak_kb=$(awk -F: '/Maximum resident set size/ {gsub(/ /, "", $2); print $2}' "$log")
wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$log")
echo "model: $model ($layers × [$out, $in] $dtype, $file_mb MB), schemes $schemes, threads $threads"
echo "largest layer f32: $(( layer_f32 / 1000000 )) MB; bound 3×layer + 200 MB = $(( bound_kb * 1024 / 1000000 )) MB"
echo "peak RSS: $(( peak_kb * 1024 / 1000000 )) MB; wall $wall"
rm -f "$log"
if (( peak_kb > bound_kb )); then
  echo "OVER the bound"
  exit 1
fi
echo "within the bound"
