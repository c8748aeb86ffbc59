"""The HTML page of a ModuleCompareReport: one self-contained file (no scripts, no external files)
with an inline SVG chart of both error curves per module (target vs golden, ideal vs golden, log
scale, the pass threshold as a line, module names on the axis and on hover) and the module table."""
from __future__ import annotations

import html
import math
from typing import List, Optional, Tuple

from .compare_report import FAIL, PASS, ModuleCompareReport, ModuleRow, fmt_error

_W, _H = 1100, 420  # chart size
_LEFT, _RIGHT, _TOP, _BOTTOM = 70, 20, 20, 150  # margins: the bottom one holds rotated module names
_FLOOR = 1e-9  # errors of exactly 0 are drawn here (log scale)
_STYLE = """
body{font-family:system-ui,sans-serif;margin:24px;color:#222}
table{border-collapse:collapse;font-size:13px}th,td{padding:3px 8px;border-bottom:1px solid #ddd;text-align:left}
td.num{text-align:right;font-family:monospace}tr.fail td{background:#fde8e8}tr.pass td{color:#333}
tr.other td{color:#888}.inherent{color:#a15c00;font-weight:600}.conversion{color:#b00020;font-weight:600}
svg text{font-size:11px;font-family:system-ui,sans-serif}.legend span{margin-right:18px}
"""


def _esc(value: object) -> str:
    return html.escape(str(value), quote=True)


def _plotted(rows: List[ModuleRow]) -> List[ModuleRow]:
    return [r for r in rows if r.target is not None]


def _y_range(rows: List[ModuleRow], threshold: float) -> Tuple[float, float]:
    """log10 bounds covering every finite error and the threshold."""
    values = [threshold]
    for r in rows:
        for m in (r.target, r.ideal):
            if m is not None and math.isfinite(m.error):
                values.append(max(m.error, _FLOOR))
    lo, hi = math.floor(math.log10(min(values))), math.ceil(math.log10(max(values)))
    return float(lo), float(max(hi, lo + 1) + 1)  # one decade of headroom for infinite errors


def _scale(n: int, y_lo: float, y_hi: float):
    plot_w, plot_h = _W - _LEFT - _RIGHT, _H - _TOP - _BOTTOM

    def x(i: int) -> float:
        return _LEFT + (plot_w * (i + 0.5) / max(n, 1))

    def y(error: float) -> float:
        v = y_hi if not math.isfinite(error) else math.log10(max(error, _FLOOR))
        return _TOP + plot_h * (1 - (v - y_lo) / (y_hi - y_lo))

    return x, y


def _axes(n: int, y_lo: float, y_hi: float, y, rows: List[ModuleRow], x) -> List[str]:
    parts = [f'<line x1="{_LEFT}" y1="{_TOP}" x2="{_LEFT}" y2="{_H - _BOTTOM}" stroke="#999"/>',
             f'<line x1="{_LEFT}" y1="{_H - _BOTTOM}" x2="{_W - _RIGHT}" y2="{_H - _BOTTOM}" stroke="#999"/>']
    for decade in range(int(y_lo), int(y_hi) + 1):
        yy = y(10.0 ** decade)
        parts.append(f'<line x1="{_LEFT}" y1="{yy:.1f}" x2="{_W - _RIGHT}" y2="{yy:.1f}" stroke="#eee"/>')
        parts.append(f'<text x="{_LEFT - 6}" y="{yy + 4:.1f}" text-anchor="end">1e{decade}</text>')
    step = max(1, math.ceil(n / 60))  # at most ~60 names on the axis; every point has its name on hover
    for i in range(0, n, step):
        xx, yy = x(i), _H - _BOTTOM + 8
        parts.append(f'<text x="{xx:.1f}" y="{yy}" transform="rotate(60 {xx:.1f} {yy})">'
                     f'{_esc(rows[i].display_path)}</text>')
    parts.append(f'<text x="14" y="{_TOP + 10}" transform="rotate(-90 14 {_TOP + 10})" text-anchor="end">'
                 'rel. error vs fp32 golden</text>')
    return parts


