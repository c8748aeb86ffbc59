"""One preparation pipeline (runtime/prepare.h) behind every command: the same options give the same
prepared graph whichever command asked.

- `compile --target T` then `run X.ferry` equals `run --target T` on the .onnx bit for bit, on a CNN and a
  transformer block, and both headers say what ran (target, fp16);
- a .ferry file carries its target and precision: another --target is refused (no false PASS), compare's
  candidate label says what ran;
- run, check and profile count the same host nodes (one placement);
- compile validates --input-shape as run does (rank, static dims) and writes nothing on error;
- `--shape NAME=DIMS` and `--input-shape NAME:DIMS` are one syntax.

usage: test_prepare.py PATH/TO/ferry
"""
import json
import os
import re

import numpy as np
from onnx import TensorProto, helper, numpy_helper

import cli_util as u
from cli_util import check, model, save, vi

tmp = u.init()
F = TensorProto.FLOAT
rng = np.random.default_rng(3)


def const(name, shape, scale=0.2):
    return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)


def cnn():
    inits = [const("w1", [16, 3, 3, 3]), const("w2", [16, 16, 3, 3]), const("fc", [10, 16]), const("fcb", [10]),
             numpy_helper.from_array(np.linspace(0.5, 1.5, 16).astype(np.float32), "s"),
             numpy_helper.from_array(np.linspace(-0.2, 0.2, 16).astype(np.float32), "b"),
             numpy_helper.from_array(np.linspace(-0.1, 0.1, 16).astype(np.float32), "m"),
             numpy_helper.from_array(np.linspace(0.8, 1.2, 16).astype(np.float32), "v")]
    nodes = [helper.make_node("Conv", ["x", "w1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["c1", "s", "b", "m", "v"], ["bn1"], name="bn1"),
             helper.make_node("Relu", ["bn1"], ["r1"], name="relu1"),
             helper.make_node("Conv", ["r1", "w2"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
             helper.make_node("Add", ["c2", "r1"], ["res"], name="residual"),
             helper.make_node("Relu", ["res"], ["r2"], name="relu2"),
             helper.make_node("GlobalAveragePool", ["r2"], ["gap"], name="gap"),
             helper.make_node("Flatten", ["gap"], ["flat"], name="flatten"),
             helper.make_node("Gemm", ["flat", "fc", "fcb"], ["y"], name="fc", transB=1)]
    return model(nodes, [vi("x", F, [2, 3, 16, 16])], [vi("y", F, [2, 10])], inits, opset=17)


def transformer():
    d = 32
    inits = [const("wq", [d, d]), const("wk", [d, d]), const("wv", [d, d]), const("w1", [d, 64]), const("b1", [64]),
             const("w2", [64, d]), numpy_helper.from_array(np.ones(d, np.float32), "g"),
             numpy_helper.from_array(np.zeros(d, np.float32), "beta"),
             numpy_helper.from_array(np.array(1 / np.sqrt(d), np.float32), "scale"),
             numpy_helper.from_array(np.array([0, 2, 1], np.int64), "perm_unused")]
    nodes = [helper.make_node("MatMul", ["x", "wq"], ["q"], name="q"),
             helper.make_node("MatMul", ["x", "wk"], ["k"], name="k"),
             helper.make_node("MatMul", ["x", "wv"], ["v"], name="v"),
             helper.make_node("Transpose", ["k"], ["kt"], name="kt", perm=[0, 2, 1]),
             helper.make_node("MatMul", ["q", "kt"], ["s0"], name="scores"),
             helper.make_node("Mul", ["s0", "scale"], ["s1"], name="scaled"),
             helper.make_node("Softmax", ["s1"], ["p"], name="softmax", axis=-1),
             helper.make_node("MatMul", ["p", "v"], ["att"], name="attend"),
             helper.make_node("Add", ["att", "x"], ["h"], name="residual1"),
             helper.make_node("LayerNormalization", ["h", "g", "beta"], ["n1"], name="ln1", axis=-1),
             helper.make_node("MatMul", ["n1", "w1"], ["f0"], name="ff1"),
             helper.make_node("Add", ["f0", "b1"], ["f1"], name="ff1_bias"),
             helper.make_node("Relu", ["f1"], ["f2"], name="ff_relu"),
             helper.make_node("MatMul", ["f2", "w2"], ["f3"], name="ff2"),
             helper.make_node("Add", ["f3", "n1"], ["y"], name="residual2")]
    return model(nodes, [vi("x", F, [2, 8, d])], [vi("y", F, [2, 8, d])], inits, opset=17)


def run_out(tag, *args):
    outdir = os.path.join(tmp, tag)
    rc, out, err = u.ferry("run", *args, "--output-dir", outdir)
    y = np.load(os.path.join(outdir, "y.npy")) if rc == 0 and os.path.exists(os.path.join(outdir, "y.npy")) else None
    return rc, out, err, y


for name, m, xshape in (("cnn", cnn(), [2, 3, 16, 16]), ("transformer", transformer(), [2, 8, 32])):
    src = save(m, os.path.join(tmp, name + ".onnx"))
    xf = os.path.join(tmp, name + "_x.npy")
    np.save(xf, rng.standard_normal(xshape).astype(np.float32))
    ferry_file = os.path.join(tmp, name + ".ferry")
    rc, out, err = u.ferry("compile", src, "-o", ferry_file, "--target", "ascend310p")
    check("%s: compile --target ascend310p" % name, rc == 0 and "target: ascend310p" in out, (rc, out, err))
    rc1, out1, err1, y_file = run_out(name + "_file", ferry_file, "--input", "x=" + xf)
    rc2, out2, err2, y_onnx = run_out(name + "_onnx", src, "--target", "ascend310p", "--input", "x=" + xf)
    check("%s: run X.ferry and run --target ran" % name, rc1 == 0 and rc2 == 0, (err1, err2))
    if y_file is not None and y_onnx is not None:
        check("%s: compile --target then run X.ferry equals run --target bit for bit" % name,
              y_file.tobytes() == y_onnx.tobytes(), float(np.max(np.abs(y_file - y_onnx))))
    for label, out_ in (("X.ferry", out1), (".onnx --target", out2)):
        check("%s: run %s says target ascend310p and fp16" % (name, label),
              "target ascend310p" in out_ and "precision fp16" in out_, out_)
    # A .ferry carries its target: another is refused, never run under the wrong label (no false PASS).
    u.expect_error("%s: run X.ferry --target ascend910b refused" % name,
                   ["run", ferry_file, "--target", "ascend910b", "--input", "x=" + xf], "compiled for target ascend310p",
                   "ferry compile --target ascend910b")
    rc, out, err = u.ferry("compare", ferry_file, "--golden", src, "--input", "x=" + xf)
    check("%s: compare X.ferry: the candidate label says what ran (target, fp16)" % name,
          rc in (0, 3) and re.search(r"target ascend310p.*precision fp16", out) is not None, (rc, out[:1500], err))

# An fp32 .ferry compiled without a target, compared "as ascend910b": refused instead of a false PASS.
plain = os.path.join(tmp, "plain.ferry")
rc, out, err = u.ferry("compile", os.path.join(tmp, "cnn.onnx"), "-o", plain)
check("compile without a target", rc == 0, err)
u.expect_error("compare fp32 .ferry --target ascend910b refused", ["compare", plain, "--target", "ascend910b", "--golden",
                                                                   os.path.join(tmp, "cnn.onnx")], "without a target")

# One placement, one count: run --target, check and profile agree on the host nodes. A shape chain that
# folds once shapes are fixed is on no device; Unique is not in the Ascend operator list.
nodes = [helper.make_node("Shape", ["x"], ["sh"], name="shape"),
         helper.make_node("Gather", ["sh", "one"], ["d1"], name="gather", axis=0),
         helper.make_node("Unsqueeze", ["d1", "zero"], ["d1u"], name="unsq"),
         helper.make_node("Concat", ["minus1", "d1u"], ["newshape"], name="concat", axis=0),
         helper.make_node("Reshape", ["x", "newshape"], ["r"], name="reshape"),
         helper.make_node("Relu", ["r"], ["rl"], name="relu"),
         helper.make_node("Unique", ["rl"], ["y"], name="unique", sorted=1)]
inits = [numpy_helper.from_array(np.array(1, np.int64), "one"), numpy_helper.from_array(np.array([0], np.int64), "zero"),
         numpy_helper.from_array(np.array([-1], np.int64), "minus1")]
mixed = save(model(nodes, [vi("x", F, ["n", 4])], [vi("y", F, None)], inits, opset=17), os.path.join(tmp, "mixed.onnx"))
xm = os.path.join(tmp, "xm.npy")
np.save(xm, np.round(rng.standard_normal([3, 4]), 1).astype(np.float32))
rc, out_run, err = u.ferry("run", mixed, "--target", "ascend310p", "--input", "x=" + xm)
m_run = re.search(r"(\d+) node\(s\) on the host", out_run)
cj = os.path.join(tmp, "check.json")
rc, out, err = u.ferry("check", mixed, "--target", "ascend310p", "--shape", "x=3,4", "--json", cj)
host_check = json.load(open(cj))["summary"]["host"] if os.path.exists(cj) else None
check("run --target counts the host nodes check counts", m_run is not None and int(m_run.group(1)) == host_check,
      (out_run, host_check))
pj = os.path.join(tmp, "profile.json")
rc, out, err = u.ferry("profile", mixed, "--target", "ascend310p", "--input", "x=" + xm, "--json", pj)
prof = json.load(open(pj)) if rc == 0 and os.path.exists(pj) else {}
host_prof = (prof.get("partition") or {}).get("host_nodes")
check("profile --target counts the host nodes run counts", m_run is not None and host_prof == int(m_run.group(1)),
      (host_prof, out_run, err))
# The same on a compiled file: its placement was decided when it was compiled.
mixed_ferry = os.path.join(tmp, "mixed.ferry")
rc, out, err = u.ferry("compile", mixed, "-o", mixed_ferry, "--target", "ascend310p", "--shape", "x=3,4")
check("compile the mixed model for ascend310p", rc == 0, err)
pj2 = os.path.join(tmp, "profile2.json")
rc, out, err = u.ferry("profile", mixed_ferry, "--input", "x=" + xm, "--json", pj2)
prof2 = json.load(open(pj2)) if rc == 0 and os.path.exists(pj2) else {}
check("profile X.ferry counts the host nodes compile decided (not every fused node)",
      (prof2.get("partition") or {}).get("host_nodes") == host_prof, (prof2.get("partition"), err))

# compile validates shapes as run does, and writes nothing on error.
cnn_src = os.path.join(tmp, "cnn.onnx")
bad_out = os.path.join(tmp, "bad.ferry")
for shape, needle in (("x:2,3,16", "rank"), ("x:2,3,16,16,5", "rank"), ("x:2,3,100,100", "contradicts")):
    u.expect_error("compile --input-shape %s refused" % shape, ["compile", cnn_src, "-o", bad_out, "--input-shape", shape],
                   needle, "'x'")
    check("compile --input-shape %s: nothing written" % shape, not os.path.exists(bad_out))
# One syntax: --shape NAME=DIMS and --input-shape NAME:DIMS.
for flag, arg in (("--shape", "x=2,3,16,16"), ("--input-shape", "x=2,3,16,16"), ("--input-shape", "x:2,3,16,16")):
    rc, out, err = u.ferry("compile", cnn_src, "-o", os.path.join(tmp, "ok.ferry"), flag, arg)
    check("compile %s %s" % (flag, arg), rc == 0, err)

# inspect --plan takes a .ferry file (its graph as compiled).
rc, out, err = u.ferry("inspect", "--plan", os.path.join(tmp, "cnn.ferry"))
check("inspect --plan X.ferry", rc == 0 and "plan: " in out and "not a valid ONNX" not in err, (rc, out[:300], err))

# A shape the model cannot take is reported as that, not only as the internal node that failed.
cat = save(model([helper.make_node("Concat", ["x", "c"], ["y"], name="concat", axis=1)],
                 [vi("x", F, [1, 3, "h", "w"])], [vi("y", F, [1, 6, "h", "w"])],
                 [numpy_helper.from_array(np.zeros([1, 3, 20, 20], np.float32), "c")]), os.path.join(tmp, "cat.onnx"))
u.expect_error("compile with a shape the model cannot take", ["compile", cat, "-o", os.path.join(tmp, "cat.ferry"),
                                                                "--shape", "x=1,3,19,19"],
               "cannot take the input shape(s) x=1,3,19,19")
u.expect_error("run with a shape the model cannot take", ["run", cat, "--shape", "x=1,3,19,19"], "x=1,3,19,19")

# An input file fixes its input's dynamic dims for bench as for run (no --shape needed).
wide = save(model([helper.make_node("Relu", ["x"], ["y"], name="relu")], [vi("x", F, [1, "width"])],
                  [vi("y", F, [1, "width"])]), os.path.join(tmp, "wide.onnx"))
xw = os.path.join(tmp, "xw.npy")
np.save(xw, np.ones([1, 320], np.float32))
rc, out, err = u.ferry("bench", wide, "--input", "x=" + xw, "--iterations", "2", "--warmup", "0")
check("bench --input FILE fixes a dynamic width", rc == 0, (rc, err))
u.expect_error("bench without the file names the dim to give", ["bench", wide, "--iterations", "1"],
               "--shape x=1,<width>")

# inspect validates --shape as run and compile do: a contradicted static dim is an error, not FLOPs for it.
u.expect_error("inspect --shape contradicting a static dim", ["inspect", cnn_src, "--shape", "x=2,3,100,100"],
               "contradicts", "'x'")

# migrate --shape on a model with dynamic H/W: the shape reaches every stage (bench's fp32 baseline too).
dyn = save(model([helper.make_node("Conv", ["images", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
                  helper.make_node("Relu", ["c"], ["y"], name="relu")],
                 [vi("images", F, [1, 3, "height", "width"])], [vi("y", F, [1, 4, "height", "width"])],
                 [const("w", [4, 3, 3, 3])], opset=17), os.path.join(tmp, "dyn_hw.onnx"))
outdir = os.path.join(tmp, "migrate_dyn")
rc, out, err = u.ferry("migrate", dyn, "--target", "ascend910b", "--shape", "images=1,3,32,32", "-o", outdir, timeout=300)
rep = json.load(open(os.path.join(outdir, "report.json"))) if os.path.exists(os.path.join(outdir, "report.json")) else {}
bench = next((s for s in rep.get("stages", []) if s["name"] == "bench"), {})
check("migrate --shape on dynamic H/W: the bench stage has its fp32 baseline",
      bench.get("status") == "ok" and "no fp32 baseline" not in bench.get("summary", "") and
      "baseline_fp32_median_ms" in rep.get("bench", {}), (bench, err[-800:]))

# Kernel choices are typed options: given to compile, stored in the .ferry, applied and shown when it runs.
wf = os.path.join(tmp, "cnn_wino_off.ferry")
rc, out, err = u.ferry("compile", cnn_src, "-o", wf, "--cpu-winograd", "off", "--cpu-gemm", "onednn")
check("compile --cpu-winograd off --cpu-gemm onednn", rc == 0, err)
rc, out, err = u.ferry("run", wf)
check("run X.ferry applies and shows the stored kernel choices",
      rc == 0 and "gemm=onednn" in out and "winograd=off" in out, (out, err))
rc, out, err = u.ferry("run", cnn_src, "--cpu-gemm", "bogus")
check("--cpu-gemm bogus is a usage error", rc == 2, (rc, err))

u.finish()
