"""`ferry tune-precision` end to end: a model with one layer whose activations exceed fp16's 65504 (a
large-scale MatMul before a Softmax) among ordinary layers. In fp16 the output is broken; tune-precision
keeps that MatMul (and few others) in fp32, the result meets cosine>=0.999, the keep list it writes is
accepted by `compile --keep-fp32`, and compare confirms the compiled model. Bad goals are errors.

usage: test_tune_precision.py PATH/TO/ferry
"""
import json
import os

import numpy as np
from onnx import TensorProto, helper, numpy_helper

import cli_util as u
from cli_util import check, expect_error, model, save, vi

tmp = u.init()
F = TensorProto.FLOAT
rng = np.random.default_rng(3)
C = 16
w = [(rng.standard_normal((C, C)) * s).astype(np.float32) for s in (0.5, 1.5, 0.3, 0.3)]
# Weights that fit fp16 (|w| <= 60000) whose products with tanh's +-1 outputs sum far beyond 65504.
big = np.clip(rng.standard_normal((C, C)) * 20000, -60000, 60000).astype(np.float32)
nodes = [helper.make_node("MatMul", ["x", "w0"], ["a"], name="mm0"),
         helper.make_node("Relu", ["a"], ["ar"], name="relu0"),
         helper.make_node("MatMul", ["ar", "w1"], ["b"], name="mm1"),
         helper.make_node("Tanh", ["b"], ["bt"], name="tanh1"),
         helper.make_node("MatMul", ["bt", "big"], ["scores"], name="MatMul_big"),
         helper.make_node("Softmax", ["scores"], ["p"], name="Softmax_big", axis=-1),
         helper.make_node("MatMul", ["p", "w2"], ["c"], name="mm2"),
         helper.make_node("Relu", ["c"], ["cr"], name="relu2"),
         helper.make_node("MatMul", ["cr", "w3"], ["y"], name="mm3")]
inits = [numpy_helper.from_array(t, "w%d" % i) for i, t in enumerate(w)] + [numpy_helper.from_array(big, "big")]
src = save(model(nodes, [vi("x", F, [4, C])], [vi("y", F, [4, C])], inits), os.path.join(tmp, "model.onnx"))
x = os.path.join(tmp, "x.npy")
np.save(x, (rng.standard_normal((4, C)) * 4).astype(np.float32))

# fp16 alone breaks the output (compare flags it: exit 3).
rc, out, err = u.ferry("compare", src, "--input", "x=" + x, "--precision", "fp16", "--cosine", "0.999")
check("fp16 without a keep list fails compare (exit 3)", rc == 3, (rc, out[-500:], err))

keep = os.path.join(tmp, "keep.txt")
js = os.path.join(tmp, "tune.json")
rc, out, err = u.ferry("tune-precision", src, "--input", "x=" + x, "--precision", "fp16", "--metric", "cosine>=0.999",
                       "-o", keep, "--json", js)
check("tune-precision: exit 0", rc == 0, (rc, err))
rep = json.load(open(js)) if os.path.exists(js) else None
if rep:
    check("tune-precision: json schema", rep["schema"] == "ferry.tune-precision/1", rep.get("schema"))
    check("tune-precision: everything low misses", rep["all_low"]["pass"] is False, rep["all_low"])
    check("tune-precision: keeps the overflowing MatMul", "MatMul_big" in rep["keep"], rep["keep"])
    check("tune-precision: and few others (at most 3 of 9 nodes)", len(rep["keep"]) <= 3, rep["keep"])
    check("tune-precision: the result meets the goal", rep["pass"] and all(m["cosine"] >= 0.999 for m in rep["final_metrics"]),
          rep["final_metrics"])
    check("tune-precision: counts its evaluations", len(rep["evaluations"]) >= 2, len(rep["evaluations"]))
    check("tune-precision: reports the speed", all(rep["latency_ms"][k] > 0 for k in ("fp32", "all_low", "tuned")),
          rep["latency_ms"])
for needle in ("kept in fp32", "MatMul_big", "evaluations:", "median latency", "result: PASS"):
    check("tune-precision text: %r" % needle, needle in out, out)
lines = [l.strip() for l in open(keep)] if os.path.exists(keep) else []
check("keep file: '#' header, one node per line", lines and lines[0].startswith("#") and "MatMul_big" in lines, lines)

check("tune-precision text: kept names one per line", rep and all(n in [l.strip() for l in out.splitlines()]
                                                                  for n in rep["keep"]), out)
check("tune-precision: a finished search does not say 'not minimal'", "not minimal" not in out and
      rep and rep.get("minimal") is True, out)

# A budget that runs out while the pruning sweep still removes nodes: the list passes but is not minimal,
# and the report, the keep file and the JSON say so and name the flag that lets it go further.
keep2, js2 = os.path.join(tmp, "keep2.txt"), os.path.join(tmp, "tune2.json")
rc, out, err = u.ferry("tune-precision", src, "--input", "x=" + x, "--precision", "fp16", "--max-evaluations", "2",
                       "-o", keep2, "--json", js2)
rep2 = json.load(open(js2)) if rc == 0 and os.path.exists(js2) else {}
check("budget: exit 0, 2 evaluations", rc == 0 and len(rep2.get("evaluations", [])) == 2, (rc, err, out))
check("budget: report says not minimal and how to go further",
      "not minimal" in out and "--max-evaluations budget (2) ran out" in out and "--max-evaluations 4 lets" in out and
      "result: PASS (the keep list is not minimal)" in out, out)
check("budget: JSON minimal false", rep2.get("minimal") is False and rep2.get("untried", 0) > 0, rep2)
lines2 = [l.strip() for l in open(keep2)] if os.path.exists(keep2) else []
check("budget: keep file says not minimal in a comment, names one per line",
      any(l.startswith("#") and "not minimal" in l for l in lines2) and
      rep2 and all(n in lines2 for n in rep2["keep"]), lines2)

# The keep list is what compile --keep-fp32 takes; the compiled model meets the goal.
fer = os.path.join(tmp, "tuned.ferry")
rc, out, err = u.ferry("compile", src, "-o", fer, "--precision", "fp16", "--keep-fp32", keep)
check("compile --keep-fp32 keep.txt: exit 0", rc == 0, err)
check("compile: no unmatched keep entries", "matches no node" not in out, out)
rc, out, err = u.ferry("compare", fer, "--input", "x=" + x, "--golden", src, "--cosine", "0.999")
check("compare of the tuned .ferry against the fp32 model: exit 0", rc == 0, (rc, out[-800:], err))

# Errors.
for goal, needle in (("cosine>0.9", "cosine>=0.999"), ("fidelity>=1", "unknown metric"), ("cosine<=0.9", "at least"),
                     ("cosine>=abc", "not a number")):
    expect_error("bad --metric %s" % goal, ["tune-precision", src, "--input", "x=" + x, "--precision", "fp16",
                                             "--metric", goal], needle)
rc, out, err = u.ferry("tune-precision", src, "--input", "x=" + x)
check("tune-precision without --precision fp16|bf16: exit 2", rc == 2 and "fp16" in err, (rc, err))
u.finish()
