# Sourced by build.sh, sanitize.sh and fuzz.sh: `ferry_configure DIR [cmake arguments...]` configures the
# build folder DIR (Ninja) once, with ccache as the compiler launcher when the machine has it (optional).
# ccache keys on the compile command: with the checkout as its base dir the absolute paths in it become
# relative, and debug info names files relative to the checkout, so a second checkout on the machine
# (CI's fresh clone) hits the cache the first one filled, -g builds (sanitizers, fuzzers) included.
export CCACHE_BASEDIR="$root"
export CCACHE_NOHASHDIR=1

ferry_configure() {
  local dir="$1"
  shift
  [ -f "$dir/build.ninja" ] && return 0
  local launcher=()
  if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
  cmake -S "$root" -B "$dir" -G Ninja "-DCMAKE_CXX_FLAGS=-fdebug-prefix-map=$root=." "${launcher[@]}" "$@" >/dev/null
}
