"""ferry.Session: a model prepared for a target and run on this CPU, with onnxruntime's habits.

Code written for ``onnxruntime.InferenceSession`` ports by changing the import and the class name:
``get_inputs()``/``get_outputs()`` give objects with ``.name``, ``.shape`` (ints, or strings for
symbolic dims) and ``.type`` ("tensor(float)"); ``run(output_names, input_feed)`` takes numpy arrays
and returns a list of numpy arrays. Outputs never copy (each array holds ferry's buffer); inputs are
used in place when C-contiguous, of the input's dtype and 64-byte aligned, else copied once. The GIL
is released while the model runs, so threads may share a session (its runs take turns).
"""
from __future__ import annotations

import os
import tempfile
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Union

import numpy as np

from . import _ferry


def shapes_option(shapes: Optional[Mapping[str, Sequence[int]]]) -> Dict[str, List[int]]:
    """`shapes=` as the library takes it: each dim a non-negative integer below 2^63 (the library's
    int64), else ferry.InvalidArgument naming the input and the value (not a TypeError from the binding)."""
    out: Dict[str, List[int]] = {}
    for name, dims in (shapes or {}).items():
        try:
            out[name] = [int(d) for d in dims]
        except (TypeError, ValueError):
            raise _ferry.InvalidArgument("shapes[%r]: %r is not a list of integers" % (name, dims)) from None
        bad = [d for d in out[name] if not 0 <= d < 1 << 63]
        if bad:
            raise _ferry.InvalidArgument("shapes[%r]: %d is not a dimension (expected non-negative integers "
                                         "below 2^63)" % (name, bad[0]))
    return out

Dim = Union[int, str, None]


@dataclass(frozen=True)
class NodeArg:
    """A model input or output, as ``onnxruntime.NodeArg``: name, shape and ONNX type string."""

    name: str
    shape: List[Dim]
    type: str  # "tensor(float)"
    dtype: str  # numpy's name: "float32"


def _as_path(path_or_bytes: Union[str, bytes, os.PathLike]) -> tuple[str, Optional[str]]:
    """The file to open, and a temporary file to remove afterwards when the model came as bytes."""
    if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
        fd, tmp = tempfile.mkstemp(suffix=".model", prefix="ferry-")
        with os.fdopen(fd, "wb") as f:
            f.write(path_or_bytes)
        return tmp, tmp
    if isinstance(path_or_bytes, (str, os.PathLike)):
        return os.fspath(path_or_bytes), None
    raise _ferry.InvalidArgument(
        f"Session: expected a model path or its bytes, got {type(path_or_bytes).__name__}")


def _threads_from_ort_options(sess_options: Any) -> Optional[int]:
    """intra_op_num_threads of an onnxruntime.SessionOptions-like object (0 there means default)."""
    n = getattr(sess_options, "intra_op_num_threads", 0) if sess_options is not None else 0
    return int(n) if n else None


