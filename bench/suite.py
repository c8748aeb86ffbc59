"""The harness's view of the suite: which models there are (asked of bench/export_models.py, since
torchvision's list needs Debian's torch), which of them a run selects (--suite, --families, --models),
exporting them with the right python, one process per model, and what the cache holds for each.
Standard library only (the harness runs under any python3)."""
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DEBIAN_PYTHON = ["/usr/bin/python3", "-E", "-s"]
FAMILIES = ["vision", "segmentation", "detection", "transformers", "recurrent"]
EXPORT_TIMEOUT_S = 3600  # the largest models take minutes; a hung exporter must not stop the suite
EXPORTERS = {"debian": "torch 1.13 (Debian)", "venv": "torch (venv) + transformers"}


def log(msg):
    print("bench: " + msg, flush=True)


def cache_root():
    base = os.environ.get("FERRY_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "ferry")
    return os.path.join(base, "bench-models")


def venv_python():
    return os.environ.get("FERRY_PYTHON") or os.path.join(ROOT, ".venv", "bin", "python")


def load():
    """{"core": [names], "models": [{name, family, exporter, inputs, what}]} for the whole suite."""
    p = subprocess.run(DEBIAN_PYTHON + [os.path.join(HERE, "export_models.py"), "--list-json", "-"],
                       capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("bench: error: listing the suite with Debian's torchvision failed:\n" + p.stderr[-2000:])
    return json.loads(p.stdout)


def select(suite, which, families, models):
    """The entries a run measures, in suite order. --models picks by name from the whole suite; else
    --suite (core: the six models the harness always had; full: all), narrowed by --families."""
    by_name = {m["name"]: m for m in suite["models"]}
    if models:
        unknown = [m for m in models if m not in by_name]
        if unknown:
            raise ValueError("unknown model(s) %s (bench/run.sh --suite full --list shows them)" % ", ".join(unknown))
        chosen = [by_name[m] for m in models]
    elif which == "core":
        chosen = [by_name[m] for m in suite["core"]]
    else:
        chosen = list(suite["models"])
    if families:
        bad = [f for f in families if f not in FAMILIES]
        if bad:
            raise ValueError("unknown famil%s %s (known: %s)" % ("y" if len(bad) == 1 else "ies", ", ".join(bad),
                                                                  ", ".join(FAMILIES)))
        chosen = [m for m in chosen if m["family"] in families]
    return chosen


def status(name):
    """("ok", info) when exported, ("failed", reason) when the export failed, ("missing", None) otherwise."""
    d = os.path.join(cache_root(), name)
    try:
        with open(os.path.join(d, "failed.json")) as f:
            return "failed", json.load(f)["error"]
    except (OSError, ValueError, KeyError):
        pass
    try:
        with open(os.path.join(d, "info.json")) as f:
            info = json.load(f)
        if os.path.isfile(os.path.join(d, "model.onnx")):
            return "ok", info
    except (OSError, ValueError):
        pass
    return "missing", None


def short_exporter(info):
    """"torch 1.13.0a0 (Debian)", "torch 2.15.0 (venv, transformers 5.25.0)" from info.json's label;
    "torch 1.13 failed" is added where the venv's torch stood in (export_models.py's fallback)."""
    ex = (info or {}).get("exporter", "")
    m = re.match(r"torch (\S+) TorchScript exporter \(([^,)]*)(?:, ([^,)]+))?", ex)
    if not m:
        return ex
    out = "torch %s (%s%s)" % (m.group(1).split("+")[0], "Debian" if m.group(2).startswith("Debian") else "venv",
                               ", " + m.group(3) if m.group(3) and not m.group(2).startswith("Debian") else "")
    return out + ("; torch 1.13 failed" if info.get("fallback_after") else "")


def shape_str(inputs):
    first = inputs[0]
    s = "%s %s[%s]" % (first["name"], first["dtype"], ",".join(str(d) for d in first["shape"]))
    return s + (" + %d more" % (len(inputs) - 1) if len(inputs) > 1 else "")


def print_list(entries):
    """--list: the selection with family, exporter, first input and what the cache holds, and counts."""
    lines = [("model", "family", "exporter", "input", "cache")]
    for e in entries:
        st, x = status(e["name"])
        cache = {"ok": "exported", "missing": "not exported yet", "failed": "export failed: %s" % x}[st]
        if st != "missing" and e.get("cache_current") is False:
            cache = "stale, to re-export (was: %s)" % cache
        exporter = short_exporter(x) if st == "ok" else EXPORTERS[e["exporter"]]
        lines.append((e["name"], e["family"], exporter, shape_str(e["inputs"]), cache))
    widths = [max(len(l[i]) for l in lines) for i in range(4)]
    for l in lines:
        print("  ".join(c.ljust(w) for c, w in zip(l[:4], widths)) + "  " + l[4])
    counts = {f: sum(1 for e in entries if e["family"] == f) for f in FAMILIES}
    print("\n%d models: %s" % (len(entries), ", ".join("%s %d" % (f, n) for f, n in counts.items() if n)))


def pip_install_once(what, import_name, marker_name):
    """True when the venv imports `import_name`; otherwise tries `pip install what` into the venv once per
    machine (a marker in the cache remembers a failure). Returns (ok, note)."""
    py = venv_python()
    if not os.access(py, os.X_OK):
        return False, "no venv python at %s (run scripts/setup.sh)" % py
    if subprocess.run([py, "-c", "import " + import_name], capture_output=True).returncode == 0:
        return True, ""
    marker = os.path.join(os.path.dirname(cache_root()), marker_name)
    if os.path.exists(marker):
        return False, "an earlier `pip install %s` failed (%s; delete it to retry)" % (what, marker)
    log("%s is not in the venv; trying `pip install %s` once ..." % (import_name, what))
    p = subprocess.run([py, "-m", "pip", "install", "-q", "--disable-pip-version-check", what],
                       capture_output=True, text=True)
    if p.returncode == 0 and subprocess.run([py, "-c", "import " + import_name], capture_output=True).returncode == 0:
        return True, ""
    os.makedirs(os.path.dirname(marker), exist_ok=True)
    with open(marker, "w") as f:
        f.write((p.stderr or p.stdout)[-2000:])
    return False, "`pip install %s` failed: %s" % (what, ((p.stderr or p.stdout).strip().splitlines() or ["?"])[-1])


def export_command(entry):
    py = DEBIAN_PYTHON if entry["exporter"] == "debian" else [venv_python()]
    return py + [os.path.join(HERE, "export_models.py"), entry["name"]]


def export(entries):
    """Exports what the cache lacks, one exporter process per model (a crash or a hang costs one row),
    niced so that exporting on a shared machine disturbs others less. Returns {name: reason} for models
    with no exported file, from failed.json or from how the exporter ended."""
    errors = {}
    hf = [e for e in entries if e["exporter"] == "venv"]
    hf_ok, hf_note = pip_install_once("transformers", "transformers", "transformers-install-failed") \
        if hf else (True, "")
    for e in entries:
        if e["exporter"] == "venv" and not hf_ok:
            errors[e["name"]] = "not exported: " + hf_note
            continue
        try:
            p = subprocess.run(export_command(e), preexec_fn=lambda: os.nice(10), timeout=EXPORT_TIMEOUT_S,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            tail = [l for l in p.stdout.splitlines() if l.startswith("export: ")]
            for line in tail:
                print("bench: " + line, flush=True)
            rc = p.returncode
        except subprocess.TimeoutExpired:
            rc, p = None, None
        st, x = status(e["name"])
        if st == "failed":
            errors[e["name"]] = "export failed: " + x
        elif st != "ok" or rc != 0:  # rc != 0 with a model there: a stale export from before
            why = "timed out after %d s" % EXPORT_TIMEOUT_S if rc is None else \
                "exporter exited %d: %s" % (rc, (p.stdout.strip().splitlines() or ["?"])[-1][:300])
            errors[e["name"]] = "export failed: " + why
    return errors
