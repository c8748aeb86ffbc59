"""Dynamic shapes in `ferry compile`: --dynamic-dims gears (one session per gear, picked from the input
shapes) and --input-shape ranges (1~8, -1), each run through `ferry run`, matching the .onnx outputs; an
input that fits no gear or range gets an error naming what the model accepts; malformed flags are
usage errors.

usage: test_dynamic_shapes.py PATH/TO/ferry
"""
import os

import numpy as np
from onnx import TensorProto, helper, numpy_helper

import cli_util as u
from cli_util import check, model, save, vi

tmp = u.init()
F = TensorProto.FLOAT
w = numpy_helper.from_array(np.linspace(-1, 1, 4 * 3 * 3 * 3, dtype=np.float32).reshape(4, 3, 3, 3), "w")
m = model([helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
           helper.make_node("Relu", ["c"], ["y"], name="relu")],
          [vi("x", F, ["N", 3, "H", "W"])], [vi("y", F, ["N", 4, "H", "W"])], [w])
src = save(m, os.path.join(tmp, "conv.onnx"))


def run(path, shape, tag):
    out = os.path.join(tmp, "out_" + tag)
    rc, so, err = u.ferry("run", path, "--seed", "5", "--shape", "x=" + shape, "--output-dir", out)
    y = np.load(os.path.join(out, "y.npy")) if rc == 0 else None
    return rc, err, y


gears = os.path.join(tmp, "gears.ferry")
rc, out, err = u.ferry("compile", src, "-o", gears, "--input-shape", "x:1,3,-1,-1", "--dynamic-dims", "8,8;12,16")
check("compile --dynamic-dims", rc == 0 and "dynamic dims gears: 8,8;12,16" in out, out + err)
for shape, tag in (("1,3,8,8", "g0"), ("1,3,12,16", "g1")):
    rc, err, y = run(gears, shape, tag)
    rc2, err2, ref = run(src, shape, tag + "_onnx")
    check("gear %s runs and matches the .onnx" % shape, rc == 0 and rc2 == 0 and np.allclose(y, ref, atol=1e-5), err + err2)
rc, err, y = run(gears, "1,3,10,10", "nogear")
check("a shape matching no gear names the gears", rc == 1 and "8,8;12,16" in err and "x dim 2" in err, err)

ranges = os.path.join(tmp, "ranges.ferry")
rc, out, err = u.ferry("compile", src, "-o", ranges, "--input-shape", "x:1~4,3,8,-1")
check("compile --input-shape ranges", rc == 0 and "x:1~4,3,8,-1" in out, out + err)
rc, err, y = run(ranges, "3,3,8,5", "r_ok")
rc2, err2, ref = run(src, "3,3,8,5", "r_ok_onnx")
check("a shape inside the range runs and matches", rc == 0 and rc2 == 0 and np.allclose(y, ref, atol=1e-5), err + err2)
rc, err, y = run(ranges, "5,3,8,5", "r_big")
check("batch above the range names the range", rc == 1 and "x:1~4,3,8,-1" in err and "dim 0 is 5" in err, err)

u.expect_error("gear count must match the dynamic dims",
               ["compile", src, "-o", os.path.join(tmp, "bad.ferry"), "--input-shape", "x:1,3,-1,-1", "--dynamic-dims", "8;12"],
               "2 dynamic input dim", "x dim 2")
rc, out, err = u.ferry("compile", src, "-o", os.path.join(tmp, "bad2.ferry"), "--dynamic-dims", "8,8;8")
check("ragged --dynamic-dims is a usage error", rc == 2 and "same number" in err, err)
rc, out, err = u.ferry("compile", src, "-o", os.path.join(tmp, "bad3.ferry"), "--input-shape", "x:4~1,3,8,8")
check("empty range is a usage error", rc == 2 and "empty" in err, err)
u.expect_error("--dynamic-batch with --dynamic-dims",
               ["compile", src, "-o", os.path.join(tmp, "bad4.ferry"), "--dynamic-batch", "1,2", "--input-shape",
                "x:-1,3,-1,-1", "--dynamic-dims", "1,8,8"], "cannot be combined")
u.finish()
