#!/usr/bin/env python3
"""Model test: `ferry run` on a cached model must match PyTorch and ONNX Runtime.

Run with the project venv after export_models.py and ort_reference.py:
    .venv/bin/python tests/models/check_model.py --ferry build/ferry NAME [--cache DIR] [--work DIR]

For every output: max|ferry - ref| <= 1e-4 * max|ref| against both references, and the same argmax
along the last axis (per batch row for the classifiers, per token for the transformer). A row whose
reference top-2 gap is itself within the tolerance is a tie, and either index passes.

With --compiled the model is also compiled (`ferry compile`) and the .ferry file run on the same inputs:
its outputs must be bitwise equal to the .onnx run's, and are the ones checked against the references.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
from torch_export_common import cache_dir  # noqa: E402

RTOL = 1e-4  # of max|reference|


def cache_root(arg=None):
    return cache_dir("models", arg)


def sanitize(name):
    """The CLI's file name for a tensor: characters outside A-Za-z0-9_.- become _."""
    return re.sub(r"[^A-Za-z0-9_.\-]", "_", name)


def compare(name, got, ref, ref_label):
    """Returns (ok, message) for one output against one reference."""
    if got.shape != ref.shape:
        return False, f"{name}: shape {list(got.shape)} != {ref_label} {list(ref.shape)}"
    if got.dtype != ref.dtype:
        return False, f"{name}: dtype {got.dtype} != {ref_label} {ref.dtype}"
    g = got.astype(np.float64)
    r = ref.astype(np.float64)
    if not np.all(np.isfinite(g)):
        return False, f"{name}: {int(np.sum(~np.isfinite(g)))} non-finite values"
    scale = float(np.max(np.abs(r)))
    tol = RTOL * scale
    diff = np.abs(g - r)
    err = float(np.max(diff))
    where = np.unravel_index(int(np.argmax(diff)), diff.shape)
    msgs = [f"{name} vs {ref_label}: max abs err {err:.3g} (rel {err / scale if scale else 0:.3g}, "
            f"tol {tol:.3g} = {RTOL:g} x max|ref| {scale:.3g}) at {list(map(int, where))}"]
    ok = err <= tol
    # argmax along the last axis, row by row
    ga = np.argmax(g.reshape(-1, g.shape[-1]), axis=-1)
    r2 = r.reshape(-1, r.shape[-1])
    ra = np.argmax(r2, axis=-1)
    bad = [i for i in range(len(ra)) if ga[i] != ra[i] and r2[i, ra[i]] - r2[i, ga[i]] > tol]
    ties = sum(1 for i in range(len(ra)) if ga[i] != ra[i]) - len(bad)
    msgs.append(f"  argmax: {len(ra) - len(bad) - ties}/{len(ra)} rows equal"
                + (f", {ties} ties within tolerance" if ties else "")
                + (f"; MISMATCH in rows {bad[:10]} (ferry {[int(ga[i]) for i in bad[:10]]}, "
                   f"{ref_label} {[int(ra[i]) for i in bad[:10]]})" if bad else ""))
    if not ok:
        msgs[0] += "  FAIL"
    return ok and not bad, "\n".join(msgs)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("name")
    ap.add_argument("--ferry", required=True, help="the ferry binary")
    ap.add_argument("--cache", help="models folder (default: ${FERRY_CACHE:-~/.cache/ferry}/models)")
    ap.add_argument("--work", help="folder for ferry's outputs (default: a temporary one)")
    ap.add_argument("--backend", help="passed to `ferry run --backend` (default: the CLI's)")
    ap.add_argument("--opt-level", help="passed to `ferry run --opt-level` (default: the CLI's)")
    ap.add_argument("--compiled", action="store_true",
                    help="also `ferry compile` the model to a .ferry file, run that, and require outputs "
                         "bitwise equal to running the .onnx")
    a = ap.parse_args()

    d = os.path.join(cache_root(a.cache), a.name)
    model = os.path.join(d, "model.onnx")
    for p in (model, os.path.join(d, "torch_out"), os.path.join(d, "ort_out")):
        if not os.path.exists(p):
            print(f"error: {p} missing: run tests/models/export_models.py (Debian python) and "
                  f"tests/models/ort_reference.py (venv) first", file=sys.stderr)
            return 1
    if not os.access(a.ferry, os.X_OK):
        print(f"error: ferry binary '{a.ferry}' not found", file=sys.stderr)
        return 1

    work = a.work or os.path.join(os.environ.get("TMPDIR", "/tmp"), f"ferry-model-{a.name}-{os.getpid()}")
    out = os.path.join(work, "out")
    flags = []
    if a.backend:
        flags += ["--backend", a.backend]
    if a.opt_level is not None:
        flags += ["--opt-level", a.opt_level]

    def ferry_run(model_path, out_dir):
        shutil.rmtree(out_dir, ignore_errors=True)
        os.makedirs(out_dir)
        cmd = [a.ferry, "run", model_path, "--inputs", os.path.join(d, "inputs"), "--output-dir", out_dir] + flags
        print("$ " + " ".join(cmd), flush=True)
        t0 = time.time()
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        secs = time.time() - t0
        print(p.stdout.rstrip())
        if p.returncode != 0:
            print(f"{a.name}: FAIL: ferry run exited {p.returncode} after {secs:.1f} s")
            return False
        print(f"{a.name}: ferry run took {secs:.1f} s")
        return True

    if not ferry_run(model, out):
        return 1
    ok = True
    if a.compiled:
        # compile -> run must compute exactly what running the .onnx computes (same kernels, same graph).
        compiled = os.path.join(work, "model.ferry")
        cmd = [a.ferry, "compile", model, "-o", compiled]
        if a.opt_level is not None:
            cmd += ["--opt-level", a.opt_level]
        print("$ " + " ".join(cmd), flush=True)
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        print(p.stdout.rstrip())
        if p.returncode != 0:
            print(f"{a.name}: FAIL: ferry compile exited {p.returncode}")
            return 1
        out_onnx = out
        out = os.path.join(work, "out_ferry")
        if not ferry_run(compiled, out):
            return 1
        for f in sorted(os.listdir(out_onnx)):
            x = np.load(os.path.join(out_onnx, f))
            path = os.path.join(out, f)
            y = np.load(path) if os.path.isfile(path) else None
            same = y is not None and x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes()
            print(f"{f}: .ferry output {'bitwise equal to' if same else 'DIFFERS from'} the .onnx output"
                  + ("" if same else "  FAIL"))
            ok = ok and same
        if sorted(os.listdir(out_onnx)) != sorted(os.listdir(out)):
            print(f"{a.name}: FAIL: output files differ: {sorted(os.listdir(out_onnx))} vs {sorted(os.listdir(out))}")
            ok = False

    names = sorted(f[:-4] for f in os.listdir(os.path.join(d, "torch_out")) if f.endswith(".npy"))
    for name in names:
        path = os.path.join(out, sanitize(name) + ".npy")
        if not os.path.isfile(path):
            print(f"{name}: FAIL: ferry wrote no {path} (it wrote {sorted(os.listdir(out))})")
            ok = False
            continue
        got = np.load(path)
        for label in ("torch", "ort"):
            ref = np.load(os.path.join(d, f"{label}_out", name + ".npy"))
            good, msg = compare(name, got, ref, label)
            print(msg)
            ok = ok and good
    if not a.work:
        shutil.rmtree(work, ignore_errors=True)
    print(f"{a.name}: {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
