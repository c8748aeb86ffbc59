"""``export``: an nn.Module to ONNX, with the module map (module_map.py) stored in the model.

torch 2.x's dynamo exporter is the default: its per-node metadata names the module path, the class,
the aten op and the user's source line, and it keeps state_dict names on initializers. Its optimizer
(``optimize=True``, kept) folds BatchNorm into the Conv before it and files the merged Conv under the
BatchNorm's scope, which is right for comparisons (the Conv's output is the BatchNorm's output); the
map lists the Conv module as absorbed. ``dynamo=False`` uses the TorchScript exporter (the only one of
Debian's torch 1.13), whose node names carry the scopes; there constant folding is turned off by
default so BatchNorm stays a node of its own (ferry folds it when it optimizes) and each module keeps
its own output tensor.

The default opset is 18, not the exporter's newest: ONNX 1.12-era runtimes and the Ascend toolchain
(ATC accepts opsets 9..18) read it, and ``ferry check`` flags newer opsets on those targets.
"""
from __future__ import annotations

import contextlib
import io
import os
import warnings
from dataclasses import dataclass
from typing import Any, Optional, Sequence, Tuple

from ._map_builder import build_module_map
from .module_map import ModuleMap, attach

DEFAULT_OPSET = 18
_INLINE_LIMIT = 2 * 1024 ** 3 - 64 * 1024 ** 2  # protobuf's 2 GiB, less room for the graph


@dataclass
class ExportResult:
    """What ``export`` wrote: the ONNX file, its module map, and how it was made."""

    path: str
    module_map: ModuleMap
    exporter: str  # "dynamo" or "torchscript"
    opset: int
    input_names: Tuple[str, ...]
    output_names: Tuple[str, ...]


def as_args(example_inputs: Any) -> tuple:
    """The positional arguments a module is called with: a tensor becomes a 1-tuple, a list a tuple."""
    if isinstance(example_inputs, tuple):
        return example_inputs
    if isinstance(example_inputs, list):
        return tuple(example_inputs)
    return (example_inputs,)


@contextlib.contextmanager
def eval_mode(module):
    """Exports (and goldens) are of inference: dropout off, BatchNorm on running stats. The user's
    training flags are put back afterwards."""
    modes = {m: m.training for m in module.modules()}
    module.eval()
    try:
        yield module
    finally:
        for m, training in modes.items():
            m.train(training)


def _torch_major() -> int:
    import torch

    return int(torch.__version__.split(".")[0])


def _run_exporter(module, args: tuple, path: str, dynamo: bool, opset: int, dynamic_shapes, optimize: bool,
                  input_names, output_names, extra: dict) -> None:
    import torch

    kwargs = dict(opset_version=opset, input_names=list(input_names) if input_names else None,
                  output_names=list(output_names) if output_names else None, **extra)
    if dynamo:
        if _torch_major() < 2:
            raise RuntimeError(f"torch {torch.__version__} has no dynamo exporter: pass dynamo=False")
        kwargs.update(dynamo=True, optimize=optimize, verbose=False, dynamic_shapes=dynamic_shapes)
        # Weights in the .onnx file itself unless they cannot fit (torch's default puts even a tiny
        # model's next to it in a .data file).
        kwargs.setdefault("external_data", _weight_bytes(module) > _INLINE_LIMIT)
    else:
        kwargs.setdefault("do_constant_folding", False)  # keep BatchNorm a node (module docstring)
        if dynamic_shapes is not None:
            kwargs.setdefault("dynamic_axes", dynamic_shapes)
        if _torch_major() >= 2:
            kwargs["dynamo"] = False
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        # The TorchScript exporter's deprecation warning and dynamo's progress lines are noise here.
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", FutureWarning)
        warnings.simplefilter("ignore", torch.jit.TracerWarning)  # shape checks traced as constants
        torch.onnx.export(module, args, path, **kwargs)


def _weight_bytes(module) -> int:
    tensors = list(module.parameters()) + list(module.buffers())
    return sum(t.numel() * t.element_size() for t in tensors)


def _save(model, path: str) -> None:
    """Writes the model back, with its weights in ``<path>.data`` when they would pass protobuf's
    2 GiB limit. onnx appends to an existing data file, so the exporter's is removed first (the
    model was loaded whole)."""
    import onnx

    data = path + ".data"
    if os.path.exists(data):
        os.remove(data)
    if model.ByteSize() < _INLINE_LIMIT:
        onnx.save(model, path)
    else:
        onnx.save(model, path, save_as_external_data=True, all_tensors_to_one_file=True,
                  location=os.path.basename(data))


def export(module, example_inputs: Any, path: str, dynamic_shapes: Any = None, dynamo: bool = True,
           opset: Optional[int] = None, optimize: bool = True, input_names: Optional[Sequence[str]] = None,
           output_names: Optional[Sequence[str]] = None, **exporter_kwargs: Any) -> ExportResult:
    """Exports ``module`` (in eval mode) called on ``example_inputs`` to the ONNX file ``path``, with
    the module map in its metadata.

    Args:
        module: the nn.Module.
        example_inputs: a tensor or a tuple of positional arguments.
        path: the .onnx file to write (its folder must exist).
        dynamic_shapes: passed to the exporter (dynamo: torch.export's dynamic_shapes; TorchScript:
            its dynamic_axes, {input name: {axis: name}}).
        dynamo: True for torch 2.x's exporter, False for the TorchScript one.
        opset: ONNX opset (default 18, module docstring).
        optimize: the dynamo exporter's ONNX optimizer (constant folding, BatchNorm into Conv).
        input_names, output_names: names for the graph's inputs and outputs.
        exporter_kwargs: anything else ``torch.onnx.export`` takes.

    Returns:
        ExportResult (path, module_map, exporter, opset, input and output names).
    """
    import onnx

    args = as_args(example_inputs)
    path = os.fspath(path)
    opset = opset or DEFAULT_OPSET
    with eval_mode(module):
        _run_exporter(module, args, path, dynamo, opset, dynamic_shapes, optimize, input_names, output_names,
                      exporter_kwargs)
        model = onnx.load(path)
        module_map = build_module_map(model, module)
    attach(model, module_map)
    _save(model, path)
    initializers = {init.name for init in model.graph.initializer}
    return ExportResult(
        path=path, module_map=module_map, exporter=module_map.exporter, opset=opset,
        input_names=tuple(i.name for i in model.graph.input if i.name not in initializers),
        output_names=tuple(o.name for o in model.graph.output))
