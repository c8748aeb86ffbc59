"""Per-node times of ONNX Runtime or OpenVINO on one model, for bench/breakdown.py.

    python -s -E bench/peers/profile_peer.py inputs MODEL.onnx INFO.json BATCH OUT.npz
    python -s -E bench/peers/profile_peer.py onnxruntime|openvino MODEL.onnx INPUTS.npz THREADS RUNS OUT.json
    python -s -E bench/peers/profile_peer.py openvino MODEL.onnx INPUTS.npz THREADS RUNS OUT.json f32|bf16

`inputs` writes the random inputs all three runtimes then share (floats uniform in [-1, 1), integers 0..9,
seed 0, as ferry's own). The runtimes are set up as their `ferry bench` peers are (onnxruntime_peer.py,
openvino_peer.py: same threads, one stream, fp32, or OpenVINO at INFERENCE_PRECISION_HINT=bf16) plus their own profilers: ONNX Runtime's
`enable_profiling` trace (each node's kernel time), OpenVINO's PERF_COUNT (`get_profiling_info`, each
executed node's real time and its implementation, e.g. `jit_avx512_FP32`). OUT.json:
{"runtime", "version", "total_ms" (median wall time of a run), "runs", "nodes": [{name, type, impl, ms}]}
with each node's mean time per run.
"""
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

WARMUP_RUNS = 3


def write_inputs(model, info_path, batch, out):
    import numpy as np
    import onnx
    with open(info_path) as f:
        info = json.load(f)
    shapes = {i["name"]: [batch if d == "batch" else d for d in i["shape"]] for i in info["inputs"]}
    graph = onnx.load(model, load_external_data=False).graph
    init = {i.name for i in graph.initializer}
    rng = np.random.default_rng(0)
    arrays = {}
    for inp in graph.input:
        if inp.name in init:
            continue
        dtype = onnx.helper.tensor_dtype_to_np_dtype(inp.type.tensor_type.elem_type)
        shape = shapes.get(inp.name)
        if shape is None:
            common.fail("input %r has no shape in %s" % (inp.name, info_path))
        if np.issubdtype(dtype, np.floating):
            arrays[inp.name] = rng.uniform(-1.0, 1.0, shape).astype(dtype)
        else:
            arrays[inp.name] = rng.integers(0, 10, shape).astype(dtype)
    common.save_outputs(out, arrays)


def timed_runs(run, runs):
    for _ in range(WARMUP_RUNS):
        run()
    wall = []
    for _ in range(runs):
        t0 = time.perf_counter()
        run()
        wall.append((time.perf_counter() - t0) * 1000.0)
    return statistics.median(wall)


def profile_onnxruntime(model, feeds, threads, runs):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.enable_profiling = True
    sess = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    feeds = {k: v for k, v in feeds.items() if k in {i.name for i in sess.get_inputs()}}
    total_ms = timed_runs(lambda: sess.run(None, feeds), runs)
    trace = sess.end_profiling()
    with open(trace) as f:
        events = json.load(f)
    os.remove(trace)
    nodes = {}
    for e in events:
        if e.get("cat") != "Node" or not e.get("name", "").endswith("_kernel_time"):
            continue
        name = e["name"][: -len("_kernel_time")]
        n = nodes.setdefault(name, {"name": name, "type": e.get("args", {}).get("op_name", "?"),
                                    "impl": e.get("args", {}).get("provider", ""), "us": 0.0})
        n["us"] += e["dur"]
    total_runs = runs + WARMUP_RUNS  # the trace holds every run, warmup included
    out = [{"name": n["name"], "type": n["type"], "impl": n["impl"], "ms": n["us"] / 1000.0 / total_runs}
           for n in nodes.values()]
    return ort.__version__, total_ms, out


def profile_openvino(model, feeds, threads, runs, precision="f32"):
    import openvino as ov
    core = ov.Core()
    m = core.read_model(model)
    m.reshape({p: ov.PartialShape(list(feeds[p.get_any_name()].shape)) for p in m.inputs})
    compiled = core.compile_model(m, "CPU", {"INFERENCE_NUM_THREADS": threads, "NUM_STREAMS": 1,
                                             "PERFORMANCE_HINT": "LATENCY", "INFERENCE_PRECISION_HINT": precision,
                                             "PERF_COUNT": True})
    req = compiled.create_infer_request()
    feeds = {p.get_any_name(): feeds[p.get_any_name()] for p in m.inputs}
    for _ in range(WARMUP_RUNS):
        req.infer(feeds)
    wall, nodes = [], {}
    for _ in range(runs):  # get_profiling_info is the last inference's
        t0 = time.perf_counter()
        req.infer(feeds)
        wall.append((time.perf_counter() - t0) * 1000.0)
        for p in req.get_profiling_info():
            if p.status != p.Status.EXECUTED:
                continue
            n = nodes.setdefault(p.node_name, {"name": p.node_name, "type": p.node_type, "impl": p.exec_type,
                                               "ms": 0.0})
            n["ms"] += p.real_time.total_seconds() * 1000.0 / runs
    version = getattr(ov, "__version__", None) or ov.get_version()
    return version.split("-")[0], statistics.median(wall), list(nodes.values())


def main():
    if len(sys.argv) == 6 and sys.argv[1] == "inputs":
        write_inputs(sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5])
        return
    if len(sys.argv) not in (7, 8) or sys.argv[1] not in ("onnxruntime", "openvino") or \
            (len(sys.argv) == 8 and (sys.argv[1] != "openvino" or sys.argv[7] not in ("f32", "bf16"))):
        common.fail(__doc__.strip().splitlines()[2], 2)
    runtime, model, inputs, threads, runs, out = sys.argv[1:7]
    feeds = common.load_inputs(inputs)
    if runtime == "onnxruntime":
        version, total_ms, nodes = profile_onnxruntime(model, feeds, int(threads), int(runs))
    else:
        version, total_ms, nodes = profile_openvino(model, feeds, int(threads), int(runs), *sys.argv[7:])
    with open(out, "w") as f:
        json.dump({"runtime": runtime, "version": version, "total_ms": total_ms, "runs": int(runs),
                   "nodes": sorted(nodes, key=lambda n: -n["ms"])}, f, indent=1)


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # the last stderr line is the caller's error message
        common.fail("%s: %s" % (type(e).__name__, e))
