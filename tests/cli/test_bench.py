"""`ferry bench` on tiny models: the JSON holds every figure and they are consistent (positive, ordered
min <= median <= p90 <= p95 <= p99 <= max, counts as asked), several batches run in one invocation, the
batch replaces dim 0, --peer onnxruntime runs and prints ratios, bad flags exit 2 and bad models/inputs
exit 1 with `error:`. No check depends on how fast anything is.

usage: test_bench.py PATH/TO/ferry
"""
import json
import os
import re
import subprocess

import numpy as np
from onnx import TensorProto, helper, numpy_helper

import cli_util as u
from cli_util import check, expect_error, model, save, vi

tmp = u.init()
F = TensorProto.FLOAT

# y = Relu(x @ w) + b with a symbolic batch dim; and the same with a fixed batch of 2.
rng = np.random.RandomState(0)
w = numpy_helper.from_array(rng.randn(16, 8).astype(np.float32), "w")
b = numpy_helper.from_array(rng.randn(8).astype(np.float32), "b")
nodes = [helper.make_node("MatMul", ["x", "w"], ["m"], name="mm"), helper.make_node("Relu", ["m"], ["r"], name="relu"),
         helper.make_node("Add", ["r", "b"], ["y"], name="add")]
dyn = save(model(nodes, [vi("x", F, ["batch", 16])], [vi("y", F, ["batch", 8])], [w, b]),
           os.path.join(tmp, "dyn.onnx"))
fixed = save(model(nodes, [vi("x", F, [2, 16])], [vi("y", F, [2, 8])], [w, b]), os.path.join(tmp, "fixed.onnx"))
# A second dynamic dim besides the batch.
seq = save(model([helper.make_node("Relu", ["x"], ["y"], name="relu")], [vi("x", F, ["batch", "seq"])],
                 [vi("y", F, ["batch", "seq"])]), os.path.join(tmp, "seq.onnx"))

STATS = ("min", "mean", "median", "p90", "p95", "p99", "max", "stddev")
FIELDS = ("batch", "input_shapes", "load_s", "first_run_ms", "warmup_iterations", "warmup_s", "iterations",
          "total_s", "latency_ms", "cv", "unstable", "throughput_items_per_s", "peak_rss_bytes", "peak_rss_scope",
          "latencies_ms")


def check_result(label, r, batch, iterations):
    missing = [f for f in FIELDS if f not in r] + ["latency_ms." + s for s in STATS if s not in r.get("latency_ms", {})]
    check(label + ": every field", not missing, missing)
    if missing:
        return
    lat = r["latency_ms"]
    check(label + ": batch", r["batch"] == batch, r["batch"])
    check(label + ": iterations", r["iterations"] == iterations == len(r["latencies_ms"]), r["iterations"])
    order = [lat[k] for k in ("min", "median", "p90", "p95", "p99", "max")]
    check(label + ": min <= median <= p90 <= p95 <= p99 <= max", order == sorted(order) and order[0] > 0, order)
    check(label + ": min <= mean <= max", lat["min"] <= lat["mean"] <= lat["max"], lat)
    xs = sorted(r["latencies_ms"])
    check(label + ": min/max/median from the latencies",
          lat["min"] == xs[0] and lat["max"] == xs[-1] and abs(lat["median"] - float(np.median(xs))) < 1e-9, (lat, xs))
    check(label + ": p90 as numpy's percentile", abs(lat["p90"] - float(np.percentile(xs, 90))) < 1e-9)
    check(label + ": cv = stddev / mean", abs(r["cv"] - lat["stddev"] / lat["mean"]) < 1e-9 and r["cv"] >= 0)
    check(label + ": positive times and memory",
          r["load_s"] > 0 and r["total_s"] > 0 and r["peak_rss_bytes"] > 1 << 20 and r["throughput_items_per_s"] > 0, r)
    check(label + ": throughput = batch * iterations / total",
          abs(r["throughput_items_per_s"] - batch * iterations / r["total_s"]) <= 1e-6 * r["throughput_items_per_s"])
    check(label + ": the total covers the iterations", r["total_s"] * 1000 >= sum(xs) * 0.999, (r["total_s"], sum(xs)))
    check(label + ": peak scope", r["peak_rss_scope"] in ("batch", "process"), r["peak_rss_scope"])


