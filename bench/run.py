"""The benchmark harness: one command that exports the benchmark models (cached), runs `ferry bench` with
ONNX Runtime (and OpenVINO, when it is installed or installs) as peers on each model and batch, and writes
bench/results/<date>.json and a Markdown table (bench/results/<date>.md). See bench/README.md.

    bench/run.sh [--models resnet50,mobilenet_v2] [--batches 1,8] [--threads 2] [--ferry build/ferry]
                 [--backend cpu] [--opt-level 2] [--iterations N] [--duration S] [--no-openvino]
                 [--precisions fp32,bf16] [--out DIR] [-- extra ferry bench flags]

Each (model, batch) is its own `ferry bench` process, so every process's peak memory is that batch's
alone; inside it ferry runs first, then ONNX Runtime, then OpenVINO, each peer in its own child process.
Only the standard library is used here: the harness runs under any python3.
"""
import argparse
import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
MODELS = ["resnet50", "mobilenet_v2", "efficientnet_b0", "convnext_tiny", "vit_b_16", "bert_like"]
TARGET = {1: 0.80, 8: 0.95}  # ferry median latency / ONNX Runtime's (issue 3)
BF16_TARGET = {"resnet50": 1.6, "bert_like": 1.6}  # ferry fp32 / ferry bf16 median latency (issue 4)
DESIGN_PEAK_GFLOPS = 230.0   # DESIGN.md's fp32 peak of the 2-core machine; used only if the probe fails


def log(msg):
    print("bench: " + msg, flush=True)


