"""The module map: which part of the user's nn.Module each ONNX node, tensor and initializer is.

``ferry.torch.export`` stores it in the ONNX model's metadata (model-level key ``ferry.module_map``, a
JSON string), so every later step (check, compare, a user's own script) can speak module paths:

    {"version": 1, "exporter": "dynamo", "torch": "2.15.0", "root": "ResNet",
     "modules": {"layer1.0.bn1": {"class": "BatchNorm2d", "qualified": "torch.nn...BatchNorm2d",
                                  "boundary": "getitem_3", "candidates": ["getitem_3"], "exits": [], "nodes": 1,
                                  "source": "/x/resnet.py:92"}, ...},
     "order": ["conv1"?, "bn1", "relu", ...],          # modules in execution order (see below)
     "nodes": {"node_Conv_295": {"module": "layer1.0.bn1", "class": "BatchNorm2d",
                                 "op": "aten._native_batch_norm_legit_no_training.default",
                                 "source": "/x/resnet.py:92", "fused": ["layer1.0.conv1"]}, ...},
     "tensors": {"getitem_3": "layer1.0.bn1", ...},
     "initializers": {"layer1.0.conv1.weight": {"key": "layer1.0.conv1.weight", "match": "folded"}, ...},
     "absorbed": {"layer1.0.conv1": "layer1.0.bn1"},
     "state": {"layer1.0.bn1.running_mean": {"shape": [64], "dtype": "float32", "class": "BatchNorm2d"}, ...}}

A module's *boundary* is the ONNX tensor holding its output: among the tensors its subtree's nodes
produce and something outside the subtree reads (or that are graph outputs), the one produced last.
For a module called several times (a shared ReLU) that is the last call's output. ``candidates``
lists the boundary first, then the tensors it was passed through from unchanged inside the subtree
(Reshape, Flatten, Identity, Mul by ones, ...: an optimizer may drop those nodes, and the value then
goes by the earlier name). ``exits`` are the subtree's other tensors read outside it, latest first:
where a module returns a tuple whose first tensor is not the last one computed.

*Execution order* is the order in which modules finish (a child before its parent), which is the
order forward hooks fire and the order a first divergence shows up in.

*State* is every ``state_dict`` entry with its shape, dtype and the class of the module owning it: what
a checkpoint for this model must hold (``ferry weights audit``), including what the exporter folded away.

*Absorbed* modules have no node of their own: the exporter folded them into another module's node
(dynamo's optimizer folds BatchNorm into the preceding Conv and files the Conv under the BatchNorm's
scope, so ``layer1.0.conv1`` is absorbed into ``layer1.0.bn1``).
"""
from __future__ import annotations

import json
import os
from typing import Any, Dict, Iterable, List, Optional, Union

from ._scopes import within

METADATA_KEY = "ferry.module_map"
VERSION = 1


