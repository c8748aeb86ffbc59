"""What the harness writes from its rows: the Markdown table with its notes, the summary (geometric mean of
ferry / best peer per batch), the sorted ratio plot as a self-contained SVG, and the CPU's name and ISA.
Standard library only (the harness runs under any python3)."""
import html
import math
import os
import platform
import textwrap

TARGET = 1.00  # issue 22: ferry <= the faster of ONNX Runtime and OpenVINO on every row
ISA_PREFIXES = ("avx2", "avx512", "amx", "avx_vnni", "fma", "f16c")


def cpu_info():
    """(model name, logical cores, ISA flags that decide ferry's kernels: avx2/fma/avx512*/amx*/vnni)."""
    name, flags = None, []
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name") and name is None:
                    name = line.split(":", 1)[1].strip()
                elif line.startswith("flags") and not flags:
                    flags = line.split(":", 1)[1].split()
    except OSError:
        pass
    isa = sorted(f for f in flags if f.startswith(ISA_PREFIXES))
    return name or platform.processor() or "?", os.cpu_count() or 0, isa


def best_peer(r):
    """(name, median ms) of the faster peer of row r, or (None, None)."""
    cands = [(r[k], n) for k, n in (("ort_median_ms", "onnxruntime"), ("ov_median_ms", "openvino")) if r.get(k)]
    if not cands:
        return None, None
    ms, name = min(cands)
    return name, ms


def geomean(xs):
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def summary(rows, batches):
    """Per batch: rows, rows measured against a peer, rows at or under TARGET, failures, geometric means."""
    out = []
    for b in batches:
        rs = [r for r in rows if r["batch"] == b]
        best = [r["best_ratio"] for r in rs if r.get("best_ratio")]
        out.append({"batch": b, "rows": len(rs), "measured": len(best),
                    "at_or_below_target": sum(1 for x in best if x <= TARGET),
                    "failed": sum(1 for r in rs if "error" in r),
                    "geomean_best_ratio": geomean(best),
                    "geomean_ort_ratio": geomean([r.get("ratio") for r in rs]),
                    "geomean_ov_ratio": geomean([r.get("ov_ratio") for r in rs])})
    return out


def _n(v, fmt="%.2f"):
    return fmt % v if isinstance(v, (int, float)) else "—"


def _cell(s, limit=200):
    """A table cell: no pipes or newlines; long error texts cut (the JSON keeps them whole)."""
    s = str(s).replace("|", "\\|").replace("\n", " ")
    return s if len(s) <= limit else s[:limit - 1] + "…"


def header_lines(meta):
    """The lines printed above the table: when, where, what ran."""
    peers = "ONNX Runtime %s" % meta.get("ort_version", "?")
    if meta.get("ov_version"):
        peers += ", OpenVINO " + meta["ov_version"]
    elif meta.get("openvino_note"):
        peers += "; OpenVINO skipped: " + meta["openvino_note"]
    return ["%s; commit %s" % (meta["date_utc"], meta.get("commit", "?")),
            "CPU: %s × %d; ISA: %s" % (meta["cpu_model"], meta["cpu_count"], " ".join(meta["cpu_isa"]) or "?"),
            "ferry %s backend, opt-level %s, %d threads, fp32; %s." % (
                meta["backend"], meta["opt_level"], meta["threads"], peers)]


