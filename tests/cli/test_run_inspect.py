"""`ferry run` and `ferry inspect` on small valid models: outputs land in DIR/<sanitized name>.npy and
nowhere else, values match what the model computes, seeds are deterministic, inputs load from .npy,
folders and .npz; inspect prints inputs/outputs, the op histogram, parameters and FLOPs.

usage: test_run_inspect.py PATH/TO/ferry
"""
import json
import os
import re

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import cli_util as u
from cli_util import check, model, save, vi

tmp = u.init()
F = TensorProto.FLOAT

# --- ferry run ----------------------------------------------------------------------------------------
# Output names with '/', ':' and a '..' that must not become a path.
w = numpy_helper.from_array(np.array([10, 20, 30], np.float32), "w")
m = model([helper.make_node("Identity", ["in:0"], ["out/y:0"], name="id"),
           helper.make_node("Add", ["in:0", "w"], ["../escape"], name="add"),
           helper.make_node("Identity", ["mask"], ["mask_out"], name="id2")],
          [vi("in:0", F, [2, 3]), vi("mask", TensorProto.BOOL, [4])],
          [vi("out/y:0", F, [2, 3]), vi("../escape", F, [2, 3]), vi("mask_out", TensorProto.BOOL, [4])], [w])
tiny = save(m, os.path.join(tmp, "tiny.onnx"))
out_dir = os.path.join(tmp, "work", "out")
rc, out, err = u.ferry("run", tiny, "--seed", "7", "--output-dir", out_dir)
check("run: exit 0", rc == 0, err)
check("run: no stderr on success", err == "", err)
files = sorted(os.listdir(out_dir)) if os.path.isdir(out_dir) else []
check("run: writes sanitized file names", files == [".._escape.npy", "mask_out.npy", "out_y_0.npy"], files)
check("run: nothing written outside DIR",
      os.path.isdir(os.path.join(tmp, "work")) and sorted(os.listdir(os.path.join(tmp, "work"))) == ["out"] and not os.path.exists(os.path.join(tmp, "escape.npy")))
if files:
    y = np.load(os.path.join(out_dir, "out_y_0.npy"))
    e = np.load(os.path.join(out_dir, ".._escape.npy"))
    mk = np.load(os.path.join(out_dir, "mask_out.npy"))
    check("run: output dtype/shape", y.dtype == np.float32 and y.shape == (2, 3), (y.dtype, y.shape))
    check("run: random floats in [-1, 1)", y.min() >= -1 and y.max() < 1 and len(np.unique(y)) == 6, y)
    check("run: Add output is input + w", np.array_equal(e, y + np.array([10, 20, 30], np.float32)), e)
    check("run: bool output", mk.dtype == np.bool_ and mk.shape == (4,), mk)
for needle in ("inputs:", "in:0: float32[2,3] (random)", "mask: bool[4] (random)", "outputs:", "out/y:0: float32[2,3]",
               "min ", "max ", "mean ", "mask_out: bool[4]", "wrote "):
    check("run: stdout shows %r" % needle, needle in out, out)

# Same seed, same inputs; another seed, other inputs.
rc2, out2, _ = u.ferry("run", tiny, "--seed", "7")
rc3, out3, _ = u.ferry("run", tiny, "--seed", "8")
strip = lambda s: re.sub(r"ran in .*", "", s)
check("run: --seed is deterministic", rc2 == 0 and strip(out2) == strip(out.split("wrote")[0].split("note:")[0]),
      out2)
check("run: another seed gives other values", rc3 == 0 and strip(out3) != strip(out2))
rc, outn, err = u.ferry("run", tiny, "--normal", "--seed", "1")
check("run: --normal works", rc == 0, err)

# Inputs from files: --input, --inputs DIR (sanitized names) and --inputs FILE.npz.
x = np.arange(6, dtype=np.float32).reshape(2, 3)
mask = np.array([True, False, True, True])
in_dir = os.path.join(tmp, "inputs")
os.makedirs(in_dir)
np.save(os.path.join(in_dir, "in_0.npy"), x)
np.save(os.path.join(in_dir, "mask.npy"), mask)
for label, args in (("--input", ["--input", "in:0=" + os.path.join(in_dir, "in_0.npy"),
                                 "--input", "mask=" + os.path.join(in_dir, "mask.npy")]),
                    ("--inputs DIR", ["--inputs", in_dir])):
    od = os.path.join(tmp, "o_" + label.replace(" ", "_").strip("-"))
    rc, out, err = u.ferry("run", tiny, *args, "--output-dir", od)
    ok = rc == 0 and np.array_equal(np.load(os.path.join(od, ".._escape.npy")), x + [10, 20, 30]) and \
        np.array_equal(np.load(os.path.join(od, "mask_out.npy")), mask)
    check("run: inputs from %s" % label, ok, err + out)
