"""Writes the fuzz targets' seed corpora (tests/fuzz/corpus/<target>/): small valid inputs of every kind
each loader reads, so the fuzzers start from the formats' structure rather than from nothing. The files
are checked in; run this again (with the project venv and a built ferry) only to change them.

usage: .venv/bin/python tests/fuzz/make_corpus.py [build/ferry]
"""
import io
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zipfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(os.path.dirname(here))
ferry = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "build", "ferry")
out = os.path.join(here, "corpus")
F = TensorProto.FLOAT


def target_dir(name):
    d = os.path.join(out, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    return d


def write(d, name, data):
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def vi(name, dtype, shape):
    return helper.make_tensor_value_info(name, dtype, shape)


def onnx_models():
    """A handful of small graphs covering the importer's paths: initializers, attributes of each kind,
    subgraphs (If, Loop), symbolic dims, sequences, a function, an old opset."""
    w = numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(2, 3), "w")
    shape = numpy_helper.from_array(np.array([3, 2], np.int64), "shape")
    models = {}
    models["add_reshape"] = helper.make_model(helper.make_graph(
        [helper.make_node("Add", ["x", "w"], ["a"], name="add"),
         helper.make_node("Reshape", ["a", "shape"], ["y"], name="reshape")],
        "g", [vi("x", F, ["batch", 3])], [vi("y", F, [3, 2])], [w, shape]),
        opset_imports=[helper.make_opsetid("", 17)])
    conv_w = numpy_helper.from_array(np.ones((4, 3, 3, 3), np.float32), "cw")
    models["conv_relu_pool"] = helper.make_model(helper.make_graph(
        [helper.make_node("Conv", ["x", "cw"], ["c"], name="conv", pads=[1, 1, 1, 1], strides=[1, 1]),
         helper.make_node("Relu", ["c"], ["r"], name="relu"),
         helper.make_node("MaxPool", ["r"], ["y"], name="pool", kernel_shape=[2, 2], strides=[2, 2])],
        "g", [vi("x", F, [1, 3, 8, 8])], [vi("y", F, [1, 4, 4, 4])], [conv_w]),
        opset_imports=[helper.make_opsetid("", 13)])
    then_g = helper.make_graph([helper.make_node("Identity", ["x"], ["t"])], "then", [], [vi("t", F, [2])])
    else_g = helper.make_graph([helper.make_node("Neg", ["x"], ["e"])], "else", [], [vi("e", F, [2])])
    models["if"] = helper.make_model(helper.make_graph(
        [helper.make_node("If", ["c"], ["y"], name="if", then_branch=then_g, else_branch=else_g)],
        "g", [vi("x", F, [2]), vi("c", TensorProto.BOOL, [])], [vi("y", F, [2])]),
        opset_imports=[helper.make_opsetid("", 17)])
    body = helper.make_graph(
        [helper.make_node("Add", ["v", "x"], ["v_out"]), helper.make_node("Identity", ["cond"], ["cond_out"])],
        "body", [vi("i", TensorProto.INT64, []), vi("cond", TensorProto.BOOL, []), vi("v", F, [2])],
        [vi("cond_out", TensorProto.BOOL, []), vi("v_out", F, [2])])
    models["loop"] = helper.make_model(helper.make_graph(
        [helper.make_node("Loop", ["n", "", "x"], ["y"], name="loop", body=body)],
        "g", [vi("x", F, [2]), vi("n", TensorProto.INT64, [])], [vi("y", F, [2])]),
        opset_imports=[helper.make_opsetid("", 17)])
    models["sequence"] = helper.make_model(helper.make_graph(
        [helper.make_node("SplitToSequence", ["x"], ["s"], name="split", axis=0),
         helper.make_node("ConcatFromSequence", ["s"], ["y"], name="cat", axis=0)],
        "g", [vi("x", F, [4, 2])], [vi("y", F, [4, 2])]), opset_imports=[helper.make_opsetid("", 17)])
    fn = helper.make_function("local", "Double", ["a"], ["b"], [helper.make_node("Add", ["a", "a"], ["b"])],
                              [helper.make_opsetid("", 17)])
    models["function"] = helper.make_model(helper.make_graph(
        [helper.make_node("Double", ["x"], ["y"], domain="local", name="double")],
        "g", [vi("x", F, [2])], [vi("y", F, [2])]),
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("local", 1)], functions=[fn])
    models["opset7_gemm"] = helper.make_model(helper.make_graph(
        [helper.make_node("Gemm", ["x", "w"], ["y"], name="gemm", alpha=0.5, transB=0)],
        "g", [vi("x", F, [1, 2])], [vi("y", F, [1, 3])], [w]), opset_imports=[helper.make_opsetid("", 7)])
    models["attrs"] = helper.make_model(helper.make_graph(
        [helper.make_node("ConstantOfShape", ["shape"], ["c"], name="cos",
                          value=numpy_helper.from_array(np.array([1.5], np.float32))),
         helper.make_node("Transpose", ["c"], ["t"], name="tr", perm=[1, 0]),
         helper.make_node("Cast", ["t"], ["y"], name="cast", to=TensorProto.FLOAT16)],
        "g", [], [vi("y", TensorProto.FLOAT16, [2, 3])], [shape]), opset_imports=[helper.make_opsetid("", 17)])
    return models