# --- one batch, JSON ---------------------------------------------------------------------------------
js = os.path.join(tmp, "one.json")
rc, out, err = u.ferry("bench", dyn, "--iterations", "5", "--warmup", "2", "--json", js, "--threads", "1")
check("bench: exit 0", rc == 0, err + out)
check("bench: no stderr when not a terminal", err == "", err)
for needle in ("ferry bench: " + dyn, "median ms", "p99 ms", "items/s", "peak MiB", "1 thread(s)",
               "exactly 2 iteration(s)", "exactly 5 iteration(s)", "wrote " + js):
    check("bench: stdout shows %r" % needle, needle in out, out)
j = json.load(open(js)) if os.path.isfile(js) else {}
check("bench: schema", j.get("schema") == "ferry.bench/1", j.get("schema"))
for k in ("ferry_version", "date_utc", "model", "backend", "opt_level", "threads", "warmup_policy", "measure_policy",
          "order", "results", "peers"):
    check("bench: top-level field %s" % k, k in j)
check("bench: threads recorded", j.get("threads") == 1, j.get("threads"))
check("bench: default backend is cpu", j.get("backend") == "cpu", j.get("backend"))
check("bench: one result, no peers", len(j.get("results", [])) == 1 and j.get("peers") == [], j.get("results"))
if j.get("results"):
    r = j["results"][0]
    check_result("bench b=model", r, 1, 5)  # symbolic batch defaults to 1
    check("bench: input shape", r["input_shapes"] == {"x": [1, 16]}, r["input_shapes"])
    check("bench: warmup iterations", r["warmup_iterations"] == 2 and r["first_run_ms"] > 0, r)

# --- several batches, reference backend ---------------------------------------------------------------
js = os.path.join(tmp, "multi.json")
rc, out, err = u.ferry("bench", dyn, "--batch", "1,4", "--batch", "3", "--iterations", "3", "--warmup", "0",
                       "--backend", "reference", "--json", js)
check("bench --batch: exit 0", rc == 0, err + out)
j = json.load(open(js)) if os.path.isfile(js) else {}
res = j.get("results", [])
check("bench --batch: three results in order", [r["batch"] for r in res] == [1, 4, 3], [r.get("batch") for r in res])
for r in res:
    check_result("bench b=%d" % r["batch"], r, r["batch"], 3)
    check("bench b=%d: input shape" % r["batch"], r["input_shapes"] == {"x": [r["batch"], 16]}, r["input_shapes"])
    check("bench b=%d: no warmup" % r["batch"], r["warmup_iterations"] == 0 and r["first_run_ms"] == 0, r)
check("bench --batch: reference backend recorded", j.get("backend") == "reference")
check("bench --batch: a table row per batch",
      len([l for l in out.splitlines() if l.split()[:1] in (["1"], ["4"], ["3"])]) == 3, out)

# --duration: at least that long (a count, not a speed: the loop must not stop early).
js = os.path.join(tmp, "dur.json")
rc, out, err = u.ferry("bench", dyn, "--duration", "0.3", "--warmup-ms", "10", "--json", js)
j = json.load(open(js)) if rc == 0 else {}
r = (j.get("results") or [{}])[0]
check("bench --duration: ran at least 0.3 s", rc == 0 and r.get("total_s", 0) >= 0.3 and r.get("iterations", 0) >= 1,
      err + str(r.get("total_s")))
check("bench --warmup-ms: at least one warmup iteration", r.get("warmup_iterations", 0) >= 1 and r.get("warmup_s", 0) >= 0.01)

# Fixed batch dim: its own batch works, another is an error naming the input.
rc, out, err = u.ferry("bench", fixed, "--iterations", "2", "--warmup", "0")
check("bench fixed model: exit 0 with its own batch", rc == 0 and "\n      2 " in out, err + out)
expect_error("bench --batch on a fixed batch dim", ["bench", fixed, "--batch", "4", "--iterations", "1"],
             "'x'", "fixed batch", "--batch 4")
# A second dynamic dim needs --shape; with it, dim 0 still follows --batch.
expect_error("bench: dynamic dim besides the batch", ["bench", seq, "--iterations", "1"], "'x'", "--shape x=1,<seq>")
js = os.path.join(tmp, "seq.json")
rc, out, err = u.ferry("bench", seq, "--shape", "x=1,7", "--batch", "2", "--iterations", "1", "--json", js)
check("bench --shape + --batch", rc == 0 and json.load(open(js))["results"][0]["input_shapes"] == {"x": [2, 7]},
      err + out)