def table(rows, meta):
    low = [p for p in meta.get("precisions", []) if p != "fp32"]
    head = ["model", "family", "batch", "ferry ms", "ORT ms", "OpenVINO ms", "ferry/ORT", "ferry/OV",
            "ferry/best peer", "≤ %.2f?" % TARGET]
    for p in low:
        head += ["ferry %s ms" % p, "%s speed-up vs ferry fp32" % p, "OpenVINO %s ms" % p, "ferry/OV at %s" % p]
    head += ["GFLOP", "ferry GFLOP/s", "peak MiB ferry / ORT", "outputs vs ORT (rel.)", "exported by"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = [r["model"], r.get("family", "?"), str(r["batch"])]
        if "error" in r:
            cells += ["error: " + _cell(r["error"])] + [""] * (len(head) - 5) + [_cell(r.get("exporter_short", ""))]
            out.append("| " + " | ".join(cells) + " |")
            continue
        unstable = " (unstable)" if r.get("unstable") else ""
        met = "—" if r.get("best_ratio") is None else ("yes" if r["best_ratio"] <= TARGET else "**no**")
        ov = _n(r.get("ov_median_ms")) if "ov_error" not in r else "error: " + _cell(r["ov_error"])
        ort = _n(r.get("ort_median_ms")) if "ort_error" not in r else "error: " + _cell(r["ort_error"])
        cells += [_n(r.get("ferry_median_ms")), ort, ov, _n(r.get("ratio"), "%.3f"), _n(r.get("ov_ratio"), "%.3f"),
                  _n(r.get("best_ratio"), "%.3f") + unstable, met]
        for p in low:
            if p + "_error" in r:
                cells += ["error: " + _cell(r[p + "_error"]), "", "", ""]
                continue
            ov_low = _n(r.get(p + "_ov_median_ms")) if p + "_ov_error" not in r else "error: " + _cell(r[p + "_ov_error"])
            cells += [_n(r.get(p + "_median_ms")) + (" (unstable)" if r.get(p + "_unstable") else ""),
                      _n(r.get(p + "_speedup"), "%.2f×"), ov_low, _n(r.get(p + "_ov_ratio"), "%.3f")]
        diff = "—"
        if "ort_max_rel_diff" in r:
            diff = "%.1e" % r["ort_max_rel_diff"] + ("" if r.get("ort_agrees") else " **differ**")
        cells += [_n(r.get("gflop"), "%.2f"), _n(r.get("ferry_gflops"), "%.1f"),
                  "%s / %s" % (_n(r.get("ferry_peak_mib"), "%.0f"), _n(r.get("ort_peak_mib"), "%.0f")), diff,
                  _cell(r.get("exporter_short", ""))]
        out.append("| " + " | ".join(cells) + " |")
    return out


def summary_lines(meta):
    out = []
    for s in meta.get("summary", []):
        out.append("batch %d: geometric mean ferry/best peer %s (ferry/ORT %s, ferry/OV %s) over %d rows; %d of them "
                   "≤ %.2f; %d row(s) failed." % (
                       s["batch"], _n(s["geomean_best_ratio"], "%.3f"), _n(s["geomean_ort_ratio"], "%.3f"),
                       _n(s["geomean_ov_ratio"], "%.3f"), s["measured"], s["at_or_below_target"], TARGET, s["failed"]))
    return out


def markdown(rows, meta):
    notes = [""] + summary_lines(meta)
    peak = meta.get("peak_gflops")
    for r in rows:
        if r["model"] == "resnet50" and r["batch"] == 8 and r.get("ferry_gflops") and peak:
            notes.append("resnet50 batch 8: ferry %.1f GFLOP/s = %.0f%% of the %.0f GFLOP/s fp32 peak `ferry doctor` "
                         "measured on %d threads (best of %s)." % (
                             r["ferry_gflops"], 100 * r["ferry_gflops"] / peak, peak, meta["threads"],
                             ", ".join("%.0f" % x for x in meta.get("peak_gflops_probes", []))))
    if any(p != "fp32" for p in meta.get("precisions", [])):
        notes.append("Lower-precision columns: ferry at that --precision (bf16 Conv/MatMul here: %s) alternating with "
                     "OpenVINO at the same INFERENCE_PRECISION_HINT (bf16, or f16 for fp16); speed-up = ferry fp32 "
                     "median / that median." % meta.get("bf16_choice", "?"))
    notes.append("Ratios are ferry / peer median latency (below 1: ferry faster); best peer = the faster of ONNX "
                 "Runtime and OpenVINO on that row; target ≤ %.2f on every row (issue 22). GFLOP = `ferry inspect` "
                 "estimate for the batch; \"(unstable)\": some runtime's CV was over 10%%." % TARGET)
    if meta.get("plot"):
        notes.append("Plot: `%s`." % meta["plot"])
    return "\n".join(header_lines(meta) + [""] + table(rows, meta) + notes) + "\n"


def svg_plot(rows, meta, batches):
    """ferry / best peer per model, sorted, one panel per batch: a bar from 1.0 to the ratio on a log
    axis (green: ferry faster, red: slower), the 1.0 line, and the geometric mean in the panel title."""
    panels = []
    for b in batches:
        pts = sorted(((r["best_ratio"], r["model"]) for r in rows if r["batch"] == b and r.get("best_ratio")),
                     key=lambda t: t[0])
        panels.append((b, pts))
    n = max([len(p) for _, p in panels] + [1])
    cpu, _, isa = header_lines(meta)[1].partition("; ISA: ")
    text = textwrap.wrap(header_lines(meta)[0] + "; " + cpu, 140) + textwrap.wrap("ISA: " + (isa or "?"), 140) + \
        textwrap.wrap(header_lines(meta)[2], 140)
    bar, label_w, plot_w, right = 14, 230, 360, 60
    top = 34 + 14 * len(text) + 30
    panel_w = label_w + plot_w + right
    width, height = max(panel_w * len(panels), 900), top + n * bar + 50
    ratios = [x for _, p in panels for x, _ in p] or [1.0]
    lo, hi = math.log(min(min(ratios), 0.5)), math.log(max(max(ratios), 2.0))

    def x_of(v):
        return label_w + (math.log(v) - lo) / (hi - lo) * plot_w

    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" '
           'font-size="11">' % (width, height), '<rect width="100%" height="100%" fill="white"/>',
           '<text x="10" y="18" font-size="13">ferry / best peer (ONNX Runtime, OpenVINO), median latency, '
           'sorted; log scale; below 1: ferry faster; dashed: geometric mean</text>']
    for k, line in enumerate(text):
        out.append('<text x="10" y="%d" fill="#555">%s</text>' % (34 + 14 * k, html.escape(line)))
    summ = {s["batch"]: s for s in meta.get("summary", [])}
    for i, (b, pts) in enumerate(panels):
        ox = i * panel_w
        gm = summ.get(b, {}).get("geomean_best_ratio")
        failed = summ.get(b, {}).get("rows", len(pts)) - len(pts)
        out.append('<text x="%d" y="%d" font-size="12" font-weight="bold">batch %d: %d models, geometric mean '
                   '%s%s</text>' % (ox + 10, top - 14, b, len(pts), _n(gm, "%.3f"),
                                    "; %d not measured against a peer (see the table)" % failed if failed else ""))
        if gm:
            out.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#1f5fbf" stroke-dasharray="4 3"/>' % (
                ox + x_of(gm), top - 4, ox + x_of(gm), top + n * bar))
        for t in (0.5, 1.0, 2.0, 5.0, 10.0, 20.0):
            if lo <= math.log(t) <= hi:
                x = ox + x_of(t)
                out.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s" stroke-width="%s"/>' % (
                    x, top - 4, x, top + n * bar, "black" if t == 1.0 else "#ddd", "1.5" if t == 1.0 else "1"))
                out.append('<text x="%.1f" y="%d" text-anchor="middle" fill="#555">%g</text>' % (
                    x, top + n * bar + 14, t))
        for j, (v, name) in enumerate(pts):
            y = top + j * bar
            x0, x1 = ox + x_of(1.0), ox + x_of(v)
            color = "#2a9d4a" if v <= 1.0 else "#d1495b"
            out.append('<text x="%d" y="%d" text-anchor="end">%s</text>' % (ox + label_w - 6, y + bar - 3,
                                                                           html.escape(name)))
            out.append('<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="%s"/>' % (
                min(x0, x1), y + 2, max(abs(x1 - x0), 1.0), bar - 4, color))
            out.append('<text x="%.1f" y="%d" fill="#333">%.2f</text>' % (max(x0, x1) + 3, y + bar - 3, v))
    out.append("</svg>")
    return "\n".join(out) + "\n"
