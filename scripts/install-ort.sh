#!/usr/bin/env bash
# Installs onnxruntime-node (pinned) into .ort/ at the repository root, the
# reference runtime that tools/ort/run.js drives. `npm install --ignore-scripts`:
# the package's install script downloads CUDA files and fails offline; the CPU
# library it ships works without it. Idempotent: does nothing when the pinned
# version is already there.
#   scripts/install-ort.sh          install (exit 1 if npm fails)
#   scripts/install-ort.sh --soft   never fail: print why and exit 0 (tests skip)
set -euo pipefail

version=1.30.0
root=$(cd "$(dirname "$0")/.." && pwd)
dest="$root/.ort"
soft=0
[ "${1:-}" = "--soft" ] && soft=1

fail() {
  echo "install-ort: $*" >&2
  if [ $soft -eq 1 ]; then
    echo "install-ort: onnxruntime reference tests will be skipped" >&2
    exit 0
  fi
  exit 1
}

pkg="$dest/node_modules/onnxruntime-node/package.json"
if [ -f "$pkg" ] && grep -q "\"version\": \"$version\"" "$pkg"; then
  exit 0
fi
command -v npm >/dev/null 2>&1 || fail "npm is required (scripts/install-deps.sh)"
mkdir -p "$dest"
[ -f "$dest/package.json" ] || echo '{"name": "tailor-ort", "private": true}' >"$dest/package.json"
(cd "$dest" && npm install --silent --ignore-scripts --no-audit --no-fund --save-exact \
  "onnxruntime-node@$version") || fail "npm install onnxruntime-node@$version failed"
node -e "require('$dest/node_modules/onnxruntime-node')" ||
  fail "onnxruntime-node@$version is installed but does not load"
echo "install-ort: onnxruntime-node@$version ok" >&2
