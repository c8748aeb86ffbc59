#!/usr/bin/env bash
# oneDNN 2.6 (Debian, what ferry links) next to oneDNN 3.x (PyPI wheels, as run.sh fetches them) on
# Linear-layer matmuls: matmul_bench.cc built twice into $OUT, rounds alternating which version goes first.
#
#   bench/onednn_versions/matmul.sh [-- matmul_bench flags]      # default: --bf16 --cold, vit_b_16's shapes
#   SHAPES="197,768,2304 197,768,3072" bench/onednn_versions/matmul.sh -- --cold
#
# Environment: THREADS=2 ROUNDS=3 ITERS=50, ONEDNN3_VERSION / ONEDNN3_DIR / OUT / PIP as in run.sh.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
THREADS=${THREADS:-2}
ROUNDS=${ROUNDS:-3}
ITERS=${ITERS:-50}
V3=${ONEDNN3_VERSION:-2023.2.0}
DL=${ONEDNN3_DIR:-/tmp/onednn3}
OUT=${OUT:-/tmp/onednn_versions}
PIP=${PIP:-$REPO/.venv/bin/pip}
CXX=${CXX:-g++}
# vit_b_16's Linear layers at batch 1 (197 tokens) and 8 (1576): qkv, out-proj, MLP up, MLP down.
SHAPES=${SHAPES:-"197,768,2304 197,768,768 197,768,3072 197,3072,768 1576,768,2304 1576,768,768 1576,768,3072 1576,3072,768"}
FLAGS=(--bf16 --cold)
if [[ ${1:-} == -- ]]; then shift; FLAGS=("$@"); fi

for pkg in onednn-cpu-gomp:onednn_cpu_gomp onednn-devel-cpu-gomp:onednn_devel_cpu_gomp; do
  name=${pkg%%:*} dist=${pkg##*:}
  [[ -d $DL/x/$dist-$V3.dist-info ]] && continue
  mkdir -p "$DL/x"
  "$PIP" download -q --no-deps --only-binary=:all: "$name==$V3" -d "$DL" >&2
  python3 -m zipfile -e "$(ls "$DL/$dist-$V3"-*.whl | head -n1)" "$DL/x"
done
LIB3=$DL/x/onednn_cpu_gomp-$V3.data/data/lib
INC3=$DL/x/onednn_devel_cpu_gomp-$V3.data/data/include
mkdir -p "$OUT"
"$CXX" -O2 -std=c++17 -fopenmp "$HERE/matmul_bench.cc" -o "$OUT/matmul_bench_v2" -ldnnl
"$CXX" -O2 -std=c++17 -fopenmp "$HERE/matmul_bench.cc" -o "$OUT/matmul_bench_v3" -I"$INC3" "$LIB3/libdnnl.so.3" -Wl,-rpath,"$LIB3"

echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cpus; THREADS=$THREADS ROUNDS=$ROUNDS ITERS=$ITERS ${FLAGS[*]}"
for ((r = 1; r <= ROUNDS; r++)); do
  if ((r % 2)); then order="v2 v3"; else order="v3 v2"; fi
  for v in $order; do
    # shellcheck disable=SC2086
    OMP_NUM_THREADS=$THREADS "$OUT/matmul_bench_$v" --iters "$ITERS" "${FLAGS[@]}" $SHAPES | sed "s/^/$v r$r\t/"
  done
done
