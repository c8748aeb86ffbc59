#!/usr/bin/python3
"""Exports the benchmark suite's models into the per-machine cache, one model per call of export_one.

Two exporters, one script: the models of suite_models.py under Debian's python (`/usr/bin/python3 -E -s`:
python3-torch 1.13, python3-torchvision 0.14; never the venv, whose numpy 2 breaks Debian's torch), and
the transformers of hf_models.py under the project venv's python (PyPI torch and `transformers`). Random
weights from a fixed seed; every input and output has a dynamic batch dim ("batch") at dim 0, every other
dim fixed. bench/run.py calls this once per model, so one that crashes the exporter costs only its row.

    ${FERRY_CACHE:-~/.cache/ferry}/bench-models/<name>/model.onnx
    .../<name>/info.json    inputs (name, shape with "batch", dtype), outputs, family, exporter, params
    .../<name>/failed.json  instead of the two above when the export failed: {error}, so a rerun of the
                            harness reports it again without retrying (--force retries)
    .../<name>/stamp        hash of this script, the model's builder module, torch_export_common and the
                            library versions: editing one of them re-exports that module's models

    /usr/bin/python3 -E -s bench/export_models.py [--cache DIR] [--force] NAME ...
    .venv/bin/python bench/export_models.py NAME ...        (the hf_models.py ones)
    /usr/bin/python3 -E -s bench/export_models.py --list-json FILE   (the suite: names, families, inputs)

A torchvision model that torch 1.13 cannot export is tried once more with the venv's torch and
torchvision (info.json's "exporter" and "fallback_after" say so); --no-fallback turns that off. Weights
over ONNX's 2 GiB protobuf limit (vit_h_14, regnet_y_128gf) are written by torch as external data: one
file per large tensor beside model.onnx, which ferry, ONNX Runtime and OpenVINO read from the folder.
"""
import argparse
import hashlib
import importlib.metadata
import importlib.util
import inspect
import json
import os
import shutil
import subprocess
import sys
import time
import traceback
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "scripts"))
from torch_export_common import cache_dir  # noqa: E402
import hf_models  # noqa: E402
import suite_models  # noqa: E402

torch = None  # imported on first export: checking an up-to-date cache stays instant


def registry(name):
    """The module that builds `name`: hf_models for its transformers, suite_models for the rest."""
    return hf_models if name in hf_models.MODELS else suite_models


def versions(mod):
    v = importlib.metadata.version
    libs = ["torch", "torchvision"] if mod is suite_models else ["torch", "transformers"]
    return {lib: v(lib) for lib in libs}


def exporter_label(mod):
    """Which torch made the file, for info.json and the table."""
    ver = versions(mod)
    origin = importlib.util.find_spec("torch").origin or ""
    where = "Debian python3-torch" if origin.startswith("/usr/lib/python3/") else "PyPI torch in %s" % sys.prefix
    extra = ", torchvision %s" % ver["torchvision"] if mod is suite_models else ", transformers %s" % ver["transformers"]
    return "torch %s TorchScript exporter (%s%s), opset %d" % (ver["torch"], where, extra, mod.OPSET)


def stamp_of(mod):
    h = hashlib.sha256()
    for path in [os.path.abspath(__file__), os.path.join(HERE, "..", "scripts", "torch_export_common.py")] + \
            mod.source_files():
        with open(path, "rb") as f:
            h.update(f.read())
    h.update(json.dumps(versions(mod), sort_keys=True).encode())
    return h.hexdigest()


def up_to_date(d, stamp):
    try:
        with open(os.path.join(d, "stamp")) as f:
            if f.read().strip() != stamp:
                return False
    except OSError:
        return False
    if os.path.isfile(os.path.join(d, "failed.json")):
        return True
    return os.path.isfile(os.path.join(d, "model.onnx")) and os.path.isfile(os.path.join(d, "info.json"))


