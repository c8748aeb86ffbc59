#!/usr/bin/env bash
# Refreshes the model-test cache (${FERRY_CACHE:-~/.cache/ferry}/models): re-exports the models from
# Debian's torch and recomputes the ONNX Runtime references. Without --force only what is stale
# (missing files, or a changed export script / torch / onnxruntime version) is redone.
#   scripts/refresh-model-cache.sh [--force] [resnet18 mobilenet_v2 transformer_encoder]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# -E -s: keep PYTHONPATH and user site-packages (PyPI's numpy 2) away from Debian's torch.
/usr/bin/python3 -E -s "$root/tests/models/export_models.py" "$@"
"$root/.venv/bin/python" "$root/tests/models/ort_reference.py" "$@"
