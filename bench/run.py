"""The benchmark harness: one command that exports the benchmark suite's models (cached), runs `ferry bench`
with ONNX Runtime (and OpenVINO, when it is installed or installs) as peers on each model and batch, and
writes bench/results/<date>.json, a Markdown table (<date>.md) and a plot of ferry / best peer
(<date>.svg). See bench/README.md.

    bench/run.sh [--suite core|full] [--families vision,segmentation,detection,transformers,recurrent]
                 [--models resnet50,lstm_2layer] [--list] [--batches 1,8] [--threads 2] [--ferry build/ferry]
                 [--backend cpu] [--opt-level 2] [--iterations N] [--duration S] [--no-openvino]
                 [--precisions fp32,bf16] [--out DIR] [--resume RESULTS.json] [-- extra ferry bench flags]

Each (model, batch) is its own `ferry bench` process, so every process's peak memory is that batch's
alone; inside it ferry and the peers alternate round by round, each peer in its own child process.
The model list and exports live in suite.py / suite_models.py / hf_models.py / export_models.py, the
table and plot in report.py. Only the standard library is used here: the harness runs under any python3.
"""
import argparse
import datetime
import json
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import report  # noqa: E402
import suite  # noqa: E402
from suite import cache_root, log, venv_python  # noqa: E402,F401  (bench/precision.py uses them from here)
from suite_models import CORE as MODELS  # noqa: E402,F401  (the core suite; bench/precision.py's models)

BF16_TARGET = {"resnet50": 1.6, "bert_like": 1.6}  # ferry fp32 / ferry bf16 median latency (issue 4)
RUN_TIMEOUT_S = 1800  # one `ferry bench` (3 runtimes, one batch); a hang must not stop the suite
PEER_FAILED = re.compile(r"the (onnxruntime|openvino) peer (?:failed|was killed)")


def openvino_available(try_install):
    """True when the venv imports openvino; tries `pip install openvino` into the venv once per machine,
    since OpenVINO is an optional second peer."""
    if not try_install:
        ok = subprocess.run([venv_python(), "-c", "import openvino"], capture_output=True).returncode == 0
        return ok, "" if ok else "openvino is not installed in the venv"
    return suite.pip_install_once("openvino", "openvino", "openvino-install-failed")


def export(models):
    """Exports the named models or exits (bench/precision.py's use: it measures nothing without them)."""
    entries = suite.select(suite.load(), "full", None, models)
    errors = suite.export(entries)
    if errors:
        sys.exit("bench: error: exporting failed: " + "; ".join("%s: %s" % kv for kv in errors.items()))


def input_shapes(info, batch):
    """--shape arguments for every input at this batch (info.json's shapes carry "batch" at dim 0)."""
    args = []
    for i in info.get("inputs") or [{"name": info["input"], "shape": info["shape"]}]:
        args += ["--shape", "%s=%s" % (i["name"], ",".join(str(batch if d == "batch" else d) for d in i["shape"]))]
    return args


def flops(ferry, model, info, batch):
    """The FLOP estimate from `ferry inspect --json` at this batch, or None."""
    p = subprocess.run([ferry, "inspect", model, "--json", "-"] + input_shapes(info, batch),
                       capture_output=True, text=True)
    if p.returncode != 0:
        return None
    try:
        f = json.loads(p.stdout)["flops"]
        return f["estimate"] if f.get("unknown_dynamic_nodes", 0) == 0 else None
    except (ValueError, KeyError):
        return None


def bench_cmd(a, model, batch, peers, extra, precision):
    cmd = [a.ferry, "bench", model, "--batch", str(batch), "--threads", str(a.threads), "--backend", a.backend,
           "--opt-level", str(a.opt_level), "--precision", precision]
    for p in peers:
        cmd += ["--peer", p]
    if a.iterations:
        cmd += ["--iterations", str(a.iterations)]
    if a.duration:
        cmd += ["--duration", str(a.duration)]
    return cmd + extra