for comp in (False, True):
    npz = os.path.join(tmp, "in_%d.npz" % comp)
    (np.savez_compressed if comp else np.savez)(npz, **{"in:0": x, "mask": mask})
    od = os.path.join(tmp, "o_npz_%d" % comp)
    rc, out, err = u.ferry("run", tiny, "--inputs", npz, "--output-dir", od)
    check("run: inputs from .npz (compressed=%s)" % comp,
          rc == 0 and np.array_equal(np.load(os.path.join(od, "out_y_0.npy")), x), err + out)
# Mixed: one input from a file, the other random.
rc, out, err = u.ferry("run", tiny, "--input", "mask=" + os.path.join(in_dir, "mask.npy"))
check("run: one input given, the other random", rc == 0 and "in:0: float32[2,3] (random)" in out, err + out)
# Big-endian and Fortran-ordered .npy inputs are converted.
np.save(os.path.join(tmp, "be.npy"), np.asfortranarray(x.astype(">f4")))
rc, out, err = u.ferry("run", tiny, "--input", "in:0=" + os.path.join(tmp, "be.npy"), "--output-dir",
                       os.path.join(tmp, "o_be"))
check("run: big-endian Fortran .npy input",
      rc == 0 and np.array_equal(np.load(os.path.join(tmp, "o_be", "out_y_0.npy")), x), err + out)

# Dynamic dims: --shape, and a symbolic dim shared by two inputs is taken from the one given.
dyn = save(model([helper.make_node("Add", ["a", "b"], ["c"], name="add")],
                 [vi("a", F, ["batch", 3]), vi("b", F, ["batch", 3])], [vi("c", F, ["batch", 3])]),
           os.path.join(tmp, "dyn.onnx"))
rc, out, err = u.ferry("run", dyn, "--shape", "a=5,3")
check("run: --shape fills dynamic dims (and the shared symbol)",
      rc == 0 and "a: float32[5,3]" in out and "b: float32[5,3]" in out, err + out)

# --- ferry inspect -------------------------------------------------------------------------------------
rng = np.random.default_rng(0)
inits = [numpy_helper.from_array(rng.standard_normal(s).astype(np.float32), n)
         for n, s in (("W", (4, 3, 3, 3)), ("B", (4,)), ("W2", (64, 10)), ("B2", (10,)), ("W3", (10, 5)))]
then_g = helper.make_graph([helper.make_node("Identity", ["mm"], ["t"], name="then_id")], "then", [],
                           [vi("t", F, [1, 5])])
else_g = helper.make_graph([helper.make_node("Neg", ["mm"], ["e"], name="else_neg")], "else", [],
                           [vi("e", F, [1, 5])])
