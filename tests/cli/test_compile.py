"""`ferry compile` end to end: the .ferry file runs through `ferry run` and `ferry inspect` and computes
exactly what the .onnx computes; dynamic-batch gears run their batch sizes and name the gears for any
other; bad flags are usage errors (exit 2); damaged .ferry files are errors (exit 1), never a crash.

usage: test_compile.py PATH/TO/ferry
"""
import os

import numpy as np
from onnx import TensorProto, helper, numpy_helper

import cli_util as u
from cli_util import check, model, save, vi

tmp = u.init()
F = TensorProto.FLOAT

w = numpy_helper.from_array(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4), "w")
b = numpy_helper.from_array(np.array([0.5, -0.25, 1.5, 0], np.float32), "b")
m = model([helper.make_node("MatMul", ["x", "w"], ["xw"], name="mm"),
           helper.make_node("Add", ["xw", "b"], ["xb"], name="add"),
           helper.make_node("Relu", ["xb"], ["y"], name="relu"),
           helper.make_node("Shape", ["y"], ["shape"], name="shape")],
          [vi("x", F, ["N", 3])], [vi("y", F, ["N", 4]), vi("shape", TensorProto.INT64, [2])], [w, b])
src = save(m, os.path.join(tmp, "model.onnx"))


def run_outputs(model_path, shape, tag, expect_rc=0):
    out_dir = os.path.join(tmp, "out_" + tag)
    rc, out, err = u.ferry("run", model_path, "--seed", "3", "--shape", "x=" + shape, "--output-dir", out_dir)
    check("run %s: exit %d" % (tag, expect_rc), rc == expect_rc, err)
    if rc != 0:
        return None, err
    return {f: np.load(os.path.join(out_dir, f)) for f in sorted(os.listdir(out_dir))}, err


# --- compile, run, inspect --------------------------------------------------------------------------------
fixed = os.path.join(tmp, "fixed.ferry")
rc, out, err = u.ferry("compile", src, "-o", fixed, "--input-shape", "x:2,3")
check("compile: exit 0", rc == 0, err)
check("compile: no stderr", err == "", err)
for needle in ("wrote " + fixed, "nodes: 4 -> ", "weights: ", "file: ", "time: "):
    check("compile: stdout shows %r" % needle, needle in out, out)
check("compile: leaves no temporary file", sorted(os.listdir(tmp)) == ["fixed.ferry", "model.onnx"], os.listdir(tmp))
with open(fixed, "rb") as f:
    head = f.read(12)
check("compile: file identifier FRRY", head[8:12] == b"FRRY", head)

ref, _ = run_outputs(src, "2,3", "onnx")
got, _ = run_outputs(fixed, "2,3", "ferry")
if ref and got:
    check("run .ferry: same output files", sorted(ref) == sorted(got), (sorted(ref), sorted(got)))
    for k in ref:
        check("run .ferry: %s bitwise equal to .onnx" % k,
              k in got and ref[k].dtype == got[k].dtype and ref[k].tobytes() == got[k].tobytes())
    x = np.load(os.path.join(tmp, "out_onnx", "y.npy"))
    check("run: output has the compiled shape", x.shape == (2, 4), x.shape)

rc, out, err = u.ferry("inspect", fixed)
check("inspect .ferry: exit 0", rc == 0, err)
check("inspect .ferry: shows the fixed input shape", "float32[2,3]" in out, out)

# A compiled file is recognised by content, not by name.
renamed = os.path.join(tmp, "renamed.onnx")
os.link(fixed, renamed)
got2, _ = run_outputs(renamed, "2,3", "renamed")
check("run: a .ferry file named .onnx still runs", got2 is not None and ref is not None and
      all(got2[k].tobytes() == ref[k].tobytes() for k in ref))

# --- dynamic batch ----------------------------------------------------------------------------------------
geared = os.path.join(tmp, "geared.ferry")
rc, out, err = u.ferry("compile", src, "-o", geared, "--dynamic-batch", "8,1,4,2")
check("compile gears: exit 0", rc == 0, err)
check("compile gears: summary lists the gears", "dynamic batch: 1, 2, 4, 8" in out, out)
rc, out, err = u.ferry("inspect", geared)
check("inspect gears: batch stays symbolic", "float32[N,3]" in out, out)
ref2, _ = run_outputs(src, "2,3", "onnx2")
got2, _ = run_outputs(geared, "2,3", "gear2")
if ref2 and got2:
    for k in ref2:
        check("gear 2: %s bitwise equal to .onnx" % k, k in got2 and ref2[k].tobytes() == got2[k].tobytes())
