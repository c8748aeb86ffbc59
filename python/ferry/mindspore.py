"""ferry.mindspore: a PyTorch checkpoint converted for a MindSpore network.

    import mindspore, ferry.mindspore
    net = MyResNet()                                          # the MindSpore port of the torch model
    report = ferry.mindspore.convert("resnet18.pth", net, out="resnet18.ckpt")
    print(report)                                             # every key: mapped, renamed or left out
    mindspore.load_param_into_net(net, mindspore.load_checkpoint("resnet18.ckpt"))

The target names come from the live network's parameters; the name map is derived (same names,
then MindSpore's BatchNorm gamma/beta/moving_mean/moving_variance and Embedding embedding_table, then
order and shape), shapes are checked, and the result is audited against the network. The checkpoint is
read by ferry's own readers (ferry.weights): no pickled code runs. docs/weights.md.
"""
from __future__ import annotations

import json
import os
from typing import Any, Dict, List, Union

from . import _ferry
from .reports import TextReport
from .weights import WeightsAudit

PathLike = Union[str, os.PathLike]


class Conversion(TextReport):
    """``ferry weights convert --to mindspore``: the mapping key by key and the audit of the result."""

    @property
    def mapping(self) -> List[Dict[str, str]]:
        """[{source, target, how}]: every checkpoint key and every network parameter, once."""
        return self._data["mapping"]

    @property
    def audit(self) -> WeightsAudit:
        return WeightsAudit(self._data["audit"], "")

    @property
    def output(self) -> str:
        return self._data["output"]



def parameters(net: Any) -> List[tuple]:
    """(name, shape, dtype, cell class) of every parameter of a MindSpore Cell, as ferry takes them."""
    owners = {name: type(cell).__name__ for name, cell in net.cells_and_names()}
    out = []
    for p in net.get_parameters():
        owner = p.name.rsplit(".", 1)[0] if "." in p.name else ""
        out.append((p.name, [int(d) for d in p.shape], str(p.dtype).lower(), owners.get(owner, "")))
    return out


def convert(checkpoint: PathLike, net: Any, out: PathLike) -> Conversion:
    """Converts ``checkpoint`` (a torch state_dict .pth, .safetensors, .npz, ...) for the MindSpore Cell
    ``net`` and writes the MindSpore checkpoint ``out``."""
    data, text = _ferry._convert_mindspore(os.fspath(checkpoint), parameters(net), os.fspath(out))
    return Conversion(json.loads(data), text)