nodes = [helper.make_node("Conv", ["x", "W", "B"], ["c"], name="conv", pads=[1, 1, 1, 1]),
         helper.make_node("Relu", ["c"], ["r"], name="relu"),
         helper.make_node("MaxPool", ["r"], ["p"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
         helper.make_node("Flatten", ["p"], ["f"], name="flatten"),
         helper.make_node("Gemm", ["f", "W2", "B2"], ["g"], name="gemm"),
         helper.make_node("MatMul", ["g", "W3"], ["mm"], name="matmul"),
         helper.make_node("If", ["flag"], ["y"], name="if", then_branch=then_g, else_branch=else_g)]
cnn = model(nodes, [vi("x", F, [1, 3, 8, 8]), vi("flag", TensorProto.BOOL, [])], [vi("y", F, [1, 5])], inits)
cnn = onnx.shape_inference.infer_shapes(cnn)  # value_info with static shapes for the FLOP estimate
cnn_path = save(cnn, os.path.join(tmp, "cnn.onnx"))
json_path = os.path.join(tmp, "cnn.json")
rc, out, err = u.ferry("inspect", cnn_path, "--json", json_path)
check("inspect: exit 0", rc == 0, err)
expected_flops = (2 * 256 * 27 + 256) + 256 + 64 * 4 + (2 * 10 * 64 + 10) + 2 * 5 * 10  # = 15982
for pattern in (r"inputs \(2\):\s+x\s+float32\[1,3,8,8\]\s+flag\s+bool\[\]", r"outputs \(1\):\s+y\s+float32\[1,5\]",
                r"opsets: ai.onnx 17", r"nodes: 9 \(2 in 2 subgraphs\)", r"Conv\s+1\b", r"Neg\s+1\b", r"If\s+1\b",
                r"parameters: 812 \(3(\.\d+)? KB in 5 initializers\)", r"FLOPs: 15\.98 KFLOPs",
                r"nodes inside subgraphs not counted"):
    check("inspect: prints /%s/" % pattern, re.search(pattern, out) is not None, out)
check("inspect: no 'unknown' FLOPs for a static model", "unknown for" not in out, out)
try:
    j = json.load(open(json_path))
except Exception as ex:  # noqa: BLE001
    j = {}
    check("inspect: --json is valid JSON", False, ex)
check("inspect: JSON FLOPs exact", j.get("flops", {}).get("estimate") == expected_flops, j.get("flops"))
check("inspect: JSON histogram", j.get("op_histogram", {}).get("Gemm") == 1 and j.get("nodes") == 9, j)
check("inspect: JSON parameters", j.get("parameters") == 812 and j.get("parameter_bytes") == 3248, j)
rc, outj, err = u.ferry("inspect", cnn_path, "--json", "-")
check("inspect: --json - prints JSON only", rc == 0 and json.loads(outj)["nodes"] == 9, err)

# Dynamic shapes: the estimate says how many nodes it could not count.
dyn_mm = save(model([helper.make_node("MatMul", ["x", "W3"], ["y"], name="mm"),
                     helper.make_node("Relu", ["y"], ["z"], name="relu")],
                    [vi("x", F, ["N", 10])], [vi("z", F, ["N", 5])], [inits[4]]), os.path.join(tmp, "dyn_mm.onnx"))
rc, out, err = u.ferry("inspect", dyn_mm)
check("inspect: dynamic model says FLOPs need shapes, naming the input and the --shape to pass",
      rc == 0 and "FLOPs: unknown: input 'x' has dynamic dims; pass --shape x=<N>,10" in out, err + out)
check("inspect: dynamic model prints no partial FLOP count", re.search(r"FLOPs: [\d.]+ ", out) is None, out)
check("inspect: symbolic dims printed", "x     float32[N,10]" in out or "float32[N,10]" in out, out)
# --shape makes the dynamic dims concrete and re-infers shapes (elementwise ops: 10 + 10 FLOPs).
dyn_ew = save(model([helper.make_node("Add", ["x", "x"], ["y"], name="add"),
                     helper.make_node("Relu", ["y"], ["z"], name="relu")],
                    [vi("x", F, ["N", 5])], [vi("z", F, ["N", 5])]), os.path.join(tmp, "dyn_ew.onnx"))
rc, out, err = u.ferry("inspect", dyn_ew, "--shape", "x=2,5", "--json", "-")
try:
    fl = json.loads(out)["flops"]
except Exception:  # noqa: BLE001
    fl = {}
check("inspect --shape: dynamic FLOPs counted", rc == 0 and fl.get("estimate") == 20 and
      fl.get("unknown_dynamic_nodes") == 0, err + out)
# A dynamic H/W image input: the partial count (only the shape-free nodes) used to read "0 FLOPs".
dyn_hw = save(model([helper.make_node("Conv", ["img", "W", "B"], ["c"], name="conv", pads=[1, 1, 1, 1]),
                     helper.make_node("Relu", ["c"], ["r"], name="relu")],
                    [vi("img", F, [1, 3, "height", "width"])], [vi("r", F, [1, 4, "height", "width"])], inits[:2]),
              os.path.join(tmp, "dyn_hw.onnx"))
rc, out, err = u.ferry("inspect", dyn_hw)
check("inspect: dynamic H/W says FLOPs need --shape img=1,3,<height>,<width>",
      rc == 0 and "FLOPs: unknown: input 'img' has dynamic dims; pass --shape img=1,3,<height>,<width>" in out and
      re.search(r"FLOPs: [\d.]+ ", out) is None, err + out)
rc, out, err = u.ferry("inspect", dyn_hw, "--shape", "img=1,3,8,8")
check("inspect: dynamic H/W with --shape counts", rc == 0 and "FLOPs: 14.34 KFLOPs" in out, err + out)
# Weights in Constant nodes (Paddle's exporter) count as parameters; an int64 shape Constant does not.
wc = rng.standard_normal((3, 4)).astype(np.float32)
bc = rng.standard_normal((4,)).astype(np.float32)
paddle = save(model([helper.make_node("Constant", [], ["Wc"], name="w_const", value=numpy_helper.from_array(wc)),
                     helper.make_node("Constant", [], ["Bc"], name="b_const", value=numpy_helper.from_array(bc)),
                     helper.make_node("Constant", [], ["shp"], name="shape_const",
                                      value=numpy_helper.from_array(np.array([2, 2], np.int64))),
                     helper.make_node("MatMul", ["x", "Wc"], ["mm"], name="mm"),
                     helper.make_node("Add", ["mm", "Bc"], ["a"], name="add"),
                     helper.make_node("Reshape", ["a", "shp"], ["y"], name="reshape")],
                    [vi("x", F, [1, 3])], [vi("y", F, [2, 2])]), os.path.join(tmp, "paddle.onnx"))
rc, out, err = u.ferry("inspect", paddle)
check("inspect: Constant-node weights counted as parameters",
      rc == 0 and "parameters: 16 (64 B in 0 initializers and 2 Constant nodes; 16 in Constant nodes)" in out, err + out)
rc, out, err = u.ferry("inspect", paddle, "--json", "-")
j = json.loads(out) if rc == 0 else {}
check("inspect: JSON Constant-node parameters", j.get("parameters") == 16 and j.get("constant_parameters") == 16 and
      j.get("constant_nodes") == 2 and j.get("parameter_bytes") == 64, j)
expect = u.expect_error("inspect --shape with a wrong rank", ["inspect", dyn_ew, "--shape", "x=2"], "rank")
# Ops ferry cannot run are reported, not fatal, for inspect.
unk = save(model([helper.make_node("FooBar", ["x"], ["y"], name="foo")], [vi("x", F, [2])], [vi("y", F, [2])]),
           os.path.join(tmp, "unk.onnx"))
rc, out, err = u.ferry("inspect", unk)
check("inspect: unsupported ops listed", rc == 0 and "unsupported by ferry: FooBar (1)" in out, err + out)

rc, out, err = u.ferry("--version")
check("--version", rc == 0 and out.startswith("ferry "), out + err)
rc, out, err = u.ferry("--help")
check("--help lists the subcommands", rc == 0 and "inspect" in out and "run" in out, out + err)
rc, out, err = u.ferry("run", "--help")
check("run --help lists the flags", rc == 0 and all(f in out for f in ("--input", "--inputs", "--shape", "--seed",
                                                                        "--output-dir")), out)
# A default-domain opset newer than ferry knows: run refuses it (naming the file, the opset and the newest
# ferry supports) unless --allow-newer-opset; inspect loads it and warns.
newer = save(model([helper.make_node("Relu", ["x"], ["y"], name="relu")], [vi("x", F, [2, 3])], [vi("y", F, [2, 3])],
                   opset=99), os.path.join(tmp, "opset99.onnx"))
u.expect_error("run refuses opset 99", ["run", newer], "opset99.onnx", "opset 99 is newer than the newest ferry supports",
               "--allow-newer-opset")
rc, out, err = u.ferry("run", newer, "--allow-newer-opset")
check("run --allow-newer-opset runs opset 99", rc == 0 and "y: float32[2,3]" in out, (rc, err))
rc, out, err = u.ferry("inspect", newer)
check("inspect warns about opset 99 and still summarises",
      rc == 0 and "warning: opset 99 is newer than the newest ferry supports" in out and "results may be wrong" in out
      and "Relu" in out, (rc, err, out))
rc, out, err = u.ferry("inspect", tiny)
check("inspect: no opset warning for opset 17", rc == 0 and "warning:" not in out, out)

# An unknown subcommand is a usage error whatever follows it (CLI11 alone printed the main help, exit 0).
for args, needle in ((["frobnicate", "--help"], "the commands are: compile inspect run"), (["frobnicate"], "the commands are:"), (["evaluat"], "did you mean 'evaluate'?"),
                     (["inspcet", tiny], "did you mean 'inspect'?"), (["tune-precison", "--help"], "did you mean 'tune-precision'?")):
    rc, out, err = u.ferry(*args)
    check("unknown command %s: exit 2, named, %r" % (args[0], needle),
          rc == 2 and "unknown command '%s'" % args[0] in err and needle in err and not out, (rc, err, out[:200]))
# A flag typo names the closest flag of that subcommand.
rc, out, err = u.ferry("run", tiny, "--seeed", "3")
check("run --seeed: exit 2, did you mean '--seed'", rc == 2 and "unknown option '--seeed'" in err and
      "did you mean '--seed'?" in err, (rc, err))
rc, out, err = u.ferry("inspect", tiny, "--jsn=x.json")
check("inspect --jsn=FILE: did you mean '--json'", rc == 2 and "did you mean '--json'?" in err, (rc, err))
rc, out, err = u.ferry("run", tiny, "--zzzzzz")
check("run --zzzzzz: unknown option, no suggestion", rc == 2 and "unknown option '--zzzzzz'" in err and
      "did you mean" not in err, (rc, err))
u.finish()
