#!/usr/bin/env bash
# Peak memory of `tailor profile` on a model much larger than one layer: a
# synthetic file of LAYERS weights [OUT, IN] (f16 by default), profiled with
# the full default scheme catalog under /usr/bin/time -v. The issue's bound,
# per layer in flight: peak RSS < 3 × the largest layer's f32 size ×
# min(THREADS, LAYERS) + 200 MB (holding only the layers in flight, never the
# whole file).
#
#   bench/profile/memory_check.sh [TAILOR]      (default build/tailor)
#
# Environment: FORMAT (safetensors or onnx), LAYERS (3), OUT (4096), IN (11008),
# DTYPE (F16 or F32), SCHEMES (empty: the full default catalog; or a list such
# as int8,int4), THREADS (1), MODEL (/tmp/tailor-memory-check-L<LAYERS>-<OUT>x<IN>-<DTYPE>.<FORMAT>;
# written once, reused when present with the same size).
#
# FORMAT=onnx writes an ONNX model of LAYERS MatMul nodes whose weights are
# initializers stored inside the .onnx (raw_data, [IN, OUT] as MatMul's B),
# written field by field (protobuf wire format, numpy + struct) so that files
# over protobuf's 2 GiB limit can be made: LAYERS=24 gives 2.16 GB, which
# `tailor profile` reads through its mapped wire-format scan.
# OpenBLAS runs THREADS threads (OPENBLAS_NUM_THREADS, unless set), as in
# compare.sh: each OpenBLAS thread holds its own GEMM buffer, which counts in
# the resident set (43 MB of 214 on a tt-only 2048×5504 layer with the
# default 2 threads of this machine).
# Exit 1 when over the bound.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
tailor="${1:-$root/build/tailor}"
format="${FORMAT:-safetensors}"
layers="${LAYERS:-3}" out="${OUT:-4096}" in="${IN:-11008}" dtype="${DTYPE:-F16}"
schemes="${SCHEMES:-}" threads="${THREADS:-1}" regex="${REGEX:-}"
model="${MODEL:-/tmp/tailor-memory-check-L$layers-${out}x$in-$dtype.$format}"

/usr/bin/python3 - "$model" "$layers" "$out" "$in" "$dtype" "$format" <<'EOF'
import json, os, struct, sys
import numpy as np
path, layers, out, n, dtype, fmt = (sys.argv[1], int(sys.argv[2]), int(sys.argv[3]),
                                    int(sys.argv[4]), sys.argv[5], sys.argv[6])
np_dtype = {"F16": np.float16, "F32": np.float32}[dtype]
size = out * n * np.dtype(np_dtype).itemsize
rng = np.random.default_rng(7)

def layer(i):  # one layer in memory at a time
    return (0.02 * rng.standard_normal((out, n), dtype=np.float32)).astype(np_dtype)

def varint(v):
    b = bytearray()
    while True:
        byte = v & 0x7F
        v >>= 7
        if v:
            b.append(byte | 0x80)
        else:
            b.append(byte)
            return bytes(b)

def key(field, wire):
    return varint(field << 3 | wire)

def delimited(field, payload):
    return key(field, 2) + varint(len(payload)) + payload

if fmt == "safetensors":
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
    with open(path + ".tmp", "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for i in range(layers):
            layer(i).tofile(f)
    os.replace(path + ".tmp", path)
    sys.exit(0)

# ONNX (onnx.proto field numbers). Graph: x [1, IN] → MatMul(x, W_i) → y_i,
# W_i stored [IN, OUT] (MatMul's B), so its [out, in] view is [OUT, IN].
onnx_type = {"F16": 10, "F32": 1}[dtype]
def value_info(name, dims):
    shape = b"".join(delimited(1, key(1, 0) + varint(d)) for d in dims)  # Dimension.dim_value
    tensor_type = key(1, 0) + varint(onnx_type) + delimited(2, shape)     # elem_type, shape
    return delimited(1, name.encode()) + delimited(2, delimited(1, tensor_type))
nodes = b"".join(
    delimited(1, delimited(1, b"x") + delimited(1, f"w{i}".encode()) +
              delimited(2, f"y{i}".encode()) + delimited(3, f"matmul{i}".encode()) +
              delimited(4, b"MatMul"))
    for i in range(layers))
def init_head(i):  # TensorProto fields before raw_data, then raw_data's key and length
    return (key(1, 0) + varint(n) + key(1, 0) + varint(out) + key(2, 0) + varint(onnx_type) +
            delimited(8, f"w{i}".encode()) + key(9, 2) + varint(size))
inits = [init_head(i) for i in range(layers)]
tail = delimited(2, b"memory_check") + delimited(11, value_info("x", [1, n])) + b"".join(
    delimited(12, value_info(f"y{i}", [1, out])) for i in range(layers))
graph_len = len(nodes) + len(tail) + sum(
    len(key(5, 2)) + len(varint(len(h) + size)) + len(h) + size for h in inits)
head = (key(1, 0) + varint(8) + delimited(2, b"memory_check.sh") +
        delimited(8, key(2, 0) + varint(17)) + key(7, 2) + varint(graph_len))
total = len(head) + graph_len
if os.path.exists(path) and os.path.getsize(path) == total:
    sys.exit(0)
with open(path + ".tmp", "wb") as f:
    f.write(head)
    f.write(nodes)
    for i, h in enumerate(inits):
        f.write(key(5, 2) + varint(len(h) + size) + h)
        np.ascontiguousarray(layer(i).T).tofile(f)  # [IN, OUT]
    f.write(tail)
os.replace(path + ".tmp", path)
EOF

file_mb=$(( $(stat -c %s "$model") / 1000000 ))
layer_f32=$(( 4 * out * in ))
in_flight=$(( threads < layers ? threads : layers ))  # with REGEX, at most this many
bound_kb=$(( (3 * layer_f32 * in_flight + 200 * 1000 * 1000) / 1024 ))
log="$(mktemp)"
export OPENBLAS_NUM_THREADS="${OPENBLAS_NUM_THREADS:-$threads}"
args=(profile "$model" --threads "$threads" -o "$(mktemp --suffix=.json)")
[[ -n "$schemes" ]] && args+=(--schemes "$schemes")
[[ -n "$regex" ]] && args+=(--layers "$regex")
/usr/bin/time -v "$tailor" "${args[@]}" > /dev/null 2> "$log" || { cat "$log"; exit 2; }
peak_kb=$(awk -F: '/Maximum resident set size/ {gsub(/ /, "", $2); print $2}' "$log")
wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$log")
echo "model: $model ($format, $layers × [$out, $in] $dtype, $file_mb MB), schemes ${schemes:-all (default catalog)}, threads $threads, OpenBLAS threads $OPENBLAS_NUM_THREADS"
echo "largest layer f32: $(( layer_f32 / 1000000 )) MB; bound 3×layer×$in_flight + 200 MB = $(( bound_kb * 1024 / 1000000 )) MB"
echo "peak RSS: $(( peak_kb * 1024 / 1000000 )) MB; wall $wall"
rm -f "$log"
if (( peak_kb > bound_kb )); then
  echo "OVER the bound"
  exit 1
fi
echo "within the bound"
