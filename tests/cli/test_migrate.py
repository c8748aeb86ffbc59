"""`ferry migrate` end to end on tiny models for --target ascend310p (fp16, emulated):

- A Unique (on the host, fp32) after an fp16 Mul on the device: values distinct in fp32 collide in fp16, so the candidate's output is
  shorter than the golden's. That is a comparison result (a MISS naming the shapes), not an error: the run
  completes, writes report.json / report.html and exits 3 (accuracy below threshold), never with an
  "internal error".
- Two outputs where only the second misses: the summary names the one that failed, with its figures.
- The first divergent node is the user's ONNX node, never a RoundFloat the precision pass inserted.
- A stage that cannot run (compile cannot write model.ferry) still writes the reports, which name the stage
  and why, and the run exits 1 with an `error:` line that names it.

usage: test_migrate.py PATH/TO/ferry
"""
import json
import os

import numpy as np
from onnx import TensorProto, helper, numpy_helper

import cli_util as u
from cli_util import check, model, save, vi

tmp = u.init()
F = TensorProto.FLOAT


def migrate(name, onnx_path, *args):
    outdir = os.path.join(tmp, name)
    rc, out, err = u.ferry("migrate", onnx_path, "--target", "ascend310p", "-o", outdir, *args, timeout=300)
    js = os.path.join(outdir, "report.json")
    rep = json.load(open(js)) if os.path.exists(js) else None
    return rc, out, err, rep, outdir


def stage(rep, name):
    return next((s for s in (rep or {}).get("stages", []) if s["name"] == name), {})


# --- Unique whose length changes under fp16 ----------------------------------------------------------
x = np.array([1.0, 1.0001, 2.0, 3.0, 4.0], dtype=np.float32)  # 1.0001 rounds to 1.0 in fp16
np.save(os.path.join(tmp, "x.npy"), x)
uniq = save(model([helper.make_node("Mul", ["x", "one"], ["scaled"], name="Mul_0"),
                   helper.make_node("Unique", ["scaled"], ["u"], name="Unique_0", sorted=1),
                   helper.make_node("Relu", ["x"], ["y"], name="Relu_0")],
                  [vi("x", F, [5])], [vi("y", F, [5]), vi("u", F, None)],
                  [numpy_helper.from_array(np.array([3.0], dtype=np.float32), "one")]),
            os.path.join(tmp, "unique.onnx"))
rc, out, err, rep, outdir = migrate("unique", uniq, "--input", "x=" + os.path.join(tmp, "x.npy"))
detail = "rc=%d\nstdout: %s\nstderr: %s" % (rc, out[-2000:], err[-2000:])
check("unique: no internal error", "internal error" not in err and "json.exception" not in err, detail)
check("unique: accuracy below threshold (exit 3)", rc == 3, detail)
check("unique: the model file is read and imported once", (rep or {}).get("model_imports") == 1, (rep or {}).get("model_imports"))
check("unique: report.json and report.html written",
      rep is not None and os.path.exists(os.path.join(outdir, "report.html")), detail)
cmp_stage = stage(rep, "compare")
check("unique: the compare stage is a MISS that names the shapes",
      cmp_stage.get("status") == "warning" and "u shape [5] vs [4]" in cmp_stage.get("summary", ""), cmp_stage)
check("unique: the MISS does not name the output that passed", "y cos" not in cmp_stage.get("summary", ""), cmp_stage)
if rep:
    outs = {o["tensor"]: o for o in rep["compare"]["outputs"]}
    check("unique: the output row fails with a note, y passes",
          not outs["u"]["pass"] and "shape [5] vs [4]" in outs["u"].get("note", "") and outs["y"]["pass"], outs)
    html_path = os.path.join(outdir, "report.html")
    check("unique: report.html shows why u failed",
          os.path.exists(html_path) and "shape [5] vs [4]" in open(html_path).read())

