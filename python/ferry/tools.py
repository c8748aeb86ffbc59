"""ferry.check / compile / compare / bench: the CLI's commands as functions returning typed reports.

They take the same options as the commands (keyword arguments named like the flags) and raise a
ferry.Error subclass with the CLI's message where the command would exit 1.
"""
from __future__ import annotations

import json
import os
import tempfile
from typing import Any, Dict, Mapping, Optional, Sequence, Union

import numpy as np

from . import _ferry
from .reports import BenchReport, CheckReport, CompareReport, CompileReport
from .session import shapes_option

PathLike = Union[str, os.PathLike]
Shapes = Optional[Mapping[str, Sequence[int]]]

Inputs = Union[Mapping[str, Any], str, os.PathLike, None]


class _InputFiles:
    """Feeds as the CLI's input flags take them: a folder or .npz (``--inputs``) as it is; by input name
    a .npy path (``--input NAME=FILE``) as it is, and an array written as one .npy (its shape then fixes
    the model's, as in the CLI). The written files are removed afterwards."""

    def __init__(self, feeds: Inputs) -> None:
        self.path = ""
        self.files: Dict[str, str] = {}
        self._dir: Optional[tempfile.TemporaryDirectory] = None
        if isinstance(feeds, (str, os.PathLike)):
            self.path = os.fspath(feeds)
            return
        for i, (name, value) in enumerate((feeds or {}).items()):
            if isinstance(value, (str, os.PathLike)):
                self.files[name] = os.fspath(value)
                continue
            if self._dir is None:
                self._dir = tempfile.TemporaryDirectory(prefix="ferry-inputs-")
            path = os.path.join(self._dir.name, f"input{i}.npy")
            np.save(path, np.asarray(value))
            self.files[name] = path

    def __enter__(self) -> "_InputFiles":
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._dir:
            self._dir.cleanup()


def _session_options(target: Optional[str], precision: Optional[str], keep_fp32: Optional[Sequence[str]],
                     opt_level: int, backend: str, threads: Optional[int], cpu: Optional[str],
                     shapes: Shapes = None, max_memory: Union[int, str, None] = None) -> Dict[str, Any]:
    return {"target": target, "precision": precision, "keep_fp32": list(keep_fp32) if keep_fp32 else None,
            "opt_level": opt_level, "backend": backend, "threads": threads, "cpu": cpu,
            "shapes": shapes_option(shapes) or None, "max_memory": max_memory}


def check(model: PathLike, target: str = "cpu", shapes: Shapes = None) -> CheckReport:
    """``ferry check MODEL --target T``: where each node runs on the target, and why.

    shapes: concrete shapes for inputs with dynamic dims (others are analysed as 1, and the report says so).
    """
    return CheckReport(json.loads(_ferry._check(os.fspath(model), target, shapes_option(shapes))))


def compile(model: PathLike, output: PathLike, *, target: Optional[str] = None, precision: Optional[str] = None,
            keep_fp32: Optional[Sequence[str]] = None, opt_level: int = 2, shapes: Shapes = None,
            dynamic_batch: Optional[Sequence[int]] = None, cpu: Optional[str] = None,
            preprocess: Optional[str] = None) -> CompileReport:
    """``ferry compile MODEL -o OUTPUT``: writes the offline .ferry file (checked by loading it back).

    preprocess: a spec (ferry.evaluate's) whose per-pixel part goes into the model, which then takes uint8
    NHWC images (``--preprocess``)."""
    options = _session_options(target, precision, keep_fp32, opt_level, "cpu", None, cpu, shapes)
    del options["backend"], options["threads"]
    return CompileReport(json.loads(_ferry._compile(os.fspath(model), os.fspath(output), options,
                                                    [int(b) for b in dynamic_batch or []], preprocess or "")))


def compare(model: PathLike, inputs: Inputs = None, *, golden: str = "reference",
            target: Optional[str] = None, precision: Optional[str] = None,
            keep_fp32: Optional[Sequence[str]] = None, opt_level: int = 2, backend: str = "cpu",
            threads: Optional[int] = None, shapes: Shapes = None, seed: int = 0, layerwise: bool = False,
            single_op: bool = False, ranges: bool = False, cosine: float = 0.99, rel_euclid: float = 0.05,
            atol: float = 1e-4, rtol: float = 1e-3, repro: Optional[PathLike] = None,
            max_memory: Union[int, str, None] = None) -> CompareReport:
    """``ferry compare MODEL``: the model under these options against a golden ("reference", "onnxruntime",
    a folder of .npy files, or another model file), per output and with ``layerwise`` per ONNX tensor.

    inputs: by input name, arrays or .npy paths (``--input``); or a folder of NAME.npy / an .npz
        (``--inputs``). Inputs not given are made up from ``seed`` (as the CLI's).
    repro: a folder for a standalone reproduction of the first divergent node (``--repro DIR``).
    max_memory: the memory budget in bytes or as "8G" (``--max-memory``; default the machine's memory).
    """
    candidate = _session_options(target, precision, keep_fp32, opt_level, backend, threads, None,
                                 max_memory=max_memory)
    thresholds = {"cosine": cosine, "rel_euclid": rel_euclid, "atol": atol, "rtol": rtol}
    with _InputFiles(inputs) as files:
        text = _ferry._compare(os.fspath(model), golden, candidate, files.files, files.path, shapes_option(shapes), seed,
                               layerwise, single_op, ranges, thresholds, os.fspath(repro) if repro else "")
    return CompareReport(json.loads(text))


def bench(model: PathLike, inputs: Inputs = None, *, batches: Sequence[int] = (),
          target: Optional[str] = None, precision: Optional[str] = None, opt_level: int = 2,
          backend: str = "cpu", threads: Optional[int] = None, shapes: Shapes = None, cpu: Optional[str] = None,
          warmup: Optional[int] = None, iterations: Optional[int] = None, duration: Optional[float] = None,
          peers: Sequence[str] = (), rounds: int = 3, max_memory: Union[int, str, None] = None) -> BenchReport:
    """``ferry bench MODEL``: latency statistics per batch size; with ``peers=["onnxruntime"]`` the same
    figures from the peer, in rounds alternating with ferry, and the ratios."""
    session = _session_options(target, precision, None, opt_level, backend, threads, cpu, max_memory=max_memory)
    with _InputFiles(inputs) as files:
        text = _ferry._bench(os.fspath(model), session, [int(b) for b in batches], files.files, files.path,
                             shapes_option(shapes),
                             warmup, iterations, duration, list(peers), rounds)
    return BenchReport(json.loads(text))
