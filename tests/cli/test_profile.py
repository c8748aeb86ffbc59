"""`ferry profile`: per-node rows (fused kernels with their ONNX nodes), shares that add up, FLOPs and GFLOP/s
where defined, per-op-type summary, CSV and JSON; the Chrome trace follows the trace event format Perfetto
and chrome://tracing read (a JSON object with a traceEvents array of events with ph/ts/dur/name/pid/tid,
complete events 'X' with non-negative times, one per node per run); bad flags exit 2, bad models exit 1.

usage: test_profile.py PATH/TO/ferry
"""
import csv
import json
import os

import numpy as np
from onnx import TensorProto, helper, numpy_helper

import cli_util as u
from cli_util import check, expect_error, model, save, vi

tmp = u.init()
F = TensorProto.FLOAT
rng = np.random.default_rng(1)
w = numpy_helper.from_array(rng.standard_normal((32, 64)).astype(np.float32), "w")
b = numpy_helper.from_array(rng.standard_normal(64).astype(np.float32), "b")
w2 = numpy_helper.from_array(rng.standard_normal((64, 16)).astype(np.float32), "w2")
src = save(model([helper.make_node("MatMul", ["x", "w"], ["h"], name="mm"),
                  helper.make_node("Add", ["h", "b"], ["hb"], name="bias"),
                  helper.make_node("Relu", ["hb"], ["r"], name="relu"),
                  helper.make_node("MatMul", ["r", "w2"], ["z"], name="mm2"),
                  helper.make_node("Softmax", ["z"], ["y"], name="softmax", axis=-1)],
                 [vi("x", F, ["N", 32])], [vi("y", F, ["N", 16])], [w, b, w2]), os.path.join(tmp, "m.onnx"))
trace, js, cs = (os.path.join(tmp, n) for n in ("trace.json", "p.json", "p.csv"))
RUNS = 4
rc, out, err = u.ferry("profile", src, "--batch", "8", "--runs", str(RUNS), "--trace", trace, "--json", js, "--csv", cs)
check("profile: exit 0", rc == 0, err)
for needle in ("by op type:", "com.ferry.FusedMatMul", "top ", "covers mm, bias, relu", "GFLOP/s", "weights"):
    check("profile text: %r" % needle, needle in out, out)
rep = json.load(open(js)) if os.path.exists(js) else {"nodes": [], "by_type": []}
check("json: schema", rep.get("schema") == "ferry.profile/1")
check("json: memory figures", rep.get("weight_bytes") == 4 * (32 * 64 + 64 + 64 * 16) and rep.get("peak_rss_bytes", 0) > 0,
      {k: rep.get(k) for k in ("weight_bytes", "peak_rss_bytes", "arena_bytes")})
nodes = rep["nodes"]
check("json: one row per prepared node (3: fused mm+bias+relu, mm2, softmax)", len(nodes) == 3, [n["node"] for n in nodes])
check("json: shares add up to 1", abs(sum(n["share"] for n in nodes) - 1) < 1e-6, [n["share"] for n in nodes])
fused = [n for n in nodes if n["op"] == "com.ferry.FusedMatMul" and n["covers"] == ["mm", "bias", "relu"]]
check("json: the fused node lists the ONNX nodes it covers", len(fused) == 1, nodes)
if fused:
    f = fused[0]
    check("json: FLOPs of the fused MatMul = 2*8*32*64 + bias", f["flops"] == 2 * 8 * 32 * 64 + 8 * 64, f["flops"])
    check("json: GFLOP/s = flops / time", abs(f["gflops_per_s"] - f["flops"] / (f["ms"] * 1e6)) < 1e-6 * f["gflops_per_s"])
    check("json: bytes moved = inputs + outputs", f["bytes"] == 4 * (8 * 32 + 32 * 64 + 64 + 8 * 64), f["bytes"])
    check("json: the kernel is named", f["kernel"].startswith("cpu:"), f["kernel"])
check("json: by_type sums to the total", abs(sum(t["ms"] for t in rep["by_type"]) - rep["total_ms"]) < 1e-6 * max(rep["total_ms"], 1e-9))
rows = list(csv.DictReader(open(cs))) if os.path.exists(cs) else []
check("csv: a row per node", len(rows) == len(nodes) and rows[0]["node"], rows[:1])

