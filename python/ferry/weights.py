"""ferry.weights: checkpoints read without running their code, and audited against a model.

    tensors = ferry.weights.load("resnet18.pth")           # {state_dict key: numpy array}
    report = ferry.weights.audit("resnet18.onnx", "resnet18.pth")
    ferry.weights.refit("resnet18.onnx", "trained.pth", "trained.onnx")  # new weights, folds redone
    print(report)                                          # each finding with its module and key
    assert report.clean, report.findings

A checkpoint is a torch .pth/.pt (torch.save's zip format, a bare state_dict or a training checkpoint
holding one), a .safetensors, an .npz or a MindSpore .ckpt. A .pth is read by ferry's own pickle
reader, which accepts tensors and plain containers only: a pickle naming any other Python global (the
way a malicious checkpoint runs code) raises ferry.InvalidArgument naming it, and nothing runs.
``ferry.torch.audit`` audits against a live nn.Module; docs/weights.md.
"""
from __future__ import annotations

import json
import os
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple, Union

import numpy as np

from . import _ferry
from .reports import TextReport

PathLike = Union[str, os.PathLike]
# (state_dict key, shape or None, dtype name or None, module class or "")
ParamSpec = Tuple[str, Optional[Sequence[int]], Optional[str], str]


class Checkpoint(dict):
    """A checkpoint's tensors, {key: numpy array} in file order, and what the reader saw."""

    def __init__(self, tensors: Dict[str, np.ndarray], format: str, container: str,
                 other: List[Tuple[str, str]], notes: List[str]) -> None:
        super().__init__(tensors)
        self.format = format          # "torch zip (.pth)", "safetensors", "npz", "mindspore ckpt"
        self.container = container    # the training checkpoint's entry the weights came from ("state_dict")
        self.other = dict(other)      # its other entries, rendered: {"epoch": "90"}
        self.notes = list(notes)


class WeightsAudit(TextReport):
    """``ferry weights audit``: the checkpoint against the parameters the model expects."""

    @property
    def findings(self) -> List[Dict[str, str]]:
        """[{kind, key, module, detail[, checkpoint_key]}]: kind is missing, unexpected, renamed, shape,
        transposed, dtype or bn-stats."""
        return self._data["findings"]

    @property
    def clean(self) -> bool:
        return not self._data["findings"]

    @property
    def matched(self) -> int:
        return self._data["matched"]



def load(path: PathLike) -> Checkpoint:
    """The checkpoint's tensors as numpy arrays (bfloat16 as ml_dtypes.bfloat16 when installed)."""
    return Checkpoint(*_ferry._read_checkpoint(os.fspath(path)))


def audit(model: PathLike, checkpoint: PathLike) -> WeightsAudit:
    """Audits ``checkpoint`` against ``model`` (an .onnx from ferry.torch.export, whose module map lists every
    state_dict entry, or its .ferry)."""
    data, text = _ferry._audit_model(os.fspath(model), os.fspath(checkpoint))
    return WeightsAudit(json.loads(data), text)


def audit_params(params: Iterable[ParamSpec], checkpoint: PathLike) -> WeightsAudit:
    """Audits ``checkpoint`` against a parameter list: (key, shape or None, dtype name or None, module class)."""
    data, text = _ferry._audit_params(os.fspath(checkpoint), _specs(params))
    return WeightsAudit(json.loads(data), text)


class RefitReport(TextReport):
    """``ferry refit``: how many weights were replaced, transposed and refolded, and what was not touched."""

    @property
    def output(self) -> str:
        return self._data["output"]

    @property
    def untouched(self) -> List[str]:
        """Float initializers tied to no state_dict key (the exporter's own constants)."""
        return self._data["untouched"]



def refit(model: PathLike, checkpoint: PathLike, out: PathLike) -> RefitReport:
    """``ferry refit MODEL --weights CHECKPOINT -o OUT``: the checkpoint's weights put into an exported model
    (an .onnx from ferry.torch.export) through its module map; OUT is an .onnx, or a .ferry (compiled)."""
    data, text = _ferry._refit(os.fspath(model), os.fspath(checkpoint), os.fspath(out))
    return RefitReport(json.loads(data), text)


def _specs(params: Iterable[ParamSpec]) -> List[tuple]:
    return [(str(k), None if s is None else [int(d) for d in s], d, c or "") for k, s, d, c in params]
