#!/usr/bin/env bash
# Configures and builds ferry in build/ (Release, Ninja). Extra arguments go to ninja.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
jobs="${FERRY_JOBS:-$(nproc)}"
source scripts/configure.sh
ferry_configure build -DCMAKE_BUILD_TYPE=Release
ninja -C build -j"$jobs" "$@"
# The venv's editable ferry package (scripts/setup.sh) reads python/ferry from the source tree but holds a
# copy of the extension module: bring it up to date with this build.
site="$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["platlib"])' 2>/dev/null || true)"
if [ -n "$site" ] && grep -qs "$root/python/ferry" "$site/_editable_skbc_ferry.py" && [ -d "$site/ferry" ]; then
  cmake --install build --component python --prefix "$site" >/dev/null
fi
