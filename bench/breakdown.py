"""Where a model's time goes in ferry and in its peers, node by node: what bounds a benchmark row.

    bench/breakdown.py MODEL [--batch 1] [--threads 2] [--runs 20] [--top 12] [--precision fp32|bf16]
                       [--json OUT.json]

MODEL is a suite model's name (its export in the cache, `bench/run.sh --suite full --list`) or an .onnx
path with --info INFO.json. All three runtimes get the same random inputs. ferry runs `ferry profile`
(each kernel's time, FLOPs, GFLOP/s and the machine's fp32 peak); ONNX Runtime and OpenVINO run with
their profilers on (bench/peers/profile_peer.py), set up as their `ferry bench` peers are. The report:
each runtime's total, its time by op type, and ferry's slowest nodes with the same nodes in the peers
(matched by the ONNX node names a ferry kernel covers), their GFLOP/s and share of the machine's peak.
Profilers add a little time per node: compare the breakdowns with each other, the totals with `ferry
bench`. With --precision bf16, ferry profiles at `--precision bf16` against OpenVINO at
INFERENCE_PRECISION_HINT=bf16 (ONNX Runtime's CPU provider has no bf16 mode, so it is left out), as
`bench/run.sh --precisions fp32,bf16` pairs them. Only the standard library is used here, as in run.py.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from run import input_shapes  # noqa: E402
from suite import cache_root, venv_python  # noqa: E402

PEERS = ("onnxruntime", "openvino")
PEER_SCRIPT = os.path.join(HERE, "peers", "profile_peer.py")


def resolve(model, info):
    """(model.onnx, info.json) of a suite name or a path."""
    if model.endswith(".onnx"):
        if not info:
            sys.exit("breakdown: error: %s: pass --info INFO.json (the inputs' shapes) with an .onnx path" % model)
        return model, info
    folder = os.path.join(cache_root(), model)
    path = os.path.join(folder, "model.onnx")
    if not os.path.isfile(path):
        sys.exit("breakdown: error: %s is not exported in %s (bench/run.sh --models %s exports it)"
                 % (model, folder, model))
    return path, os.path.join(folder, "info.json")


def run(cmd, what):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        lines = (p.stderr or p.stdout).strip().splitlines()
        raise RuntimeError("%s failed: %s" % (what, lines[-1] if lines else "exit %d" % p.returncode))


def ferry_profile(a, model, info, inputs, out):
    with open(info) as f:
        shapes = input_shapes(json.load(f), a.batch)  # fixed before preparing: FLOPs per node are known
    run([a.ferry, "profile", model, "--inputs", inputs, "--threads", str(a.threads), "--runs", str(a.runs),
         "--precision", getattr(a, "precision", "fp32"), "--json", out] + shapes, "ferry profile")
    with open(out) as f:
        return json.load(f)


def peer_profile(a, runtime, model, inputs, out):
    precision = ["bf16"] if getattr(a, "precision", "fp32") == "bf16" else []  # OpenVINO's hint; fp32 is the script's default
    run([venv_python(), "-s", "-E", PEER_SCRIPT, runtime, model, inputs, str(a.threads), str(a.runs), out] + precision,
        runtime + " profile")
    with open(out) as f:
        return json.load(f)


def profiles(a, model, info):
    """(ferry's profile, {peer: its profile}) on the same random inputs; RuntimeError names what failed."""
    with tempfile.TemporaryDirectory(prefix="ferry-breakdown-") as tmp:
        inputs = os.path.join(tmp, "inputs.npz")
        run([venv_python(), "-s", "-E", PEER_SCRIPT, "inputs", model, info, str(a.batch), inputs], "inputs")
        prof = ferry_profile(a, model, info, inputs, os.path.join(tmp, "ferry.json"))
        peers = {r: peer_profile(a, r, model, inputs, os.path.join(tmp, r + ".json"))
                 for r in PEERS if not (r == "openvino" and getattr(a, "no_openvino", False)) and
                 not (r == "onnxruntime" and getattr(a, "precision", "fp32") == "bf16")}
    return prof, peers


def by_type(nodes, ms_key="ms", type_key="type"):
    totals = {}
    for n in nodes:
        totals[n[type_key]] = totals.get(n[type_key], 0.0) + n[ms_key]
    return sorted(totals.items(), key=lambda kv: -kv[1])


PEER_NAME_SUFFIX = re.compile(r"(/WithoutBiases|_nchwc|_output_\d+)+$")


def onnx_node_name(peer_name):
    """The ONNX node a peer's node comes from: OpenVINO appends "/WithoutBiases" to a Conv or Gemm whose
    bias it split off; ONNX Runtime's NCHWc convolutions are named after their output tensor, which torch
    names "<node>_output_0", plus "_nchwc"."""
    return PEER_NAME_SUFFIX.sub("", peer_name)


def matched(ferry_node, peer_nodes):
    """The peer's nodes that come from one of the ONNX nodes this ferry kernel covers (summed): an unfused
    peer splits it in several, a peer fusing further may carry another node's name (then nothing matches)."""
    names = set(ferry_node.get("covers") or []) | {ferry_node["node"]}
    hits = [n for n in peer_nodes if onnx_node_name(n["name"]) in names]
    if not hits:
        return None
    return {"ms": sum(n["ms"] for n in hits), "impl": ",".join(sorted({n["impl"] for n in hits}))}


def gflops(flops, ms):
    return flops / ms / 1e6 if flops and ms else None


def report(a, name, prof, peers):
    peak = prof.get("peak_gflops")
    lines = ["breakdown: %s batch %d, %d threads, %s; fp32 peak %s GFLOP/s" % (
        name, a.batch, a.threads, getattr(a, "precision", "fp32"), "%.0f" % peak if peak else "?")]
    lines.append("  total per run: ferry %.2f ms (sum of kernels)" % prof["total_ms"] + "".join(
        ", %s %.2f ms (median wall)" % (r, p["total_ms"]) for r, p in peers.items()))
    lines.append("")
    lines.append("  time by op type (ms per run):")
    columns = [("ferry", [(t["op"], t["ms"]) for t in prof["by_type"]])]
    columns += [(r, by_type(p["nodes"])) for r, p in peers.items()]
    for i in range(a.top):
        cells = []
        for _, rows in columns:
            cells.append("%-22s %8.3f" % (rows[i][0][:22], rows[i][1]) if i < len(rows) else " " * 31)
        lines.append("    " + " | ".join(cells))
    lines.append("    " + " | ".join("%-31s" % ("^ " + r) for r, _ in columns))
    lines.append("")
    lines.append("  ferry's slowest nodes and the same ONNX nodes in the peers (ms, GFLOP/s, % of peak):")
    for n in sorted(prof["nodes"], key=lambda n: -n["ms"])[: a.top]:
        g = gflops(n.get("flops"), n["ms"])
        cell = "    %-40s %-34s %7.3f ms %s" % (n["node"][-40:], n["kernel"][:34], n["ms"], fmt_rate(g, peak))
        for r, p in peers.items():
            m = matched(n, p["nodes"])
            cell += " | %s " % r[:4] + ("%7.3f ms %s %s" % (m["ms"], fmt_rate(gflops(n.get("flops"), m["ms"]), peak),
                                                            m["impl"][:18]) if m else "(no node of that name)")
        lines.append(cell)
    return "\n".join(lines)


def fmt_rate(g, peak):
    if g is None:
        return "%16s" % ""
    return "%6.1f GF/s %3.0f%%" % (g, 100.0 * g / peak) if peak else "%6.1f GF/s     " % g


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model", help="a suite model's name, or an .onnx path (with --info)")
    ap.add_argument("--info", help="info.json with the inputs' shapes (batch at dim 0) for an .onnx path")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=20, help="measured runs per runtime, after 3 warmup runs")
    ap.add_argument("--top", type=int, default=12, help="rows per table")
    ap.add_argument("--ferry", default=os.path.join(ROOT, "build", "ferry"))
    ap.add_argument("--no-openvino", action="store_true")
    ap.add_argument("--precision", choices=("fp32", "bf16"), default="fp32",
                    help="bf16: ferry at --precision bf16 against OpenVINO at its bf16 hint (no ONNX Runtime)")
    ap.add_argument("--json", help="also write every runtime's nodes as JSON")
    a = ap.parse_args()
    model, info = resolve(a.model, a.info)
    name = a.model if not a.model.endswith(".onnx") else os.path.basename(a.model)
    try:
        prof, peers = profiles(a, model, info)
    except RuntimeError as e:
        sys.exit("breakdown: error: %s: %s" % (name, e))
    print(report(a, name, prof, peers))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"model": name, "batch": a.batch, "threads": a.threads, "precision": a.precision,
                       "ferry": prof, "peers": peers}, f,
                      indent=1)


if __name__ == "__main__":
    main()