def bench_once(cmd):
    fd, js = tempfile.mkstemp(suffix=".json", prefix="ferry_bench_")
    os.close(fd)
    t0 = time.time()
    try:
        p = subprocess.run(cmd + ["--json", js], capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
        run = {"command": cmd, "exit_code": p.returncode, "wall_s": time.time() - t0, "stdout": p.stdout}
        if p.returncode == 0:
            with open(js) as f:
                run["bench"] = json.load(f)
        else:
            run["error"] = (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[-1]
    except subprocess.TimeoutExpired:
        run = {"command": cmd, "exit_code": None, "wall_s": time.time() - t0,
               "error": "timed out after %d s" % RUN_TIMEOUT_S}
    except OSError as e:  # the binary is being rebuilt under us
        run = {"command": cmd, "exit_code": None, "wall_s": time.time() - t0, "error": "cannot run ferry: %s" % e}
    os.unlink(js)
    return run


def bench_one(a, model, batch, peers, extra, precision="fp32"):
    """One `ferry bench`. `ferry bench` fails as a whole when a peer fails; then it is rerun without that
    peer, so ferry's and the other peer's figures stay, and the run says why the peer is missing."""
    peers = list(peers)
    peer_errors = {}
    while True:
        run = bench_once(bench_cmd(a, model, batch, peers, extra, precision))
        if run.get("exit_code") is None and run["error"].startswith("cannot run ferry"):
            time.sleep(30)
            run = bench_once(bench_cmd(a, model, batch, peers, extra, precision))
        m = PEER_FAILED.search(run.get("error", ""))
        if "bench" in run or not m or m.group(1) not in peers:
            break
        peer_errors[m.group(1)] = run["error"][m.start():]
        log("%s batch %d: %s; measuring again without it" % (os.path.basename(os.path.dirname(model)), batch,
                                                            run["error"][m.start():][:200]))
        peers.remove(m.group(1))
    run["peer_errors"] = peer_errors
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


def error_row(entry, batch, error):
    return {"model": entry["name"], "family": entry["family"], "batch": batch, "error": error}


def row(entry, batch, run, fl, info):
    r = {"model": entry["name"], "family": entry["family"], "batch": batch, "exporter": info.get("exporter"),
         "exporter_short": suite.short_exporter(info)}
    if "bench" not in run:
        r["error"] = run.get("error", "failed")
        return r
    b = run["bench"]
    f = b["results"][0]
    ort = peer_result(b, "onnxruntime", batch)
    ov = peer_result(b, "openvino", batch)
    for name, err in run.get("peer_errors", {}).items():
        r[{"onnxruntime": "ort_error", "openvino": "ov_error"}[name]] = err
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
    ag = agreement(b, "onnxruntime", batch)
    if ag:
        r["ort_max_rel_diff"] = ag["max_rel_diff"]
        r["ort_agrees"] = ag["agrees"]
        if ag["problem"]:
            r["ort_problem"] = ag["problem"]
    if ov:
        r["ov_median_ms"] = ov["latency_ms"]["median"]
        r["ov_ratio"] = r["ferry_median_ms"] / r["ov_median_ms"]
    name, ms = report.best_peer(r)
    if name:
        r["best_peer"] = name
        r["best_ratio"] = r["ferry_median_ms"] / ms
        r["target"] = report.TARGET
        r["target_met"] = r["best_ratio"] <= report.TARGET
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
    for peer in run["bench"].get("peers", []):
        if peer["name"] == "openvino" and peer.get("results"):
            o = peer["results"][0]
            r[precision + "_ov_median_ms"] = o["latency_ms"]["median"]
            r[precision + "_ov_ratio"] = f["latency_ms"]["median"] / o["latency_ms"]["median"]
            r[precision + "_unstable"] = r[precision + "_unstable"] or o["unstable"]
    if "openvino" in run.get("peer_errors", {}):
        r[precision + "_ov_error"] = run["peer_errors"]["openvino"]
    if r.get("ferry_median_ms"):
        r[precision + "_speedup"] = r["ferry_median_ms"] / f["latency_ms"]["median"]
        if precision == "bf16" and r["model"] in BF16_TARGET:
            r["bf16_target"] = BF16_TARGET[r["model"]]
            r["bf16_target_met"] = r["bf16_speedup"] >= BF16_TARGET[r["model"]]


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
    name, n, _ = report.cpu_info()
    return "%s × %d" % (name, n)


def git_commit():
    p = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"], capture_output=True,
                           text=True).stdout.strip()
    return (p.stdout.strip() or "?") + ("+dirty" if dirty else "")


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--suite", choices=["core", "full"],
                    help="core: the six models (default); full: every model (default with --families)")
    ap.add_argument("--families", help="comma list of %s" % ", ".join(suite.FAMILIES))
    ap.add_argument("--models", help="comma list of model names from the full suite (overrides --suite)")
    ap.add_argument("--list", action="store_true", help="print the selected models (family, exporter, input, "
                                                        "cache state) and exit: exports and measures nothing")
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
    ap.add_argument("--out", default=os.path.join(HERE, "results"), help="folder for <date>.{json,md,svg}")
    ap.add_argument("--resume", metavar="RESULTS.json",
                    help="finish an interrupted run: keep its rows and settings, measure only the (model, batch) "
                         "pairs it lacks, and write to the same files (the other selection flags are ignored)")
    a = ap.parse_args(argv)
    try:
        a.batches = [int(b) for b in a.batches.split(",") if b]
    except ValueError:
        ap.error("--batches must be a comma list of integers")
    a.precisions = ["fp32"] + [p for p in a.precisions.split(",") if p and p != "fp32"]
    for p in a.precisions:
        if p not in ("fp32", "fp16", "bf16", "mixed-fp16", "mixed-bf16"):
            ap.error("unknown precision %r in --precisions" % p)
    families = [f for f in (a.families or "").split(",") if f]
    models = [m for m in (a.models or "").split(",") if m]
    a.suite = a.suite or ("full" if families else "core")
    a.selection = "--models" if models else a.suite  # for the JSON: --models overrides --suite
    try:
        a.entries = suite.select(suite.load(), a.suite, families, models)
    except ValueError as e:
        ap.error(str(e))
    return a