class ModuleMap:
    """The module map of one exported model (see the module docstring for the JSON it holds)."""

    def __init__(self, data: Dict[str, Any]) -> None:
        if data.get("version") != VERSION:
            raise ValueError(f"module map version {data.get('version')!r}: this ferry reads version {VERSION}")
        self._data = data
        self._node_index = {name: i for i, name in enumerate(data["nodes"])}

    # --- serialisation -------------------------------------------------------------------------

    def to_dict(self) -> Dict[str, Any]:
        return self._data

    def to_json(self, indent: Optional[int] = None) -> str:
        return json.dumps(self._data, indent=indent)

    @classmethod
    def from_json(cls, text: str) -> "ModuleMap":
        return cls(json.loads(text))

    # --- what the model holds ------------------------------------------------------------------

    @property
    def exporter(self) -> str:
        """"dynamo" or "torchscript"."""
        return self._data["exporter"]

    @property
    def modules(self) -> List[str]:
        """Module paths with ONNX nodes, in execution order ("" is the root)."""
        return list(self._data["order"])

    @property
    def nodes(self) -> List[str]:
        """ONNX node names in graph order."""
        return list(self._data["nodes"])

    def module_class(self, path: str) -> Optional[str]:
        """The module's class name ("Conv2d"), or None when the path has no node in the model."""
        info = self._data["modules"].get(path)
        return info["class"] if info else None

    def module_source(self, path: str) -> Optional[str]:
        """"file:line" of the user's code that produced the module's output (dynamo exports only)."""
        info = self._data["modules"].get(path)
        return info.get("source") if info else None

    def node_info(self, name: str) -> Optional[Dict[str, Any]]:
        """{"module", "class", "op", "source", "fused"} of an ONNX node, or None."""
        return self._data["nodes"].get(name)

    def module_of_node(self, name: str) -> Optional[str]:
        info = self._data["nodes"].get(name)
        return info["module"] if info else None

    def module_of_tensor(self, name: str) -> Optional[str]:
        """The module whose node produced ONNX tensor ``name`` (None for inputs and initializers)."""
        return self._data["tensors"].get(name)

    def nodes_of_module(self, path: str) -> List[str]:
        """Every ONNX node inside the module's subtree, in graph order ("" gives every node)."""
        return [n for n, info in self._data["nodes"].items() if within(info["module"], path)]

    def boundary_tensor(self, path: str) -> Optional[str]:
        """The ONNX tensor that is the module's output (see the module docstring), or None."""
        info = self._data["modules"].get(path)
        return info["boundary"] if info else None

    def boundary_candidates(self, path: str) -> List[str]:
        """The boundary, then the tensors it was passed through from unchanged (see above)."""
        info = self._data["modules"].get(path)
        return list(info["candidates"]) if info else []

    def other_exits(self, path: str) -> List[str]:
        """The subtree's other tensors read outside it, latest first (see above)."""
        info = self._data["modules"].get(path)
        return list(info.get("exits", [])) if info else []

    def absorbed_into(self, path: str) -> Optional[str]:
        """The module whose node computes this node-less module (BatchNorm folding), or None."""
        return self._data.get("absorbed", {}).get(path)

    def state_dict_key(self, initializer: str) -> Optional[str]:
        """The state_dict key an initializer holds (None when it is not a weight of the module)."""
        info = self._data["initializers"].get(initializer)
        return info["key"] if info else None

    def initializer_info(self, initializer: str) -> Optional[Dict[str, Any]]:
        return self._data["initializers"].get(initializer)

    def node_names_for(self, entries: Iterable[str]) -> List[str]:
        """ONNX node names for a mix of module paths and node names (a keep-fp32 list): a node name
        stays, a module path becomes its subtree's nodes. Unknown entries raise ValueError."""
        names: List[str] = []
        for entry in entries:
            if entry in self._data["nodes"]:
                found = [entry]
            elif entry in self._data["modules"]:
                found = self.nodes_of_module(entry)
            elif entry in self._data.get("absorbed", {}):
                found = self.nodes_of_module(self._data["absorbed"][entry])
            else:
                raise ValueError(f"{entry!r} is neither a module path nor an ONNX node of the exported model")
            names.extend(n for n in found if n not in names)
        return names

    def __repr__(self) -> str:
        return (f"<ModuleMap {self._data['exporter']}: {len(self._data['order'])} modules, "
                f"{len(self._data['nodes'])} nodes>")


def attach(model, module_map: ModuleMap) -> None:
    """Stores the map in ``model.metadata_props`` (an onnx.ModelProto), replacing an earlier one."""
    for i in reversed(range(len(model.metadata_props))):
        if model.metadata_props[i].key == METADATA_KEY:
            del model.metadata_props[i]
    prop = model.metadata_props.add()
    prop.key = METADATA_KEY
    prop.value = module_map.to_json()


def load_module_map(onnx_path_or_model: Union[str, os.PathLike, Any]) -> ModuleMap:
    """The module map stored in an exported model (a path, or an onnx.ModelProto). Raises
    ValueError when the model has none (it was not exported by ``ferry.torch.export``)."""
    model = onnx_path_or_model
    if isinstance(model, (str, os.PathLike)):
        import onnx

        model = onnx.load(os.fspath(model), load_external_data=False)  # metadata only: skip weights
    for prop in model.metadata_props:
        if prop.key == METADATA_KEY:
            return ModuleMap.from_json(prop.value)
    raise ValueError("the model has no ferry module map: export it with ferry.torch.export")
