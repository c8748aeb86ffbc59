"""``check``: will this nn.Module run on the target, and which of its modules will not? ``ferry check``
on the exported model, its per-node findings grouped by module with the aten op and the user's
source line where the export recorded them:

    `aten::col2im` in `head.post` (Col2Im, model.py:88) falls back to the host: op Col2Im is not in
    ascend310p's operator list
"""
from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from typing import Any, Dict, List, Optional

from . import _runtime
from ._scopes import aten_display
from ._workdir import work_folder
from .export import as_args, export
from .module_map import ModuleMap

_PHRASES = {"host fallback": "falls back to the host", "unsupported": "is unsupported",
            "rewritten": "is rewritten"}


@dataclass
class NodeFinding:
    """One ONNX node not placed plainly on the device."""

    node: str
    op: str  # the ONNX op
    placement: str  # "rewritten", "host fallback", "unsupported"
    reason: str
    module: str
    module_class: str
    aten: Optional[str] = None  # "aten::col2im"
    source: Optional[str] = None  # "/x/model.py:88"

    def message(self) -> str:
        """"`aten::col2im` in `head.post` (Col2Im, model.py:88) falls back to the host: <ferry's reason>"."""
        where = ", ".join(p for p in (self.op, _short(self.source)) if p)
        what = f"`{self.aten}`" if self.aten else self.op
        module = f"`{self.module}`" if self.module else "the root module"
        text = f"{what} in {module} ({where}) {_PHRASES.get(self.placement, self.placement)}"
        return f"{text}: {self.reason}" if self.reason else text


def _short(source: Optional[str]) -> str:
    if not source:
        return ""
    path, _, line = source.rpartition(":")
    return f"{os.path.basename(path)}:{line}"


@dataclass
class ModuleFindings:
    """The findings of one module (its own nodes, not its children's)."""

    module: str
    module_class: str
    nodes: List[NodeFinding] = field(default_factory=list)


@dataclass
class ModuleCheckReport:
    """``ferry check`` in module terms: ``modules`` holds the modules with findings in execution
    order; ``check`` is the CLI's ``ferry check --json`` output unchanged."""

    target: str
    model_path: Optional[str]
    modules: List[ModuleFindings]
    check: Dict[str, Any]

    @property
    def findings(self) -> List[NodeFinding]:
        return [f for m in self.modules for f in m.nodes]

    @property
    def messages(self) -> List[str]:
        return [f.message() for f in self.findings]

    @property
    def counts(self) -> Dict[str, int]:
        """Nodes on the device, rewritten, on the host, unsupported (the CLI's summary)."""
        return {k: self.check["summary"][k] for k in ("device", "rewritten", "host", "unsupported")}

    def by_module(self, path: str) -> List[NodeFinding]:
        return next((m.nodes for m in self.modules if m.module == path), [])

    def to_dict(self) -> Dict[str, Any]:
        return {"target": self.target, "model": self.model_path, "counts": self.counts,
                "modules": [{"module": m.module, "class": m.module_class, "nodes": [asdict(n) for n in m.nodes]}
                            for m in self.modules],
                "messages": self.messages, "check": self.check}

    def to_json(self, indent: Optional[int] = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    def format(self) -> str:
        c = self.counts
        lines = [f"target: {self.target}",
                 f"nodes: {c['device']} on the device, {c['rewritten']} rewritten, {c['host']} on the host, "
                 f"{c['unsupported']} unsupported"]
        b = self.check.get("bytes", {})
        if b.get("borders"):
            lines.append(f"{b['borders']} device/host border(s), {b.get('transfers', 0)} B across them per inference")
        if not self.modules:
            lines.append(f"every module runs on {self.target}'s device")
        for m in self.modules:
            lines.append(f"{m.module or '(root)'} ({m.module_class}):")
            lines += [f"  {f.message()}" for f in m.nodes]
        for finding in self.check.get("findings", []):
            lines.append(f"note: {finding}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.format()


def group_by_module(check: Dict[str, Any], mm: ModuleMap) -> List[ModuleFindings]:
    """The check's rows placed other than "device", grouped by the module of their node, modules in
    execution order (nodes the map lacks, such as ones a target rewrite made, go under the root)."""
    groups: Dict[str, ModuleFindings] = {}
    for row in check.get("nodes", []):
        if row.get("placement") == "device":
            continue
        info = mm.node_info(row["name"]) or {}
        path = info.get("module", "")
        group = groups.setdefault(path, ModuleFindings(path, mm.module_class(path) or info.get("class", "")))
        group.nodes.append(NodeFinding(node=row["name"], op=row.get("op", ""), placement=row["placement"],
                                       reason=row.get("reason", ""), module=path, module_class=group.module_class,
                                       aten=aten_display(info.get("op")), source=info.get("source")))
    order = {p: i for i, p in enumerate(mm.modules)}
    return sorted(groups.values(), key=lambda g: order.get(g.module, len(order)))


def check(module, example_inputs: Any, target: str = "cpu", workdir: Optional[str] = None, dynamo: bool = True,
          opset: Optional[int] = None, shapes: Optional[Dict[str, List[int]]] = None) -> ModuleCheckReport:
    """Exports ``module`` with its module map and checks it against ``target``.

    Args:
        module, example_inputs: the nn.Module and the arguments it is called with.
        target: "cpu", "ascend310p", "ascend910b", or a target profile file.
        workdir: keep the exported model there (default: a temporary folder).
        dynamo, opset: export options (export.py).
        shapes: concrete shapes for dynamic inputs, by input name.

    Returns:
        ModuleCheckReport (``model_path`` is None when the model was in a temporary folder).
    """
    ferry = _runtime.binding()
    with work_folder(workdir, "ferry-check-") as folder:
        exp = export(module, as_args(example_inputs), os.path.join(folder, "model.onnx"), dynamo=dynamo, opset=opset)
        report = ferry.check(exp.path, target=target, shapes=shapes)
        data = report.to_dict()
        return ModuleCheckReport(target=target, model_path=exp.path if workdir else None,
                                 modules=group_by_module(data, exp.module_map), check=data)