# Inputs from a file: used as given; dim 0 must be the batch.
npy = os.path.join(tmp, "x.npy")
np.save(npy, np.ones((3, 16), np.float32))
rc, out, err = u.ferry("bench", dyn, "--input", "x=" + npy, "--batch", "3", "--iterations", "1")
check("bench --input with its batch", rc == 0, err + out)
expect_error("bench --input with another batch", ["bench", dyn, "--input", "x=" + npy, "--batch", "2",
                                                  "--iterations", "1"], "'x'", "batch 2")

# --- peer ---------------------------------------------------------------------------------------------
js = os.path.join(tmp, "peer.json")
rc, out, err = u.ferry("bench", dyn, "--batch", "1,2", "--iterations", "4", "--warmup", "1", "--threads", "1",
                       "--peer", "onnxruntime", "--json", js, timeout=300)
check("bench --peer onnxruntime: exit 0", rc == 0, err + out)
for needle in ("onnxruntime 1.", "intra_op_num_threads=1", "ferry/onnxruntime", "median latency", "peak memory"):
    check("bench --peer: stdout shows %r" % needle, needle in out, out)
j = json.load(open(js)) if os.path.isfile(js) else {}
peers = j.get("peers", [])
check("bench --peer: one peer", len(peers) == 1 and peers[0].get("name") == "onnxruntime", peers)
if peers:
    p = peers[0]
    check("bench --peer: version and settings", p["version"].startswith("1.") and "ORT_SEQUENTIAL" in p["settings"], p)
    check("bench --peer: results per batch", [r["batch"] for r in p["results"]] == [1, 2])
    for r in p["results"]:
        check_result("peer b=%d" % r["batch"], r, r["batch"], 4)
        check("peer b=%d: same input shapes" % r["batch"], r["input_shapes"] == {"x": [r["batch"], 16]})
    ratios = p.get("ratios", [])
    check("bench --peer: ratios per batch", [q["batch"] for q in ratios] == [1, 2], ratios)
    for q, f, r in zip(ratios, j["results"], p["results"]):
        check("bench --peer b=%d: median ratio = ferry / peer" % q["batch"],
              abs(q["median_latency"] - f["latency_ms"]["median"] / r["latency_ms"]["median"]) < 1e-9 * q["median_latency"])
        check("bench --peer b=%d: every ratio positive" % q["batch"],
              all(q[k] > 0 for k in ("median_latency", "p90_latency", "throughput", "peak_memory")), q)
    ag = p.get("agreement", [])
    check("bench --peer: outputs compared per batch",
          [a["batch"] for a in ag] == [1, 2] and all(a["outputs_compared"] == 1 for a in ag), ag)
    check("bench --peer: ferry and onnxruntime agree", all(a["agrees"] and a["max_rel_diff"] < 1e-5 for a in ag), ag)
    check("bench --peer: no disagreement warning", "outputs differ" not in out, out)
    # Rounds (default 3) alternate ferry and the peer; the 4 iterations per side are split 2+1+1.
    check("bench --peer: 3 rounds recorded and described", j.get("rounds") == 3 and "3 rounds" in j.get("order", "")
          and "in 3 rounds alternating with the peers" in out, (j.get("rounds"), j.get("order")))
    check("bench --peer: the peer warmed up (--warmup 1) in each of the 3 rounds",
          all(r["warmup_iterations"] == 3 for r in p["results"]),
          [r["warmup_iterations"] for r in p["results"]])
    # A ratio line per batch in the text.
    lines = out.split("ferry/onnxruntime")[-1].splitlines()
    rows = [l for l in lines if re.match(r"^\s+\d+(\s+[\d.]+x){4}\s+[\d.e+-]+ \(", l)]
    check("bench --peer: a ratio row per batch", len(rows) == 2, out)

# --rounds 1: ferry measures, then the peer; more rounds than iterations: one iteration per round.
for rounds, want in (("1", 1), ("9", 2)):
    js1 = os.path.join(tmp, "rounds%s.json" % rounds)
    rc, out, err = u.ferry("bench", dyn, "--iterations", "2", "--warmup", "1", "--threads", "1", "--rounds", rounds,
                           "--peer", "onnxruntime", "--json", js1, timeout=300)
    j1 = json.load(open(js1)) if rc == 0 else {}
    check("bench --rounds %s: %d round(s), 2 iterations each side" % (rounds, want),
          rc == 0 and j1.get("rounds") == want and j1["results"][0]["iterations"] == 2
          and j1["peers"][0]["results"][0]["iterations"] == 2, err + out)