# Chrome trace format.
t = json.load(open(trace)) if os.path.exists(trace) else {}
ev = t.get("traceEvents") if isinstance(t, dict) else t
check("trace: a JSON object with a traceEvents array", isinstance(ev, list) and ev, type(t))
ev = ev or []
xs = [e for e in ev if e.get("ph") == "X"]
check("trace: every event has ph, name, pid, tid", all(all(k in e for k in ("ph", "name", "pid", "tid")) for e in ev))
check("trace: complete events have numeric ts >= 0 and dur >= 0",
      xs and all(isinstance(e["ts"], (int, float)) and isinstance(e["dur"], (int, float)) and e["ts"] >= 0
                 and e["dur"] >= 0 for e in xs))
check("trace: one complete event per node per run", len(xs) == RUNS * len(nodes), (len(xs), RUNS, len(nodes)))
check("trace: events of one thread do not overlap", all(a["ts"] + a["dur"] <= b["ts"] + 1e-3
                                                       for a, b in zip(sorted(xs, key=lambda e: e["ts"]),
                                                                       sorted(xs, key=lambda e: e["ts"])[1:])))
check("trace: metadata names the process", any(e.get("ph") == "M" and e["name"] == "process_name" for e in ev))

# A partitioned model: RNN is not in ascend310p's operator list, so it falls back to the host between two
# device MatMuls. Nodes are placed as `ferry check` places them, the time is split by side, and the bytes
# that cross per inference are listed: x in (2*1*8 floats), y out (2*8), a to the host and Y back (16 each).
r = np.random.RandomState(0)
rnn = save(model([helper.make_node("MatMul", ["x", "w"], ["a"], name="mm1"),
                  helper.make_node("RNN", ["a", "W", "R"], ["Y", ""], name="rnn", hidden_size=8),
                  helper.make_node("Reshape", ["Y", "shp"], ["f"], name="flat"),
                  helper.make_node("MatMul", ["f", "w"], ["y"], name="mm2")],
                 [vi("x", F, [2, 1, 8])], [vi("y", F, [2, 8])],
                 [numpy_helper.from_array(r.randn(8, 8).astype(np.float32), "w"),
                  numpy_helper.from_array((r.randn(1, 8, 8) * 0.3).astype(np.float32), "W"),
                  numpy_helper.from_array((r.randn(1, 8, 8) * 0.3).astype(np.float32), "R"),
                  numpy_helper.from_array(np.array([2, 8], dtype=np.int64), "shp")]), os.path.join(tmp, "rnn.onnx"))
pj = os.path.join(tmp, "partition.json")
rc, out, err = u.ferry("profile", rnn, "--target", "ascend310p", "--json", pj, "--link-gbps", "2")
check("profile --target ascend310p: exit 0", rc == 0, err)
check("profile --target: the transfers line says EMULATED and not measured",
      "transfers: target ascend310p (EMULATED)" in out and "not measured" in out and "at 2 GB/s" in out, out)
check("profile --target: the host node is marked in the text", "(host) rnn" in out, out)
prep = json.load(open(pj)) if os.path.exists(pj) else {}
part = prep.get("partition") or {}
check("json partition: bytes in, out and at the borders",
      part.get("input_bytes") == 64 and part.get("output_bytes") == 64 and part.get("border_values") == 2 and
      part.get("border_bytes") == 128, part)
check("json partition: estimated time = bytes / link", abs(part.get("estimated_transfer_us", -1) - 256 / 2e3) < 1e-9, part)
host = [n for n in prep.get("nodes", []) if n.get("placement") == "host"]
check("json partition: exactly the RNN on the host, its time counted there",
      [n["node"] for n in host] == ["rnn"] and part.get("host_nodes") == 1 and
      abs(part.get("host_ms", -1) - host[0]["ms"]) < 1e-9 if host else False, (host, part))
check("json partition: every other node on the device",
      all(n.get("placement") == "device" for n in prep.get("nodes", []) if n["node"] != "rnn"), prep.get("nodes"))
rc, out, err = u.ferry("profile", src, "--batch", "2")
check("profile without --target: no partition", rc == 0 and "transfers: none" in out, out)

# Errors.
rc, out, err = u.ferry("profile", src, "--runs", "0")
check("profile --runs 0: exit 2", rc == 2, (rc, err))
expect_error("profile of a dynamic model without --batch/--shape", ["profile", src], "--shape")
expect_error("profile missing model", ["profile", os.path.join(tmp, "nope.onnx")], "nope.onnx")
expect_error("profile unwritable trace", ["profile", src, "--batch", "2", "--trace", os.path.join(tmp, "no", "t.json")], "t.json")
u.finish()
