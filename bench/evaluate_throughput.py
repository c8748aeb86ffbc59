#!/usr/bin/env python3
# Run with the project venv (numpy): .venv/bin/python bench/evaluate_throughput.py
"""Does `ferry evaluate`'s data pipeline keep the model busy? Issue 24's figure: with pre-decoded .npy
samples, evaluate's throughput against what `ferry bench` says the same work takes at the same batch.

evaluate runs two sessions per batch (the fp32 golden and the target), so the bench figure it is held to is
    expected samples/s = batch / (golden median latency + target median latency)
with both latencies from `ferry bench` at that batch, same threads. evaluate's own rate excludes opening the
model (report.json: timing.samples_per_s). Ratio >= 0.90 is the target.

    .venv/bin/python bench/evaluate_throughput.py [--models resnet50,mobilenet_v2] [--batches 1,8]
        [--samples 256] [--precision fp16] [--threads 2] [--rounds 3] [--ferry build/ferry] [--out FILE.json]

bench and evaluate alternate round by round, as the harness alternates runtimes; medians are compared.

Models come from the harness's cache (bench/run.sh exports them); run it with the project venv (numpy).
"""
import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import suite  # noqa: E402


def bench_ms(ferry, model, batch, threads, precision):
    with tempfile.NamedTemporaryFile(suffix=".json") as js:
        cmd = [ferry, "bench", model, "--batch", str(batch), "--threads", str(threads), "--json", js.name]
        if precision != "fp32":
            cmd += ["--precision", precision]
        subprocess.run(cmd, capture_output=True, text=True, check=True)
        return json.load(open(js.name))["results"][0]["latency_ms"]["median"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default="resnet50,mobilenet_v2")
    ap.add_argument("--batches", default="1,8")
    ap.add_argument("--samples", type=int, default=256)
    ap.add_argument("--precision", default="fp16")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--ferry", default=os.path.join(HERE, "..", "build", "ferry"))
    ap.add_argument("--rounds", type=int, default=3,
                    help="bench and evaluate alternate this many times; the medians are compared (a shared VM drifts)")
    ap.add_argument("--out")
    a = ap.parse_args()
    rows = []
    for name in a.models.split(","):
        folder = os.path.join(suite.cache_root(), name)
        model = os.path.join(folder, "model.onnx")
        info = json.load(open(os.path.join(folder, "info.json")))
        shape = (info["input"], [d if isinstance(d, int) else 1 for d in info["shape"]])
        with tempfile.TemporaryDirectory(prefix="ferry-evaltp-") as work:
            tmp = os.path.join(work, "data")  # the samples; reports go beside it, not into it
            os.makedirs(tmp)
            rng = np.random.default_rng(0)
            for i in range(a.samples):
                np.save(os.path.join(tmp, "s%05d.npy" % i), rng.standard_normal(shape[1][1:], dtype=np.float32))
            for b in (int(x) for x in a.batches.split(",")):
                golden, target, rates, timing = [], [], [], None
                for r in range(a.rounds):
                    golden.append(bench_ms(a.ferry, model, b, a.threads, "fp32"))
                    target.append(bench_ms(a.ferry, model, b, a.threads, a.precision))
                    out = os.path.join(work, "out%d" % b)
                    subprocess.run([a.ferry, "evaluate", model, "--data", tmp, "-o", out, "--batch", str(b),
                                    "--threads", str(a.threads), "--precision", a.precision],
                                   capture_output=True, text=True)
                    rep = json.load(open(os.path.join(out, "report.json")))
                    rates.append(rep["timing"]["samples_per_s"])
                    timing = rep["timing"]
                g, t, rate = (float(np.median(x)) for x in (golden, target, rates))
                expected = b / ((g + t) / 1000.0)
                row = {"model": name, "batch": b, "samples": a.samples, "precision": a.precision, "rounds": a.rounds,
                       "bench_golden_ms": golden, "bench_target_ms": target, "evaluate_samples_per_s": rates,
                       "expected_samples_per_s": expected, "ratio": rate / expected, "last_timing": timing}
                rows.append(row)
                print("%-14s batch %d: evaluate %.1f samples/s, bench %.1f (golden %.2f + target %.2f ms) -> %.3f"
                      "  (medians of %d alternating rounds)" % (name, b, rate, expected, g, t, rate / expected, a.rounds),
                      flush=True)
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), platform.processor())
    result = {"cpu": cpu, "threads": a.threads, "rows": rows}
    if a.out:
        with open(a.out, "w") as f:
            json.dump(result, f, indent=1)
    print("CPU: %s, %d threads" % (cpu, a.threads))
    return 0 if all(r["ratio"] >= 0.9 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
