#!/usr/bin/env bash
# Generates the ONNX node tests of the venv's onnx package into the per-machine cache, once per version.
set -euo pipefail
py="$1"
here="$(cd "$(dirname "$0")" && pwd)"
ver="$("$py" -c 'import onnx; print(onnx.__version__)')"
dir="${FERRY_CACHE:-$HOME/.cache/ferry}/onnx-node-tests/$ver"
if [ ! -f "$dir/.complete" ]; then
  mkdir -p "$(dirname "$dir")"
  "$py" "$here/generate_node_tests.py" "$dir" >&2 2>/dev/null  # stdout is the folder alone
  touch "$dir/.complete"
fi
echo "$dir"
