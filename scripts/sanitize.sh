#!/usr/bin/env bash
# The sanitizer run (`scripts/test.sh --sanitize`): ferry built with AddressSanitizer + UndefinedBehavior-
# Sanitizer in build-asan/ (RelWithDebInfo; every UBSan finding fatal), then the unit tests, the bad-input
# CLI tests and a subset of the ONNX conformance suite on both backends. Any report fails the run.
# Not yet under the sanitizers: the Python tests (the extension module needs libasan preloaded into
# python) and the ThreadSanitizer build (libgomp is not TSan-instrumented).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/setup.sh
jobs="${FERRY_JOBS:-$(nproc)}"
if [ ! -f build-asan/build.ninja ]; then
  launcher=()
  if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFERRY_SANITIZE=address,undefined \
        -DFERRY_BUILD_PYTHON=OFF "${launcher[@]}" >/dev/null
fi
ninja -C build-asan -j"$jobs" ferry ferry_unit_tests ferry_conformance
# Leaks are checked too (LeakSanitizer is part of ASan); halt on the first report of any kind.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:halt_on_error=1:detect_stack_use_after_return=0}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-2}"
echo "sanitize: unit tests"
build-asan/tests/ferry_unit_tests --gtest_brief=1
echo "sanitize: bad-input CLI tests"
.venv/bin/python tests/cli/test_bad_inputs.py build-asan/ferry
data="$(tests/conformance/ensure_node_tests.sh .venv/bin/python)"
# A subset that covers the kernel families (convolution, GEMM, pooling, normalization, activations,
# shape and indexing ops, recurrent cells, resize): the whole suite under ASan would take hours.
subset='^test_(conv|gemm|matmul|maxpool|averagepool|batchnorm|layer_norm|relu|sigmoid|softmax|add|mul|concat|reshape|transpose|gather|slice|split|lstm|gru|resize|reduce_mean|cast)'
for backend in reference cpu; do
  echo "sanitize: conformance subset on the $backend backend"
  build-asan/tests/conformance/ferry_conformance --data "$data" --manifest tests/conformance/manifest.txt \
    --timeout 300 --filter "$subset" --backend "$backend" --opt-level "$([ "$backend" = cpu ] && echo 2 || echo 0)"
done
echo "sanitize: ok"
