"""What every `ferry bench` peer shares: the job file, the warmup/measure loop (the same stopping rule as
ferry's LoopPolicy in src/tools/bench.h), statistics, and the process's peak memory.

A peer script is run as `python -u -s -E bench/peers/<name>_peer.py JOB.json` by ferry (src/tools/
bench_peer.cc). JOB.json holds: model, threads, warmup and measure policies
({min_iterations, min_seconds, max_iterations, max_seconds}), batches ([{batch, inputs: FILE.npz}]) and
result (the path to write). Progress lines go to stdout (ferry forwards them), errors to stderr; exit 3
means the runtime's package is missing.
"""
import ctypes
import gc
import json
import math
import os
import sys
import time


def fail(msg, code=1):
    print("error: " + msg, file=sys.stderr)
    sys.exit(code)


def load_job():
    if len(sys.argv) != 2:
        fail("usage: %s JOB.json (written by `ferry bench --peer ...`)" % sys.argv[0], 2)
    with open(sys.argv[1]) as f:
        return json.load(f)


def done(policy, n, elapsed):
    """Mirrors tools::LoopPolicy::done."""
    if policy["max_iterations"] > 0 and n >= policy["max_iterations"]:
        return True
    if n >= policy["min_iterations"] and elapsed >= policy["min_seconds"]:
        return True
    if policy["max_seconds"] > 0 and n >= 1 and elapsed >= policy["max_seconds"]:
        return True
    return False


def run_loop(fn, policy):
    lat = []
    start = time.perf_counter()
    elapsed = 0.0
    while not done(policy, len(lat), elapsed):
        t0 = time.perf_counter()
        fn()
        t1 = time.perf_counter()
        lat.append((t1 - t0) * 1000.0)
        elapsed = t1 - start
    return lat, elapsed


def stats(lat, batch, total_s):
    """For a standalone reader of the result; ferry recomputes these from latencies_ms itself."""
    x = sorted(lat)
    n = len(x)

    def pct(p):
        pos = p / 100.0 * (n - 1)
        lo = int(math.floor(pos))
        hi = min(lo + 1, n - 1)
        return x[lo] + (pos - lo) * (x[hi] - x[lo])
    mean = sum(x) / n
    sd = math.sqrt(sum((v - mean) ** 2 for v in x) / (n - 1)) if n > 1 else 0.0
    return {"min": x[0], "mean": mean, "median": pct(50), "p90": pct(90), "p95": pct(95), "p99": pct(99),
            "max": x[-1], "stddev": sd, "cv": sd / mean if mean > 0 else 0.0,
            "throughput_items_per_s": batch * n / total_s if total_s > 0 else 0.0}


def peak_rss_bytes():
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def reset_peak_rss():
    """Frees what the previous batch left and resets VmHWM (as ferry does), so each batch's peak is its own."""
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except OSError:
        pass
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def load_inputs(path):
    import numpy as np
    with np.load(path) as z:
        return {k: z[k] for k in z.files}


def save_outputs(path, outputs):
    """An .npz with one member per output, named as the output (np.savez(**names) would trip over an
    output called "file")."""
    import zipfile
    import numpy as np
    with zipfile.ZipFile(path, "w") as z:
        for k, v in outputs.items():
            with z.open(k + ".npy", "w", force_zip64=True) as f:
                np.lib.format.write_array(f, np.ascontiguousarray(np.asarray(v)), allow_pickle=False)


def bench_batches(job, name, version, settings, make_runner):
    """make_runner(batch, inputs) -> (run, outputs): `run` runs one inference (timed); `outputs` runs one
    more and returns {output name: array}, which is written to the batch's "outputs" .npz (if the job names
    one) for ferry to compare with its own. Creating them is the load time. Writes the result JSON the job
    names."""
    results = []
    scope_ok = reset_peak_rss()
    for b in job["batches"]:
        batch = b["batch"]
        inputs = load_inputs(b["inputs"])
        scoped = reset_peak_rss() and scope_ok
        print("batch %d: loading ..." % batch, flush=True)
        t0 = time.perf_counter()
        run, outputs = make_runner(batch, inputs)
        load_s = time.perf_counter() - t0
        print("batch %d: loaded in %.2f s; warming up ..." % (batch, load_s), flush=True)
        warm, warm_s = run_loop(run, job["warmup"])
        print("batch %d: measuring ..." % batch, flush=True)
        lat, total_s = run_loop(run, job["measure"])
        s = stats(lat, batch, total_s)
        if b.get("outputs"):
            save_outputs(b["outputs"], outputs())
        print("batch %d: median %.3f ms over %d iterations" % (batch, s["median"], len(lat)), flush=True)
        results.append({"batch": batch, "input_shapes": {k: list(v.shape) for k, v in inputs.items()},
                        "load_s": load_s, "first_run_ms": warm[0] if warm else 0.0,
                        "warmup_iterations": len(warm), "warmup_s": warm_s, "iterations": len(lat),
                        "total_s": total_s, "latencies_ms": lat, "stats": s,
                        "peak_rss_bytes": peak_rss_bytes(), "peak_rss_scope": "batch" if scoped else "process"})
        del run, outputs
    out = {"name": name, "version": version, "model": job["model"], "settings": settings, "results": results}
    with open(job["result"], "w") as f:
        json.dump(out, f, indent=1)
