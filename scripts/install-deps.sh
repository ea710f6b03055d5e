#!/usr/bin/env bash
# Installs the Debian 12 packages tailor builds, tests and benchmarks with.
# Idempotent: asks apt only for what is missing. Needs root (or sudo).
set -euo pipefail

packages=(
  build-essential cmake make ninja-build pkg-config git ca-certificates
  libeigen3-dev libopenblas-dev liblapacke-dev
  libprotobuf-dev protobuf-compiler libonnx-dev
  nlohmann-json3-dev libcli11-dev libfmt-dev libspdlog-dev
  libpng-dev  # tasks: the OCR fixture images
  libgtest-dev libgmock-dev libbenchmark-dev
  python3 python3-numpy
  pybind11-dev python3-dev  # the Python module (python/, docs/python.md)
  python3-onnx bc time  # bench/profile: numpy peer reads ONNX weights; compare.sh, memory_check.sh
  clang libclang-rt-14-dev clang-format
  coinor-cbc  # test-only oracle: tests/plan/exact_test.cpp checks solve_exact against CBC
  libssl-dev  # SHA-256 (OpenSSL EVP) keys the profile cache
  openmpi-bin libopenmpi-dev  # optional: `mpirun -n N tailor profile` and its 2-rank test
  gnuplot-nox fonts-dejavu-core  # the report's SVG plots
  chromium python3-pil  # test-only: tests/report/report_page_test.cpp loads report.html headless
  fonts-wqy-microhei  # bench: scripts/render-ocr-fixtures.py, bench/compress/ocr_lines.py (CJK lines)
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
# Node.js and npm fetch the models and run the onnxruntime reference. A
# machine may carry them outside Debian's packages (nodesource ships npm inside
# its nodejs): install Debian's only where the commands are absent.
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
[ ${#missing[@]} -eq 0 ] && exit 0

echo "install-deps: installing ${missing[*]}" >&2
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
