"""The golden: the user's own eager module, with every module's output recorded by forward hooks.

``record_module_outputs`` runs the module once (``torch.manual_seed(0)``, ``eval()``, ``no_grad()``)
and hands each module's output (the first tensor of a tuple) to a sink as soon as the module
returns, so no more than one activation is held at a time: an ``ActivationStore`` writes one .npy
per module to a folder and reads them back memory-mapped; a callable receives ``(path, array)``.
A module called several times (a shared ReLU) is recorded at every call; the store keeps the last,
which is what the module map's boundary tensor holds.

The same function gives the *ideal low precision* run: a deep copy of the module cast to fp16 or
bf16 (``dtype=``), inputs cast likewise, outputs recorded upcast to fp32; or, for the mixed modes,
the fp32 module under ``torch.autocast("cpu", dtype)`` (``autocast=True``), which computes matmuls
and convolutions in the low type and keeps softmax, norms and reductions in fp32, as the mixed
modes do. PyTorch 2.x runs both fp16 and bf16 on the CPU for the common layers (conv, linear,
norms, attention, pooling); an op without a Half kernel raises, and the comparison then reports the
ideal as unavailable rather than guessing (compare.py). ``keep_fp32`` keeps named modules in fp32
in the ideal run as ferry's keep-list does on the target.
"""
from __future__ import annotations

import copy
import os
import shutil
import tempfile
from collections import OrderedDict
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Union

import numpy as np

from .export import eval_mode, as_args

Sink = Union[str, os.PathLike, "ActivationStore", Callable[[str, np.ndarray], None], None]


class ActivationStore:
    """Module outputs on disk: one float32 .npy per module path, read back with ``mmap_mode='r'``."""

    def __init__(self, folder: Optional[str] = None) -> None:
        self._owned = folder is None
        self.folder = folder or tempfile.mkdtemp(prefix="ferry-golden-")
        os.makedirs(self.folder, exist_ok=True)
        self._files: Dict[str, str] = {}

    def _file(self, path: str) -> str:
        if path not in self._files:
            self._files[path] = os.path.join(self.folder, f"{len(self._files):05d}.npy")
        return self._files[path]

    def __call__(self, path: str, array: np.ndarray) -> None:
        np.save(self._file(path), array)

    def __contains__(self, path: str) -> bool:
        return path in self._files

    def load(self, path: str) -> np.ndarray:
        """The module's recorded output (its last call), memory-mapped."""
        return np.load(self._files[path], mmap_mode="r")

    @property
    def paths(self) -> List[str]:
        return list(self._files)

    def close(self) -> None:
        """Removes the folder when the store made it."""
        if self._owned:
            shutil.rmtree(self.folder, ignore_errors=True)


class Recording:
    """What one recorded run gave: modules in execution order (the order they finished, a module
    called several times placed at its last call), how often each ran, the model's outputs (fp32
    numpy), and the store when the sink was one."""

    def __init__(self, order: List[str], calls: Dict[str, int], outputs: List[np.ndarray],
                 store: Optional[ActivationStore]) -> None:
        self.order = order
        self.calls = calls
        self.outputs = outputs
        self.store = store


def first_tensor(value: Any):
    """The first tensor in a module's output (a tensor, or nested tuples/lists/dicts), or None."""
    import torch

    if isinstance(value, torch.Tensor):
        return value
    items = value.values() if isinstance(value, dict) else value if isinstance(value, (tuple, list)) else ()
    for item in items:
        found = first_tensor(item)
        if found is not None:
            return found
    return None


def all_tensors(value: Any) -> list:
    """Every tensor in a (nested) output, in order: a model's outputs as the exporter flattens them."""
    import torch

    if isinstance(value, torch.Tensor):
        return [value]
    items = value.values() if isinstance(value, dict) else value if isinstance(value, (tuple, list)) else ()
    return [t for item in items for t in all_tensors(item)]


def to_numpy(tensor) -> np.ndarray:
    """A tensor as numpy, floating types upcast to float32 (numpy has no bf16)."""
    import torch

    t = tensor.detach()
    if t.is_floating_point() and t.dtype != torch.float32:
        t = t.float()
    return t.cpu().numpy()


def _sink_callable(sink: Sink) -> tuple:
    """(callable, store or None) for a sink argument."""
    if sink is None:
        store = ActivationStore()
        return store, store
    if isinstance(sink, ActivationStore):
        return sink, sink
    if isinstance(sink, (str, os.PathLike)):
        store = ActivationStore(os.fspath(sink))
        return store, store
    if callable(sink):
        return sink, None
    raise TypeError(f"sink: expected a folder, an ActivationStore or a callable, got {type(sink).__name__}")


