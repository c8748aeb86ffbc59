"""The three-way split of a compare: which failing modules are inherent, which are conversion errors,
where the errors start, and which modules to keep in fp32.

Label rule (one number per run: rel_euclid = |target - golden| / |golden|, infinite when values are
finite on one side only). A failing module is

    inherent    when the ideal run (eager PyTorch in the same low precision) fails there too, or its
                error is at least half the target's (INHERENT_RATIO): the precision itself explains
                most of what the target shows;
    conversion  otherwise: eager PyTorch in that precision stays close to the golden, so the
                difference comes from how ferry/the target computes it;
    None        when there is no ideal run to tell (fp32, or the eager run failed).

An *origin* is a failing module that makes the error at least 1/ORIGIN_RATIO times larger than the
largest error among the tensors it reads (measured where a module boundary was compared, otherwise
the largest error of the tensors it was computed from), so the error starts there rather than
flowing in. A ratio rather than "its inputs pass": an error can fall just under the threshold after
a residual add and grow back over it in the next block without anything new going wrong. Of an
origin and its origin descendants only the deepest count; when errors only accumulate and no module
stands out, the first divergent module is the origin. Modules after an origin usually fail too,
carrying its error: they are labelled, not blamed.

The keep-fp32 proposal is the inherent origins: their ONNX nodes, without those of descendant
modules that pass.
"""
from __future__ import annotations

import math
from typing import Dict, List, Set, Tuple

from ._scopes import within
from .compare_report import FAIL, PASS, ModuleRow
from .module_map import ModuleMap

INHERENT_RATIO = 0.5
ORIGIN_RATIO = 0.2


def label_rows(rows: List[ModuleRow], ideal_available: bool) -> None:
    """Sets ``label`` on every failing row (the rule in the module docstring)."""
    for r in rows:
        if r.status != FAIL or r.target is None or not ideal_available or r.ideal is None:
            continue
        inherent = (not r.ideal.passed) or r.ideal.error >= INHERENT_RATIO * r.target.error
        r.label = "inherent" if inherent else "conversion"


def _tensor_errors(graph, rows: List[ModuleRow]) -> Dict[str, float]:
    """tensor -> its error against the golden: measured for compared tensors, otherwise the largest
    error of the tensors it was computed from (graph order is topological; inputs and weights are 0)."""
    measured: Dict[str, float] = {}
    for r in rows:
        if r.tensor and r.target is not None:
            measured[r.tensor] = max(measured.get(r.tensor, 0.0), r.target.error)
    errors: Dict[str, float] = {}
    for node in graph.node:
        inherited = max((errors.get(name, 0.0) for name in node.input), default=0.0)
        for out in node.output:
            errors[out] = measured.get(out, inherited)
    return errors


def _module_inputs(graph, mm: ModuleMap, path: str) -> Set[str]:
    """Tensors the module's subtree reads that it does not produce itself."""
    names = set(mm.nodes_of_module(path))
    inside = [n for n in graph.node if n.name in names]
    produced = {out for n in inside for out in n.output}
    return {name for n in inside for name in n.input if name and name not in produced}


def _starts_error(own: float, incoming: float) -> bool:
    if math.isinf(own):
        return not math.isinf(incoming)
    return incoming <= ORIGIN_RATIO * own


def mark_origins(graph, mm: ModuleMap, rows: List[ModuleRow]) -> None:
    """Sets ``origin`` on the failing rows where the error starts (module docstring)."""
    errors = _tensor_errors(graph, rows)
    for r in rows:
        if r.status == FAIL and r.target is not None:
            incoming = max((errors.get(t, 0.0) for t in _module_inputs(graph, mm, r.path)), default=0.0)
            r.origin = _starts_error(r.target.error, incoming)
    origins = [r.path for r in rows if r.origin]
    for r in rows:
        if r.origin and any(p != r.path and within(p, r.path) for p in origins):
            r.origin = False  # a descendant explains it
    if not any(r.origin for r in rows):
        first = next((r for r in rows if r.status == FAIL), None)
        if first is not None:
            first.origin = True  # the error accumulated and crosses the threshold here


def keep_proposal(mm: ModuleMap, rows: List[ModuleRow]) -> Tuple[List[str], List[str]]:
    """(module paths, ONNX node names) to keep in fp32: the inherent origins (module docstring)."""
    modules = [r.path for r in rows if r.origin and r.label == "inherent"]
    passing = [r.path for r in rows if r.status == PASS]
    nodes: List[str] = []
    for path in modules:
        inner_passing = [p for p in passing if p != path and within(p, path)]
        for name in mm.nodes_of_module(path):
            node_module = mm.module_of_node(name) or ""
            if not any(within(node_module, p) for p in inner_passing) and name not in nodes:
                nodes.append(name)
    return modules, nodes
