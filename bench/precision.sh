#!/usr/bin/env bash
# Issue 4 precision figures (see bench/precision.py): compare + tune-precision on the benchmark models.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec /usr/bin/python3 -E -s "$here/precision.py" "$@"