def first_line(e):
    """A short reason for a table cell: the exception's type and the first line of its message."""
    msg = (str(e).strip().splitlines() or [""])[0]
    if len(msg) > 160 and ". " in msg[40:]:  # "... is not supported. Please feel free to request ..."
        msg = msg[:msg.index(". ", 40) + 1]
    return ("%s: %s" % (type(e).__name__, msg))[:300]


def io_info(spec, outputs):
    ins = [{"name": n, "shape": ["batch"] + list(a.shape[1:]), "dtype": str(a.dtype).replace("torch.", "")}
           for n, a in zip(spec["inputs"], spec["args"])]
    return {"inputs": ins, "outputs": outputs,
            # The first input as the original single-input harness had it (bench/precision.py reads these).
            "input": ins[0]["name"], "shape": ins[0]["shape"]}


def output_names(spec):
    """The spec's names, else "output" or output0..N-1 after one run to count them."""
    if spec["outputs"]:
        return spec["outputs"]
    with torch.no_grad():
        y = spec["model"](*spec["args"])
    n = len(y) if isinstance(y, (tuple, list)) else 1
    return ["output"] if n == 1 else ["output%d" % i for i in range(n)]


def export_spec(spec, path):
    outputs = output_names(spec)
    dyn = {n: {0: "batch"} for n in spec["inputs"] + outputs}
    # torch 2.x exports with dynamo by default; the TorchScript exporter keeps dynamic_axes and the graph
    # shapes of the Debian-torch exports.
    kw = {"dynamo": False} if "dynamo" in inspect.signature(torch.onnx.export).parameters else {}
    with torch.set_grad_enabled(spec["grad"]), warnings.catch_warnings():
        warnings.filterwarnings("ignore")
        torch.onnx.export(
            spec["model"], spec["args"], path, opset_version=spec["opset"], input_names=spec["inputs"],
            output_names=outputs, dynamic_axes=dyn, do_constant_folding=True,
            training=torch.onnx.TrainingMode.PRESERVE if spec["preserve"] else torch.onnx.TrainingMode.EVAL, **kw)
    return outputs


def export_one(name, root, stamp, after=None):
    """Exports into a temporary folder swapped in at the end (never half-written). A failure is a
    result too: failed.json with the reason, under the same stamp. `after`: why the first exporter failed,
    when this is the fallback (recorded in info.json, or prefixed to this failure's reason)."""
    mod = registry(name)
    final = os.path.join(root, name)
    tmp = os.path.join(root, ".%s.tmp-%d" % (name, os.getpid()))
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    ok = True
    try:
        torch.manual_seed(mod.SEED)
        gen = torch.Generator().manual_seed(mod.SEED)
        spec = mod.build(name, gen)
        outputs = export_spec(spec, os.path.join(tmp, "model.onnx"))
        info = io_info(spec, outputs)
        info.update({"what": spec["what"], "family": spec["family"], "exporter": exporter_label(mod),
                     "params": sum(p.numel() for p in spec["model"].parameters())})
        if after:
            info["fallback_after"] = after
        with open(os.path.join(tmp, "info.json"), "w") as f:
            json.dump(info, f, indent=1)
    except Exception as e:  # noqa: BLE001 -- any failure is the row's reason
        ok = False
        traceback.print_exc()
        for f in os.listdir(tmp):
            os.unlink(os.path.join(tmp, f))
        with open(os.path.join(tmp, "failed.json"), "w") as f:
            err = first_line(e) if not after else "%s; then with %s: %s" % (after, exporter_label(mod), first_line(e))
            json.dump({"error": err, "exporter": exporter_label(mod)}, f, indent=1)
    with open(os.path.join(tmp, "stamp"), "w") as f:
        f.write(stamp + "\n")
    shutil.rmtree(final, ignore_errors=True)
    os.replace(tmp, final)
    return ok


def venv_python():
    return os.environ.get("FERRY_PYTHON") or os.path.join(HERE, "..", ".venv", "bin", "python")


