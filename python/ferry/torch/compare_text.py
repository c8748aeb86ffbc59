"""The text form of a ModuleCompareReport (``report.format()``)."""
from __future__ import annotations

import os
from typing import List, Optional

from .compare_report import FAIL, ModuleCompareReport, ModuleRow, fmt_error


def _short_source(source: Optional[str]) -> str:
    """"/long/path/model.py:88" -> "model.py:88"."""
    if not source:
        return ""
    path, _, line = source.rpartition(":")
    return f"{os.path.basename(path)}:{line}"


def _cells(i: int, r: ModuleRow) -> List[str]:
    t, ideal = r.target, r.ideal
    label = (r.label or "") + (" (origin)" if r.origin else "")
    return [str(i), r.display_path, r.cls, r.status,
            f"{t.cosine:.6f}" if t else "-", fmt_error(t.error) if t else "-",
            f"{t.max_abs:.3g}" if t else "-", fmt_error(ideal.error) if ideal else "-", label,
            r.note or _short_source(r.source)]


def _table(rows: List[List[str]], header: List[str]) -> List[str]:
    widths = [max(len(h), *(len(r[c]) for r in rows)) if rows else len(h) for c, h in enumerate(header)]
    line = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()  # noqa: E731
    return [line(header)] + [line(r) for r in rows]


def header_lines(rep: ModuleCompareReport) -> List[str]:
    th = rep.thresholds
    ideal = (f"eager PyTorch in {rep.ideal_precision}" if rep.ideal_precision and not rep.ideal_error
             else f"unavailable ({rep.ideal_error})" if rep.ideal_error else "none (fp32 run)")
    lines = [
        f"model:     {rep.model} ({rep.exporter} export; ferry opt level {rep.opt_level})",
        f"target:    {rep.target_label or rep.target}, precision {rep.precision}",
        "golden:    the eager module in fp32 (forward hooks)",
        f"ideal:     {ideal}",
        f"pass rule: cosine >= {th.cosine_min} and rel_euclid <= {th.rel_euclid_max}"
        + (f" and allclose(rtol={th.rtol}, atol={th.atol})" if th.strict else ""),
    ]
    if rep.keep_fp32:
        lines.append(f"kept fp32: {len(rep.keep_fp32)} node(s)")
    return lines


def output_lines(rep: ModuleCompareReport) -> List[str]:
    lines = []
    for o in rep.outputs:
        t = o.target
        text = f"  {o.name}: " + (f"cosine {t.cosine:.6f}, rel_euclid {fmt_error(t.error)}, "
                                  f"{'pass' if t.passed else 'FAIL'}" if t else "not compared")
        if o.top1 is not None:
            text += f", top-1 {o.top1:.0%}" + (f", top-5 {o.top5:.0%}" if o.top5 is not None else "")
        if o.ideal_top1 is not None:
            text += f" (ideal top-1 {o.ideal_top1:.0%})"
        lines.append(text)
    return lines


def verdict_lines(rep: ModuleCompareReport) -> List[str]:
    first = rep.first_divergent_row
    if first is None:
        return ["every compared module matches the golden"]
    t = first.target
    lines = [f"first divergent module: {first.display_path} ({first.cls}"
             + (f", {_short_source(first.source)}" if first.source else "") + ")"
             + (f": cosine {t.cosine:.6f}, rel_euclid {fmt_error(t.error)}" if t else "")]
    for label, meaning in (("inherent", "the model itself is sensitive to this precision: eager PyTorch "
                                        "in it diverges there too"),
                           ("conversion", "ferry's/the target's computation differs from eager PyTorch "
                                          "in the same precision: a bug to report")):
        rows = [r for r in rep.divergent(label) if r.origin]
        if rows:
            lines.append(f"{label} ({meaning}): " + ", ".join(r.display_path for r in rows))
    if rep.keep_fp32_modules:
        lines.append("proposed keep-fp32 (rerun with keep_fp32=...): " + ", ".join(
            m or "(root)" for m in rep.keep_fp32_modules) + f" = {len(rep.keep_fp32_proposal)} ONNX node(s)")
    if rep.unmatched_keep_fp32:
        lines.append("keep-fp32 entries that matched no node: " + ", ".join(rep.unmatched_keep_fp32))
    return lines


def format_report(rep: ModuleCompareReport) -> str:
    header = ["#", "module", "class", "status", "cosine", "rel_err", "max_abs", "ideal_err", "label", "source"]
    rows = [_cells(i, r) for i, r in enumerate(rep.modules)]
    parts = header_lines(rep) + [""] + _table(rows, header)
    if rep.outputs:
        parts += ["", "outputs:"] + output_lines(rep)
    parts += [""] + verdict_lines(rep)
    failing = sum(r.status == FAIL for r in rep.modules)
    parts.append(f"{len(rep.modules)} modules, {failing} failing")
    return "\n".join(parts)