def main():
    d = target_dir("onnx_import")
    models = onnx_models()
    for name, m in models.items():
        m.ir_version = 8
        write(d, name + ".onnx", m.SerializeToString())

    d = target_dir("ferry_reader")
    with tempfile.TemporaryDirectory() as tmp:
        for name in ("add_reshape", "conv_relu_pool", "if", "loop"):
            src = os.path.join(tmp, name + ".onnx")
            onnx.save(models[name], src)
            extra = ["--shape", "x=2,3"] if name == "add_reshape" else []
            dst = os.path.join(d, name + ".ferry")
            subprocess.run([ferry, "compile", src, "-o", dst, *extra], check=True, stdout=subprocess.DEVNULL)

    d = target_dir("npy")
    for name, a in {"f32": np.arange(6, dtype=np.float32).reshape(2, 3), "i64": np.array([1, -2], np.int64),
                    "bool": np.array([True, False]), "f16_fortran": np.asfortranarray(np.ones((2, 2), np.float16)),
                    "be_f8": np.arange(3, dtype=">f8"), "scalar_u8": np.array(7, np.uint8)}.items():
        buf = io.BytesIO()
        np.save(buf, a)
        write(d, name + ".npy", buf.getvalue())
    for name, fn in (("stored", np.savez), ("deflated", np.savez_compressed)):
        buf = io.BytesIO()
        fn(buf, a=np.arange(4, dtype=np.float32), b=np.zeros((2, 2), np.int32))
        write(d, name + ".npz", buf.getvalue())

    d = target_dir("ir_parser")
    passes = os.path.join(root, "tests", "passes")
    for f in sorted(os.listdir(passes))[::6]:  # every sixth fixture: each grammar feature, small corpus
        shutil.copy(os.path.join(passes, f), d)

    d_ck = target_dir("checkpoint")
    d_pk = target_dir("pickle")
    import torch  # the venv's PyPI torch: real torch.save files
    state = {"conv.weight": torch.arange(12, dtype=torch.float32).reshape(2, 1, 2, 3),
             "bn.running_mean": torch.zeros(2), "bn.num_batches_tracked": torch.tensor(3),
             "fc.weight": torch.ones(2, 2, dtype=torch.float16)}
    buf = io.BytesIO()
    torch.save(state, buf)
    write(d_ck, "state_dict.pth", buf.getvalue())
    buf2 = io.BytesIO()
    torch.save({"epoch": 3, "model": state, "opt": {"lr": 0.1, "betas": (0.9, 0.99)}}, buf2)
    write(d_ck, "training.pth", buf2.getvalue())
    for i, b in enumerate((buf.getvalue(), buf2.getvalue())):
        with zipfile.ZipFile(io.BytesIO(b)) as z:
            pkl = next(n for n in z.namelist() if n.endswith("data.pkl"))
            write(d_pk, "torch%d.pkl" % i, z.read(pkl))
    import pickle
    write(d_pk, "plain.pkl", pickle.dumps({"a": [1, 2.5, "x", None, True], "b": (b"y", {3: -4})}, protocol=2))
    header, blobs, off = {}, [], 0
    for k, (dt, v) in {"w": ("F32", np.ones((2, 2), np.float32)), "n": ("I64", np.array([5], np.int64))}.items():
        header[k] = {"dtype": dt, "shape": list(v.shape), "data_offsets": [off, off + v.nbytes]}
        blobs.append(v.tobytes())
        off += v.nbytes
    h = json.dumps(header).encode()
    write(d_ck, "model.safetensors", struct.pack("<Q", len(h)) + h + b"".join(blobs))
    buf = io.BytesIO()
    np.savez(buf, w=np.ones((2, 2), np.float32))
    write(d_ck, "weights.npz", buf.getvalue())
    import mindspore  # the venv's PyPI MindSpore: a real save_checkpoint file
    ms_path = os.path.join(d_ck, "mindspore.ckpt")
    mindspore.save_checkpoint([{"name": "dense.weight", "data": mindspore.Tensor(np.ones((2, 3), np.float32))},
                               {"name": "step", "data": mindspore.Tensor(np.array([7], np.int32))}], ms_path)
    os.chmod(ms_path, 0o644)  # MindSpore writes checkpoints owner-read-only

    d = target_dir("image")
    from PIL import Image
    img = Image.fromarray((np.arange(16 * 12 * 3) % 251).astype(np.uint8).reshape(16, 12, 3))
    for name, kw in (("rgb.jpg", {"format": "JPEG", "quality": 80}), ("rgb.png", {"format": "PNG"}),
                     ("gray.png", {"format": "PNG"}), ("progressive.jpg", {"format": "JPEG", "progressive": True})):
        buf = io.BytesIO()
        (img.convert("L") if name.startswith("gray") else img).save(buf, **kw)
        write(d, name, buf.getvalue())
    total = sum(os.path.getsize(os.path.join(p, f)) for p, _, fs in os.walk(out) for f in fs)
    print("corpus: %d files, %d KiB under %s" % (sum(len(fs) for _, _, fs in os.walk(out)), total // 1024, out))


main()
