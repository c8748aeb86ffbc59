#!/usr/bin/env bash
# The README's main command: installs dependencies, builds ferry, exports resnet18 from Debian's
# torchvision (random weights, fixed seed, cached under ${FERRY_CACHE:-~/.cache/ferry}/models), then runs
# ferry's main job on it: `ferry migrate` to the Ascend 310P target (emulated on this CPU), which checks,
# compiles, compares, benchmarks and profiles it and writes a report. FERRY_DEMO_TARGET=cpu for the CPU.
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
target="${FERRY_DEMO_TARGET:-ascend310p}"
echo
echo "== ferry migrate $model --target $target --shape input=1,3,224,224 -o $out"
build/ferry migrate "$model" --target "$target" --shape input=1,3,224,224 -o "$out"
echo
echo "demo: open $out/report.html (report.json and model.ferry are next to it)"
