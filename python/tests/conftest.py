"""Shared fixtures of the Python package's tests (pytest python/tests; ctest runs them as python_tests).

The tests import the package from the build tree (build/python: the module next to a copy of
python/ferry) unless FERRY_PYTHON_PATH names another, so they test what was just built.
"""
import os
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("FERRY_BUILD_DIR", os.path.join(ROOT, "build"))
sys.path.insert(0, os.environ.get("FERRY_PYTHON_PATH", os.path.join(BUILD, "python")))
# The venv's editable install (scikit-build-core) puts a finder ahead of sys.path that maps `ferry` to the
# venv's copy of the extension module; without it, `import ferry` takes the build tree's just-built module
# (build-asan/'s under the sanitizers).
sys.meta_path[:] = [f for f in sys.meta_path if type(f).__name__ != "ScikitBuildRedirectingFinder"]
CACHE = os.environ.get("FERRY_CACHE", os.path.join(os.path.expanduser("~"), ".cache", "ferry"))


@pytest.fixture(scope="session")
def ferry_cli():
    """The ferry command of the same build."""
    path = os.path.join(BUILD, "ferry")
    if not os.access(path, os.X_OK):
        pytest.fail(f"{path} is missing: build first (scripts/build.sh)")
    return path


def cached_torch_model(name):
    """A model-test model exported by Debian's torch 1.13 (TorchScript exporter) into the per-machine
    cache (tests/models/export_models.py; a no-op when up to date): (model.onnx, {input: array})."""
    subprocess.run(["/usr/bin/python3", "-E", "-s", os.path.join(ROOT, "tests", "models", "export_models.py"), name],
                   check=True, stdout=subprocess.DEVNULL)
    import numpy as np
    folder = os.path.join(CACHE, "models", name)
    inputs = {f[:-4]: np.load(os.path.join(folder, "inputs", f))
              for f in sorted(os.listdir(os.path.join(folder, "inputs"))) if f.endswith(".npy")}
    return os.path.join(folder, "model.onnx"), inputs
