"""Which ``state_dict`` entry each ONNX initializer holds.

The dynamo exporter keeps state_dict names for the weights it passes through unchanged, but its
optimizer folds some (a Linear's weight pre-transposed for MatMul becomes "val_0"; BatchNorm folded
into the Conv keeps the conv's name with new values) and merges initializers with identical values
(the two layers of a deep-copied TransformerEncoderLayer share one). The TorchScript exporter names
many of them "onnx::MatMul_334". So an initializer is matched by name first, then by value (exact
bytes, or the transpose of a 2-D weight); folded values match nothing and say so.
"""
from __future__ import annotations

import hashlib
from typing import Dict, List, Tuple

import numpy as np

_MAX_ALSO = 8  # identical values (zero biases, ones) can match dozens of keys: a few say enough


def _digest(arr: np.ndarray) -> Tuple[str, Tuple[int, ...], str]:
    data = np.ascontiguousarray(arr)
    return str(data.dtype), tuple(data.shape), hashlib.blake2b(data.tobytes(), digest_size=16).hexdigest()


def _state_arrays(module) -> Dict[str, np.ndarray]:
    """The module's floating state_dict entries as numpy (dtypes numpy lacks, bf16, are skipped)."""
    out = {}
    for key, tensor in module.state_dict().items():
        if not tensor.is_floating_point():
            continue
        try:
            out[key] = tensor.detach().cpu().numpy()
        except TypeError:
            continue
    return out


def _value_index(state: Dict[str, np.ndarray]) -> Dict[tuple, List[Tuple[str, bool]]]:
    """digest -> [(state_dict key, transposed)] over every entry and every 2-D entry's transpose."""
    index: Dict[tuple, List[Tuple[str, bool]]] = {}
    for key, arr in state.items():
        index.setdefault(_digest(arr), []).append((key, False))
        if arr.ndim == 2:
            index.setdefault(_digest(arr.T), []).append((key, True))
    return index


def match_initializers(graph, module) -> Dict[str, dict]:
    """{initializer name: {"key": state_dict key, "match": how, "also": [other keys with the same
    values]}} for every floating initializer that corresponds to a state_dict entry. ``match`` is
    "name" (same name and values), "values", "transposed" (the key's 2-D transpose) or "folded"
    (same name, values changed by the exporter's optimizer, e.g. BatchNorm folded into a Conv)."""
    from onnx import numpy_helper

    state = _state_arrays(module)
    index = _value_index(state)
    result: Dict[str, dict] = {}
    for init in graph.initializer:
        arr = numpy_helper.to_array(init)
        if arr.dtype.kind != "f" or arr.size < 2:
            continue  # shapes, axes, scalars: not weights, and they would match by accident
        hits = index.get(_digest(arr), [])
        entry = _entry(init.name, arr, state, hits)
        if entry:
            result[init.name] = entry
    return result


def _entry(name: str, arr: np.ndarray, state: Dict[str, np.ndarray], hits: List[Tuple[str, bool]]) -> dict:
    keys = [k for k, _ in hits]
    if name in state:
        same = state[name].shape == arr.shape and np.array_equal(state[name], arr)
        also = [k for k in keys if k != name]
        return _with_also({"key": name, "match": "name" if same else "folded"}, also)
    if not hits:
        return {}
    key, transposed = hits[0]
    return _with_also({"key": key, "match": "transposed" if transposed else "values"}, keys[1:])


def _with_also(entry: dict, also: List[str]) -> dict:
    if also:
        entry["also"] = also[:_MAX_ALSO]
        if len(also) > _MAX_ALSO:
            entry["also_count"] = len(also)
    return entry
