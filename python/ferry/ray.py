"""ferry.ray: ``ferry evaluate`` on a Ray cluster, through Ray Data.

    report = ferry.ray.evaluate("resnet18.onnx", "/data/val", out="eval", precision="fp16",
                                preprocess="imagenet", labels="folders", address="auto")

The sample list is made on the driver (the same ids and order as a local run); Ray Data's ``map_batches``
runs it through a pool of actors, each holding one ferry evaluation (golden and target sessions) for its
whole life. The model file goes into Ray's object store once (``ray.put``): each node keeps one copy, and
the actors on that node read it from there. Actors return per-sample results, never tensors; the driver
aggregates them (the same mergeable aggregate as a local run, so the report is the same whatever the split)
and saves the worst cases' inputs by decoding those files again. Data paths must be readable on every node
(a shared file system, or the same copy on each). ``python -m ferry.ray`` is the CLI's ``--ray``.
docs/evaluate.md says how to start a cluster and join it.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from typing import Any, Dict, List, Optional, Sequence, Union

import numpy as np

from . import _ferry
from .evaluation import _thresholds
from .tools import _session_options
from .reports import EvaluateReport

PathLike = Union[str, os.PathLike]


def _token_mode() -> None:
    """Ray's token authentication stays on. A client sends the token (RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH or
    ~/.ray/auth_token) only in token mode, which Ray enables by itself for clusters it finds or starts but
    not for an explicit address, while `ray start` clusters require it. Unless RAY_AUTH_MODE says otherwise,
    this process uses token mode; when ray was imported already, its cached config is refreshed as Ray's
    own switch to token mode does."""
    if "RAY_AUTH_MODE" in os.environ:
        return
    os.environ["RAY_AUTH_MODE"] = "token"
    if "ray" in sys.modules:
        from ray._raylet import Config

        Config.initialize("")


class _EvaluateActor:
    """One ferry evaluation per actor: the model written once from the object store, sessions kept open."""

    def __init__(self, model_ref: List[Any], model_name: str, target: Dict[str, Any], preprocess: str, batch: int,
                 thresholds: Dict[str, float], data: str, dataset_samples: int) -> None:
        import ray

        self._dir = tempfile.TemporaryDirectory(prefix="ferry-ray-")
        path = os.path.join(self._dir.name, model_name)
        with open(path, "wb") as f:
            f.write(ray.get(model_ref[0]))
        # Its own report folder is scratch: the driver writes the real one.
        self._ev = _ferry._Evaluation(path, target, "", preprocess, batch, 0, os.path.join(self._dir.name, "out"),
                                      thresholds, data, dataset_samples)
        self._chunk = self._ev.chunk()

    def __call__(self, rows: Dict[str, np.ndarray]) -> Dict[str, np.ndarray]:
        results: List[str] = []
        n = len(rows["id"])
        before = self._ev.session_seconds()
        for s in range(0, n, self._chunk):
            e = min(n, s + self._chunk)
            labels = [None if int(l) < 0 else int(l) for l in rows["label"][s:e]]
            results += self._ev.run_files([str(x) for x in rows["id"][s:e]], [str(x) for x in rows["path"][s:e]],
                                          labels, [int(x) for x in rows["index"][s:e]])
        after = self._ev.session_seconds()
        times = np.zeros(n)
        times[0] = after[0] - before[0]
        ttimes = np.zeros(n)
        ttimes[0] = after[1] - before[1]
        return {"result": np.array(results, dtype=object), "golden_s": times, "target_s": ttimes}


def evaluate(model: PathLike, data: PathLike, *, out: PathLike, address: Optional[str] = None, actors: int = 2,
             target: Optional[str] = None, precision: Optional[str] = None,
             keep_fp32: Optional[Sequence[str]] = None, labels: Optional[PathLike] = None,
             preprocess: Optional[str] = None, batch: int = 1, worst: int = 20, threads: int = 1,
             opt_level: int = 2, backend: str = "cpu", cosine: Optional[float] = None,
             rel_euclid: Optional[float] = None) -> EvaluateReport:
    """``ferry evaluate MODEL --data DATA -o OUT --ray [ADDRESS]``: the evaluation on Ray, the same report.

    address: a running cluster ("auto", "HOST:PORT", "ray://HOST:10001"); None starts a local one for this
    call (and stops it after). actors: how many evaluation actors (each ``threads`` CPUs).
    The other arguments are ferry.evaluate's.
    """
    _token_mode()
    import ray

    model = os.fspath(model)
    data = os.fspath(data)
    rows = _ferry._list_samples(data, os.fspath(labels) if labels else "")
    tgt = _session_options(target, precision, keep_fp32, opt_level, backend, threads, None)
    th = _thresholds(cosine, rel_euclid)
    # The driver's evaluation aggregates, writes OUT and reloads the worst cases; it runs no sample.
    ev = _ferry._Evaluation(model, tgt, os.fspath(labels) if labels else "", preprocess or "", batch, worst,
                            os.fspath(out), th, data, len(rows))
    started = not ray.is_initialized()
    if started:
        # Workers import the ferry this driver imported (the same folder, when the nodes share it; else
        # their own installed ferry).
        here = os.path.dirname(os.path.dirname(os.path.abspath(_ferry.__file__)))
        path = os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH", "")) if p)
        ray.init(address=address, include_dashboard=False, log_to_driver=False,
                 runtime_env={"env_vars": {"PYTHONPATH": path}},
                 **({} if address else {"num_cpus": max(actors * threads, 1)}))
    start = time.perf_counter()
    try:
        with open(model, "rb") as f:
            model_ref = ray.put(f.read())
        items = [{"index": i, "id": sid, "path": os.path.abspath(path), "label": -1 if label is None else label}
                 for i, (sid, path, label) in enumerate(rows)]
        ds = ray.data.from_items(items).map_batches(
            _EvaluateActor, batch_size=max(batch, 8), compute=ray.data.ActorPoolStrategy(size=actors),
            num_cpus=threads, max_restarts=0,
            fn_constructor_kwargs={"model_ref": [model_ref], "model_name": os.path.basename(model), "target": tgt,
                                   "preprocess": preprocess or "", "batch": batch, "thresholds": th, "data": data,
                                   "dataset_samples": len(rows)})
        golden_s = target_s = 0.0
        for b in ds.iter_batches(batch_size=None, batch_format="numpy"):
            ev.add_results([str(r) for r in b["result"]])
            golden_s += float(np.sum(b["golden_s"]))
            target_s += float(np.sum(b["target_s"]))
        ev.add_time(0.0, 0.0, golden_s, target_s, time.perf_counter() - start)
        ev.note(f"ran on Ray ({actors} actor(s) of {threads} CPU(s)"
                f"{', cluster ' + address if address else ', a local cluster'}); data time is inside the actors")
    finally:
        if started:
            ray.shutdown()
    text, summary = ev.finish()
    return EvaluateReport(json.loads(text), summary)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``python -m ferry.ray MODEL --data SRC -o OUT [--address A] ...``: what ``ferry evaluate --ray`` runs."""
    ap = argparse.ArgumentParser(prog="ferry evaluate --ray", description=evaluate.__doc__)
    ap.add_argument("model")
    ap.add_argument("--data", required=True)
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("--address")
    ap.add_argument("--actors", type=int, default=2)
    ap.add_argument("--target")
    ap.add_argument("--precision")
    ap.add_argument("--labels")
    ap.add_argument("--preprocess")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--worst", type=int, default=20)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--cosine", type=float)
    ap.add_argument("--rel-euclid", type=float)
    a = ap.parse_args(argv)
    try:
        rep = evaluate(a.model, a.data, out=a.out, address=a.address, actors=a.actors, target=a.target,
                       precision=a.precision, labels=a.labels, preprocess=a.preprocess, batch=a.batch,
                       worst=a.worst, threads=a.threads, cosine=a.cosine, rel_euclid=a.rel_euclid)
    except _ferry.Error as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(rep, end="")
    print(f"wrote {a.out}/report.json and {a.out}/report.html")
    return 0 if all(o["passed"] == o["samples"] for o in rep.outputs) else 3


if __name__ == "__main__":
    sys.exit(main())
