"""bench/run.py's rows, bench/report.py's table, summary and plot from real `ferry bench --peer onnxruntime` runs
on a tiny model (the harness itself needs the suite's exports, which take hours: bench/README.md), and the
suite's --list, which exports nothing. Checks that every figure lands in the right column and the target is
judged from ferry / best peer, not from times.

usage: test_bench_harness.py PATH/TO/ferry
"""
import copy
import datetime
import importlib.util
import math
import os
import re
import subprocess
import xml.etree.ElementTree as ET

import numpy as np
from onnx import TensorProto, helper, numpy_helper

import cli_util as u
from cli_util import check, model, save, vi

tmp = u.init()
root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
spec = importlib.util.spec_from_file_location("bench_run", os.path.join(root, "bench", "run.py"))
h = importlib.util.module_from_spec(spec)
spec.loader.exec_module(h)
rep = h.report

w = numpy_helper.from_array(np.random.RandomState(1).randn(16, 4).astype(np.float32), "w")
m = save(model([helper.make_node("MatMul", ["input", "w"], ["output"], name="mm")],
               [vi("input", TensorProto.FLOAT, ["batch", 16])], [vi("output", TensorProto.FLOAT, ["batch", 4])], [w]),
         os.path.join(tmp, "tiny.onnx"))
info = {"inputs": [{"name": "input", "shape": ["batch", 16], "dtype": "float32"}],
        "exporter": "torch 1.13.0a0+git TorchScript exporter (Debian python3-torch, torchvision 0.14.0), opset 13"}
entry = {"name": "tiny", "family": "vision"}


class Args:
    ferry = u.FERRY
    threads = 1
    backend = "cpu"
    opt_level = 2
    iterations = 3
    duration = None
    selection, families, entries, batches, precisions = "--models", None, [entry], [1, 8], ["fp32", "bf16"]


def close(a, b):
    return a is not None and b is not None and abs(a - b) <= 1e-9 * max(abs(a), abs(b), 1e-300)


rows, runs = [], {}
for b in (1, 8):
    run = h.bench_one(Args, m, b, ["onnxruntime"], ["--warmup", "1"])
    runs[b] = run
    check("harness: ferry bench b=%d ran with the ORT peer" % b, run["exit_code"] == 0 and "bench" in run and
          run["command"][run["command"].index("--peer") + 1] == "onnxruntime", run.get("error"))
    fl = h.flops(u.FERRY, m, info, b)
    check("harness: FLOPs from ferry inspect b=%d" % b, fl == 2 * b * 16 * 4, fl)
    r = h.row(entry, b, run, fl, info)
    rows.append(r)
    f = run["bench"]["results"][0]["latency_ms"]["median"]
    o = h.peer_result(run["bench"], "onnxruntime", b)["latency_ms"]["median"]
    check("harness b=%d: model, family, batch, exporter" % b, (r["model"], r["family"], r["batch"]) ==
          ("tiny", "vision", b) and r["exporter_short"] == "torch 1.13.0a0 (Debian)", r)
    check("harness b=%d: medians" % b, r["ferry_median_ms"] == f and r["ort_median_ms"] == o, r)
    check("harness b=%d: ferry/ORT and best peer = ORT alone" % b, close(r["ratio"], f / o) and
          r["best_peer"] == "onnxruntime" and close(r["best_ratio"], f / o) and "ov_ratio" not in r, r)
    check("harness b=%d: target judged from ferry / best peer" % b,
          r["target"] == rep.TARGET and r["target_met"] == (r["best_ratio"] <= rep.TARGET), r)
    check("harness b=%d: GFLOP and GFLOP/s" % b, close(r["gflop"], fl / 1e9) and
          close(r["ferry_gflops"], fl / 1e9 / (f / 1000)) and close(r["ort_gflops"], fl / 1e9 / (o / 1000)), r)
    check("harness b=%d: memory ratio and agreement" % b,
          r["memory_ratio"] > 0 and r["ort_agrees"] and r["ort_max_rel_diff"] < 1e-5, r)


