"""`--target` on run / bench / compare: an Ascend target runs EMULATED on this CPU under its default
precision (fp16, as ATC) unless --precision says otherwise, and every output says so; a bad target is an
error naming it.

usage: test_target_run.py PATH/TO/ferry
"""
import json
import os

import numpy as np
from onnx import TensorProto, helper, numpy_helper

import cli_util as u
from cli_util import check, expect_error, model, save, vi

tmp = u.init()
F = TensorProto.FLOAT
rng = np.random.default_rng(5)
W = rng.standard_normal((8, 8)).astype(np.float32)
src = save(model([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], [vi("x", F, [2, 8])], [vi("y", F, [2, 8])],
                 [numpy_helper.from_array(W, "w")]), os.path.join(tmp, "m.onnx"))
X = (rng.standard_normal((2, 8)) * 3).astype(np.float32)
xin = os.path.join(tmp, "x.npy")
np.save(xin, X)


def run(tag, *flags):
    out = os.path.join(tmp, tag)
    rc, so, se = u.ferry("run", src, "--input", "x=" + xin, "--output-dir", out, *flags)
    return rc, so, se, (np.load(os.path.join(out, "y.npy")) if rc == 0 else None)


def h(a):
    return a.astype(np.float16).astype(np.float32)


rc, out, err, y = run("asc", "--target", "ascend310p")
check("run --target ascend310p: exit 0", rc == 0, err)
check("run: says EMULATED and fp16", "EMULATED" in out and "precision fp16" in out, out)
if y is not None:
    want = h(h(X).astype(np.float64) @ h(W).astype(np.float64)).astype(np.float32)
    check("run: the target's fp16 numerics", np.max(np.abs(y - want)) <= np.max(np.abs(want)) * 2 ** -10, np.max(np.abs(y - want)))
rc, out, err, y32 = run("asc32", "--target", "ascend310p", "--precision", "fp32")
check("--precision fp32 overrides the target's default", rc == 0 and "precision fp16" not in out and
      np.allclose(y32, X @ W, rtol=1e-5, atol=1e-5), out)
rc, out, err, yc = run("cpu", "--target", "cpu")
check("run --target cpu: fp32, not emulated", rc == 0 and "EMULATED" not in out and np.allclose(yc, X @ W, rtol=1e-5, atol=1e-5), out)

js = os.path.join(tmp, "b.json")
rc, out, err = u.ferry("bench", src, "--target", "ascend310p", "--iterations", "2", "--warmup", "0", "--json", js)
check("bench --target ascend310p: exit 0, says EMULATED", rc == 0 and "EMULATED" in out, (rc, out, err))
if rc == 0:
    b = json.load(open(js))
    check("bench json: target and precision", "ascend310p" in b["target"] and "fp16" in b["precision"], (b["target"], b["precision"]))
rc, out, err = u.ferry("compare", src, "--input", "x=" + xin, "--target", "ascend310p")
check("compare --target ascend310p: emulated fp16 candidate vs fp32", rc in (0, 3) and "EMULATED" in out and "fp16" in out, (rc, out))
expect_error("bad --target", ["run", src, "--input", "x=" + xin, "--target", "ascend9000"], "ascend9000")
u.finish()
