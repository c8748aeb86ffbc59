"""`ferry check` end to end: torchvision models place every node on ascend310p; a model with Loop,
Unique and GroupNormalization (none in the CANN list) names each node and the rewrite or fallback; a
NonZero -> Reshape model is reported as the profile's data_dependent_shapes says (host, device or
unsupported in three profiles); --json/--csv parse and agree; --fail-on exits 3; malformed profiles
get errors naming the line and key.

usage: test_check.py PATH/TO/ferry
"""
import csv
import glob
import json
import os

import numpy as np
from onnx import TensorProto, helper, numpy_helper

import cli_util as u
from cli_util import check, model, save, vi

tmp = u.init()
F = TensorProto.FLOAT
I64 = TensorProto.INT64


def check_json(path, target, *extra):
    out = os.path.join(tmp, "report.json")
    rc, stdout, err = u.ferry("check", path, "--target", target, "--json", out, *extra)
    rep = json.load(open(out)) if rc in (0, 3) and os.path.exists(out) else None
    return rc, stdout, err, rep


def rows(rep):
    return {r["name"]: r for r in rep["nodes"]}


# --- torchvision models (the model tests' and the benchmark's caches, when present) ---
cached = sorted(glob.glob(os.path.expanduser("~/.cache/ferry/models/*/model.onnx")) +
                glob.glob(os.path.expanduser("~/.cache/ferry/bench-models/*/model.onnx")))
for path in cached:
    name = os.path.basename(os.path.dirname(path))
    info_path = os.path.join(os.path.dirname(path), "info.json")
    family = json.load(open(info_path)).get("family", "vision") if os.path.exists(info_path) else "vision"
    if family in ("detection", "segmentation"):
        # Their FPN / decoder upsampling (Resize nearest_mode=floor) is a real host fallback on ascend310p:
        # checked to analyse without unsupported nodes, not to place everything.
        rc, out, err, rep = check_json(path, "ascend310p", "--fail-on", "unsupported")
        check("cached model %s: analysed, nothing unsupported on ascend310p" % name,
              rc == 0 and rep is not None and rep["summary"]["nodes"] > 0, "rc=%d %s %s" % (rc, err[-500:], out[-800:]))
        continue
    rc, out, err, rep = check_json(path, "ascend310p", "--fail-on", "fallback")
    ok = rc == 0 and rep is not None and rep["summary"]["device"] == rep["summary"]["nodes"] > 0
    check("cached model %s: every node on ascend310p" % name, ok, "rc=%d %s %s" % (rc, err[-500:], out[-800:]))
if not cached:
    print("note: no cached torchvision models; run the model tests first to cover them")

# --- Loop, Unique, GroupNormalization ---
body = helper.make_graph(
    [helper.make_node("Add", ["acc_in", "one"], ["acc_out"], name="body_add"),
     helper.make_node("Identity", ["cond_in"], ["cond_out"], name="body_cond")],
    "body", [vi("iter", I64, []), vi("cond_in", TensorProto.BOOL, []), vi("acc_in", F, [2, 6, 4, 4])],
    [vi("cond_out", TensorProto.BOOL, []), vi("acc_out", F, [2, 6, 4, 4])],
    initializer=[numpy_helper.from_array(np.array(1.0, np.float32), "one")])
gn_scale = numpy_helper.from_array(np.linspace(0.5, 1.5, 6).astype(np.float32), "gs")
gn_bias = numpy_helper.from_array(np.linspace(-1, 1, 6).astype(np.float32), "gb")
trip = numpy_helper.from_array(np.array(3, np.int64), "trip")
cond = numpy_helper.from_array(np.array(True), "cond")
m = model([helper.make_node("GroupNormalization", ["x", "gs", "gb"], ["gn"], name="gn", num_groups=3),
           helper.make_node("Relu", ["gn"], ["r"], name="relu"),
           helper.make_node("Loop", ["trip", "cond", "r"], ["looped"], name="loop", body=body),
           helper.make_node("Flatten", ["looped"], ["flat"], name="flat", axis=0),
           helper.make_node("Unique", ["flat"], ["uniq"], name="unique", sorted=1)],
          [vi("x", F, [2, 6, 4, 4])], [vi("looped", F, [2, 6, 4, 4]), vi("uniq", F, None)],
          [gn_scale, gn_bias, trip, cond], opset=18)
