#!/usr/bin/env bash
# The sanitizer run: scripts/test.sh runs it after the normal tests (CI included); `scripts/test.sh
# --sanitize` runs it alone. Any report fails the run; nothing is suppressed.
#  1. AddressSanitizer + UndefinedBehaviorSanitizer (build-asan/, -O1 -g1, every UBSan finding
#     fatal, leaks checked): the unit tests, the bad-input CLI tests, the Python tests that need no torch
#     (the interpreter runs with libasan preloaded) and the ONNX conformance suite on both backends.
#  2. ThreadSanitizer (build-tsan/): the concurrency test alone (ferry_thread_tests: 8 threads on one
#     session, on both backends).
#  3. Each libFuzzer target for FERRY_FUZZ_SECONDS (60 by default) from its corpus (scripts/fuzz.sh all).
# The builds are cached by ccache (scripts/configure.sh): the first run on a machine compiles everything
# twice more (about 40 minutes on 2 cores); later runs, CI's fresh clones included, only relink.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
[ -n "${FERRY_SETUP_DONE:-}" ] || bash scripts/setup.sh
export FERRY_SETUP_DONE=1
jobs="${FERRY_JOBS:-$(nproc)}"
source scripts/configure.sh

# -O1 -g1 (line tables: symbolized stack traces): half the compile time of -O2 -g under the sanitizers.
# The library and the CLI as unity batches (FERRY_UNITY_BUILD in CMakeLists.txt): a core header change
# recompiles both builds, and batches of eight cut that compile time.
sanitizer_flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" -DFERRY_UNITY_BUILD=ON)
ferry_configure build-asan "${sanitizer_flags[@]}" -DFERRY_SANITIZE=address,undefined
ninja -C build-asan -j"$jobs" ferry ferry_unit_tests ferry_conformance _ferry ferry_python_files
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:halt_on_error=1:detect_stack_use_after_return=0}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-2}"
echo "sanitize: unit tests (ASan+UBSan)"
build-asan/tests/ferry_unit_tests --gtest_brief=1
echo "sanitize: bad-input CLI tests (ASan+UBSan)"
.venv/bin/python tests/cli/test_bad_inputs.py build-asan/ferry >/dev/null
echo "sanitize: Python tests (ASan+UBSan)"
# CPython itself is not built for LeakSanitizer (it keeps objects until exit): leaks are checked above.
# libasan must be the first library loaded, and libstdc++ with it (python does not link it, and ASan's
# exception interceptor needs the real __cxa_throw at start-up).
ASAN_OPTIONS="$ASAN_OPTIONS:detect_leaks=0" LD_PRELOAD="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libstdc++.so)" \
  FERRY_BUILD_DIR="$root/build-asan" .venv/bin/python -m pytest -q -p no:cacheprovider \
  python/tests/test_session.py python/tests/test_bad_inputs.py python/tests/test_ort_port.py python/tests/test_reports.py
data="$(tests/conformance/ensure_node_tests.sh .venv/bin/python)"
# The whole ONNX node-test suite (about 25 s per backend under ASan on 2 cores).
for backend in reference cpu; do
  echo "sanitize: ONNX conformance on the $backend backend (ASan+UBSan)"
  build-asan/tests/conformance/ferry_conformance --data "$data" --manifest tests/conformance/manifest.txt \
    --timeout 300 --backend "$backend" --opt-level "$([ "$backend" = cpu ] && echo 2 || echo 0)" | tail -1
done

ferry_configure build-tsan "${sanitizer_flags[@]}" -DFERRY_SANITIZE=thread -DFERRY_BUILD_PYTHON=OFF
ninja -C build-tsan -j"$jobs" ferry_thread_tests
echo "sanitize: 8 threads on one session (TSan)"
# One OpenMP thread per caller (the ICV every thread starts with): libgomp is not instrumented, so TSan
# could not see its barriers and would report the kernels' own parallel loops.
OMP_NUM_THREADS=1 TSAN_OPTIONS="${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}" \
  build-tsan/tests/ferry_thread_tests --gtest_brief=1

echo "sanitize: fuzz targets, ${FERRY_FUZZ_SECONDS:-60} s each"
bash scripts/fuzz.sh all "${FERRY_FUZZ_SECONDS:-60}"
echo "sanitize: ok"
