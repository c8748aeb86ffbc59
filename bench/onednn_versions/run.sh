#!/usr/bin/env bash
# oneDNN 2.6 (Debian, /lib/x86_64-linux-gnu/libdnnl.so.2, what ferry links) next to oneDNN 3.x (PyPI
# wheels onednn-cpu-gomp + onednn-devel-cpu-gomp, GNU OpenMP build; unpacked under /tmp/onednn3, installed
# into no environment) on the convolutions of one or more shapes files. Standalone: it builds no part of
# ferry, only conv_bench.cc, twice, into /tmp/onednn_versions/.
#
#   bench/onednn_versions/run.sh                               # the three shapes files of this folder
#   bench/onednn_versions/run.sh bench/onednn_versions/shapes_densenet121_1x1.txt
#   bench/onednn_versions/run.sh SHAPES... -- --relu           # flags after -- go to every conv_bench
#
# Environment:
#   THREADS=2          OMP_NUM_THREADS of every run (libgomp, both versions)
#   ROUNDS=5           rounds; each round runs both versions on the whole file, back to back, the order
#                      alternating from round to round (2.6 first in odd rounds, 3.x first in even ones)
#   ITERS=100 WARMUP=10   timed / untimed executions per shape and run
#   ONEDNN3_VERSION=2023.2.0   the wheels' version (oneAPI numbering: 2023.2.0 carries oneDNN 3.2.0)
#   ONEDNN3_DIR=/tmp/onednn3   where the wheels are downloaded to and unpacked (under x/)
#   OUT=/tmp/onednn_versions   binaries, and results/<shapes>.v{2,3}.r<round>.tsv
#
# The wheels are downloaded with `pip download --no-deps` and unpacked only when they are not there yet.
# Run it on an otherwise idle machine: other processes' load shows up as a large spr% column.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
THREADS=${THREADS:-2}
ROUNDS=${ROUNDS:-5}
ITERS=${ITERS:-100}
WARMUP=${WARMUP:-10}
V3=${ONEDNN3_VERSION:-2023.2.0}
DL=${ONEDNN3_DIR:-/tmp/onednn3}
OUT=${OUT:-/tmp/onednn_versions}
PIP=${PIP:-$REPO/.venv/bin/pip}
CXX=${CXX:-g++}  # g++'s -fopenmp is libgomp, the runtime both libdnnl builds use

SHAPES=()
EXTRA=()
while (($#)); do
  if [[ $1 == -- ]]; then shift; EXTRA=("$@"); break; fi
  SHAPES+=("$1"); shift
done
if ((${#SHAPES[@]} == 0)); then
  SHAPES=("$HERE/shapes_regnet_y_400mf.txt" "$HERE/shapes_regnet_y_400mf_b8.txt" "$HERE/shapes_densenet121_1x1.txt")
fi

# --- oneDNN 3.x: the runtime wheel has the library only, the devel wheel the headers ---------------
unpack() {  # unpack <pypi name> <wheel file prefix>
  local pkg=$1 dist=$2
  if [[ -d $DL/x/$dist-$V3.dist-info ]]; then return; fi
  mkdir -p "$DL/x"
  local whl
  whl=$(ls "$DL/$dist-$V3"-*.whl 2>/dev/null | head -n1 || true)
  if [[ -z $whl ]]; then
    echo "== pip download --no-deps $pkg==$V3 -> $DL" >&2
    "$PIP" download --no-deps --only-binary=:all: "$pkg==$V3" -d "$DL" >&2
    whl=$(ls "$DL/$dist-$V3"-*.whl | head -n1)
  fi
  echo "== unpacking $(basename "$whl") -> $DL/x" >&2
  python3 -m zipfile -e "$whl" "$DL/x"
}
unpack onednn-cpu-gomp onednn_cpu_gomp
unpack onednn-devel-cpu-gomp onednn_devel_cpu_gomp
LIB3=$DL/x/onednn_cpu_gomp-$V3.data/data/lib
INC3=$DL/x/onednn_devel_cpu_gomp-$V3.data/data/include
[[ -f $LIB3/libdnnl.so.3 ]] || { echo "run.sh: no $LIB3/libdnnl.so.3" >&2; exit 1; }
[[ -f $INC3/oneapi/dnnl/dnnl.hpp ]] || { echo "run.sh: no $INC3/oneapi/dnnl/dnnl.hpp" >&2; exit 1; }

# --- build, one compile at a time, only when the source is newer ------------------------------------
mkdir -p "$OUT/results"
SRC=$HERE/conv_bench.cc
build() {  # build <binary> <compiler and linker flags...>; again when the source or the flags changed
  local bin=$1; shift
  local cmd=("$CXX" -O2 -std=c++17 -fopenmp "$SRC" -o "$bin" "$@")
  local flags="${cmd[*]}"
  if [[ -x $bin && $bin -nt $SRC && -f $bin.flags && $(cat "$bin.flags") == "$flags" ]]; then return; fi
  echo "== building $bin" >&2
  rm -f "$bin.flags"
  "${cmd[@]}"
  echo "$flags" >"$bin.flags"
}
build "$OUT/conv_bench_v2" -ldnnl  # /usr/include/oneapi/dnnl + /lib/x86_64-linux-gnu/libdnnl.so.2
build "$OUT/conv_bench_v3" -I"$INC3" "$LIB3/libdnnl.so.3" -Wl,-rpath,"$LIB3"

echo "# $(nproc) cpus, load average $(cut -d' ' -f1-3 /proc/loadavg); THREADS=$THREADS ROUNDS=$ROUNDS" \
  "ITERS=$ITERS WARMUP=$WARMUP ${EXTRA[*]:-}"
for shapes in "${SHAPES[@]}"; do
  base=$(basename "$shapes" .txt)
  rm -f "$OUT/results/$base".v[23].r*.tsv
  for ((r = 1; r <= ROUNDS; r++)); do
    if ((r % 2)); then order="v2 v3"; else order="v3 v2"; fi
    for v in $order; do
      OMP_NUM_THREADS=$THREADS "$OUT/conv_bench_$v" --iters "$ITERS" --warmup "$WARMUP" ${EXTRA[@]+"${EXTRA[@]}"} \
        "$shapes" >"$OUT/results/$base.$v.r$r.tsv" ||
        echo "run.sh: conv_bench_$v failed on some shape of $base (round $r): see $OUT/results/$base.$v.r$r.tsv" >&2
    done
  done
  echo
  python3 "$HERE/summarize.py" "$OUT/results" "$base"
done