# --- two outputs, only the second misses; the first divergent node is an ONNX node ----------------------
# s = (x * 0.001 + 10) - 10: fp16's step at 10 is 0.0078, so s keeps nothing of x; y = Relu(x) is exact.
xs = np.linspace(-1, 1, 16, dtype=np.float32).reshape(1, 16)
np.save(os.path.join(tmp, "xs.npy"), xs)
two = save(model([helper.make_node("Relu", ["x"], ["y"], name="Relu_0"),
                  helper.make_node("Mul", ["x", "milli"], ["small"], name="Mul_0"),
                  helper.make_node("Add", ["small", "ten"], ["shifted"], name="Add_0"),
                  helper.make_node("Sub", ["shifted", "ten"], ["s"], name="Sub_0"),
                  helper.make_node("Mul", ["s", "kilo"], ["u"], name="Mul_1")],
                 [vi("x", F, [1, 16])], [vi("y", F, [1, 16]), vi("u", F, [1, 16])],
                 [numpy_helper.from_array(np.array([v], dtype=np.float32), n)
                  for n, v in (("milli", 0.001), ("ten", 10.0), ("kilo", 1000.0))]),
           os.path.join(tmp, "two.onnx"))
rc, out, err, rep, outdir = migrate("two", two, "--input", "x=" + os.path.join(tmp, "xs.npy"))
detail = "rc=%d\nstdout: %s\nstderr: %s" % (rc, out[-2000:], err[-2000:])
cmp_stage = stage(rep, "compare")
summary = cmp_stage.get("summary", "")
check("two outputs: exit 3", rc == 3, detail)
check("two outputs: the MISS names u with its figures", summary.startswith("outputs MISS") and "u cos" in summary, summary)
check("two outputs: the MISS does not name y, which passed", "y cos" not in summary and "y " not in summary, summary)
check("two outputs: the printed summary agrees", "u cos" in out and "y cos" not in out, out)
if rep:
    first = rep["compare"]["first_divergent_node"]
    check("two outputs: the first divergent node is the user's Sub_0, not a RoundFloat", first == "Sub_0", first)
    layer_nodes = [l["node"] for l in rep["compare"]["layers"]]
    check("two outputs: no layer row names an inserted node", not any(n.startswith("round_") for n in layer_nodes),
          layer_nodes)
check("two outputs: no round_ node in what the user reads", "round_" not in out, out)
# compare on the compiled model names the same node (the .ferry graph holds the RoundFloat nodes).
js = os.path.join(tmp, "two_compare.json")
rc, out, err = u.ferry("compare", os.path.join(outdir, "model.ferry"), "--golden", two, "--inputs",
                       os.path.join(outdir, "inputs"), "--layerwise", "--json", js)
crep = json.load(open(js)) if os.path.exists(js) else {}
check("compare model.ferry: first divergent node Sub_0", crep.get("first_divergent_node") == "Sub_0",
      (crep.get("first_divergent_node"), err))
check("compare model.ferry: no round_ node in the text", "round_" not in out, out)

# --- a stage that cannot run -------------------------------------------------------------------------
outdir = os.path.join(tmp, "blocked_out")
os.makedirs(os.path.join(outdir, "model.ferry"))  # a folder where compile must write its file
rc, out, err, rep, outdir = migrate("blocked_out", uniq, "--input", "x=" + os.path.join(tmp, "x.npy"))
detail = "rc=%d\nstdout: %s\nstderr: %s" % (rc, out[-2000:], err[-2000:])
last = err.strip().splitlines()[-1] if err.strip() else ""
check("failed stage: exit 1 with an error: line naming the stage", rc == 1 and last.startswith("error:")
      and "compile stage failed" in last and "internal error" not in err, detail)
check("failed stage: report.json and report.html still written",
      rep is not None and os.path.exists(os.path.join(outdir, "report.html")), detail)
if rep:
    check("failed stage: report.json says which stage failed and why",
          rep.get("verdict") == "failed" and rep.get("failure", {}).get("stage") == "compile"
          and "model.ferry" in rep["failure"].get("error", ""), rep.get("failure"))
    check("failed stage: the stages after it are skipped with the reason",
          stage(rep, "bench").get("status") == "skipped" and "compile" in stage(rep, "bench").get("summary", ""),
          rep.get("stages"))
    html_path = os.path.join(outdir, "report.html")
    check("failed stage: report.html names the failed stage",
          os.path.exists(html_path) and "the compile stage failed" in open(html_path).read())

u.finish()