def fallback(name, root, stamp):
    """Exports a torchvision model that Debian's torch 1.13 cannot (e.g. swin_v2_*: no symbolic for
    aten::zero) with the venv's newer torch and torchvision instead, under the first exporter's stamp so
    the next run finds it up to date. Returns True when that worked."""
    py = venv_python()
    if not os.access(py, os.X_OK) or sys.prefix == os.path.dirname(os.path.dirname(os.path.abspath(py))):
        return False
    with open(os.path.join(root, name, "failed.json")) as f:
        why = "torch %s failed: %s" % (torch.__version__, json.load(f)["error"])
    print("export: %s: %s; trying the venv's torch" % (name, why), flush=True)
    p = subprocess.run([py, os.path.abspath(__file__), "--cache", root, "--stamp", stamp, "--after", why, name])
    return p.returncode == 0


def list_suite(out):
    """Every model of the suite with family, exporter and inputs, as JSON (to a file or "-")."""
    items = suite_models.entries() + hf_models.entries()
    root = cache_dir("bench-models")
    stamps = {}
    for e in items:
        # Whether the cached export is current, where this python can tell (the venv's models need the
        # venv's package versions): the harness's --list shows it.
        mod = registry(e["name"])
        try:
            stamps.setdefault(mod, stamp_of(mod))
        except importlib.metadata.PackageNotFoundError:
            continue
        e["cache_current"] = up_to_date(os.path.join(root, e["name"]), stamps[mod])
    text = json.dumps({"core": suite_models.CORE, "models": items}, indent=1)
    if out == "-":
        print(text)
    else:
        with open(out, "w") as f:
            f.write(text)


def main():
    global torch
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("names", nargs="*", help="models to export")
    ap.add_argument("--cache", help="models folder (default: ${FERRY_CACHE:-~/.cache/ferry}/bench-models)")
    ap.add_argument("--force", action="store_true", help="re-export even when up to date (or failed)")
    ap.add_argument("--list-json", metavar="FILE", help="write the suite's model list as JSON (- = stdout)")
    ap.add_argument("--no-fallback", action="store_true", help="no second try with the venv's torch")
    ap.add_argument("--stamp", help=argparse.SUPPRESS)  # a fallback writes under the first exporter's stamp
    ap.add_argument("--after", help=argparse.SUPPRESS)  # and records why the first exporter failed
    a = ap.parse_args()
    if a.list_json:
        list_suite(a.list_json)
        return 0
    root = cache_dir("bench-models", a.cache)
    os.makedirs(root, exist_ok=True)
    failed = 0
    for n in a.names:
        mod = registry(n)
        if mod is hf_models and importlib.util.find_spec("transformers") is None:
            print("export: %s: error: needs `transformers`: run this script with the venv's python "
                  "(bench/run.sh does)" % n, file=sys.stderr)
            return 2
        if mod is suite_models and n not in suite_models.RECURRENT and n != "bert_like" \
                and importlib.util.find_spec("torchvision") is None:
            print("export: %s: error: needs torchvision: run with /usr/bin/python3 -E -s" % n, file=sys.stderr)
            return 2
        d = os.path.join(root, n)
        stamp = a.stamp or stamp_of(mod)
        if not a.force and not a.stamp and up_to_date(d, stamp):
            print("export: %s: up to date (%s)" % (n, d), flush=True)
            continue
        if torch is None:
            import torch as _t
            torch = _t
            torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
        t0 = time.time()
        print("export: %s: exporting with %s ..." % (n, exporter_label(mod)), flush=True)
        ok = export_one(n, root, stamp, a.after)
        if not ok and mod is suite_models and not a.no_fallback and not a.stamp:
            ok = fallback(n, root, stamp)
            if ok:
                continue
        if ok:
            size = os.path.getsize(os.path.join(d, "model.onnx"))
            print("export: %s: exported in %.1f s, %.1f MiB (%s)" % (n, time.time() - t0, size / 2**20, d), flush=True)
        else:
            failed += 1
            with open(os.path.join(d, "failed.json")) as f:
                print("export: %s: failed in %.1f s: %s" % (n, time.time() - t0, json.load(f)["error"]), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
