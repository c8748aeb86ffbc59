"""Planted faults: a module's weights changed in the exported ONNX model, to check that ``compare``
finds what it should (the first divergent module is the planted one; under a low precision it is a
*conversion* error, since eager PyTorch in that precision computes the unchanged module).

    rep = ferry.torch.compare(model, x, perturb=planted_fault("layer3.1.bn2"))
    assert rep.first_divergent == "layer3.1.bn2"
"""
from __future__ import annotations

from typing import Callable, List, Optional

import numpy as np

from .module_map import ModuleMap


def _initializers(model) -> dict:
    return {init.name: init for init in model.graph.initializer}


def _private_copy(model, inits: dict, name: str, suffix: str, inside: set) -> str:
    """An initializer read both inside and outside the module (the exporter merges equal weights)
    gets a copy for the module's nodes, so that changing it changes this module only."""
    readers = [n for n in model.graph.node if name in n.input]
    if all(n.name in inside for n in readers):
        return name
    source = inits[name]
    copy = model.graph.initializer.add()
    copy.CopyFrom(source)
    copy.name = f"{name}.{suffix}"
    for node in readers:
        if node.name in inside:
            for i, inp in enumerate(node.input):
                if inp == name:
                    node.input[i] = copy.name
    inits[copy.name] = copy
    return copy.name


def perturb_module_weights(model, module_map: ModuleMap, path: str, scale: float = 0.1, seed: int = 0) -> List[str]:
    """Adds noise of ``scale`` times each weight's RMS to every floating initializer (2+ elements)
    that the nodes of module ``path`` read; a module the exporter folded into another module's node
    (a Conv into its BatchNorm) perturbs that node. Edits ``model`` (an onnx.ModelProto) in place and
    returns the initializer names changed. Raises ValueError when the module has no weights."""
    from onnx import numpy_helper

    target = module_map.absorbed_into(path) if module_map.absorbed_into(path) is not None else path
    inside = {n for n in module_map.nodes_of_module(target)}
    rng = np.random.default_rng(seed)
    changed: List[str] = []
    inits = _initializers(model)
    for node in list(model.graph.node):
        if node.name not in inside:
            continue
        for name in list(node.input):
            init = inits.get(name)
            if init is None or name in changed:
                continue
            arr = numpy_helper.to_array(init)
            if arr.dtype.kind != "f" or arr.size < 2:
                continue
            name = _private_copy(model, inits, name, f"perturbed_{target or 'root'}", inside)
            rms = float(np.sqrt(np.mean(arr.astype(np.float64) ** 2))) or 1.0
            noisy = (arr + scale * rms * rng.standard_normal(arr.shape)).astype(arr.dtype)
            inits[name].CopyFrom(numpy_helper.from_array(noisy, name))
            changed.append(name)
    if not changed:
        raise ValueError(f"module {path!r} has no weights in the exported model to perturb")
    return changed


def planted_fault(path: str, scale: float = 0.1, seed: int = 0) -> Callable:
    """A ``perturb`` hook for ``compare`` that perturbs module ``path``'s weights."""

    def perturb(model, module_map: ModuleMap) -> Optional[object]:
        perturb_module_weights(model, module_map, path, scale=scale, seed=seed)
        return model

    return perturb
