"""What bounds each benchmark row where ferry is slower than the best peer: one line per row, measured.

    bench/bounds.py bench/results/DATE.json [--over 1.0] [--upto R] [--runs 10] [--out bench/results/DATE-bounds.md]

For every row of a harness run whose ferry / best-peer ratio is over --over (and at most --upto), runs bench/breakdown.py's
three profiles (ferry profile, ONNX Runtime's and OpenVINO's profilers, same inputs, same threads) at
that row's batch, sorts each runtime's kernels into classes (convolution, matmul/attention, pooling,
normalization, layout/reorder, other elementwise and data movement), and names the class where ferry
loses the most time to that row's best peer: ferry's time and GFLOP/s there, the peer's, and the
machine's fp32 peak. Writes a Markdown table (and JSON beside it) that bench/README.md quotes.
Profilers add per-node overhead to all three alike; the class split is what matters, not the totals.
"""
import argparse
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import breakdown  # noqa: E402

# Kernel classes by op type, across the three runtimes' names.
CLASSES = [
    ("convolution", re.compile(r"Conv", re.I)),
    ("matmul/attention", re.compile(r"MatMul|Gemm|FullyConnected|Attention|Einsum|LSTM|GRU|RNN", re.I)),
    ("pooling", re.compile(r"Pool|ReduceMean", re.I)),
    ("normalization", re.compile(r"Norm|MVN|Softmax", re.I)),
    ("layout", re.compile(r"Reorder|Transpose|Concat|Reshape|Gather|Slice|Split|Roll|Pad", re.I)),
]
OTHER = "elementwise/other"
PEER_LABEL = {"onnxruntime": "ONNX Runtime", "openvino": "OpenVINO"}


def class_of(op_type):
    for name, rx in CLASSES:
        if rx.search(op_type):
            return name
    return OTHER


def ferry_classes(prof):
    out = {}
    for n in prof["nodes"]:
        c = out.setdefault(class_of(n["op"]), {"ms": 0.0, "flops": 0.0})
        c["ms"] += n["ms"]
        c["flops"] += n.get("flops") or 0.0
    return out


def peer_classes(peer):
    out = {}
    for n in peer["nodes"]:
        out[class_of(n["type"])] = out.get(class_of(n["type"]), 0.0) + n["ms"]
    return out


def bound_of(prof, peer, peer_name):
    """(class, sentence): the class with the largest ferry - peer time, in figures."""
    mine, theirs, peak = ferry_classes(prof), peer_classes(peer), prof.get("peak_gflops")
    gaps = {c: mine.get(c, {"ms": 0.0})["ms"] - theirs.get(c, 0.0) for c in set(mine) | set(theirs)}
    cls = max(gaps, key=gaps.get)
    m, p = mine.get(cls, {"ms": 0.0, "flops": 0.0}), theirs.get(cls, 0.0)
    text = "%s: ferry %.2f ms, %s %.2f ms" % (cls, m["ms"], PEER_LABEL[peer_name], p)
    if m["flops"] and m["ms"] and p:
        g_mine, g_peer = m["flops"] / m["ms"] / 1e6, m["flops"] / p / 1e6
        text += " (%.0f vs %.0f GFLOP/s%s)" % (g_mine, g_peer, ", peak %.0f" % peak if peak else "")
    total_gap = prof["total_ms"] - sum(theirs.values())
    text += "; %.2f of the %.2f ms the profiles differ by" % (gaps[cls], total_gap)
    return cls, text


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", help="a harness run's JSON (bench/results/DATE.json)")
    ap.add_argument("--over", type=float, default=1.0, help="rows with ferry / best peer above this (default 1.0)")
    ap.add_argument("--upto", type=float, help="and at most this (a band of rows, e.g. 1.00 to 1.10)")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--ferry", default=os.path.join(breakdown.ROOT, "build", "ferry"))
    ap.add_argument("--out", help="Markdown file to write (default: RESULTS with -bounds.md)")
    a = ap.parse_args()
    with open(a.results) as f:
        rows = [r for r in json.load(f)["table"]
                if (r.get("best_ratio") or 0) > a.over and (a.upto is None or r["best_ratio"] <= a.upto)]
    rows.sort(key=lambda r: -r["best_ratio"])  # the worst first: an interrupted run has measured those
    out = a.out or a.results[: -len(".json")] + "-bounds.md"
    found = []
    for i, r in enumerate(rows):
        a.batch = r["batch"]
        label = "%s batch %d" % (r["model"], r["batch"])
        print("bounds: [%d/%d] %s (%.2fx) ..." % (i + 1, len(rows), label, r["best_ratio"]), file=sys.stderr, flush=True)
        try:
            model, info = breakdown.resolve(r["model"], None)
            prof, peers = breakdown.profiles(a, model, info)
            cls, text = bound_of(prof, peers[r["best_peer"]], r["best_peer"])
        except (RuntimeError, KeyError, SystemExit) as e:
            cls, text = "?", "not measured: %s" % e
        found.append({"model": r["model"], "batch": r["batch"], "ratio": r["best_ratio"], "best_peer": r["best_peer"],
                      "class": cls, "bound": text})
        print("bounds: %s: %s" % (label, text), file=sys.stderr, flush=True)
        write(out, found, a.runs)  # after every row, so an interrupted run keeps what it measured
    print("bounds: wrote %s" % out)


def write(out, found, runs):
    with open(out, "w") as f:
        f.write("| model | batch | ferry / best | where ferry loses time (profiles, %d runs) |\n|---|---|---|---|\n" % runs)
        for b in found:
            f.write("| %s | %d | %.3f | %s |\n" % (b["model"], b["batch"], b["ratio"], b["bound"]))
    with open(out[: -len(".md")] + ".json", "w") as f:
        json.dump(found, f, indent=1)


if __name__ == "__main__":
    main()
