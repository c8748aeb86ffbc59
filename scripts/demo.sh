#!/usr/bin/env bash
# The README's main command: installs dependencies, builds ferry, exports resnet18 from Debian's
# torchvision (random weights, fixed seed, cached under ${FERRY_CACHE:-~/.cache/ferry}/models), then runs
# ferry's main job on it. For now that is `ferry inspect` + `ferry run` (later: `ferry migrate`).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/setup.sh
bash scripts/build.sh
cache="${FERRY_CACHE:-$HOME/.cache/ferry}"
# -E -s: keep PYTHONPATH and user site-packages (PyPI's numpy 2) away from Debian's torch.
/usr/bin/python3 -E -s tests/models/export_models.py resnet18
model="$cache/models/resnet18/model.onnx"
out="$root/build/demo/resnet18"
echo
echo "== ferry inspect $model --shape input=1,3,224,224"
build/ferry inspect "$model" --shape input=1,3,224,224
echo
echo "== ferry run $model --shape input=1,3,224,224 --seed 0 --output-dir $out"
build/ferry run "$model" --shape input=1,3,224,224 --seed 0 --output-dir "$out"
echo
echo "demo: outputs written to $out"
