"""The precision figures of issue 4 in one command: for each benchmark model and low precision, `ferry compare`
(fp16 / bf16 vs the fp32 reference: cosine, relative Euclidean distance, max abs error, SNR, top-1) and
`ferry tune-precision` (the fp32 keep set that meets a goal, default cosine>=0.9999, its evaluations and the
speed of the result), written as bench/results/precision-<date>.{json,md}.

    bench/precision.sh [--models resnet50,vit_b_16,bert_like] [--precisions fp16,bf16]
                       [--metric cosine>=0.9999] [--threads 2] [--seed 0] [--max-evaluations 64] [--out DIR]

Inputs are random N(0,1) (`--normal`; the benchmark models have random weights too), batch 1. The models are
the harness's (bench/export_models.py, cached under ~/.cache/ferry/bench-models). Standard library only.
"""
import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import run as harness  # noqa: E402  (cache_root, export, cpu_name, git_commit)


def log(msg):
    print("precision: " + msg, flush=True)


def ferry_json(cmd):
    """Runs a ferry command that writes --json to a temp file; returns (json or None, stdout, error)."""
    fd, js = tempfile.mkstemp(suffix=".json", prefix="ferry_precision_")
    os.close(fd)
    t0 = time.time()
    p = subprocess.run(cmd + ["--json", js], capture_output=True, text=True)
    out = None
    if os.path.getsize(js) > 0:
        with open(js) as f:
            out = json.load(f)
    os.unlink(js)
    err = None if out is not None else ((p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[-1])
    return out, p.stdout, err, time.time() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default="resnet50,vit_b_16,bert_like")
    ap.add_argument("--precisions", default="fp16,bf16")
    ap.add_argument("--metric", default="cosine>=0.9999")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-evaluations", type=int, default=64)
    ap.add_argument("--ferry", default=os.path.join(ROOT, "build", "ferry"))
    ap.add_argument("--out", default=os.path.join(HERE, "results"))
    a = ap.parse_args()
    models = [m for m in a.models.split(",") if m]
    for m in models:
        if m not in harness.MODELS:
            ap.error("unknown model %r (known: %s)" % (m, ", ".join(harness.MODELS)))
    precisions = [p for p in a.precisions.split(",") if p]
    if not os.access(a.ferry, os.X_OK):
        sys.exit("precision: error: no ferry binary at %s (build it: bash scripts/build.sh)" % a.ferry)
    harness.export(models)
    now = datetime.datetime.now(datetime.timezone.utc)
    meta = {"date_utc": now.strftime("%Y-%m-%d %H:%M UTC"), "cpu": harness.cpu_name(), "commit": harness.git_commit(),
            "metric": a.metric, "threads": a.threads, "seed": a.seed, "inputs": "random N(0,1), batch 1"}
    rows = []
    os.makedirs(a.out, exist_ok=True)
    stem = os.path.join(a.out, "precision-" + now.strftime("%Y-%m-%d-%H%M"))
    for m in models:
        path = os.path.join(harness.cache_root(), m, "model.onnx")
        with open(os.path.join(harness.cache_root(), m, "info.json")) as f:
            info = json.load(f)
        shape = ",".join("1" if d == "batch" else str(d) for d in info["shape"])
        common = ["--shape", "%s=%s" % (info["input"], shape), "--normal", "--seed", str(a.seed),
                  "--threads", str(a.threads)]
        for p in precisions:
            log("%s %s: compare ..." % (m, p))
            cmp_json, _, cmp_err, cmp_s = ferry_json([a.ferry, "compare", path, "--precision", p] + common)
            r = {"model": m, "precision": p, "compare_s": cmp_s}
            if cmp_json:
                o = cmp_json["outputs"][0]
                r["compare"] = {k: o["metrics"].get(k) for k in ("cosine", "rel_euclid", "max_abs", "snr_db", "top1")}
                r["compare_pass"] = cmp_json["pass"]
            else:
                r["compare_error"] = cmp_err
            log("%s %s: tune-precision %s ..." % (m, p, a.metric))
            keep_file = "%s-%s-%s.keep.txt" % (stem, m, p)
            tune_json, _, tune_err, tune_s = ferry_json(
                [a.ferry, "tune-precision", path, "--precision", p, "--metric", a.metric, "-o", keep_file,
                 "--max-evaluations", str(a.max_evaluations)] + common)
            r["tune_s"] = tune_s
            if tune_json:
                r["tune"] = {"pass": tune_json["pass"], "keep": tune_json["keep"], "candidates": tune_json["candidates"],
                             "evaluations": len(tune_json["evaluations"]), "final": tune_json["final_metrics"],
                             "latency_ms": tune_json["latency_ms"], "keep_file": os.path.relpath(keep_file, ROOT)}
            else:
                r["tune_error"] = tune_err
            rows.append(r)
            with open(stem + ".json", "w") as f:
                json.dump({"schema": "ferry.precision-figures/1", "meta": meta, "rows": rows}, f, indent=1)
            log("%s %s: done (%.0f s + %.0f s)" % (m, p, cmp_s, tune_s))
    with open(stem + ".md", "w") as f:
        f.write(markdown(rows, meta))
    print(markdown(rows, meta))
    log("wrote %s.json and %s.md" % (stem, stem))
    return 1 if any("compare_error" in r or "tune_error" in r for r in rows) else 0


def markdown(rows, meta):
    def n(v, fmt="%.6f"):
        return fmt % v if isinstance(v, (int, float)) else "—"
    head = ["model", "precision", "cosine", "rel. Euclidean", "max abs", "SNR dB", "top-1", "keep set for " + meta["metric"],
            "evaluations", "tuned cosine", "latency ms fp32 / all low / tuned"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        c = r.get("compare", {})
        cells = [r["model"], r["precision"]]
        if "compare_error" in r:
            cells += ["error: " + r["compare_error"].replace("|", "\\|"), "", "", "", ""]
        else:
            cells += [n(c.get("cosine")), n(c.get("rel_euclid"), "%.4f"), n(c.get("max_abs"), "%.4g"),
                      n(c.get("snr_db"), "%.1f"), n(c.get("top1"), "%.0f")]
        t = r.get("tune")
        if not t:
            cells += ["error: " + r.get("tune_error", "?").replace("|", "\\|"), "", "", ""]
        else:
            keep = ", ".join("`%s`" % k for k in t["keep"][:8]) + (" …" if len(t["keep"]) > 8 else "")
            keep = "%d of %d node(s)%s%s" % (len(t["keep"]), t["candidates"], ": " + keep if t["keep"] else "",
                                             "" if t["pass"] else " (**goal missed**)")
            lat = t["latency_ms"]
            cells += [keep, str(t["evaluations"]), n(min(o["cosine"] for o in t["final"]) if t["final"] else None),
                      "%s / %s / %s" % (n(lat["fp32"], "%.1f"), n(lat["all_low"], "%.1f"), n(lat["tuned"], "%.1f"))]
        out.append("| " + " | ".join(cells) + " |")
    notes = ["", "%s; %s; commit %s; inputs %s, seed %d; %d threads. Golden: the fp32 reference backend; fp16 is "
             "emulated (rounding only), bf16 native on oneDNN. Keep lists: bench/results/precision-*.keep.txt." % (
                 meta["date_utc"], meta["cpu"], meta["commit"], meta["inputs"], meta["seed"], meta["threads"])]
    return "\n".join(out + notes) + "\n"


if __name__ == "__main__":
    sys.exit(main())
