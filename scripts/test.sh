#!/usr/bin/env bash
# The README's test command: installs dependencies, builds, runs every test (unit, bad-input, ONNX
# conformance, model tests against PyTorch and ONNX Runtime) through CTest.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/setup.sh
bash scripts/build.sh
cd build
ctest --output-on-failure -j"${FERRY_TEST_JOBS:-2}" "$@"