got8, _ = run_outputs(geared, "8,3", "gear8")
check("gear 8 runs", got8 is not None and got8["y.npy"].shape == (8, 4))
u.expect_error("gear 3: error names the gears", ["run", geared, "--shape", "x=3,3"],
               "input 'x' has batch 3", "compiled for batch sizes 1, 2, 4, 8", geared)

# A model whose inputs disagree on dim 0 cannot have a batch gear.
m2 = model([helper.make_node("Concat", ["a", "c"], ["s"], name="cat", axis=0)],
           [vi("a", F, [2, 3]), vi("c", F, [5, 3])], [vi("s", F, [7, 3])])
two = save(m2, os.path.join(tmp, "two.onnx"))
u.expect_error("compile gears: inputs with different dim 0", ["compile", two, "-o", os.path.join(tmp, "two.ferry"),
                                                              "--dynamic-batch", "1,2"], "dimension 0")
check("compile gears: failed compile leaves no file", not os.path.exists(os.path.join(tmp, "two.ferry")))

# --- bad flags: exit 2 ------------------------------------------------------------------------------------
out_x = os.path.join(tmp, "x.ferry")
for name, args in [("opt-level 7", ["--opt-level", "7"]), ("opt-level word", ["--opt-level", "fast"]),
                   ("gears 0", ["--dynamic-batch", "0,1"]), ("gears word", ["--dynamic-batch", "1,a"]),
                   ("gears twice", ["--dynamic-batch", "2,2"]), ("gears empty", ["--dynamic-batch", ""]),
                   ("input-shape without dims", ["--input-shape", "x"]),
                   ("input-shape bad dim", ["--input-shape", "x:2,-3"]), ("unknown flag", ["--fast"])]:
    rc, out, err = u.ferry("compile", src, "-o", out_x, *args)
    check("compile %s: exit 2" % name, rc == 2 and err.startswith("error:"), (rc, err))
rc, out, err = u.ferry("compile", src)
check("compile without -o: exit 2", rc == 2, (rc, err))
check("bad flags: nothing written", not os.path.exists(out_x))

# --- bad input: exit 1 ------------------------------------------------------------------------------------
u.expect_error("compile: unknown input in --input-shape", ["compile", src, "-o", out_x, "--input-shape", "zz:1,3"],
               "zz")
junk = os.path.join(tmp, "junk.onnx")
with open(junk, "wb") as f:
    f.write(b"\x00garbage" * 10)
u.expect_error("compile: garbage model", ["compile", junk, "-o", out_x], junk)
u.expect_error("compile: unwritable output", ["compile", src, "-o", os.path.join(tmp, "no", "dir", "m.ferry")],
               os.path.join("no", "dir", "m.ferry"))
data = open(fixed, "rb").read()
for frac in (0.1, 0.5, 0.99):
    cut = os.path.join(tmp, "cut.ferry")
    with open(cut, "wb") as f:
        f.write(data[:int(len(data) * frac)])
    u.expect_error("run: .ferry truncated to %d%%" % int(frac * 100), ["run", cut, "--shape", "x=2,3"], cut)
bad = bytearray(data)
bad[12:20] = b"\xff" * 8
badp = os.path.join(tmp, "bad.ferry")
with open(badp, "wb") as f:
    f.write(bytes(bad))
u.expect_error("run: corrupted .ferry", ["run", badp, "--shape", "x=2,3"], badp)
u.expect_error("inspect: corrupted .ferry", ["inspect", badp], badp)

# A default-domain opset newer than ferry knows: refused unless --allow-newer-opset.
newer = save(model([helper.make_node("Relu", ["x"], ["y"], name="relu")], [vi("x", F, [2, 3])], [vi("y", F, [2, 3])],
                   opset=99), os.path.join(tmp, "opset99.onnx"))
u.expect_error("compile refuses opset 99", ["compile", newer, "-o", os.path.join(tmp, "o99.ferry")], "opset99.onnx",
               "opset 99", "--allow-newer-opset")
rc, out, err = u.ferry("compile", newer, "-o", os.path.join(tmp, "o99.ferry"), "--allow-newer-opset")
check("compile --allow-newer-opset: exit 0", rc == 0, err)
u.finish()