class Session:
    """A model (.onnx, or .ferry from ``ferry.compile``) prepared to run.

    Args:
        path_or_bytes: the model file, or its bytes.
        sess_options: an ``onnxruntime.SessionOptions`` (only ``intra_op_num_threads`` is read), for ports.
        providers: accepted for ports; ferry runs on this CPU (``target`` chooses whose numerics).
        target: prepare as for this target ("cpu", "ascend310p", "ascend910b", or a profile file):
            nodes its device lacks stay fp32 on the host; Ascend targets are emulated on this CPU.
        precision: "fp32", "fp16", "bf16", "mixed-fp16", "mixed-bf16"; default fp32, or the target's.
        keep_fp32: ONNX node names (or "OpType::X") that stay fp32 in a low precision.
        keep_io_types: graph outputs stay fp32 in a low precision.
        threads: kernel threads (default: every core).
        opt_level: graph optimization 0..3 (default 2, as the CLI).
        backend: "cpu" (default) or "reference" (the plain reference kernels, the oracle).
        shapes: fixed shapes for inputs with dynamic dims, by input name.
        cpu: the cpu backend's kernel choices, as ``ferry doctor`` prints them ("gemm=mkl bf16=off").
        allow_newer_opset: load a model whose opset is newer than ferry knows.
        max_memory: the memory budget, in bytes or as "8G" (default: the machine's memory). A model whose
            declared shapes or memory plan need more is refused here, before anything is allocated.

    Raises:
        ferry.Error (a subclass) with the CLI's message, naming the file, node or option.
    """

    def __init__(self, path_or_bytes: Union[str, bytes, os.PathLike], sess_options: Any = None,
                 providers: Optional[Sequence[Any]] = None, provider_options: Any = None, *,
                 target: Optional[str] = None, precision: Optional[str] = None,
                 keep_fp32: Optional[Sequence[str]] = None, keep_io_types: bool = False,
                 threads: Optional[int] = None, opt_level: int = 2, backend: str = "cpu",
                 shapes: Optional[Mapping[str, Sequence[int]]] = None, cpu: Optional[str] = None,
                 allow_newer_opset: bool = False, max_memory: Union[int, str, None] = None) -> None:
        for p in providers or []:
            name = p[0] if isinstance(p, tuple) else p
            if name != "CPUExecutionProvider":
                warnings.warn(f"ferry.Session ignores provider {name!r}: it runs on this CPU "
                              "(use target= for another device's numerics)", stacklevel=2)
        if threads is None:
            threads = _threads_from_ort_options(sess_options)
        options: Dict[str, Any] = {
            "backend": backend, "opt_level": opt_level, "threads": threads, "precision": precision,
            "target": target, "keep_fp32": list(keep_fp32) if keep_fp32 else None,
            "keep_io_types": keep_io_types or None,
            "shapes": shapes_option(shapes) or None,
            "cpu": cpu, "allow_newer_opset": allow_newer_opset or None, "max_memory": max_memory,
        }
        path, tmp = _as_path(path_or_bytes)
        try:
            self._session = _ferry._Session(path, options)
        finally:
            if tmp:
                os.unlink(tmp)
        self._path = path if tmp is None else None
        self._inputs = [NodeArg(*t) for t in self._session.inputs()]
        self._outputs = [NodeArg(*t) for t in self._session.outputs()]
        self._info = self._session.info()  # fixed once prepared: asked once

    def get_inputs(self) -> List[NodeArg]:
        """The inputs a caller feeds (initializers excluded), in model order."""
        return list(self._inputs)

    def get_outputs(self) -> List[NodeArg]:
        """The model's outputs, in order."""
        return list(self._outputs)

    def get_providers(self) -> List[str]:
        """What an onnxruntime port asks: ferry runs on this CPU."""
        return ["CPUExecutionProvider"]

    def run(self, output_names: Optional[Sequence[str]], input_feed: Mapping[str, Any],
            run_options: Any = None) -> List[Any]:
        """Runs the model: ``output_names`` None or empty gives every output, in model order.

        Values in ``input_feed`` are numpy arrays (or anything ``np.asarray`` takes) of the input's dtype.
        Returns numpy arrays (a list of arrays for a sequence output, None for an empty optional).
        """
        return self._session.run(dict(input_feed), list(output_names) if output_names else None)

    def run_layers(self, input_feed: Mapping[str, Any], callback: Callable[[str, np.ndarray], None],
                   output_names: Optional[Sequence[str]] = None) -> List[Any]:
        """``run()`` that also hands every intermediate to ``callback(onnx_tensor_name, array)`` as it is
        computed, in execution order. Tensors a fusion hides are not seen; a fused node's output carries
        the ONNX name of its last covered node's output. The arrays may be kept. An exception in the
        callback stops further calls and is raised when the run ends."""
        return self._session.run_layers(dict(input_feed), callback,
                                        list(output_names) if output_names else None)

    @property
    def info(self) -> Dict[str, Any]:
        """How the model was prepared: target, precision, backend, opt level, kernel choices, gears,
        host nodes, the nodes kept fp32 and keep-list entries that matched nothing."""
        return dict(self._info)

    @property
    def target_label(self) -> str:
        """"ascend310p (EMULATED on this CPU: ...)", or "" without a target."""
        return self._info["target"]

    @property
    def precision(self) -> str:
        """The precision that runs, in words ("fp16 (emulated: fp16 storage, fp32 compute)")."""
        return self._info["precision"]
