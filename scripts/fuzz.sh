#!/usr/bin/env bash
# Runs one fuzz target (tests/fuzz/targets/TARGET.cc) under libFuzzer with ASan and UBSan for SECONDS.
#   scripts/fuzz.sh TARGET SECONDS [libFuzzer flags...]     e.g. scripts/fuzz.sh onnx_import 1800
#   scripts/fuzz.sh all SECONDS [libFuzzer flags...]       every target, as many at once as FERRY_JOBS
#   scripts/fuzz.sh --list                                  the targets
#   scripts/fuzz.sh --summary                               time fuzzed per target on this machine
# Builds build-fuzz/ with clang first (only the loaders' modules). The fuzzer starts from the checked-in
# seeds (tests/fuzz/corpus/TARGET) and grows a working corpus kept per machine under
# ~/.cache/ferry/fuzz/TARGET, so later runs go on where earlier ones stopped. A crash, leak, UBSan report
# or hang (-timeout, 10 s) is written to fuzz-findings/TARGET/ and fails the run: minimise it, fix the
# bug, and check the input into tests/fuzz/regressions/TARGET/ (replayed by CTest on every build).
# Each run appends "date target seconds-run executions result" to ~/.cache/ferry/fuzz/runs.tsv.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
targets=$(cd tests/fuzz/targets && ls *.cc | sed 's/\.cc$//')
if [ "${1:-}" = "--list" ]; then echo "$targets"; exit 0; fi
if [ "${1:-}" = "--summary" ]; then
  # Per target from runs.tsv: minutes fuzzed, of them in runs that ended clean, inputs, runs with a finding.
  tsv="$HOME/.cache/ferry/fuzz/runs.tsv"
  [ -f "$tsv" ] || { echo "no fuzz runs recorded on this machine ($tsv)"; exit 0; }
  echo "| target | minutes | minutes in clean runs | inputs | runs | runs with a finding |"
  echo "|---|---|---|---|---|---|"
  awk -F'\t' '{ t[$2] += $3; n[$2] += $4; r[$2]++; if ($5 == "ok") c[$2] += $3; else f[$2]++ }
    END { for (k in t) printf "| %s | %.1f | %.1f | %d | %d | %d |\n", k, t[k] / 60, c[k] / 60, n[k], r[k], f[k] }' "$tsv" | sort
  exit 0
fi
if [ "$#" -lt 2 ] || ! { [ "$1" = all ] || echo "$targets" | grep -qx "$1"; } || ! [[ "$2" =~ ^[0-9]+$ ]]; then
  echo "usage: scripts/fuzz.sh TARGET|all SECONDS [libFuzzer flags...]; targets:" $targets >&2
  exit 2
fi
target="$1" seconds="$2"
shift 2
[ -n "${FERRY_SETUP_DONE:-}" ] || bash scripts/setup.sh >/dev/null
jobs="${FERRY_JOBS:-$(nproc)}"
source scripts/configure.sh
ferry_configure build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ -DFERRY_FUZZ=ON \
  -DFERRY_BUILD_PYTHON=OFF -DFERRY_BUILD_TESTS=OFF
# Leaks count as findings; the loaders never allocate past 2 GiB for an input of a few KiB.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:halt_on_error=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

# Fuzzes one built target for `seconds`; prints one summary line; returns libFuzzer's exit code.
fuzz_one() {
  local target="$1" seconds="$2"
  shift 2
  local work="$HOME/.cache/ferry/fuzz/$target" findings="$root/fuzz-findings/$target"
  mkdir -p "$work" "$findings"
  local log="$findings/last-run.log" rc start=$SECONDS
  # The inputs earlier runs found (tests/fuzz/regressions) are run first, as part of the corpus.
  local seeds=("tests/fuzz/corpus/$target")
  [ -d "tests/fuzz/regressions/$target" ] && seeds+=("tests/fuzz/regressions/$target")
  set +e
  "build-fuzz/tests/fuzz/fuzz_$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
    -print_final_stats=1 -artifact_prefix="$findings/" "$@" "$work" "${seeds[@]}" 2>&1 |
    tee "$log" | { if [ -n "${progress:-}" ]; then grep --line-buffered -E "^#[0-9]+.*(pulse|DONE)"; else cat >/dev/null; fi; }
  rc=${PIPESTATUS[0]}
  set -e
  grep -E "ERROR|SUMMARY|Test unit written" "$log" || true
  local runs result elapsed=$((SECONDS - start))
  runs=$(grep -Eo "stat::number_of_executed_units: *[0-9]+" "$log" | grep -Eo "[0-9]+$" || echo 0)
  result=$([ "$rc" -eq 0 ] && echo ok || echo "FAILED (exit $rc; see $findings)")
  printf "%s\t%s\t%s\t%s\t%s\n" "$(date -u +%FT%TZ)" "$target" "$elapsed" "$runs" "$result" >> "$HOME/.cache/ferry/fuzz/runs.tsv"
  echo "fuzz $target: ${elapsed}s, $runs inputs, $result"
  return "$rc"
}

if [ "$target" != all ]; then
  ninja -C build-fuzz -j"$jobs" "fuzz_$target" >/dev/null
  progress=1  # libFuzzer's pulse lines as it goes
  fuzz_one "$target" "$seconds" "$@"
  exit
fi
# all: every target for `seconds`, as many at once as there are jobs; fails when any one does.
ninja -C build-fuzz -j"$jobs" $(for t in $targets; do echo "fuzz_$t"; done) >/dev/null
failed=0
pids=()
for t in $targets; do
  fuzz_one "$t" "$seconds" "$@" &
  pids+=($!)
  if [ "${#pids[@]}" -ge "$jobs" ]; then
    wait "${pids[0]}" || failed=1
    pids=("${pids[@]:1}")
  fi
done
for p in "${pids[@]}"; do wait "$p" || failed=1; done
exit "$failed"