def make_meta(a, peers, ov_note, extra, now):
    cpu, ncpu, isa = report.cpu_info()
    meta = {"date_utc": now.strftime("%Y-%m-%d %H:%M UTC"), "cpu": "%s × %d" % (cpu, ncpu), "cpu_model": cpu,
            "cpu_count": ncpu, "cpu_isa": isa, "backend": a.backend, "opt_level": a.opt_level, "threads": a.threads,
            "commit": git_commit(), "ferry": a.ferry, "suite": a.selection, "families": a.families,
            "models": [e["name"] for e in a.entries], "batches": a.batches, "peers": peers,
            "precisions": a.precisions, "extra_args": extra, "python": sys.version.split()[0],
            "iterations": a.iterations, "duration": a.duration}
    if ov_note:
        meta["openvino_note"] = ov_note
    return meta


def measure(a, entry, b, peers, extra, meta, runs):
    """The row of one (model, batch): fp32 with the peers, then each lower precision with OpenVINO at the same
    precision (its INFERENCE_PRECISION_HINT; ONNX Runtime's CPU provider has no bf16/fp16 mode)."""
    path = os.path.join(cache_root(), entry["name"], "model.onnx")
    with open(os.path.join(cache_root(), entry["name"], "info.json")) as f:
        info = json.load(f)
    log("%s batch %d: ferry bench ..." % (entry["name"], b))
    run = bench_one(a, path, b, peers, extra)
    fl = flops(a.ferry, path, info, b)
    run.update({"model": entry["name"], "batch": b, "flops": fl, "info": info})
    runs.append(run)
    r = row(entry, b, run, fl, info)
    for p in a.precisions[1:]:
        log("%s batch %d: ferry bench --precision %s ..." % (entry["name"], b, p))
        prun = bench_one(a, path, b, [q for q in peers if q == "openvino"], extra, p)
        prun.update({"model": entry["name"], "batch": b, "precision": p})
        runs.append(prun)
        add_precision(r, p, prun)
    if "bench" in run:
        for p in run["bench"]["peers"]:
            meta[{"onnxruntime": "ort_version", "openvino": "ov_version"}[p["name"]]] = p["version"]
    if "error" in r:
        log("%s batch %d: error: %s" % (entry["name"], b, r["error"]))
    else:
        log("%s batch %d: ferry %.2f ms, ORT %s ms, OpenVINO %s ms, ferry/best peer %s (%.0f s)" % (
            entry["name"], b, r["ferry_median_ms"], "%.2f" % r["ort_median_ms"] if "ort_median_ms" in r else "?",
            "%.2f" % r["ov_median_ms"] if "ov_median_ms" in r else "?",
            "%.3f" % r["best_ratio"] if "best_ratio" in r else "?", run["wall_s"]))
    return r


def load_resumed(a):
    """An interrupted run's meta, rows, runs and file stem; its settings replace the command line's so the
    finished table is one run's."""
    try:
        with open(a.resume) as f:
            doc = json.load(f)
        meta, rows, runs = doc["meta"], doc["table"], doc["runs"]
    except (OSError, ValueError, KeyError) as e:
        sys.exit("bench: error: --resume %s: not a harness results file (%s)" % (a.resume, e))
    a.batches, a.threads, a.backend = meta["batches"], meta["threads"], meta["backend"]
    a.opt_level, a.precisions = meta["opt_level"], meta["precisions"]
    # Runs written before these were recorded take them from the command line.
    a.iterations, a.duration = meta.get("iterations", a.iterations), meta.get("duration", a.duration)
    meta["iterations"], meta["duration"] = a.iterations, a.duration
    a.entries = suite.select(suite.load(), "full", [], meta["models"])
    stem = os.path.splitext(os.path.abspath(a.resume))[0]
    return meta, rows, runs, stem