def faked(run, b, ferry_ms, ort_ms, ov_ms, name):
    """The real run's JSON with chosen medians (distinct at the table's precision) and a fake OpenVINO peer."""
    x = copy.deepcopy(run)
    x["bench"]["results"][0]["latency_ms"]["median"] = ferry_ms
    ort = h.peer_result(x["bench"], "onnxruntime", b)
    ort["latency_ms"]["median"] = ort_ms
    x["bench"]["peers"].append({"name": "openvino", "version": "fake", "results": [
        dict(copy.deepcopy(ort), latency_ms={"median": ov_ms}, unstable=False)]})
    return h.row(dict(entry, name=name), b, x, 3.2e9, info)


ov_fast = faked(runs[1], 1, 12.5, 15.0, 5.0, "ov_fast")
check("harness: best peer = the faster one (OpenVINO)", ov_fast["best_peer"] == "openvino" and
      ov_fast["best_ratio"] == 2.5 and close(ov_fast["ratio"], 12.5 / 15) and ov_fast["ov_ratio"] == 2.5 and
      ov_fast["target_met"] is False, ov_fast)
ov_slow = faked(runs[8], 8, 4.0, 5.0, 20.0, "ov_slow")
check("harness: best peer = the faster one (ORT)", ov_slow["best_peer"] == "onnxruntime" and
      ov_slow["best_ratio"] == 0.8 and ov_slow["ov_ratio"] == 0.2 and ov_slow["target_met"] is True, ov_slow)
no_ort = copy.deepcopy(runs[1])
no_ort["peer_errors"] = {"onnxruntime": "the onnxruntime peer failed: a | b"}
no_ort["bench"]["peers"] = [{"name": "openvino", "version": "fake", "results": [
    {"batch": 1, "latency_ms": {"median": 2 * no_ort["bench"]["results"][0]["latency_ms"]["median"]},
     "peak_rss_bytes": 1 << 20, "unstable": False}]}]
no_ort = h.row(dict(entry, name="no_ort"), 1, no_ort, None, info)
check("harness: ORT failed: its error kept, best peer OpenVINO", no_ort.get("ort_error", "").endswith("a | b") and
      "ratio" not in no_ort and no_ort["best_peer"] == "openvino" and no_ort["best_ratio"] == 0.5, no_ort)

# A bf16 run (ferry alone) adds its median and the speed-up over ferry fp32 to the row.
prun = h.bench_one(Args, m, 1, [], ["--warmup", "1"], "bf16")
check("harness: ferry bench --precision bf16 ran", prun["exit_code"] == 0 and
      prun["command"][prun["command"].index("--precision") + 1] == "bf16" and "--peer" not in prun["command"] and
      not prun["bench"].get("peers"), prun.get("error"))
# ferry hands its precision to the peers: ONNX Runtime's settings say it stayed fp32.
orun = h.bench_once(h.bench_cmd(Args, m, 1, ["onnxruntime"], ["--warmup", "1"], "bf16"))
check("harness: the peer is told ferry's precision", orun["exit_code"] == 0 and
      "fp32 (the CPU provider has no bf16 mode)" in orun["bench"]["peers"][0]["settings"], orun.get("error"))
# OpenVINO at the same precision (faked: CI may lack it) gives the row its median and ferry/OV at bf16.
h.add_precision(ov_fast, "bf16", {"bench": {"results": [{"latency_ms": {"median": 10.0}, "unstable": False}],
                                            "peers": [{"name": "openvino", "results": [
                                                {"latency_ms": {"median": 8.0}, "unstable": False}]}]}})
h.add_precision(ov_slow, "bf16", {"error": "bf16 | broke"})
h.add_precision(rows[0], "bf16", prun)
check("harness: bf16 speed-up = fp32 median / bf16 median", close(
    rows[0]["bf16_speedup"], rows[0]["ferry_median_ms"] / prun["bench"]["results"][0]["latency_ms"]["median"]) and
      ov_fast["bf16_speedup"] == 1.25 and ov_slow["bf16_error"] == "bf16 | broke", (rows[0], ov_fast))
