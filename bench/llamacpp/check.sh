#!/usr/bin/env bash
# llama.cpp runs tailor's GGUF: builds llama.cpp (CPU only, libllama and a
# small logits driver of ours) from a clone the user gives, compresses
# stories260K with `tailor compress --gguf`, and compares llama.cpp's
# next-token logits with tailor's on the same token sequences.
#
# usage: bench/llamacpp/check.sh LLAMA_CPP_DIR [BUDGET]
#   LLAMA_CPP_DIR  a llama.cpp source tree (e.g. git clone <url or mirror> /tmp/llama.cpp);
#                  built in LLAMA_CPP_DIR/build (cmake, Release, static, CPU)
#   BUDGET         compress budget (default 12bpw: q8_0 and q4_0 mixed)
# env: TAILOR (default build/tailor), WORK (default a temp folder), SEQUENCES (4), LENGTH (32)
#
# Two comparisons, each on SEQUENCES random sequences of LENGTH tokens (BOS first):
#   f32:   the dense checkpoint as an all-F32 GGUF (--uniform dense) vs tailor
#          running stories260K.bin: the implementations alone;
#   plan:  the planned GGUF vs tailor running the compressed model.onnx (the same
#          decoded q8_0 / q4_0 weights).
# The driver keeps llama.cpp's KV cache in f32 (its default f16 cache would
# round K and V by 2^-11). Tolerance (stated from the formats): the f32
# comparison has no rounding of its own, only summation order:
# max |Δlogit| ≤ 1e-4 of max |logit|. llama.cpp's CPU matmul of a Q8_0 / Q4_0
# weight quantizes its activations to Q8_0 blocks (32 values, f16 scale, int8
# codes: each value moves by up to 1/254 of its block's max), which tailor
# does not (it multiplies f32 activations by the same decoded weights); that
# rounding, carried through the 5 layers' 7 linears, allows the plan
# max |Δlogit| ≤ 2% of max |logit|, rms ≤ 1%, and top-1 agreement ≥ 90%.
# Recorded (2026-12-01, llama.cpp c392e50, 4 × 32 tokens): f32 max rel 8.2e-7;
# plan (12bpw: q8_0 + q4_0) max rel 0.0132, rms rel 0.0045, top-1 1.0.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
llama=${1:?usage: check.sh LLAMA_CPP_DIR [BUDGET]}
budget=${2:-12bpw}
tailor=${TAILOR:-$root/build/tailor}
work=${WORK:-$(mktemp -d /tmp/tailor-llamacpp.XXXXXX)}
seqs=${SEQUENCES:-4}
len=${LENGTH:-32}
py=/usr/bin/python3
mkdir -p "$work"
[ -x "$tailor" ] || { echo "check.sh: no tailor binary at $tailor (build it, or set TAILOR)" >&2; exit 2; }
[ -f "$llama/include/llama.h" ] || { echo "check.sh: $llama is not a llama.cpp source tree" >&2; exit 2; }

echo "== llama.cpp: configure and build libllama (CPU, static) in $llama/build"
cmake -S "$llama" -B "$llama/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
  -DLLAMA_CURL=OFF -DGGML_OPENMP=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
  -DLLAMA_BUILD_SERVER=OFF >"$work/cmake.log"
cmake --build "$llama/build" -j "${JOBS:-2}" --target llama >"$work/build.log"
libs=()
for l in src/libllama.a ggml/src/libggml.a ggml/src/libggml-cpu.a ggml/src/libggml-base.a; do
  libs+=("$llama/build/$l")
done
g++ -O2 -std=c++17 -I "$llama/include" -I "$llama/ggml/include" "$here/logits_driver.cpp" \
  -o "$work/logits_driver" "${libs[@]}" -lpthread -ldl

model=$root/tests/fixtures/stories260K.bin
echo "== tailor: compress $model (--gguf, budget $budget; and all-dense F32)"
"$tailor" compress "$model" --budget "$budget" --objective numel --gguf --no-cache \
  -o "$work/plan" >"$work/compress_plan.log"
"$tailor" compress "$model" --uniform dense --objective numel --gguf --no-cache \
  -o "$work/f32" >"$work/compress_f32.log"
grep -E "plan|q4_0|q8_0" "$work/compress_plan.log" | head -3 || true

echo "== sequences: $seqs × $len tokens (seed 19)"
$py - "$work" "$seqs" "$len" <<'PY'
import sys, numpy as np
work, n, t = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = np.random.default_rng(19)
ids = rng.integers(3, 512, size=(n, t), dtype=np.int32)
ids[:, 0] = 1  # BOS
ids.tofile(work + "/tokens.i32")
for s in range(n):
    np.save("%s/seq%d.npy" % (work, s), ids[s:s + 1].astype(np.int64))
PY

compare() {  # NAME GGUF TAILOR_MODEL
  local name=$1 gguf=$2 tmodel=$3
  "$work/logits_driver" "$gguf" "$work/tokens.i32" "$seqs" "$len" "$work/$name.llama.f32" \
    2>"$work/$name.llama.log"
  for ((s = 0; s < seqs; s++)); do
    "$tailor" run "$tmodel" -i "input_ids=$work/seq$s.npy" -o "$work/$name.tailor$s" >/dev/null
  done
  $py - "$work" "$name" "$seqs" "$len" <<'PY'
import sys, numpy as np
work, name, n, t = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
a = np.concatenate([np.load("%s/%s.tailor%d/logits.npy" % (work, name, s)).reshape(t, -1)
                    for s in range(n)])
b = np.fromfile("%s/%s.llama.f32" % (work, name), np.float32).reshape(n * t, -1)
assert a.shape == b.shape, (a.shape, b.shape)
d = np.abs(a - b)
rel = d.max() / np.abs(a).max()
rms = np.sqrt((d ** 2).mean() / (a ** 2).mean())
top1 = (a.argmax(1) == b.argmax(1)).mean()
print("%-4s positions %d: max|Δlogit| %.3g, max|logit| %.3g, max rel %.3g, rms rel %.3g, "
      "top-1 agreement %.4f" % (name, n * t, d.max(), np.abs(a).max(), rel, rms, top1))
open("%s/%s.result" % (work, name), "w").write("%r %r %r\n" % (rel, rms, top1))
PY
}
compare f32 "$work/f32/model.gguf" "$model"
compare plan "$work/plan/model.gguf" "$work/plan/model.onnx"
$py - "$work" <<'PY'
import sys
work = sys.argv[1]
f_rel, f_rms, f_top = map(float, open(work + "/f32.result").read().split())
p_rel, p_rms, p_top = map(float, open(work + "/plan.result").read().split())
ok = f_rel <= 1e-4 and f_top == 1.0 and p_rel <= 0.02 and p_rms <= 0.01 and p_top >= 0.90
print("PASS" if ok else "FAIL",
      "(f32: max rel ≤ 1e-4, top-1 1; plan: max rel ≤ 0.02, rms rel ≤ 0.01, top-1 ≥ 0.90)")
sys.exit(0 if ok else 1)
PY
