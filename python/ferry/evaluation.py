"""ferry.evaluate: the fp32 golden and the target over a whole data set (``ferry evaluate``).

    report = ferry.evaluate("resnet18.onnx", "images/", out="eval", precision="fp16",
                            preprocess="imagenet", labels="folders")
    report.top1_agreement, report.worst[0]["id"], report.html

``data`` is a folder or manifest (the CLI's ``--data``: decoded on C++ threads), or any iterable of samples:
a PyTorch ``DataLoader`` or a list/generator of arrays, dicts of arrays by input name, or ``(inputs, label)``
pairs. Batched items (a leading dim equal to the model's batch rank, as a DataLoader yields) are split into
samples. docs/evaluate.md.
"""
from __future__ import annotations

import os
import sys
import time
import json
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from . import _ferry
from .reports import EvaluateReport
from .tools import _session_options

PathLike = Union[str, os.PathLike]


def _thresholds(cosine: Optional[float], rel_euclid: Optional[float]) -> Dict[str, float]:
    t = {}
    if cosine is not None:
        t["cosine"] = float(cosine)
    if rel_euclid is not None:
        t["rel_euclid"] = float(rel_euclid)
    return t


def _shard(shard: Union[None, str, Tuple[int, int]]) -> str:
    """The CLI's "i/N" (parsed and checked by the library)."""
    if shard is None or isinstance(shard, str):
        return shard or ""
    return "%d/%d" % (shard[0], shard[1])


def _array(x: Any) -> np.ndarray:
    if hasattr(x, "detach"):  # a torch.Tensor, without importing torch
        x = x.detach().cpu().numpy()
    return np.ascontiguousarray(np.asarray(x))


class _Progress:
    """One line on stderr, redrawn in place (only on a terminal): done/total, samples/s, ETA."""

    def __init__(self, total: Optional[int], enabled: Optional[bool]) -> None:
        self.total = total
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self.start = time.perf_counter()

    def update(self, done: int) -> None:
        if not self.enabled:
            return
        rate = done / max(time.perf_counter() - self.start, 1e-9)
        if self.total:
            eta = (self.total - done) / rate if rate > 0 else 0
            sys.stderr.write(f"\revaluate {done}/{self.total} samples  {rate:.1f}/s  ETA {eta:.0f}s  ")
        else:
            sys.stderr.write(f"\revaluate {done} samples  {rate:.1f}/s  ")
        sys.stderr.flush()

    def close(self) -> None:
        if self.enabled:
            sys.stderr.write("\n")


def _samples_of(item: Any, inputs: List[Tuple[str, str, List[int]]]) -> Iterator[Tuple[Dict[str, np.ndarray], Optional[int]]]:
    """The samples in one item of an iterable: (feeds by input name, label or None) each."""
    label: Any = None
    if isinstance(item, (tuple, list)) and len(item) == 2 and not isinstance(item[0], (int, float)):
        item, label = item
    if isinstance(item, Mapping):
        feeds = {str(k): _array(v) for k, v in item.items()}
    else:
        if len(inputs) != 1:
            names = ", ".join(n for n, _, _ in inputs)
            raise _ferry.InvalidArgument(f"the model has {len(inputs)} inputs ({names}): give each sample as a dict "
                                         "of arrays by input name")
        feeds = {inputs[0][0]: _array(item)}
    ranks = {name: len(dims) for name, _, dims in inputs}
    # Batched when an input arrives with the model's full rank: split along dim 0.
    first = inputs[0][0]
    if first not in feeds:
        raise _ferry.InvalidArgument(f"a sample lacks input {first!r}")
    batched = ranks[first] and feeds[first].ndim == ranks[first]
    count = feeds[first].shape[0] if batched else 1
    labels = np.atleast_1d(_array(label)).astype(np.int64).tolist() if label is not None else [None] * count
    if len(labels) != count:
        raise _ferry.InvalidArgument(f"{len(labels)} label(s) for {count} sample(s) in one item")
    if not batched:
        yield feeds, labels[0]
        return
    for i in range(count):
        yield {k: v[i:i + 1] if v.ndim == ranks.get(k, v.ndim) else v for k, v in feeds.items()}, labels[i]