def cache_root():
    base = os.environ.get("FERRY_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "ferry")
    return os.path.join(base, "bench-models")


def venv_python():
    return os.environ.get("FERRY_PYTHON") or os.path.join(ROOT, ".venv", "bin", "python")


def openvino_available(try_install):
    """True when the venv imports openvino. Tries `pip install openvino` into the venv once per machine
    (a marker in the cache remembers a failure), since OpenVINO is an optional second peer."""
    py = venv_python()
    if not os.access(py, os.X_OK):
        return False, "no venv python at %s (run scripts/setup.sh)" % py
    ok = subprocess.run([py, "-c", "import openvino"], capture_output=True).returncode == 0
    if ok or not try_install:
        return ok, "" if ok else "openvino is not installed in the venv"
    marker = os.path.join(os.path.dirname(cache_root()), "openvino-install-failed")
    if os.path.exists(marker):
        return False, "an earlier `pip install openvino` failed (%s; delete it to retry)" % marker
    log("OpenVINO is not in the venv; trying `pip install openvino` once ...")
    p = subprocess.run([py, "-m", "pip", "install", "-q", "--disable-pip-version-check", "openvino"],
                       capture_output=True, text=True)
    if p.returncode == 0 and subprocess.run([py, "-c", "import openvino"], capture_output=True).returncode == 0:
        return True, ""
    os.makedirs(os.path.dirname(marker), exist_ok=True)
    with open(marker, "w") as f:
        f.write((p.stderr or p.stdout)[-2000:])
    return False, "`pip install openvino` failed: " + ((p.stderr or p.stdout).strip().splitlines() or ["?"])[-1]


def export(models):
    cmd = ["/usr/bin/python3", "-E", "-s", os.path.join(HERE, "export_models.py"), *models]
    log("exporting models with Debian's torch: " + " ".join(models))
    if subprocess.run(cmd).returncode != 0:
        sys.exit("bench: error: exporting the models failed (see above)")


def flops(ferry, model, shape):
    """The FLOP estimate from `ferry inspect --json` for one concrete input shape, or None."""
    p = subprocess.run([ferry, "inspect", model, "--json", "-", "--shape", "input=" + ",".join(map(str, shape))],
                       capture_output=True, text=True)
    if p.returncode != 0:
        return None
    try:
        f = json.loads(p.stdout)["flops"]
        return f["estimate"] if f.get("unknown_dynamic_nodes", 0) == 0 else None
    except (ValueError, KeyError):
        return None


def bench_one(a, model, batch, peers, extra, precision="fp32"):
    fd, js = tempfile.mkstemp(suffix=".json", prefix="ferry_bench_")
    os.close(fd)
    cmd = [a.ferry, "bench", model, "--batch", str(batch), "--threads", str(a.threads), "--backend", a.backend,
           "--opt-level", str(a.opt_level), "--precision", precision, "--json", js]
    for p in peers:
        cmd += ["--peer", p]
    if a.iterations:
        cmd += ["--iterations", str(a.iterations)]
    if a.duration:
        cmd += ["--duration", str(a.duration)]
    cmd += extra
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True)
    run = {"command": cmd, "exit_code": p.returncode, "wall_s": time.time() - t0, "stdout": p.stdout}
    if p.returncode == 0:
        with open(js) as f:
            run["bench"] = json.load(f)
    else:
        run["error"] = (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[-1]
    os.unlink(js)
    return run


def peer_result(bench, name, batch):
    for p in bench.get("peers", []):
        if p["name"] == name:
            for r in p["results"]:
                if r["batch"] == batch:
                    return r
    return None


def agreement(bench, name, batch):
    for p in bench.get("peers", []):
        if p["name"] == name:
            for a in p.get("agreement", []):
                if a["batch"] == batch:
                    return a
    return None


def row(model, batch, run, fl):
    r = {"model": model, "batch": batch}
    if "bench" not in run:
        r["error"] = run.get("error", "failed")
        return r
    b = run["bench"]
    f = b["results"][0]
    ort = peer_result(b, "onnxruntime", batch)
    ov = peer_result(b, "openvino", batch)
    r["ferry_median_ms"] = f["latency_ms"]["median"]
    r["ferry_peak_mib"] = f["peak_rss_bytes"] / 2**20
    r["ferry_cv"] = f["cv"]
    if fl:
        r["gflop"] = fl / 1e9
        r["ferry_gflops"] = fl / 1e9 / (f["latency_ms"]["median"] / 1000)
    if ort:
        r["ort_median_ms"] = ort["latency_ms"]["median"]
        r["ort_peak_mib"] = ort["peak_rss_bytes"] / 2**20
        r["ratio"] = r["ferry_median_ms"] / r["ort_median_ms"]
        r["memory_ratio"] = r["ferry_peak_mib"] / r["ort_peak_mib"] if r["ort_peak_mib"] else None
        if fl:
            r["ort_gflops"] = fl / 1e9 / (ort["latency_ms"]["median"] / 1000)
        if batch in TARGET:
            r["target"] = TARGET[batch]
            r["target_met"] = r["ratio"] <= TARGET[batch]
    ag = agreement(b, "onnxruntime", batch)
    if ag:
        r["ort_max_rel_diff"] = ag["max_rel_diff"]
        r["ort_agrees"] = ag["agrees"]
        if ag["problem"]:
            r["ort_problem"] = ag["problem"]
    if ov:
        r["ov_median_ms"] = ov["latency_ms"]["median"]
        r["ov_ratio"] = r["ferry_median_ms"] / r["ov_median_ms"]
    r["unstable"] = f["unstable"] or bool(ort and ort["unstable"]) or bool(ov and ov["unstable"])
    return r


def add_precision(r, precision, run):
    """Adds ferry's median at a lower precision and the speed-up over its fp32 median to row r."""
    if "bench" not in run:
        r[precision + "_error"] = run.get("error", "failed")
        return
    f = run["bench"]["results"][0]
    r[precision + "_median_ms"] = f["latency_ms"]["median"]
    r[precision + "_unstable"] = f["unstable"]
    if r.get("ferry_median_ms"):
        r[precision + "_speedup"] = r["ferry_median_ms"] / f["latency_ms"]["median"]
        if precision == "bf16" and r["model"] in BF16_TARGET:
            r["bf16_target"] = BF16_TARGET[r["model"]]
            r["bf16_target_met"] = r["bf16_speedup"] >= BF16_TARGET[r["model"]]


def markdown(rows, meta):
    def n(v, fmt="%.2f"):
        return fmt % v if isinstance(v, (int, float)) and v is not None else "—"
    have_ov = any("ov_median_ms" in r for r in rows)
    low = [p for p in meta.get("precisions", []) if p != "fp32"]
    head = ["model", "batch", "ferry median ms", "ORT median ms", "ferry/ORT", "target", "met?"]
    if have_ov:
        head += ["OpenVINO median ms", "ferry/OV"]
    for p in low:
        head += ["ferry %s ms" % p, "%s speed-up vs ferry fp32" % p]
    head += ["ferry GFLOP/s", "ORT GFLOP/s", "peak MiB ferry / ORT", "memory ≤ ORT?", "outputs vs ORT (rel.)"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        if "error" in r:
            cells = [r["model"], str(r["batch"]), "error: " + r["error"].replace("|", "\\|")] + [""] * (len(head) - 3)
        else:
            met = "—" if "target_met" not in r else ("yes" if r["target_met"] else "**no**")
            cells = [r["model"], str(r["batch"]), n(r.get("ferry_median_ms")), n(r.get("ort_median_ms")),
                     n(r.get("ratio"), "%.3f") + (" (unstable)" if r.get("unstable") else ""),
                     n(r.get("target"), "≤ %.2f"), met]
            if have_ov:
                cells += [n(r.get("ov_median_ms")), n(r.get("ov_ratio"), "%.3f")]
            for p in low:
                if p + "_error" in r:
                    cells += ["error: " + r[p + "_error"].replace("|", "\\|"), ""]
                    continue
                sp = n(r.get(p + "_speedup"), "%.2f×")
                if p == "bf16" and "bf16_target" in r:
                    sp += " (target ≥ %.1f×: %s)" % (r["bf16_target"], "met" if r["bf16_target_met"] else "**no**")
                cells += [n(r.get(p + "_median_ms")) + (" (unstable)" if r.get(p + "_unstable") else ""), sp]
            mem_ok = "—" if r.get("memory_ratio") is None else ("yes" if r["memory_ratio"] <= 1 else "**no**")
            cells += [n(r.get("ferry_gflops"), "%.1f"), n(r.get("ort_gflops"), "%.1f"),
                      "%s / %s" % (n(r.get("ferry_peak_mib"), "%.0f"), n(r.get("ort_peak_mib"), "%.0f")), mem_ok,
                      ("%.1e" % r["ort_max_rel_diff"] + ("" if r.get("ort_agrees") else " **differ**"))
                      if "ort_max_rel_diff" in r else "—"]
        out.append("| " + " | ".join(cells) + " |")
    notes = ["", "%s; %s; ferry %s backend, opt-level %s, %d threads; ONNX Runtime %s%s." % (
        meta["date_utc"], meta["cpu"], meta["backend"], meta["opt_level"], meta["threads"], meta.get("ort_version", "?"),
        (", OpenVINO " + meta["ov_version"]) if meta.get("ov_version") else "")]
    if meta.get("openvino_note"):
        notes.append("OpenVINO skipped: " + meta["openvino_note"] + ".")
    peak = meta.get("peak_gflops") or DESIGN_PEAK_GFLOPS
    peak_src = ("measured by `ferry doctor` on %d threads, best of %d probes: %s" % (
        meta["threads"], len(meta.get("peak_gflops_probes", [])),
        ", ".join("%.0f" % x for x in meta.get("peak_gflops_probes", [])))) if meta.get("peak_gflops") \
        else "DESIGN.md's figure: the probe failed"
    for r in rows:
        if r["model"] == "resnet50" and r["batch"] == 8 and r.get("ferry_gflops"):
            notes.append("resnet50 batch 8: ferry %.1f GFLOP/s = %.0f%% of the %.0f GFLOP/s fp32 peak (%s; target ≥ 85%%); "
                         "ONNX Runtime %.0f%%." % (r["ferry_gflops"], 100 * r["ferry_gflops"] / peak, peak, peak_src,
                                                   100 * r.get("ort_gflops", 0) / peak))
    if low:
        notes.append("Lower-precision columns: ferry alone at that --precision (bf16 Conv/MatMul here: %s; "
                     "fp16: emulated, rounding only), speed-up = ferry fp32 median / that median; bf16 target ≥ 1.6× "
                     "on resnet50 and bert_like." % meta.get("bf16_choice", "?"))
    notes.append("Ratios are ferry/peer median latency (below 1: ferry faster); targets: batch 1 ≤ 0.80, batch 8 ≤ 0.95, "
                 "peak memory ≤ ONNX Runtime's. GFLOP/s = `ferry inspect` FLOP estimate / median latency.")
    return "\n".join(out + notes) + "\n"


def doctor_findings(ferry, threads):
    """`ferry doctor --json -` with OMP_NUM_THREADS=threads: {name: value}, {} when it fails."""
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    p = subprocess.run([ferry, "doctor", "--json", "-"], capture_output=True, text=True, env=env)
    try:
        return {f["name"]: f.get("value", "") for f in json.loads(p.stdout)["findings"]}
    except (ValueError, KeyError, TypeError):
        return {}


def measured_peak(ferry, threads):
    """The fp32 FMA peak `ferry doctor` measures on `threads` threads (GFLOP/s), None when it cannot."""
    v = doctor_findings(ferry, threads).get("fp32 FMA peak (measured)", "")
    try:
        return float(v.split()[0])
    except (ValueError, IndexError):
        return None


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return "%s × %d" % (line.split(":", 1)[1].strip(), os.cpu_count() or 0)
    except OSError:
        pass
    return platform.processor() or "?"


def git_commit():
    p = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"], capture_output=True,
                           text=True).stdout.strip()
    return (p.stdout.strip() or "?") + ("+dirty" if dirty else "")


def main():
    argv = sys.argv[1:]
    extra = []
    if "--" in argv:
        i = argv.index("--")
        argv, extra = argv[:i], argv[i + 1:]
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default=",".join(MODELS), help="comma list (default: all six)")
    ap.add_argument("--batches", default="1,8", help="comma list (default 1,8)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--ferry", default=os.path.join(ROOT, "build", "ferry"))
    ap.add_argument("--backend", default="cpu", choices=["cpu", "reference"])
    ap.add_argument("--opt-level", type=int, default=2)
    ap.add_argument("--iterations", type=int, help="passed to ferry bench (default: its policy)")
    ap.add_argument("--duration", type=float, help="passed to ferry bench")
    ap.add_argument("--no-openvino", action="store_true", help="do not run (or try to install) OpenVINO")
    ap.add_argument("--precisions", default="fp32",
                    help="comma list: fp32 (always, with the peers) plus ferry-only runs at bf16/fp16/mixed-* for the "
                         "speed-up over ferry fp32 (e.g. fp32,bf16)")
    ap.add_argument("--out", default=os.path.join(HERE, "results"), help="folder for <date>.json and <date>.md")
    a = ap.parse_args(argv)
    models = [m for m in a.models.split(",") if m]
    for m in models:
        if m not in MODELS:
            ap.error("unknown model %r (known: %s)" % (m, ", ".join(MODELS)))
    try:
        batches = [int(b) for b in a.batches.split(",") if b]
    except ValueError:
        ap.error("--batches must be a comma list of integers")
    precisions = ["fp32"] + [p for p in a.precisions.split(",") if p and p != "fp32"]
    for p in precisions:
        if p not in ("fp32", "fp16", "bf16", "mixed-fp16", "mixed-bf16"):
            ap.error("unknown precision %r in --precisions" % p)
    if not os.access(a.ferry, os.X_OK):
        sys.exit("bench: error: no ferry binary at %s (build it: bash scripts/build.sh)" % a.ferry)
    a.ferry = os.path.abspath(a.ferry)

    export(models)
    peers = ["onnxruntime"]
    ov_ok, ov_note = (False, "--no-openvino") if a.no_openvino else openvino_available(try_install=True)
    if ov_ok:
        peers.append("openvino")
    else:
        log("OpenVINO skipped: " + ov_note)

    now = datetime.datetime.now(datetime.timezone.utc)
    meta = {"date_utc": now.strftime("%Y-%m-%d %H:%M UTC"), "cpu": cpu_name(), "backend": a.backend,
            "opt_level": a.opt_level, "threads": a.threads, "commit": git_commit(), "ferry": a.ferry,
            "models": models, "batches": batches, "peers": peers, "precisions": precisions, "extra_args": extra}
    if not ov_ok:
        meta["openvino_note"] = ov_note
    # The machine's fp32 peak, probed before and after the runs (the best counts: a shared VM's probe
    # only ever reads low), and what bf16 does on this CPU.
    doc = doctor_findings(a.ferry, a.threads)
    meta["bf16_choice"] = doc.get("bf16 Conv/MatMul", "?")
    probes = [p for p in [measured_peak(a.ferry, a.threads)] if p]
    meta["peak_gflops_probes"] = probes
    meta["peak_gflops"] = max(probes) if probes else None
    runs, rows = [], []
    os.makedirs(a.out, exist_ok=True)
    stem = os.path.join(a.out, now.strftime("%Y-%m-%d-%H%M"))

    def write():
        # After every run, so an interrupted harness keeps what it measured.
        with open(stem + ".json", "w") as f:
            json.dump({"schema": "ferry.bench-harness/1", "meta": meta, "table": rows, "runs": runs}, f, indent=1)
        with open(stem + ".md", "w") as f:
            f.write(markdown(rows, meta))

    for m in models:
        path = os.path.join(cache_root(), m, "model.onnx")
        with open(os.path.join(cache_root(), m, "info.json")) as f:
            info = json.load(f)
        for b in batches:
            log("%s batch %d: ferry bench ..." % (m, b))
            run = bench_one(a, path, b, peers, extra)
            shape = [b if d == "batch" else d for d in info["shape"]]
            fl = flops(a.ferry, path, shape)
            run.update({"model": m, "batch": b, "flops": fl, "info": info})
            runs.append(run)
            r = row(m, b, run, fl)
            for p in precisions[1:]:
                log("%s batch %d: ferry bench --precision %s ..." % (m, b, p))
                prun = bench_one(a, path, b, [], extra, p)
                prun.update({"model": m, "batch": b, "precision": p})
                runs.append(prun)
                add_precision(r, p, prun)
            rows.append(r)
            if "bench" in run:
                for p in run["bench"]["peers"]:
                    meta[{"onnxruntime": "ort_version", "openvino": "ov_version"}[p["name"]]] = p["version"]
            if "error" in r:
                log("%s batch %d: error: %s" % (m, b, r["error"]))
            else:
                log("%s batch %d: ferry %.2f ms, ONNX Runtime %s ms, ratio %s (%.0f s)" % (
                    m, b, r["ferry_median_ms"], "%.2f" % r["ort_median_ms"] if "ort_median_ms" in r else "?",
                    "%.3f" % r["ratio"] if "ratio" in r else "?", run["wall_s"]))
                for p in precisions[1:]:
                    if p + "_speedup" in r:
                        log("%s batch %d: ferry %s %.2f ms, %.2fx faster than fp32" % (
                            m, b, p, r[p + "_median_ms"], r[p + "_speedup"]))
            write()

    after = measured_peak(a.ferry, a.threads)
    if after:
        meta["peak_gflops_probes"].append(after)
        meta["peak_gflops"] = max(meta["peak_gflops_probes"])
    write()
    print()
    print(markdown(rows, meta))
    log("wrote %s.json and %s.md" % (stem, stem))
    return 1 if any("error" in r for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
