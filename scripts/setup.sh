#!/usr/bin/env bash
# Installs every dependency ferry needs, idempotently: Debian packages through apt,
# PyPI packages into the project venv (.venv). Safe to run again; does nothing when all is there.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

apt_packages=(
  build-essential cmake ninja-build pkg-config git ccache
  libonnx-dev libprotobuf-dev protobuf-compiler
  libdnnl-dev libflatbuffers-dev flatbuffers-compiler
  nlohmann-json3-dev libcli11-dev libfmt-dev libtomlplusplus-dev
  libhwy-dev libsleef-dev libfp16-dev
  libgtest-dev libgmock-dev
  libturbojpeg0-dev libpng-dev  # ferry evaluate decodes JPEG/PNG datasets
  python3 python3-venv python3-numpy python3-torch python3-torchvision
  chromium  # renders ferry migrate's report.html in a test (headless)
  clang libclang-rt-dev  # scripts/fuzz.sh: libFuzzer targets (tests/fuzz)
)

missing=()
for p in "${apt_packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The venv holds PyPI's onnx (with the node-test data), onnxruntime and numpy. It is kept apart
# from Debian's python so PyPI's numpy never shadows the one Debian's torch was built against.
venv="$root/.venv"
if [ ! -x "$venv/bin/python" ]; then
  echo "setup: creating venv $venv"
  /usr/bin/python3 -m venv "$venv"
fi
if ! "$venv/bin/python" -c "import onnx, onnxruntime, numpy" 2>/dev/null; then
  echo "setup: installing PyPI packages into $venv"
  "$venv/bin/pip" install -q --disable-pip-version-check onnx onnxruntime numpy
fi
# Intel MKL (PyPI mkl-devel: headers, libraries, GNU-OpenMP threading layer) for the cpu backend's
# fp32 GEMMs with constant weights, where its packed sgemm beats oneDNN 2.6's matmul by 8-30% on
# transformer shapes (bench/README.md). Pinned: ferry adopts MKL-packed weights and unpacks them, so
# a new packed format should come with a rerun of the tests. The build works without it (no MKL path).
mkl_version=2026.2.1
if [ ! -f "$venv/include/mkl_cblas.h" ] || [ ! -f "$venv/lib/libmkl_core.so.3" ] ||
   ! "$venv/bin/pip" show mkl-devel 2>/dev/null | grep -x "Version: $mkl_version" >/dev/null; then
  echo "setup: installing mkl-devel $mkl_version into $venv"
  "$venv/bin/pip" install -q --disable-pip-version-check "mkl-devel==$mkl_version" "mkl-include==$mkl_version" "mkl==$mkl_version"
fi
# The ferry Python package's build and test tools (scikit-build-core, pybind11, pytest), and PyPI's
# torch 2.x with torchvision and onnxscript for ferry.torch: its exporter (torch.onnx.export(dynamo=True))
# writes the per-node module metadata ferry.torch builds on. Debian's torch 1.13 (above) stays the
# exporter of the model tests. torch pulls about 5 GB (its CUDA libraries); it runs on the CPU here.
if ! "$venv/bin/python" -c "import scikit_build_core, pybind11, pytest" 2>/dev/null; then
  echo "setup: installing the Python package's build tools into $venv"
  "$venv/bin/pip" install -q --disable-pip-version-check scikit-build-core pybind11 pytest
fi
if ! "$venv/bin/python" -c "import torch, torchvision, onnxscript" 2>/dev/null; then
  echo "setup: installing torch, torchvision and onnxscript into $venv (about 5 GB)"
  "$venv/bin/pip" install -q --disable-pip-version-check torch torchvision onnxscript
fi
# PyPI's MindSpore (CPU wheel, about 800 MB) for the PyTorch -> MindSpore weights route: its test builds
# a ResNet in MindSpore and loads the checkpoint ferry converted (python/tests/test_torch_mindspore.py).
if ! "$venv/bin/python" -c "import mindspore" 2>/dev/null; then
  echo "setup: installing mindspore into $venv (about 800 MB)"
  "$venv/bin/pip" install -q --disable-pip-version-check mindspore
fi
# ferry.ray (Ray Data, for evaluate on a cluster) and scikit-image, whose bundled photographs are the
# evaluate tests' image set (nothing is downloaded at test time).
if ! "$venv/bin/python" -c "import ray.data, skimage" 2>/dev/null; then
  echo "setup: installing ray[data] and scikit-image into $venv"
  "$venv/bin/pip" install -q --disable-pip-version-check "ray[data]" scikit-image
fi
# The ferry package itself, editable (pyproject.toml): python/ferry from the source tree and the
# extension module from build/, the tree scripts/build.sh builds. build.sh runs first so the C++ build
# shows its progress (the first time takes about 15 minutes on 2 cores); pip then configures the same
# tree, finds everything built and installs the package.
if ! (cd / && "$venv/bin/python" -c "import ferry" 2>/dev/null); then
  echo "setup: building ferry for its Python package"
  bash "$root/scripts/build.sh"
  echo "setup: installing the ferry Python package into $venv"
  "$venv/bin/pip" install -q --disable-pip-version-check --no-build-isolation -e "$root"
fi
echo "setup: ok"