mixed = save(m, os.path.join(tmp, "mixed.onnx"))
rc, out, err, rep = check_json(mixed, "ascend310p")
check("mixed: exit 0 without --fail-on", rc == 0, err)
if rep:
    r = rows(rep)
    check("mixed: GroupNormalization rewritten by legalize_group_normalization",
          r["gn"]["placement"] == "rewritten" and r["gn"]["rule"] == "legalize_group_normalization", r["gn"])
    check("mixed: Loop on the host (control flow)",
          r["loop"]["placement"] == "host fallback" and "control flow" in r["loop"]["reason"], r["loop"])
    check("mixed: Unique on the host (not in the operator list)",
          r["unique"]["placement"] == "host fallback" and "operator list" in r["unique"]["reason"], r["unique"])
    check("mixed: Relu on the device", r["relu"]["placement"] == "device", r["relu"])
    check("mixed: Flatten between Loop and Unique stays on the host (no ping-pong)",
          r["flat"]["placement"] == "host fallback" and "kept on the host" in r["flat"]["reason"], r["flat"])
    check("mixed: text names the nodes", all(n in out for n in ("gn", "loop", "unique", "legalize_group_normalization")), out)
    check("mixed: bytes across borders counted",
          rep["bytes"]["borders"] == 1 and rep["bytes"]["transfers"] == 2 * 6 * 4 * 4 * 4, rep["bytes"])
    check("mixed: summary by op", rep["by_op"]["Loop"]["host"] == 1 and rep["by_op"]["GroupNormalization"]["rewritten"] == 1,
          rep["by_op"])
rc, out, err, rep = check_json(mixed, "ascend310p", "--fail-on", "fallback")
check("mixed: --fail-on fallback exits 3", rc == 3 and "fail-on" in err, "rc=%d %s" % (rc, err))
rc, out, err, rep = check_json(mixed, "ascend310p", "--fail-on", "unsupported")
check("mixed: --fail-on unsupported exits 0 (all placed)", rc == 0, "rc=%d %s" % (rc, err))
rc, out, err, rep = check_json(mixed, "cpu", "--fail-on", "fallback")
check("mixed: everything on the cpu target", rc == 0 and rep["summary"]["device"] == rep["summary"]["nodes"], out[-600:])
csv_path = os.path.join(tmp, "rows.csv")
rc, out, err = u.ferry("check", mixed, "--target", "ascend310p", "--csv", csv_path)
got = list(csv.DictReader(open(csv_path))) if rc == 0 else []
check("csv: one row per node with placement and reason",
      len(got) == 5 and {g["name"]: g["placement"] for g in got}["loop"] == "host fallback", got)

# --- NonZero -> Reshape: as each profile says ---
nz = model([helper.make_node("NonZero", ["x"], ["idx"], name="nz"),
            helper.make_node("Reshape", ["idx", "flat_shape"], ["y"], name="reshape")],
           [vi("x", F, [4, 5])], [vi("y", I64, None)],
           [numpy_helper.from_array(np.array([-1], np.int64), "flat_shape")], opset=13)
nz_path = save(nz, os.path.join(tmp, "nonzero.onnx"))
rc, out, err, rep = check_json(nz_path, "ascend310p")
if rep:
    r = rows(rep)
    check("nonzero on ascend310p: NonZero host (data-dependent)",
          r["nz"]["placement"] == "host fallback" and "data-dependent" in r["nz"]["reason"], r["nz"])
    check("nonzero on ascend310p: Reshape host (input data-dependent)",
          r["reshape"]["placement"] == "host fallback" and "data-dependent" in r["reshape"]["reason"], r["reshape"])
    check("nonzero: finding says gears are ruled out", any("gears" in f for f in rep["findings"]), rep["findings"])
else:
    check("nonzero check ran", False, err)
for mode, want in (("device", "device"), ("unsupported", "unsupported")):
    prof = os.path.join(tmp, "dd_%s.json" % mode)
    json.dump({"name": "dd_" + mode, "base": "ascend310p", "data_dependent_shapes": mode}, open(prof, "w"))
    rc, out, err, rep = check_json(nz_path, prof)
    ok = rep is not None and rows(rep)["nz"]["placement"] == want
    check("nonzero with data_dependent_shapes=%s: NonZero %s" % (mode, want), ok, err + out[-500:])

