"""ferry.Session: onnxruntime's habits, numpy in and out, errors as ferry.Error, threads."""
import concurrent.futures
import os
import threading
import time

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import ferry


def linear_relu_model(path):
    """y = relu(x @ W + b) with a symbolic batch dim 'N', and a second output z = x * 2."""
    rng = np.random.default_rng(0)
    w = rng.standard_normal((4, 3)).astype(np.float32)
    b = rng.standard_normal(3).astype(np.float32)
    g = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W"], ["xw"], name="mm"),
         helper.make_node("Add", ["xw", "b"], ["pre"], name="add"),
         helper.make_node("Relu", ["pre"], ["y"], name="relu"),
         helper.make_node("Mul", ["x", "two"], ["z"], name="double")],
        "linear",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3]),
         helper.make_tensor_value_info("z", TensorProto.FLOAT, ["N", 4])],
        [numpy_helper.from_array(w, "W"), numpy_helper.from_array(b, "b"),
         numpy_helper.from_array(np.array(2, np.float32), "two")])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, path)
    return w, b


@pytest.fixture(scope="module")
def linear(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("linear") / "linear.onnx")
    w, b = linear_relu_model(path)
    return path, w, b


def test_inputs_outputs_describe_the_model(linear):
    s = ferry.Session(linear[0])
    (x,) = s.get_inputs()
    assert (x.name, x.shape, x.type, x.dtype) == ("x", ["N", 4], "tensor(float)", "float32")
    assert [o.name for o in s.get_outputs()] == ["y", "z"]
    assert s.get_outputs()[0].shape == ["N", 3]
    assert s.get_providers() == ["CPUExecutionProvider"]


