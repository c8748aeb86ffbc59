#!/usr/bin/env bash
# The benchmark harness in one command (see bench/README.md): exports the models, runs ferry bench with
# ONNX Runtime (and OpenVINO) as peers, writes bench/results/<date>.{json,md}. Arguments go to run.py.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# Only the standard library is needed; Debian's python keeps PyPI packages out of the way.
exec /usr/bin/python3 -E -s "$here/run.py" "$@"
