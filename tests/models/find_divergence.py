#!/usr/bin/env python3
"""Finds the first ONNX node where `ferry run` diverges from ONNX Runtime on a cached model.

Every node output becomes a graph output (a copy of the model in --work), both ferry and ORT run it
on the cached input, and the nodes are compared in graph order with the model-test tolerance
(max abs err <= 1e-4 * max|ORT|; integer tensors exactly). Prints the first failing node with its
inputs' errors, and the worst nodes. Debugging aid, not a test:
    .venv/bin/python tests/models/find_divergence.py --ferry build/ferry NAME [--work DIR]
"""
import argparse
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
from torch_export_common import cache_dir  # noqa: E402

RTOL = 1e-4


def cache_root(arg=None):
    return cache_dir("models", arg)


def sanitize(name):
    return re.sub(r"[^A-Za-z0-9_.\-]", "_", name)


def error(got, ref):
    """(relative error, text): max|got-ref| / max|ref|, inf for shape/dtype mismatch."""
    if got is None:
        return float("inf"), "missing"
    if got.shape != ref.shape:
        return float("inf"), f"shape {list(got.shape)} vs ort {list(ref.shape)}"
    if got.dtype != ref.dtype:
        return float("inf"), f"dtype {got.dtype} vs ort {ref.dtype}"
    if got.size == 0:
        return 0.0, "empty"
    if not np.issubdtype(ref.dtype, np.floating):
        n = int(np.sum(got != ref))
        return (0.0 if n == 0 else float("inf")), f"{n} of {ref.size} elements differ"
    d = np.abs(got.astype(np.float64) - ref.astype(np.float64))
    scale = float(np.max(np.abs(ref))) or 1.0
    err = float(np.nanmax(d)) if not np.all(np.isnan(d)) else float("inf")
    if np.any(np.isnan(got) != np.isnan(ref)):
        return float("inf"), "NaN where ORT has none (or the reverse)"
    where = list(map(int, np.unravel_index(int(np.nanargmax(d)), d.shape)))
    return err / scale, f"max abs err {err:.3g} at {where}, max|ort| {scale:.3g}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("name")
    ap.add_argument("--ferry", required=True)
    ap.add_argument("--cache")
    ap.add_argument("--work", default=None)
    ap.add_argument("--worst", type=int, default=8, help="how many of the worst nodes to list")
    a = ap.parse_args()

    d = os.path.join(cache_root(a.cache), a.name)
    work = os.path.abspath(a.work or f"/tmp/ferry-divergence-{a.name}")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(os.path.join(work, "out"))

    m = onnx.shape_inference.infer_shapes(onnx.load(os.path.join(d, "model.onnx")))
    g = m.graph
    known = {v.name: v for v in list(g.value_info) + list(g.output)}
    have = {o.name for o in g.output}
    for node in g.node:
        for o in node.output:
            if o and o not in have:
                vi = known.get(o)
                if vi is None or not vi.type.tensor_type.elem_type:
                    continue  # no type inferred: ORT needs one on a graph output
                g.output.append(vi)
                have.add(o)
    probe = os.path.join(work, "probe.onnx")
    onnx.save(m, probe)

    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    s = ort.InferenceSession(probe, so, providers=["CPUExecutionProvider"])
    feeds = {i.name: np.load(os.path.join(d, "inputs", f"{i.name}.npy")) for i in s.get_inputs()}
    names = [o.name for o in s.get_outputs()]
    ref = dict(zip(names, s.run(names, feeds)))

    cmd = [a.ferry, "run", probe, "--inputs", os.path.join(d, "inputs"), "--output-dir", os.path.join(work, "out")]
    print("$ " + " ".join(cmd), flush=True)
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode != 0:
        print(p.stdout[-4000:])
        print(f"ferry run exited {p.returncode}")
        return 1

    def got(name):
        f = os.path.join(work, "out", sanitize(name) + ".npy")
        return np.load(f) if os.path.isfile(f) else None

    rows = []
    first = None
    for i, node in enumerate(g.node):
        for o in node.output:
            if o not in ref:
                continue
            rel, txt = error(got(o), ref[o])
            rows.append((rel, i, node, o, txt))
            if first is None and rel > RTOL:
                first = (i, node, o, rel, txt)
    print(f"{a.name}: compared {len(rows)} node outputs against ORT")
    if first is None:
        print("no node exceeds the tolerance")
    else:
        i, node, o, rel, txt = first
        print(f"FIRST DIVERGENCE: node #{i} '{node.name}' ({node.op_type}), output '{o}': rel {rel:.3g} ({txt})")
        print("  attributes: " + ", ".join(f"{at.name}={onnx.helper.get_attribute_value(at)}"
                                           for at in node.attribute if at.type != onnx.AttributeProto.TENSOR))
        for x in node.input:
            if x in ref:
                r, t = error(got(x), ref[x])
                print(f"  input '{x}' {list(ref[x].shape)} {ref[x].dtype}: rel {r:.3g} ({t})")
            elif x:
                print(f"  input '{x}': initializer, graph input or constant")
    print(f"worst {a.worst}:")
    for rel, i, node, o, txt in sorted(rows, key=lambda r: -r[0])[:a.worst]:
        print(f"  #{i} {node.op_type} '{node.name}' -> '{o}': rel {rel:.3g} ({txt})")
    return 0 if first is None else 1


if __name__ == "__main__":
    sys.exit(main())