def _curve(rows: List[ModuleRow], which: str, color: str, x, y) -> List[str]:
    points = [(i, getattr(r, which)) for i, r in enumerate(rows) if getattr(r, which) is not None]
    if not points:
        return []
    path = " ".join(f"{'M' if k == 0 else 'L'}{x(i):.1f},{y(m.error):.1f}" for k, (i, m) in enumerate(points))
    parts = [f'<path d="{path}" fill="none" stroke="{color}" stroke-width="1.5"/>']
    for i, m in points:
        r = rows[i]
        tip = (f"{r.display_path} ({r.cls}) {which}: rel_err {fmt_error(m.error)}, cosine {m.cosine:.6f}"
               + (f", {r.label}" if r.label else ""))
        radius = 4 if not m.passed else 2.5
        parts.append(f'<circle cx="{x(i):.1f}" cy="{y(m.error):.1f}" r="{radius}" fill="{color}">'
                     f'<title>{_esc(tip)}</title></circle>')
    return parts


def render_svg(rep: ModuleCompareReport) -> str:
    """The chart alone (an <svg> element)."""
    rows = _plotted(rep.modules)
    threshold = rep.thresholds.rel_euclid_max
    y_lo, y_hi = _y_range(rows, threshold)
    x, y = _scale(len(rows), y_lo, y_hi)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{_W}" height="{_H}" viewBox="0 0 {_W} {_H}">']
    parts += _axes(len(rows), y_lo, y_hi, y, rows, x)
    ty = y(threshold)
    parts.append(f'<line x1="{_LEFT}" y1="{ty:.1f}" x2="{_W - _RIGHT}" y2="{ty:.1f}" stroke="#888" '
                 f'stroke-dasharray="5,4"><title>pass threshold rel_euclid {threshold}</title></line>')
    parts += _curve(rows, "ideal", "#1f77b4", x, y)
    parts += _curve(rows, "target", "#d62728", x, y)
    parts.append("</svg>")
    return "\n".join(parts)


def _cell(value: Optional[float], digits: str = ".6f") -> str:
    return "-" if value is None else format(value, digits)


def _table(rep: ModuleCompareReport) -> str:
    head = ("<tr><th>#</th><th>module</th><th>class</th><th>status</th><th>cosine</th><th>rel_err</th>"
            "<th>max_abs</th><th>max_rel</th><th>rmse</th><th>allclose</th><th>ideal rel_err</th>"
            "<th>label</th><th>tensor / note</th></tr>")
    body = []
    for i, r in enumerate(rep.modules):
        t = r.target
        cls = "fail" if r.status == FAIL else "pass" if r.status == PASS else "other"
        label = f'<span class="{_esc(r.label)}">{_esc(r.label)}</span>' if r.label else ""
        if r.origin:
            label += " (origin)"
        body.append(
            f'<tr class="{cls}"><td>{i}</td><td>{_esc(r.display_path)}</td><td>{_esc(r.cls)}</td>'
            f"<td>{_esc(r.status)}</td><td class=num>{_cell(t.cosine if t else None)}</td>"
            f"<td class=num>{fmt_error(t.error) if t else '-'}</td>"
            f"<td class=num>{_cell(t.max_abs if t else None, '.3g')}</td>"
            f"<td class=num>{_cell(t.max_rel if t else None, '.3g')}</td>"
            f"<td class=num>{_cell(t.rmse if t else None, '.3g')}</td>"
            f"<td>{'' if t is None else 'yes' if t.allclose else 'no'}</td>"
            f"<td class=num>{fmt_error(r.ideal.error) if r.ideal else '-'}</td><td>{label}</td>"
            f"<td>{_esc(r.note or r.tensor or '')}</td></tr>")
    return f"<table>{head}{''.join(body)}</table>"


def render_html(rep: ModuleCompareReport) -> str:
    """The whole page."""
    from .compare_text import header_lines, output_lines, verdict_lines

    summary = "<br>".join(_esc(line) for line in header_lines(rep) + [""] + verdict_lines(rep))
    outputs = "<br>".join(_esc(line) for line in output_lines(rep))
    legend = ('<p class="legend"><span style="color:#d62728">&#9679; target vs golden</span>'
              '<span style="color:#1f77b4">&#9679; ideal (eager, same precision) vs golden</span>'
              '<span style="color:#888">- - pass threshold</span> (large dots fail)</p>')
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>ferry.torch compare: {_esc(rep.model)} on {_esc(rep.target)}</title>"
            f"<style>{_STYLE}</style></head><body>"
            f"<h1>{_esc(rep.model)} on {_esc(rep.target)} ({_esc(rep.precision)})</h1>"
            f"<p>{summary}</p>{legend}{render_svg(rep)}"
            + (f"<h2>Outputs</h2><p>{outputs}</p>" if outputs else "")
            + f"<h2>Modules in execution order</h2>{_table(rep)}</body></html>\n")