res = {"model": "resnet50", "ferry_median_ms": 10.0}
h.add_precision(res, "bf16", {"bench": {"results": [{"latency_ms": {"median": 5.0}, "unstable": False}]}})
check("harness: resnet50's bf16 target judged from the speed-up", res["bf16_speedup"] == 2.0 and
      res["bf16_target_met"] is True, res)

rows += [ov_fast, ov_slow, no_ort, h.row(dict(entry, name="broken"), 8, {"error": "boom | bad\nline 2"}, None, info),
         h.error_row(dict(entry, name="unexported", family="detection"), 1, "export failed: x | y"),
         faked(runs[8], 8, 3.0, 2.0, 4.0, "a<b&c")]
meta = h.make_meta(Args, ["onnxruntime", "openvino"], "", [], datetime.datetime(2026, 1, 2, 3, 4))
meta.update({"ort_version": "1.x", "ov_version": "fake", "plot": "p.svg", "summary": rep.summary(rows, [1, 8])})
with open("/proc/cpuinfo") as fh:
    cpuinfo = fh.read()
flags = set(re.search(r"^flags\s*:(.*)$", cpuinfo, re.M).group(1).split())
check("harness: meta has the CPU name and its ISA flags", meta["cpu_model"] == re.search(
    r"^model name\s*:\s*(.*)$", cpuinfo, re.M).group(1).strip() and set(meta["cpu_isa"]) <= flags and
      {"avx2", "fma"} & flags <= set(meta["cpu_isa"]) and not {"sse2", "sse4_2"} & set(meta["cpu_isa"]), meta)

# The summary: per batch, the geometric mean of ferry / best peer over the rows measured against a peer.
for s in meta["summary"]:
    best = [r["best_ratio"] for r in rows if r["batch"] == s["batch"] and "best_ratio" in r]
    gm = math.exp(sum(map(math.log, best)) / len(best))
    check("harness: summary b=%d" % s["batch"], close(s["geomean_best_ratio"], gm) and s["measured"] == len(best) and
          s["failed"] == 1 and s["rows"] == sum(r["batch"] == s["batch"] for r in rows) and
          s["at_or_below_target"] == sum(x <= rep.TARGET for x in best), (s, best))

md = rep.markdown(rows, meta)
lines = md.splitlines()
hi = next(i for i, line in enumerate(lines) if line.startswith("| model |"))
head = [c.strip() for c in lines[hi].strip("|").split("|")]
table = [[c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]] for line in lines[hi + 2:]
         if line.startswith("|")]
check("harness: one table line per row, each as wide as the header", len(table) == len(rows) and
      all(len(c) == len(head) for c in table), (head, table))
cells = {(c[0], c[2]): dict(zip(head, c)) for c in table}
want = {"ferry ms": "12.50", "ORT ms": "15.00", "OpenVINO ms": "5.00", "ferry/ORT": "0.833", "ferry/OV": "2.500",
        "≤ 1.00?": "**no**", "ferry bf16 ms": "10.00", "bf16 speed-up vs ferry fp32": "1.25×",
        "OpenVINO bf16 ms": "8.00", "ferry/OV at bf16": "1.250", "GFLOP": "3.20",
        "ferry GFLOP/s": "256.0", "exported by": "torch 1.13.0a0 (Debian)"}
got = cells.get(("ov_fast", "1"), {})
check("harness: every figure in its column", all(got.get(k) == v for k, v in want.items()) and
      got["ferry/best peer"].startswith("2.500"), got)
check("harness: ferry faster: met", cells[("ov_slow", "8")]["≤ 1.00?"] == "yes" and
      cells[("ov_slow", "8")]["ferry/best peer"].startswith("0.800") and
      cells[("ov_slow", "8")]["ferry bf16 ms"] == "error: bf16 \\| broke", cells[("ov_slow", "8")])
