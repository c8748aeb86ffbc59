#!/usr/bin/env python3
"""Runs ONNX Runtime on the cached model-test models: writes <cache>/<name>/ort_out/<output name>.npy.

Run with the project venv (it has PyPI's onnxruntime and numpy), after export_models.py:
    .venv/bin/python tests/models/ort_reference.py [--cache DIR] [--force] [NAME ...]
The outputs are kept while the model's export stamp and the onnxruntime version stay the same.
"""
import argparse
import os
import shutil
import sys
import time

import numpy as np
import onnxruntime as ort

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
from torch_export_common import cache_dir  # noqa: E402

MODEL_NAMES = ["resnet18", "mobilenet_v2", "transformer_encoder"]


def cache_root(arg=None):
    return cache_dir("models", arg)


def read_stamp(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


def run_one(d):
    """ORT on model.onnx with inputs/; returns {output name: array}."""
    so = ort.SessionOptions()
    so.intra_op_num_threads = 2
    # The reference should be ORT's plain numerics, not its fused/approximated kernels.
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    s = ort.InferenceSession(os.path.join(d, "model.onnx"), so, providers=["CPUExecutionProvider"])
    feeds = {i.name: np.load(os.path.join(d, "inputs", f"{i.name}.npy")) for i in s.get_inputs()}
    names = [o.name for o in s.get_outputs()]
    return dict(zip(names, s.run(names, feeds)))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("names", nargs="*")
    ap.add_argument("--cache")
    ap.add_argument("--force", action="store_true")
    a = ap.parse_args()
    root = cache_root(a.cache)
    rc = 0
    for n in a.names or MODEL_NAMES:
        d = os.path.join(root, n)
        export_stamp = read_stamp(os.path.join(d, "stamp"))
        if export_stamp is None or not os.path.isfile(os.path.join(d, "model.onnx")):
            print(f"error: {n}: not exported in {d} (run /usr/bin/python3 tests/models/export_models.py)",
                  file=sys.stderr)
            rc = 1
            continue
        stamp = f"{export_stamp} onnxruntime={ort.__version__}"
        out = os.path.join(d, "ort_out")
        if not a.force and read_stamp(os.path.join(out, "stamp")) == stamp:
            print(f"ort: {n}: up to date")
            continue
        t0 = time.time()
        outs = run_one(d)
        tmp = f"{out}.tmp-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        os.makedirs(tmp)
        for name, v in outs.items():
            np.save(os.path.join(tmp, f"{name}.npy"), v)
        with open(os.path.join(tmp, "stamp"), "w") as f:
            f.write(stamp + "\n")
        shutil.rmtree(out, ignore_errors=True)
        os.replace(tmp, out)
        # Sanity: ORT and PyTorch must agree, else the reference itself is suspect.
        for name, v in outs.items():
            t = np.load(os.path.join(d, "torch_out", f"{name}.npy"))
            err = float(np.max(np.abs(v.astype(np.float64) - t))) if v.shape == t.shape else float("inf")
            print(f"ort: {n}: {name} {list(v.shape)} in {time.time() - t0:.2f} s; "
                  f"max|ort - torch| = {err:.3g} (max|torch| = {float(np.max(np.abs(t))):.3g})")
    return rc


if __name__ == "__main__":
    sys.exit(main())