def _evaluate_iterable(model: str, data: Iterable[Any], target: Dict[str, Any], preprocess: str, batch: int,
                       worst: int, out: str, thresholds: Dict[str, float], progress: Optional[bool]) -> EvaluateReport:
    total = None
    try:
        total = len(data)  # type: ignore[arg-type]
        if hasattr(data, "batch_size") and getattr(data, "batch_size", None):
            total = len(getattr(data, "dataset"))  # a DataLoader: len() counts batches
    except TypeError:
        pass
    kind = type(data).__name__
    ev = _ferry._Evaluation(model, target, "", preprocess, batch, worst, out, thresholds,
                            f"a Python {kind}", total if total is not None else -1)
    inputs = ev.inputs()
    chunk = ev.chunk()  # whole batches: each session runs them back to back
    bar = _Progress(total, progress)
    start = time.perf_counter()
    waited = 0.0
    pending: List[Tuple[Dict[str, np.ndarray], Optional[int]]] = []
    done = 0

    def flush() -> None:
        nonlocal done, pending
        ids = [f"sample_{done + i:06d}" for i in range(len(pending))]
        ev.run([f for f, _ in pending], ids, [""] * len(pending), [l for _, l in pending],
               list(range(done, done + len(pending))))
        done += len(pending)
        pending = []
        bar.update(done)

    it = iter(data)
    while True:
        t0 = time.perf_counter()
        try:
            item = next(it)
        except StopIteration:
            waited += time.perf_counter() - t0
            break
        waited += time.perf_counter() - t0
        for sample in _samples_of(item, inputs):
            pending.append(sample)
            if len(pending) == chunk:
                flush()
    if pending:
        flush()
    bar.close()
    if done == 0:
        raise _ferry.InvalidArgument("evaluate: the data gave no samples")
    # The iterable did its data work on this thread or in a DataLoader's workers: what ferry can measure is
    # how long it waited for the next item (reported as both the wait and the work).
    ev.add_time(waited, waited, 0.0, 0.0, time.perf_counter() - start)
    text, summary = ev.finish()
    return EvaluateReport(json.loads(text), summary)


def evaluate(model: PathLike, data: Union[PathLike, Iterable[Any]], *, out: PathLike,
             target: Optional[str] = None, precision: Optional[str] = None,
             keep_fp32: Optional[Sequence[str]] = None, labels: Optional[PathLike] = None,
             preprocess: Optional[str] = None, batch: int = 1, workers: Optional[int] = None, worst: int = 20,
             shard: Union[None, str, Tuple[int, int]] = None, threads: Optional[int] = None, opt_level: int = 2,
             backend: str = "cpu", cosine: Optional[float] = None, rel_euclid: Optional[float] = None,
             progress: Optional[bool] = None) -> EvaluateReport:
    """``ferry evaluate MODEL --data DATA -o OUT``: the fp32 golden and the target (``target``,
    ``precision``, ``keep_fp32``) over every sample; returns the report (also written to OUT as report.json,
    report.html, samples.jsonl, and worst/*.npz for ``ferry compare`` to replay).

    labels: with a folder or manifest, a file of "ID LABEL" lines or "folders"; with an iterable, labels come
    from ``(inputs, label)`` items. preprocess: a spec such as "imagenet" or "resize=256,crop=224,..." (images).
    shard: "i/N" or (i, N), for ``merge``. progress: a progress line on stderr (default: when it is a terminal).
    """
    tgt = _session_options(target, precision, keep_fp32, opt_level, backend, threads, None)
    th = _thresholds(cosine, rel_euclid)
    if isinstance(data, (str, os.PathLike)):
        text, summary = _ferry._evaluate(os.fspath(model), os.fspath(data), tgt, os.fspath(labels) if labels else "",
                                         preprocess or "", batch, workers or 0, worst, _shard(shard), os.fspath(out), th)
        return EvaluateReport(json.loads(text), summary)
    if labels is not None or shard is not None:
        raise _ferry.InvalidArgument("evaluate: labels= and shard= go with a folder or manifest; an iterable gives "
                                     "its labels as (inputs, label) items")
    return _evaluate_iterable(os.fspath(model), data, tgt, preprocess or "", batch, worst, os.fspath(out), th,
                              progress)


def preprocess_image(path: PathLike, spec: str, *, uint8_image: bool = False) -> np.ndarray:
    """An image file (JPEG/PNG) as ``ferry evaluate --preprocess SPEC`` gives it to the model: decoded,
    resized, cropped and normalized (float32 [1, 3, H, W] for "imagenet"). With ``uint8_image`` only resized
    and cropped: the uint8 [1, H, W, 3] image a model compiled with ``preprocess=SPEC`` takes."""
    return _ferry._preprocess_image(os.fspath(path), spec, uint8_image)


def merge_evaluations(parts: Sequence[PathLike], *, out: PathLike) -> EvaluateReport:
    """``ferry evaluate --merge PART.json... -o OUT``: shards' reports combined into the report of one run."""
    text, summary = _ferry._merge_evaluations([os.fspath(p) for p in parts], os.fspath(out))
    return EvaluateReport(json.loads(text), summary)
