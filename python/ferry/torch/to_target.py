"""``to_target``: the ``model.to('npu')`` of ferry. It returns a callable that runs the module through
ferry for a target, so inference code changes one line:

    model = ferry.torch.to_target(model, example, target="ascend310p")
    logits = model(images)                      # torch tensors in, torch tensors out

The module is exported and a ferry session prepared once per input signature (the shapes and dtypes
of the tensor arguments, and the values of the others, which the export bakes in), then reused.
"""
from __future__ import annotations

import os
import shutil
import tempfile
import threading
import weakref
from typing import Any, Dict, Optional, Sequence, Tuple

import numpy as np

from . import _runtime
from .export import export

Signature = Tuple[Any, ...]


def signature_of(args: tuple) -> Signature:
    """What decides whether a compiled model fits a call: each tensor's shape and dtype, and the value
    (repr) of each other argument."""
    import torch

    def one(v: Any) -> Any:
        if isinstance(v, torch.Tensor):
            return ("tensor", tuple(v.shape), str(v.dtype))
        if isinstance(v, (tuple, list)):
            return (type(v).__name__,) + tuple(one(x) for x in v)
        return ("value", repr(v))

    return tuple(one(a) for a in args)


def _to_torch(array: Any):
    import torch

    if not isinstance(array, np.ndarray):
        return array
    if not array.flags.writeable:
        array = array.copy()  # torch.from_numpy warns on read-only memory
    return torch.from_numpy(array)


class TargetModule:
    """A module running through ferry (see the module docstring). Call it like the module."""

    def __init__(self, module, target: str = "cpu", precision: Optional[str] = None,
                 keep_fp32: Optional[Sequence[str]] = None, opt_level: int = 2, threads: Optional[int] = None,
                 workdir: Optional[str] = None, dynamo: bool = True, opset: Optional[int] = None) -> None:
        _runtime.binding()  # fail now, not at the first call
        self.module = module
        self.target = target
        self.precision = _runtime.normalize_precision(precision)
        self._keep_fp32 = list(keep_fp32 or [])
        self._options = dict(opt_level=opt_level, threads=threads)
        self._export = dict(dynamo=dynamo, opset=opset)
        self.workdir = workdir or tempfile.mkdtemp(prefix="ferry-to-target-")
        os.makedirs(self.workdir, exist_ok=True)
        # A temporary folder goes with the object (or at exit), quietly: it only holds our exports.
        self._cleanup = None if workdir else weakref.finalize(self, shutil.rmtree, self.workdir, True)
        self._sessions: Dict[Signature, Any] = {}
        self._lock = threading.Lock()  # one export per signature even when threads call at once

    @property
    def signatures(self) -> Tuple[Signature, ...]:
        """The input signatures compiled so far."""
        return tuple(self._sessions)

    def session_for(self, *args: Any):
        """The ferry.Session for these arguments' signature (exported and prepared on first use)."""
        key = signature_of(args)
        with self._lock:
            if key not in self._sessions:
                self._sessions[key] = self._compile(args, len(self._sessions))
            return self._sessions[key]

    def _compile(self, args: tuple, index: int):
        exp = export(self.module, args, os.path.join(self.workdir, f"model_{index}.onnx"), **self._export)
        keep = exp.module_map.node_names_for(self._keep_fp32) if self._keep_fp32 else None
        return _runtime.open_session(exp.path, target=self.target, precision=self.precision, keep_fp32=keep,
                                     **self._options)

    def __call__(self, *args: Any):
        session = self.session_for(*args)
        outputs = session.run(None, _runtime.feeds_for(session, _runtime.input_arrays(args)))
        results = tuple(_to_torch(o) for o in outputs)
        return results[0] if len(results) == 1 else results

    def close(self) -> None:
        """Drops the sessions and removes the temporary folder."""
        self._sessions.clear()
        if self._cleanup is not None:
            self._cleanup()

    def __repr__(self) -> str:
        return (f"<TargetModule {type(self.module).__name__} on {self.target}"
                f"{' ' + self.precision if self.precision else ''}: {len(self._sessions)} signature(s)>")


def to_target(module, example_inputs: Any = None, target: str = "cpu", precision: Optional[str] = None,
              **options: Any) -> TargetModule:
    """Returns a TargetModule running ``module`` through ferry on ``target``; with ``example_inputs``
    (a tensor or a tuple) it is compiled for their signature right away, so errors surface here.

    Options: keep_fp32 (module paths or ONNX node names), opt_level (default 2, as deployed), threads,
    workdir (keep the exported models there), dynamo, opset.
    """
    from .export import as_args

    wrapped = TargetModule(module, target=target, precision=precision, **options)
    if example_inputs is not None:
        wrapped.session_for(*as_args(example_inputs))
    return wrapped