def test_run_matches_numpy_and_selects_outputs(linear):
    path, w, b = linear
    s = ferry.Session(path)
    x = np.random.default_rng(1).standard_normal((5, 4)).astype(np.float32)
    y, z = s.run(None, {"x": x})
    np.testing.assert_allclose(y, np.maximum(x @ w + b, 0), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(z, x * 2)
    (only_z,) = s.run(["z"], {"x": x})
    np.testing.assert_array_equal(only_z, x * 2)
    # Outputs hold ferry's buffer: no copy.
    assert not y.flags.owndata


def test_inputs_need_no_particular_layout(linear):
    path, w, b = linear
    s = ferry.Session(path)
    x = np.random.default_rng(2).standard_normal((4, 6)).astype(np.float32).T  # Fortran-ordered view
    (y,) = s.run(["y"], {"x": x})
    np.testing.assert_allclose(y, np.maximum(x @ w + b, 0), rtol=1e-5, atol=1e-6)
    # A 64-byte aligned C-contiguous array is used in place; others are copied once: same results.
    aligned = np.empty(6 * 4 + 16, np.float32)
    offset = (-aligned.ctypes.data % 64) // 4
    xa = aligned[offset:offset + 24].reshape(6, 4)
    xa[...] = x
    np.testing.assert_array_equal(s.run(["y"], {"x": xa})[0], y)


def test_bytes_and_pathlike(linear, tmp_path):
    import pathlib
    with open(linear[0], "rb") as f:
        data = f.read()
    x = np.ones((2, 4), np.float32)
    a = ferry.Session(data).run(None, {"x": x})[0]
    b = ferry.Session(pathlib.Path(linear[0])).run(None, {"x": x})[0]
    np.testing.assert_array_equal(a, b)


def test_errors_are_ferry_errors_naming_what_is_wrong(linear, tmp_path):
    s = ferry.Session(linear[0])
    with pytest.raises(ferry.InvalidArgument, match="input 'x' is float32 but the array is float64"):
        s.run(None, {"x": np.ones((2, 4))})
    with pytest.raises(ferry.InvalidArgument, match="no output 'nope'"):
        s.run(["nope"], {"x": np.ones((2, 4), np.float32)})
    with pytest.raises(ferry.Error, match="'x'"):
        s.run(None, {})
    with pytest.raises(ferry.Error, match="'x'"):
        s.run(None, {"x": np.ones((2, 5), np.float32)})
    bad = tmp_path / "garbage.onnx"
    bad.write_bytes(b"\x08\x07not a model at all" * 10)
    with pytest.raises(ferry.Error, match="garbage.onnx"):
        ferry.Session(str(bad))
    with pytest.raises(ferry.Error, match="missing.onnx"):
        ferry.Session(str(tmp_path / "missing.onnx"))
    with pytest.raises(ferry.InvalidArgument, match="precision"):
        ferry.Session(linear[0], precision="fp8")
    with pytest.raises(ferry.InvalidArgument):
        ferry.Session(linear[0], opt_level=7)
    # ValueError / OSError catchers still catch them.
    assert issubclass(ferry.InvalidArgument, ValueError) and issubclass(ferry.IOError, OSError)


def test_error_message_is_the_clis(linear, tmp_path, ferry_cli):
    import subprocess
    bad = tmp_path / "garbage.onnx"
    bad.write_bytes(b"\x08\x07not a model at all" * 10)
    cli = subprocess.run([ferry_cli, "run", str(bad)], capture_output=True, text=True)
    assert cli.returncode == 1
    with pytest.raises(ferry.Error) as e:
        ferry.Session(str(bad))
    assert cli.stderr.strip().endswith(str(e.value))


def test_threads_share_one_session(linear):
    path, w, b = linear
    s = ferry.Session(path, threads=1)
    xs = [np.random.default_rng(i).standard_normal((3, 4)).astype(np.float32) for i in range(16)]
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        ys = list(pool.map(lambda x: s.run(["y"], {"x": x})[0], xs))
    for x, y in zip(xs, ys):
        np.testing.assert_allclose(y, np.maximum(x @ w + b, 0), rtol=1e-5, atol=1e-6)


def test_eight_threads_on_one_session_give_the_serial_outputs(linear):
    s = ferry.Session(linear[0], threads=1)
    # Batches of different sizes, so concurrent runs also differ in shape.
    xs = [np.random.default_rng(i).standard_normal((1 + i % 5, 4)).astype(np.float32) for i in range(64)]
    serial = [s.run(None, {"x": x}) for x in xs]
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        concurrent_outs = list(pool.map(lambda x: s.run(None, {"x": x}), xs))
    for want, got in zip(serial, concurrent_outs):
        for a, b in zip(want, got):
            np.testing.assert_array_equal(a, b)


def test_run_releases_the_gil(tmp_path):
    """While one thread runs a model of ~10 GFLOP, this thread keeps executing Python: it samples the clock
    throughout the run (with the GIL held during the run it could only do so before and after)."""
    rng = np.random.default_rng(0)
    n = 1024
    nodes, inits, prev = [], [], "x"
    for i in range(5):
        inits.append(numpy_helper.from_array((rng.standard_normal((n, n)) / 32).astype(np.float32), "w%d" % i))
        nodes.append(helper.make_node("MatMul", [prev, "w%d" % i], ["h%d" % i], name="mm%d" % i))
        prev = "h%d" % i
    g = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n, n])],
                          [helper.make_tensor_value_info(prev, TensorProto.FLOAT, [n, n])], inits)
    path = str(tmp_path / "chain.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
    s = ferry.Session(path, threads=1)
    x = np.ones((n, n), np.float32)
    s.run(None, {"x": x})  # warm: kernels and arena ready
    span = {}

    def run():
        span["enter"] = time.perf_counter()
        s.run(None, {"x": x})
        span["exit"] = time.perf_counter()

    worker = threading.Thread(target=run)
    samples = []
    worker.start()
    while worker.is_alive():
        samples.append(time.perf_counter())
    worker.join()
    enter, leave = span["enter"], span["exit"]
    assert leave - enter > 0.02, "the run is too short to tell"
    inside = sorted(t for t in samples if enter <= t <= leave)
    # The largest stretch of the run in which this thread took no sample: small when the GIL is free.
    gaps = np.diff([enter] + inside + [leave])
    assert gaps.max() < 0.5 * (leave - enter), (gaps.max(), leave - enter, len(inside))


def test_run_layers_hands_every_intermediate(linear):
    s = ferry.Session(linear[0], opt_level=0)
    seen = {}
    outs = s.run_layers({"x": np.ones((2, 4), np.float32)}, lambda name, a: seen.__setitem__(name, a.copy()))
    assert list(seen) == ["xw", "pre", "y", "z"]
    np.testing.assert_array_equal(seen["y"], outs[0])

    def fail(name, a):
        raise RuntimeError("stop at " + name)
    with pytest.raises(RuntimeError, match="stop at xw"):
        s.run_layers({"x": np.ones((2, 4), np.float32)}, fail)


def test_target_precision_and_keep_fp32(linear):
    s = ferry.Session(linear[0], target="ascend310p")
    assert "ascend310p" in s.target_label and "EMULATED" in s.target_label
    assert "fp16" in s.precision  # the Ascend default
    kept = ferry.Session(linear[0], precision="fp16", keep_fp32=["mm", "nosuchnode"], opt_level=0)
    assert "mm" in kept.info["kept_fp32"]
    assert kept.info["unmatched_keep_fp32"] == ["nosuchnode"]


def test_ort_session_options_threads(linear):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    s = ferry.Session(linear[0], so, providers=["CPUExecutionProvider"])
    assert s.run(None, {"x": np.ones((1, 4), np.float32)})[0].shape == (1, 3)
    with pytest.warns(UserWarning, match="CUDAExecutionProvider"):
        ferry.Session(linear[0], providers=["CUDAExecutionProvider"])
