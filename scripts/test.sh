#!/usr/bin/env bash
# The README's test command: installs dependencies, builds, runs every test (unit, bad-input, ONNX
# conformance, model tests against PyTorch and ONNX Runtime) through CTest, then the sanitizer run
# (scripts/sanitize.sh: ASan+UBSan, TSan, a minute of each fuzz target). `--sanitize`: the sanitizer run
# alone. Arguments other than that go to ctest and skip the AVX2 pass and the sanitizer run.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
if [ "${1:-}" = "--sanitize" ]; then
  # The unit tests, the bad-input tests and a conformance subset built with AddressSanitizer and
  # UndefinedBehaviorSanitizer (build-asan/, RelWithDebInfo): any report fails the run.
  shift
  exec bash scripts/sanitize.sh "$@"
fi
bash scripts/setup.sh
export FERRY_SETUP_DONE=1  # sanitize.sh and fuzz.sh skip it then
bash scripts/build.sh
cd build
if [ "$#" -eq 0 ]; then
  # The AVX2 kernel paths on any machine: oneDNN capped at AVX2 (its kernels, and ferry's choices that
  # follow oneDNN's ISA: the own packed GEMM instead of MKL/brgemm, no nChw16c 1x1 rule). Unit and CLI
  # tests only; the conformance suite and the model tests run once, below, at the machine's own ISA.
  echo "test.sh: unit and CLI tests with ONEDNN_MAX_CPU_ISA=AVX2"
  # (Not the limits test either: it times nothing ISA-specific and takes minutes.)
  ONEDNN_MAX_CPU_ISA=AVX2 ctest --output-on-failure -j"${FERRY_TEST_JOBS:-2}" -E "^(conformance|models?_|cli_limits$)"
fi
ctest --output-on-failure -j"${FERRY_TEST_JOBS:-2}" "$@"
if [ "$#" -eq 0 ]; then
  cd "$root"
  bash scripts/sanitize.sh
fi
