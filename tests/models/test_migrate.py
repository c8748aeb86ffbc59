#!/usr/bin/env python3
"""`ferry migrate` on the cached resnet18 and 2-layer transformer, for --target cpu and --target ascend310p:
exit 0, every stage reported, model.ferry / report.json (ferry.migrate/1) / report.html written; the
report says "emulated" for Ascend; report.html renders in headless Chromium (Debian's chromium, no
network) to a PNG screenshot, and the rendered DOM has every section, finite SVG coordinates and no
external resource.

    .venv/bin/python tests/models/test_migrate.py --ferry build/ferry [--work DIR]
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
from torch_export_common import cache_dir  # noqa: E402

SECTIONS = ("verdict", "stages", "coverage", "layers", "optime", "latency", "commands")
STAGES = ("doctor", "check", "compile", "compare", "tune-precision", "bench", "profile")
failures = []


def check(name, cond, detail=""):
    print(("ok   " if cond else "FAIL ") + name + ("" if cond else "  " + str(detail)[:800]), flush=True)
    if not cond:
        failures.append(name)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ferry", required=True)
    ap.add_argument("--work", default=os.path.join(os.environ.get("TMPDIR", "/tmp"), "ferry-migrate-test"))
    a = ap.parse_args()
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    check("chromium is installed (scripts/setup.sh installs Debian's chromium)", chromium is not None)
    for name in ("resnet18", "transformer_encoder"):
        d = os.path.join(cache_dir("models"), name)
        for target in ("cpu", "ascend310p"):
            tag = "%s/%s" % (name, target)
            out = os.path.join(a.work, name + "_" + target)
            p = subprocess.run([a.ferry, "migrate", os.path.join(d, "model.onnx"), "--target", target,
                                "--inputs", os.path.join(d, "inputs"), "-o", out],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=900)
            check(tag + ": exit 0", p.returncode == 0, (p.returncode, p.stdout[-1500:], p.stderr[-1500:]))
            for stage in STAGES:
                check(tag + ": progress line for " + stage, ("] %s:" % stage) in p.stderr, p.stderr[-800:])
            check(tag + ": summary with a verdict", "verdict: ready" in p.stdout, p.stdout[-800:])
            for f in ("model.ferry", "report.json", "report.html"):
                check(tag + ": wrote " + f, os.path.isfile(os.path.join(out, f)))
            if not os.path.isfile(os.path.join(out, "report.json")):
                continue
            rep = json.load(open(os.path.join(out, "report.json")))
            check(tag + ": schema", rep.get("schema") == "ferry.migrate/1", rep.get("schema"))
            # Every stage opens the model; ferry reads and imports the file once (the others get copies).
            check(tag + ": the model file is read and imported once", rep.get("model_imports") == 1,
                  rep.get("model_imports"))
            check(tag + ": every stage in the report", [s["name"] for s in rep["stages"]] == list(STAGES), rep["stages"])
            check(tag + ": no stage failed", all(s["status"] != "failed" for s in rep["stages"]), rep["stages"])
            check(tag + ": compare has layer rows", len(rep["compare"]["layers"]) > 3, len(rep["compare"]["layers"]))
            check(tag + ": bench has latencies", len(rep["bench"]["latencies_ms"]) >= 5)
            check(tag + ": profile covers nodes with provenance", rep["profile"]["nodes"] and
                  all("covers" in n for n in rep["profile"]["nodes"]))
            emul = target.startswith("ascend")
            check(tag + ": emulated flag", rep["target"]["emulated"] == emul, rep["target"])
            if emul:
                check(tag + ": Ascend's default precision fp16, labelled emulated", rep["precision"]["mode"] == "fp16"
                      and "emulated" in rep["precision"]["description"] and "emulated" in p.stdout, rep["precision"])
            html = open(os.path.join(out, "report.html")).read()
            check(tag + ": html self-contained (no external resource)",
                  not re.search(r"(src|href)\s*=\s*\"(https?:|//)", html) and "<script" not in html)
            if not chromium:
                continue
            png = os.path.join(out, "report.png")
            env = dict(os.environ, HOME=a.work)  # chromium writes its profile there, not in the user's home
            flags = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
                     "--user-data-dir=" + os.path.join(a.work, "chromium-profile")]
            s = subprocess.run([chromium, *flags, "--window-size=1280,3000", "--screenshot=" + png,
                                "file://" + os.path.join(out, "report.html")],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120, env=env)
            check(tag + ": chromium screenshot", s.returncode == 0 and os.path.isfile(png)
                  and os.path.getsize(png) > 30000, (s.returncode, s.stderr[-500:]))
            if os.path.isfile(png):
                head = open(png, "rb").read(24)
                check(tag + ": the screenshot is a PNG", head[:8] == b"\x89PNG\r\n\x1a\n")
            dom = subprocess.run([chromium, *flags, "--dump-dom", "file://" + os.path.join(out, "report.html")],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120, env=env).stdout
            for sec in SECTIONS:
                check(tag + ": rendered section " + sec, ('id="%s"' % sec) in dom)
            svgs = re.findall(r"<svg.*?</svg>", dom, re.S)
            check(tag + ": the plots render as SVG", len(svgs) >= 3, len(svgs))
            check(tag + ": no NaN/inf coordinates in the plots", not any(re.search(r'="[^"]*(nan|inf)', x, re.I) for x in svgs))
    print("all checks passed" if not failures else "%d check(s) failed: %s" % (len(failures), ", ".join(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
