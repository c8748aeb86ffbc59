"""ferry.torch.audit: a checkpoint against a live nn.Module or an exported model (ferry.weights.audit).

    report = ferry.torch.audit(model, "checkpoint.pth")
    for f in report.findings:
        print(f["kind"], f["module"], f["key"], f["detail"])

Unlike ``model.load_state_dict(torch.load(path), strict=False)``, which keeps a parameter whose key does
not match at its random initial value without a word, the audit names every such key, and reads the
checkpoint without running pickled code.
"""
from __future__ import annotations

import os
from typing import Union

import torch

from .. import weights
from ._map_builder import _state_signature


def audit(module_or_model: Union[torch.nn.Module, str, os.PathLike], checkpoint) -> weights.WeightsAudit:
    """Audits ``checkpoint`` against an nn.Module's state_dict (keys, shapes, dtypes, BatchNorm statistics),
    or against an exported model file (an .onnx from ferry.torch.export, or its .ferry)."""
    if not isinstance(module_or_model, torch.nn.Module):
        return weights.audit(module_or_model, checkpoint)
    signature = _state_signature(module_or_model)
    params = [(key, s["shape"], s["dtype"], s["class"]) for key, s in signature.items()]
    return weights.audit_params(params, checkpoint)


def refit(model: Union[str, os.PathLike], weights_or_module, out: Union[str, os.PathLike]) -> weights.RefitReport:
    """Puts new weights into ``model`` (an .onnx from ferry.torch.export): a checkpoint path, a state_dict or
    an nn.Module (its state_dict). OUT is an .onnx, or a .ferry (compiled). A model exported once and refitted
    with the trained weights gives the outputs a fresh export of the trained model gives."""
    import tempfile

    if isinstance(weights_or_module, (str, os.PathLike)):
        return weights.refit(model, weights_or_module, out)
    state = weights_or_module.state_dict() if isinstance(weights_or_module, torch.nn.Module) else weights_or_module
    with tempfile.TemporaryDirectory(prefix="ferry-refit-") as tmp:
        path = os.path.join(tmp, "weights.pth")
        torch.save(dict(state), path)
        return weights.refit(model, path, out)
