"""bench/run.py's table from real `ferry bench --peer onnxruntime` runs on a tiny model (the harness itself
needs the full-size exports, which take minutes: bench/README.md). Checks that every figure lands in the
right column and the targets are judged from the ratio, not from times.

usage: test_bench_harness.py PATH/TO/ferry
"""
import importlib.util
import os

import numpy as np
from onnx import TensorProto, helper, numpy_helper

import cli_util as u
from cli_util import check, model, save, vi

tmp = u.init()
root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
spec = importlib.util.spec_from_file_location("bench_run", os.path.join(root, "bench", "run.py"))
h = importlib.util.module_from_spec(spec)
spec.loader.exec_module(h)

w = numpy_helper.from_array(np.random.RandomState(1).randn(16, 4).astype(np.float32), "w")
m = save(model([helper.make_node("MatMul", ["input", "w"], ["output"], name="mm")],
               [vi("input", TensorProto.FLOAT, ["batch", 16])], [vi("output", TensorProto.FLOAT, ["batch", 4])], [w]),
         os.path.join(tmp, "tiny.onnx"))


class Args:
    ferry = u.FERRY
    threads = 1
    backend = "cpu"
    opt_level = 2
    iterations = 3
    duration = None


rows = []
for b in (1, 8):
    run = h.bench_one(Args, m, b, ["onnxruntime"], ["--warmup", "1"])
    check("harness: ferry bench b=%d ran" % b, run["exit_code"] == 0 and "bench" in run, run.get("error"))
    fl = h.flops(u.FERRY, m, [b, 16])
    check("harness: FLOPs from ferry inspect b=%d" % b, fl == 2 * b * 16 * 4, fl)
    r = h.row("tiny", b, run, fl)
    rows.append(r)
    f = run["bench"]["results"][0]["latency_ms"]["median"]
    o = run["bench"]["peers"][0]["results"][0]["latency_ms"]["median"]
    check("harness b=%d: medians" % b, r["ferry_median_ms"] == f and r["ort_median_ms"] == o, r)
    check("harness b=%d: ratio" % b, abs(r["ratio"] - f / o) < 1e-12, r)
    check("harness b=%d: target judged from the ratio" % b,
          r["target"] == h.TARGET[b] and r["target_met"] == (r["ratio"] <= h.TARGET[b]), r)
    check("harness b=%d: GFLOP/s" % b, abs(r["ferry_gflops"] - fl / 1e9 / (f / 1000)) < 1e-9, r)
    check("harness b=%d: memory ratio and agreement" % b,
          r["memory_ratio"] > 0 and r["ort_agrees"] and r["ort_max_rel_diff"] < 1e-5, r)

# A bf16 run (ferry alone) adds its median and the speed-up over ferry fp32 to the row.
prun = h.bench_one(Args, m, 1, [], ["--warmup", "1"], "bf16")
check("harness: ferry bench --precision bf16 ran", prun["exit_code"] == 0 and "--precision" in prun["command"] and
      prun["command"][prun["command"].index("--precision") + 1] == "bf16" and not prun["bench"].get("peers"), prun.get("error"))
bf = dict(rows[0])
h.add_precision(bf, "bf16", prun)
check("harness: bf16 speed-up = fp32 median / bf16 median",
      abs(bf["bf16_speedup"] - bf["ferry_median_ms"] / prun["bench"]["results"][0]["latency_ms"]["median"]) < 1e-12, bf)
res = {"model": "resnet50", "ferry_median_ms": 10.0}
h.add_precision(res, "bf16", {"bench": {"results": [{"latency_ms": {"median": 5.0}, "unstable": False}]}})
check("harness: resnet50's bf16 target judged from the speed-up", res["bf16_speedup"] == 2.0 and res["bf16_target_met"], res)
md_bf = h.markdown([bf, res | {"batch": 1}], {"date_utc": "today", "cpu": "cpu", "backend": "cpu", "opt_level": 2,
                                            "threads": 1, "precisions": ["fp32", "bf16"]})
check("harness: bf16 columns", "| ferry bf16 ms | bf16 speed-up vs ferry fp32 |" in md_bf and
      "2.00× (target ≥ 1.6×: met)" in md_bf, md_bf)

rows.append(h.row("broken", 1, {"error": "error: something | failed"}, None))
md = h.markdown(rows, {"date_utc": "today", "cpu": "cpu", "backend": "cpu", "opt_level": 2, "threads": 1,
                       "ort_version": "1.x", "openvino_note": "not installed"})
lines = md.splitlines()
check("harness: header + separator + 3 rows", lines[0].startswith("| model | batch | ferry median ms") and
      len([l for l in lines if l.startswith("| tiny |") or l.startswith("| broken |")]) == 3, md)
check("harness: the error row is escaped", "something \\| failed" in md, md)
check("harness: OpenVINO note", "OpenVINO skipped: not installed." in md, md)
check("harness: no OpenVINO columns without OpenVINO", "OpenVINO median" not in lines[0], lines[0])
b8 = [l for l in lines if l.startswith("| tiny | 8 |")]
check("harness: batch 8 target", b8 and "≤ 0.95" in b8[0], b8)

u.finish()
