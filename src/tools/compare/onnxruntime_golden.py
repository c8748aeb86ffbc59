"""Golden tensors from ONNX Runtime for `ferry compare --golden onnxruntime`.

usage: onnxruntime_golden.py MODEL.onnx INPUTS.npz OUT_DIR

Every node output of the main graph becomes a graph output (ORT accepts outputs without a type), ORT's
graph optimizations are off (they would fuse intermediates away, the msit FAQ's pitfall), and each
tensor is saved as OUT_DIR/<sanitized name>.npy with ferry's rule: characters outside A-Za-z0-9_.-
become '_', and "", "." and ".." become underscores. Exit 3: onnxruntime or onnx is missing.
"""
import os
import re
import sys


def sanitize(name):
    out = re.sub(r"[^A-Za-z0-9_.\-]", "_", name)
    if out in ("", ".", ".."):
        out = "_" * max(len(out), 1)
    return out


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: onnxruntime_golden.py MODEL.onnx INPUTS.npz OUT_DIR")
    try:
        import numpy as np
        import onnx
        import onnxruntime as ort
    except ImportError as e:
        print("missing Python package: %s" % e, file=sys.stderr)
        sys.exit(3)
    model_path, inputs_path, out_dir = sys.argv[1:]
    model = onnx.load(model_path)
    existing = {o.name for o in model.graph.output}
    for node in model.graph.node:
        for name in node.output:
            if name and name not in existing:
                model.graph.output.append(onnx.ValueInfoProto(name=name))
                existing.add(name)
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    opts.log_severity_level = 3
    # The model's folder stays the base for external data.
    data = model.SerializeToString() if model.ByteSize() < (1 << 31) - 1 else None
    if data is None:
        sys.exit("the model is too large for an in-memory ONNX Runtime session")
    cwd = os.getcwd()
    os.chdir(os.path.dirname(os.path.abspath(model_path)))
    try:
        sess = ort.InferenceSession(data, opts, providers=["CPUExecutionProvider"])
    finally:
        os.chdir(cwd)
    feeds = dict(np.load(inputs_path))
    names = [o.name for o in sess.get_outputs()]
    values = sess.run(names, feeds)
    os.makedirs(out_dir, exist_ok=True)
    for name, value in list(feeds.items()) + list(zip(names, values)):
        if isinstance(value, np.ndarray):
            np.save(os.path.join(out_dir, sanitize(name) + ".npy"), value)


if __name__ == "__main__":
    main()
