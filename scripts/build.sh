#!/usr/bin/env bash
# Configures and builds ferry in build/ (Release, Ninja). Extra arguments go to ninja.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
jobs="${FERRY_JOBS:-$(nproc)}"
if [ ! -f build/build.ninja ]; then
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
ninja -C build -j"$jobs" "$@"
