#!/usr/bin/env bash
# Runs the node conformance suite against the manifest.
# Usage: run_conformance.sh RUNNER PYTHON MANIFEST [RUNNER FLAGS...] (e.g. --backend cpu --opt-level 2)
set -euo pipefail
runner="$1"; py="$2"; manifest="$3"; shift 3
dir="$("$(dirname "$0")/ensure_node_tests.sh" "$py")"
exec "$runner" --data "$dir" --manifest "$manifest" --timeout 60 "$@"