tiny = [(cells[("tiny", str(r["batch"]))], r) for r in rows[:2]]
check("harness: the real rows' figures", all(c["ferry/ORT"] == "%.3f" % r["ratio"] and c["ORT ms"] == "%.2f" % r[
    "ort_median_ms"] and c["ferry ms"] == "%.2f" % r["ferry_median_ms"] for c, r in tiny), tiny)
check("harness: error rows escaped", cells[("broken", "8")]["ferry ms"] == "error: boom \\| bad line 2" and
      cells[("unexported", "1")]["ferry ms"] == "error: export failed: x \\| y" and
      cells[("no_ort", "1")]["ORT ms"] == "error: the onnxruntime peer failed: a \\| b", table)
check("harness: CPU, ISA and peers above the table", ("CPU: %s × %d; ISA: %s" % (
    meta["cpu_model"], meta["cpu_count"], " ".join(meta["cpu_isa"]))) in lines[:hi] and
      any("ONNX Runtime 1.x, OpenVINO fake" in line for line in lines[:hi]), lines[:hi])
for s in meta["summary"]:
    check("harness: summary line b=%d" % s["batch"], "batch %d: geometric mean ferry/best peer %.3f" % (
        s["batch"], s["geomean_best_ratio"]) in md and "%d row(s) failed" % s["failed"] in md, md)

# The plot: well-formed XML, one bar per measured row, each starting at the 1.0 line, one 1.0 line per panel.
svg = rep.svg_plot(rows, meta, [1, 8])
try:
    doc = ET.fromstring(svg)
except ET.ParseError as e:
    doc = None
    check("harness: the plot is well-formed XML", False, e)
if doc is not None:
    ns = "{http://www.w3.org/2000/svg}"
    bars = [e for e in doc.iter(ns + "rect") if e.get("y")]
    ones = [float(e.get("x1")) for e in doc.iter(ns + "line") if e.get("stroke") == "black"]
    texts = [e.text for e in doc.iter(ns + "text")]
    measured = [r for r in rows if "best_ratio" in r]
    check("harness: one bar per measured row", len(bars) == len(measured) and
          all(r["model"] in texts and "%.2f" % r["best_ratio"] in texts for r in measured), (len(bars), texts))
    left = lambda e: float(e.get("x"))  # noqa: E731
    check("harness: a 1.0 line per panel, every bar starts or ends on it", len(ones) == 2 and all(
        any(abs(left(e) - x) < 0.11 or abs(left(e) + float(e.get("width")) - x) < 0.11 for x in ones) for e in bars),
          (ones, [(e.get("x"), e.get("width")) for e in bars]))
    check("harness: geometric mean in the panel titles", all(
        any("batch %d: " % s["batch"] in t and "%.3f" % s["geomean_best_ratio"] in t for t in texts if t)
        for s in meta["summary"]), texts)

# --list: the full suite by family, with counts as bench/README.md gives them, exporting nothing.
cache = os.path.join(tmp, "cache")
os.makedirs(cache)
p = subprocess.run(["nice", "-n", "10", os.path.join(root, "bench", "run.sh"), "--suite", "full", "--list"],
                   capture_output=True, text=True, env=dict(os.environ, FERRY_CACHE=cache), timeout=120)
listed = [line.split() for line in p.stdout.splitlines()[1:] if line.strip() and not line[0].isdigit()]
counts = {f: sum(1 for x in listed if x[1] == f) for f in h.suite.FAMILIES}
last = p.stdout.strip().splitlines()[-1] if p.stdout.strip() else ""
with open(os.path.join(root, "bench", "README.md")) as fh:
    doc_line = re.search(r"lists (\d+ models: [^.]*)\.", " ".join(fh.read().split()))
check("harness: --list ran", p.returncode == 0 and p.stdout.startswith("model "), p.stderr[-2000:])
check("harness: --list counts per family", last == "%d models: %s" % (len(listed), ", ".join(
    "%s %d" % kv for kv in counts.items())) and all(counts.values()) and doc_line and last == doc_line.group(1), (last, doc_line, counts))
check("harness: --list exports nothing", listed and all("not exported yet" in " ".join(x) for x in listed) and
      not os.listdir(cache), os.listdir(cache))

u.finish()
