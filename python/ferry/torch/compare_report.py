"""The report of ``ferry.torch.compare``: a row per module in execution order, the first divergent
module, the three-way split and the keep-fp32 proposal; as a dict/JSON, a text table or an HTML page."""
from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from .metrics import TensorMetrics, Thresholds

# Row statuses.
PASS, FAIL = "pass", "fail"
ABSORBED = "absorbed"  # no node of its own: folded into another module's node by the exporter
NOT_OBSERVED = "not observed"  # its boundary tensor never reached the callback (fused by ferry)
SHAPE_MISMATCH = "shape mismatch"  # no observed candidate has the golden's number of elements
NOT_RECORDED = "not recorded"  # the eager run gave no tensor for it


@dataclass
class ModuleRow:
    """One module: where it is, what was compared, and how it fared against the fp32 golden (target:
    ferry under the target's precision; ideal: eager PyTorch in that precision)."""

    path: str
    cls: str
    status: str
    tensor: Optional[str] = None  # the ONNX tensor compared
    calls: int = 1
    source: Optional[str] = None
    target: Optional[TensorMetrics] = None
    ideal: Optional[TensorMetrics] = None
    label: Optional[str] = None  # "inherent" | "conversion" for failing rows (None: no ideal to tell)
    origin: bool = False  # fails while every tensor it reads matches the golden
    absorbed_into: Optional[str] = None
    note: str = ""

    @property
    def display_path(self) -> str:
        return self.path or "(root)"

    def to_dict(self) -> Dict[str, Any]:
        return {
            "module": self.path, "class": self.cls, "status": self.status, "tensor": self.tensor,
            "calls": self.calls, "source": self.source,
            "target": self.target.to_dict() if self.target else None,
            "ideal": self.ideal.to_dict() if self.ideal else None,
            "label": self.label, "origin": self.origin, "absorbed_into": self.absorbed_into, "note": self.note,
        }


@dataclass
class OutputRow:
    """One graph output against the eager module's output (and the ideal run's)."""

    name: str
    target: Optional[TensorMetrics]
    top1: Optional[float] = None
    top5: Optional[float] = None
    ideal: Optional[TensorMetrics] = None
    ideal_top1: Optional[float] = None
    ideal_top5: Optional[float] = None

    def to_dict(self) -> Dict[str, Any]:
        return {"name": self.name, "target": self.target.to_dict() if self.target else None,
                "top1": self.top1, "top5": self.top5, "ideal": self.ideal.to_dict() if self.ideal else None,
                "ideal_top1": self.ideal_top1, "ideal_top5": self.ideal_top5}


@dataclass
class ModuleCompareReport:
    """What ``compare`` found. ``modules`` are the rows in execution order; ``first_divergent`` is the
    first failing module's path (None when every compared module passes)."""

    model: str
    target: str
    target_label: str
    precision: str
    ideal_precision: Optional[str]
    ideal_error: Optional[str]  # why the ideal run is missing (an op without a low-precision kernel)
    thresholds: Thresholds
    exporter: str
    opt_level: int
    modules: List[ModuleRow]
    outputs: List[OutputRow]
    keep_fp32: List[str] = field(default_factory=list)  # what this run kept in fp32 (node names)
    keep_fp32_proposal: List[str] = field(default_factory=list)  # ONNX node names to keep next time
    keep_fp32_modules: List[str] = field(default_factory=list)  # the same as module paths
    unmatched_keep_fp32: List[str] = field(default_factory=list)
    # compare(repro=DIR): {"dir", "command"} of the bundle for the first divergent node (None: not asked
    # or nothing diverged)
    repro: Optional[dict] = None

    @property
    def first_divergent(self) -> Optional[str]:
        row = self.first_divergent_row
        return row.path if row else None

    @property
    def first_divergent_row(self) -> Optional[ModuleRow]:
        return next((r for r in self.modules if r.status == FAIL), None)

    @property
    def passed(self) -> bool:
        """Every compared module and every output passes."""
        return (all(r.status != FAIL for r in self.modules)
                and all(o.target is not None and o.target.passed for o in self.outputs))

    def row(self, path: str) -> ModuleRow:
        """The row of a module path (KeyError when it has none)."""
        for r in self.modules:
            if r.path == path:
                return r
        raise KeyError(f"no module {path!r} in the report")

    def divergent(self, label: Optional[str] = None) -> List[ModuleRow]:
        """Failing rows, optionally only those labelled ``label`` ("inherent" or "conversion")."""
        return [r for r in self.modules if r.status == FAIL and (label is None or r.label == label)]

    def to_dict(self) -> Dict[str, Any]:
        th = self.thresholds
        return {
            "model": self.model, "target": self.target, "target_label": self.target_label,
            "precision": self.precision,
            "ideal": {"precision": self.ideal_precision, "available": self.ideal_error is None
                      and self.ideal_precision is not None, "error": self.ideal_error},
            "thresholds": {"cosine_min": th.cosine_min, "rel_euclid_max": th.rel_euclid_max, "rtol": th.rtol,
                           "atol": th.atol, "strict": th.strict},
            "exporter": self.exporter, "opt_level": self.opt_level, "passed": self.passed,
            "first_divergent": self.first_divergent,
            "modules": [r.to_dict() for r in self.modules],
            "outputs": [o.to_dict() for o in self.outputs],
            "keep_fp32": self.keep_fp32, "keep_fp32_proposal": self.keep_fp32_proposal,
            "keep_fp32_modules": self.keep_fp32_modules, "unmatched_keep_fp32": self.unmatched_keep_fp32,
        }

    def to_json(self, indent: Optional[int] = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    def format(self) -> str:
        """A readable text report: header, the module table, outputs and the verdict."""
        from .compare_text import format_report

        return format_report(self)

    def __str__(self) -> str:
        return self.format()

    def write_html(self, path: str) -> str:
        """Writes a self-contained HTML page (inline SVG chart of both error curves, then the table)."""
        from .html_report import render_html

        with open(os.fspath(path), "w", encoding="utf-8") as f:
            f.write(render_html(self))
        return os.fspath(path)


def fmt_error(value: Optional[float]) -> str:
    """rel_euclid for a table cell: "-" when missing, "inf" for non-finite mismatches."""
    if value is None:
        return "-"
    if math.isinf(value) or math.isnan(value):
        return str(value)
    return f"{value:.2e}"