# --- malformed profiles ---
bad = os.path.join(tmp, "bad_syntax.json")
open(bad, "w").write('{\n  "name": "x",\n  "ops": {"Relu": {}\n  "opset": [9, 18]\n}\n')
u.expect_error("profile: JSON syntax error names the line", ["check", mixed, "--target", bad], "bad_syntax.json:4")
bad = os.path.join(tmp, "bad_key.json")
open(bad, "w").write('{\n  "name": "x",\n  "ops": {"Relu": {}},\n  "opsets": [9, 18]\n}\n')
u.expect_error("profile: unknown key named with its line", ["check", mixed, "--target", bad], "bad_key.json:4", "'opsets'")
bad = os.path.join(tmp, "bad_dtype.json")
open(bad, "w").write('{\n  "name": "x",\n  "ops": {\n    "Relu": {"dtypes": {"in:0": ["float33"]}}\n  }\n}\n')
u.expect_error("profile: bad dtype names the key path", ["check", mixed, "--target", bad], "ops.Relu.dtypes.in:0", "float33")
bad = os.path.join(tmp, "bad_default.json")
open(bad, "w").write('{"name": "x", "all_ops": true, "precision": {"modes": ["fp16"], "default": "bf16"}}')
u.expect_error("profile: default precision not among the modes", ["check", mixed, "--target", bad], "precision.default")
u.expect_error("unknown target names the built-ins", ["check", mixed, "--target", "tpu9"], "tpu9", "ascend310p")
rc, out, err = u.ferry("check", mixed, "--fail-on", "sometimes")
check("bad --fail-on is a usage error (2)", rc == 2, err)
u.expect_error("missing model", ["check", os.path.join(tmp, "nope.onnx"), "--target", "ascend310p"], "nope.onnx")

# --- user profile extending a built-in: drop Relu from ascend310p, so it falls back ---
prof = os.path.join(tmp, "no_relu.json")
json.dump({"name": "no_relu", "base": "ascend310p", "remove_ops": ["Relu"]}, open(prof, "w"))
rc, out, err, rep = check_json(mixed, prof)
check("user profile: Relu falls back to the host", rep is not None and rows(rep)["relu"]["placement"] == "host fallback",
      err + out[-400:])
# --- a default-domain opset newer than ferry knows: a finding, not a refusal ---
newer = save(model([helper.make_node("Relu", ["x"], ["y"], name="relu")], [vi("x", F, [2, 3])], [vi("y", F, [2, 3])],
                   opset=99), os.path.join(tmp, "opset99.onnx"))
rc, out, err, rep = check_json(newer, "cpu")
check("opset 99: checked, with a finding that results may be wrong",
      rep is not None and any("opset 99 is newer than the newest ferry supports" in f and "results may be wrong" in f
                              for f in rep["findings"]), (rc, err, rep and rep["findings"]))
rc, out, err = u.ferry("check", "--help")
check("check --help mentions emulated targets and exit 3", rc == 0 and "emulated" in out and "3" in out, out)
# --- dynamic H/W without --shape: the unknown dims are named, the advice is on those dims (not the
# static batch), and what they block is said instead of analysing them as 1.
nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
         helper.make_node("Shape", ["x"], ["sh"], name="shape"),
         helper.make_node("Slice", ["sh", "s0", "s1"], ["hw"], name="hw"),
         helper.make_node("Concat", ["lead", "hw"], ["newshape"], name="cat", axis=0),
         helper.make_node("Reshape", ["r", "newshape"], ["y"], name="reshape")]
inits = [numpy_helper.from_array(np.array([2], np.int64), "s0"), numpy_helper.from_array(np.array([4], np.int64), "s1"),
         numpy_helper.from_array(np.array([3, 1], np.int64), "lead")]
hw = save(model(nodes, [vi("x", F, [1, 3, "height", "width"])], [vi("y", F, None)], inits, opset=17),
          os.path.join(tmp, "hw.onnx"))
rc, out, err, rep = check_json(hw, "ascend310p")
finding = " ".join(rep["findings"]) if rep else ""
check("dynamic H/W: the unknown dims are named", "unknown dim 2 (height), dim 3 (width)" in finding, finding)
check("dynamic H/W: ranges on those dims, not the batch", "x:1,3,<min>~<max>,<min>~<max>" in finding, finding)
check("dynamic H/W: the --shape to give", "--shape x=1,3,<height>,<width>" in finding, finding)
check("dynamic H/W: what the unknown dims block (the Reshape on the host here)",
      "compute with the unknown dims" in finding and "Reshape 'reshape'" in finding, finding)
rc, out, err, rep = check_json(hw, "ascend310p", "--shape", "x=1,3,32,32")
check("dynamic H/W with --shape: the Reshape runs on the device",
      rep is not None and rows(rep)["reshape"]["placement"] == "device", rep and rows(rep)["reshape"])

u.finish()