rc, out, err = u.ferry("bench", dyn, "--rounds", "0")
check("bench --rounds 0: usage error (exit 2) naming the flag", rc == 2 and "--rounds" in err, (rc, err))

# A model that computes something else for the peer (--peer-model): the outputs differ and bench says so.
other = save(model([helper.make_node("MatMul", ["x", "w"], ["m"], name="mm"), helper.make_node("Add", ["m", "b"], ["y"])],
                   [vi("x", F, ["batch", 16])], [vi("y", F, ["batch", 8])], [w, b]), os.path.join(tmp, "other.onnx"))
js = os.path.join(tmp, "other.json")
rc, out, err = u.ferry("bench", dyn, "--peer-model", other, "--peer", "onnxruntime", "--iterations", "2", "--json", js,
                       timeout=300)
j = json.load(open(js)) if rc == 0 else {}
ag = (j.get("peers") or [{}])[0].get("agreement", [{}])
check("bench --peer-model: runs the other model", rc == 0 and j["peers"][0]["model"] == other, err + out)
check("bench: disagreeing outputs are flagged", rc == 0 and not ag[0].get("agrees", True) and
      "warning: batch 1: ferry's and onnxruntime's outputs differ" in out and "in 'y'" in out, out)

# OpenVINO, the optional second peer: only where the venv has it (bench/run.sh tries to install it).
venv_py = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), ".venv", "bin",
                       "python")
if subprocess.run([venv_py, "-c", "import openvino"], capture_output=True).returncode == 0:
    js = os.path.join(tmp, "ov.json")
    rc, out, err = u.ferry("bench", dyn, "--batch", "2", "--iterations", "3", "--threads", "1", "--peer", "openvino",
                           "--peer", "onnxruntime", "--json", js, timeout=300)
    j = json.load(open(js)) if rc == 0 else {}
    names = [p["name"] for p in j.get("peers", [])]
    check("bench --peer openvino --peer onnxruntime: both, in order", rc == 0 and names == ["openvino", "onnxruntime"],
          err + out)
    if rc == 0:
        check_result("openvino b=2", j["peers"][0]["results"][0], 2, 3)
        check("openvino: f32 precision", "INFERENCE_PRECISION_HINT=f32" in j["peers"][0]["settings"])
        check("openvino: ratios", "ferry/openvino" in out and len(j["peers"][0]["ratios"]) == 1, out)
    # At ferry's bf16, OpenVINO is asked for bf16 too. Not under ONEDNN_MAX_CPU_ISA: OpenVINO's own oneDNN
    # is capped too while it still sees the CPU's bf16 and fails to make its bf16 primitives.
    if not os.environ.get("ONEDNN_MAX_CPU_ISA"):
        rc, out, err = u.ferry("bench", dyn, "--batch", "2", "--iterations", "3", "--threads", "1", "--precision", "bf16",
                               "--peer", "openvino", "--json", js, timeout=300)
        j = json.load(open(js)) if rc == 0 else {}
        check("openvino at --precision bf16: bf16 hint", rc == 0 and
              "INFERENCE_PRECISION_HINT=bf16" in j["peers"][0]["settings"], err + out)
else:
    print("skip bench --peer openvino (openvino is not in the venv)")

# A missing venv python: the setup hint. A peer that fails: its reason in ferry's error.
env = dict(os.environ, FERRY_PYTHON=os.path.join(tmp, "no_python"))
p = subprocess.run([u.FERRY, "bench", dyn, "--iterations", "1", "--peer", "onnxruntime"], capture_output=True,
                   text=True, env=env)
check("bench --peer without python: exit 1 naming FERRY_PYTHON",
      p.returncode == 1 and p.stderr.startswith("error:") and "FERRY_PYTHON" in p.stderr, p.stderr)
fake = os.path.join(tmp, "fake_python")
with open(fake, "w") as f:
    f.write("#!/bin/sh\necho 'error: cannot import onnxruntime' >&2\nexit 3\n")
os.chmod(fake, 0o755)
p = subprocess.run([u.FERRY, "bench", dyn, "--iterations", "1", "--peer", "onnxruntime"], capture_output=True,
                   text=True, env=dict(os.environ, FERRY_PYTHON=fake))
check("bench --peer without onnxruntime: the setup hint",
      p.returncode == 1 and "run scripts/setup.sh" in p.stderr and "ONNX Runtime" in p.stderr, p.stderr)
expect_error("bench --peer on a .ferry model needs --peer-model",
             ["bench", os.path.join(tmp, "m.ferry"), "--peer", "onnxruntime"], "--peer-model")