def _cast_inputs(args: tuple, dtype) -> tuple:
    import torch

    def cast(v):
        if isinstance(v, torch.Tensor) and v.is_floating_point():
            return v.to(dtype)
        if isinstance(v, (tuple, list)):
            return type(v)(cast(x) for x in v)
        return v

    return tuple(cast(a) for a in args)


def _keep_in_fp32(module, paths: Iterable[str], low_dtype, cast_back: bool) -> list:
    """Makes the named submodules compute in fp32 inside a low-precision run: weights back to fp32,
    inputs cast up and autocast off while they run; with ``cast_back`` (a module cast to the low type)
    a forward hook casts the output down again for the next module. Returns the hook handles."""
    import torch

    handles = []
    for path in paths:
        sub = module.get_submodule(path) if path else module
        sub.float()
        forward = sub.forward

        def fp32_forward(*args, _forward=forward, **kwargs):
            with torch.autocast("cpu", enabled=False):
                return _forward(*_cast_inputs(args, torch.float32), **kwargs)

        sub.forward = fp32_forward
        if cast_back:
            handles.append(sub.register_forward_hook(
                lambda _m, _i, out: _map_tensors(out, lambda t: t.to(low_dtype) if t.is_floating_point() else t)))
    return handles


def _map_tensors(value, fn):
    import torch

    if isinstance(value, torch.Tensor):
        return fn(value)
    if isinstance(value, tuple):
        return tuple(_map_tensors(v, fn) for v in value)
    if isinstance(value, list):
        return [_map_tensors(v, fn) for v in value]
    return value


def _recording_hooks(module, wanted: Optional[set], emit: Callable, order: "OrderedDict[str, None]",
                     calls: Dict[str, int]) -> list:
    """A forward hook on every module that notes when it finished and, for the wanted ones (default
    all), hands its output to ``emit``."""
    handles = []
    for path, sub in module.named_modules():
        keep = wanted is None or path in wanted

        def hook(_m, _inputs, output, _path=path, _keep=keep):
            tensor = first_tensor(output)
            if tensor is None:
                return
            calls[_path] = calls.get(_path, 0) + 1
            order.pop(_path, None)  # a later call moves the module to where it finished last
            order[_path] = None
            if _keep:
                emit(_path, to_numpy(tensor))

        handles.append(sub.register_forward_hook(hook))
    return handles


def record_module_outputs(module, example_inputs: Any, modules: Optional[Sequence[str]] = None, dtype=None,
                          sink: Sink = None, autocast: bool = False,
                          keep_fp32: Optional[Sequence[str]] = None) -> Recording:
    """Runs ``module`` once on ``example_inputs`` and records every module's output as it returns.

    Args:
        module: the nn.Module (left unchanged: low-precision runs use a deep copy).
        example_inputs: a tensor or a tuple of positional arguments.
        modules: module paths whose outputs go to the sink (default: all; "" is the root); the
            execution order and call counts cover every module either way.
        dtype: None for the fp32 golden, or torch.float16 / torch.bfloat16 for the ideal run.
        sink: a folder or ActivationStore (one .npy per module), a callable ``(path, array)``, or None
            for a store in a temporary folder (``Recording.store``; ``close()`` removes it).
        autocast: with ``dtype``, run the fp32 module under CPU autocast (mixed precision) instead of
            casting it.
        keep_fp32: module paths kept in fp32 in a low-precision run.

    Returns:
        Recording: execution order, call counts, the model's outputs (fp32 numpy), the store.
    """
    import torch

    emit, store = _sink_callable(sink)
    args = as_args(example_inputs)
    run_module = module
    if dtype is not None and not autocast:
        run_module = copy.deepcopy(module).to(dtype)
        args = _cast_inputs(args, dtype)
    elif dtype is not None:
        run_module = copy.deepcopy(module) if keep_fp32 else module
    order: "OrderedDict[str, None]" = OrderedDict()
    calls: Dict[str, int] = {}
    handles = _recording_hooks(run_module, set(modules) if modules is not None else None, emit, order, calls)
    if dtype is not None and keep_fp32:
        handles += _keep_in_fp32(run_module, keep_fp32, dtype, cast_back=not autocast)
    try:
        torch.manual_seed(0)
        with eval_mode(run_module), torch.no_grad(), \
                torch.autocast("cpu", dtype=dtype or torch.bfloat16, enabled=autocast and dtype is not None):
            output = run_module(*args)
    finally:
        for h in handles:
            h.remove()
    return Recording(list(order), calls, [to_numpy(t) for t in all_tensors(output)], store)