def check_same_machine(meta):
    cpu, ncpu, isa = report.cpu_info()
    if (cpu, ncpu, isa) != (meta["cpu_model"], meta["cpu_count"], meta["cpu_isa"]):
        sys.exit("bench: error: --resume: that run was on %s (%s); this machine is %s × %d: start a new run"
                 % (meta["cpu"], " ".join(meta["cpu_isa"]), cpu, ncpu))


def main():
    argv = sys.argv[1:]
    extra = []
    if "--" in argv:
        i = argv.index("--")
        argv, extra = argv[:i], argv[i + 1:]
    a = parse_args(argv)
    if a.resume:
        resumed = load_resumed(a)
    if a.list:
        suite.print_list(a.entries)
        return 0
    if not os.access(a.ferry, os.X_OK):
        sys.exit("bench: error: no ferry binary at %s (build it: bash scripts/build.sh)" % a.ferry)
    a.ferry = os.path.abspath(a.ferry)

    log("exporting %d model(s) (cached in %s) ..." % (len(a.entries), cache_root()))
    export_errors = suite.export(a.entries)
    peers = ["onnxruntime"]
    ov_ok, ov_note = (False, "--no-openvino") if a.no_openvino else openvino_available(try_install=True)
    if ov_ok:
        peers.append("openvino")
    else:
        log("OpenVINO skipped: " + ov_note)

    now = datetime.datetime.now(datetime.timezone.utc)
    if a.resume:
        meta, rows, runs, stem = resumed
        extra, peers = meta["extra_args"], meta["peers"]
        check_same_machine(meta)
        meta.setdefault("resumed", []).append({"date_utc": now.strftime("%Y-%m-%d %H:%M UTC"),
                                               "commit": git_commit()})
        log("resuming %s: %d row(s) kept" % (a.resume, len(rows)))
    else:
        meta = make_meta(a, peers, "" if ov_ok else ov_note, extra, now)
        # The machine's fp32 peak, probed before and after the runs (the best counts: a shared VM's probe
        # only ever reads low), and what bf16 does on this CPU.
        doc = doctor_findings(a.ferry, a.threads)
        meta["bf16_choice"] = doc.get("bf16 Conv/MatMul", "?")
        meta["peak_gflops_probes"] = [p for p in [measured_peak(a.ferry, a.threads)] if p]
        meta["peak_gflops"] = max(meta["peak_gflops_probes"]) if meta["peak_gflops_probes"] else None
        runs, rows = [], []
        os.makedirs(a.out, exist_ok=True)
        stem = os.path.join(a.out, now.strftime("%Y-%m-%d-%H%M"))
        meta["plot"] = os.path.relpath(stem + ".svg", ROOT) if stem.startswith(ROOT + os.sep) else stem + ".svg"
    log(" | ".join(report.header_lines(meta)[1:2]))
    done = {(r["model"], r["batch"]) for r in rows}

    def write():
        # After every run, so an interrupted harness keeps what it measured.
        meta["summary"] = report.summary(rows, a.batches)
        with open(stem + ".json", "w") as f:
            json.dump({"schema": "ferry.bench-harness/2", "meta": meta, "table": rows, "runs": runs}, f, indent=1)
        with open(stem + ".md", "w") as f:
            f.write(report.markdown(rows, meta))
        with open(stem + ".svg", "w") as f:
            f.write(report.svg_plot(rows, meta, a.batches))

    for e in a.entries:
        for b in a.batches:
            if (e["name"], b) in done:
                continue
            if e["name"] in export_errors:
                rows.append(error_row(e, b, export_errors[e["name"]]))
            else:
                rows.append(measure(a, e, b, peers, extra, meta, runs))
            write()

    after = measured_peak(a.ferry, a.threads)
    if after:
        meta["peak_gflops_probes"].append(after)
        meta["peak_gflops"] = max(meta["peak_gflops_probes"])
    write()
    print()
    print(report.markdown(rows, meta))
    log("wrote %s.json, %s.md and %s.svg" % (stem, stem, stem))
    return 1 if any("error" in r for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