# --- a compiled .ferry file with dynamic-batch gears: each batch runs its gear, others name the gears ---------
geared = os.path.join(tmp, "geared.ferry")
rc, out, err = u.ferry("compile", dyn, "-o", geared, "--dynamic-batch", "1,4")
check("compile geared model for bench: exit 0", rc == 0, err)
js = os.path.join(tmp, "ferry_file.json")
rc, out, err = u.ferry("bench", geared, "--batch", "1,4", "--iterations", "2", "--warmup", "0", "--json", js)
check("bench .ferry: exit 0", rc == 0, err)
if rc == 0:
    rep = json.load(open(js))
    check("bench .ferry: one result per gear", [r["batch"] for r in rep["results"]] == [1, 4], rep["results"])
    for r in rep["results"]:
        check_result("bench .ferry batch %d" % r["batch"], r, r["batch"], 2)
expect_error("bench .ferry batch outside the gears", ["bench", geared, "--batch", "3", "--iterations", "1"], "1, 4")
expect_error("bench .ferry with a peer and no --peer-model",
             ["bench", geared, "--peer", "onnxruntime", "--iterations", "1"], "--peer-model")

# --- a compiled model holds its prepacked weights once: the mapped originals leave the resident set ------
# Two 1024x2048 Linear weights (8 MiB each) that the MatMul kernels prepack: without dropping the mapped
# pages they read, the .ferry run peaked 16 MiB above the .onnx run (bert_like: 691 against 370 MiB).
big = os.path.join(tmp, "big.onnx")
rng = np.random.RandomState(0)
w1 = numpy_helper.from_array(rng.randn(1024, 2048).astype(np.float32) * 0.02, "w1")
w2 = numpy_helper.from_array(rng.randn(2048, 1024).astype(np.float32) * 0.02, "w2")
save(model([helper.make_node("MatMul", ["x", "w1"], ["h"]), helper.make_node("Relu", ["h"], ["r"]),
            helper.make_node("MatMul", ["r", "w2"], ["y"])],
           [vi("x", F, [64, 1024])], [vi("y", F, [64, 1024])], [w1, w2]), big)
bigf = os.path.join(tmp, "big.ferry")
rc, out, err = u.ferry("compile", big, "-o", bigf)
check("compile big model: exit 0", rc == 0, err)
peaks = {}
for path in (big, bigf):
    js = path + ".json"
    rc, out, err = u.ferry("bench", path, "--iterations", "2", "--warmup", "1", "--threads", "1", "--json", js)
    if rc == 0:
        peaks[path] = json.load(open(js))["results"][0]["peak_rss_bytes"] / 2**20
check("bench .ferry: peak memory within 4 MiB of the .onnx run's (weights held once)",
      len(peaks) == 2 and peaks[bigf] <= peaks[big] + 4, peaks)

# --- bad flags (exit 2) and bad models (exit 1) ------------------------------------------------------
for label, args in (("unknown flag", ["--frobnicate"]), ("--batch 0", ["--batch", "0"]),
                    ("--batch x", ["--batch", "x"]), ("--iterations 0", ["--iterations", "0"]),
                    ("--warmup and --warmup-ms", ["--warmup", "1", "--warmup-ms", "5"]),
                    ("--peer unknown", ["--peer", "tensorflow"]), ("--backend gpu", ["--backend", "gpu"]),
                    ("--opt-level 9", ["--opt-level", "9"]), ("--duration -1", ["--duration", "-1"])):
    rc, out, err = u.ferry("bench", dyn, *args)
    check("bench bad flag %s: exit 2" % label, rc == 2 and err.startswith("error:"), "rc=%d %s" % (rc, err))
rc, out, err = u.ferry("bench")
check("bench without MODEL: exit 2", rc == 2, err)

bad = os.path.join(tmp, "garbage.onnx")
open(bad, "wb").write(b"\x08\x07garbage" * 50)
expect_error("bench garbage model", ["bench", bad, "--iterations", "1"], bad)
expect_error("bench missing model", ["bench", os.path.join(tmp, "nope.onnx"), "--iterations", "1"], "nope.onnx")
expect_error("bench unknown --shape input", ["bench", dyn, "--shape", "q=1,2", "--iterations", "1"], "'q'")
expect_error("bench unwritable --json", ["bench", dyn, "--iterations", "1", "--json",
                                         os.path.join(tmp, "no", "such", "dir", "x.json")], "x.json")

u.finish()
