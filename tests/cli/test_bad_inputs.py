"""Bad input through the `ferry` binary: every case must exit 1 with `error: ...` on stderr naming
the problem, never crash (a signal) or read outside the model's folder.

usage: test_bad_inputs.py PATH/TO/ferry
"""
import os
import random

import numpy as np
from onnx import TensorProto, helper, numpy_helper

import cli_util as u
from cli_util import expect_error, model, save, vi

tmp = u.init()
F = TensorProto.FLOAT


def path(*parts):
    p = os.path.join(tmp, *parts)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    return p


# A valid two-input model: y = Identity(a), z = Identity(b).
good = save(model([helper.make_node("Identity", ["a"], ["y"], name="id_a"),
                   helper.make_node("Identity", ["b"], ["z"], name="id_b")],
                  [vi("a", F, [2, 3]), vi("b", TensorProto.INT64, [4])],
                  [vi("y", F, [2, 3]), vi("z", TensorProto.INT64, [4])]), path("good.onnx"))
rc, out, err = u.ferry("run", good)
u.check("control: the valid model runs", rc == 0, err)

# --- broken model files ------------------------------------------------------------------------------
data = open(good, "rb").read()
for frac in (0.3, 0.5, 0.9):
    p = path("truncated_%d.onnx" % int(frac * 100))
    open(p, "wb").write(data[: int(len(data) * frac)])
    expect_error("truncated model (%d%%)" % int(frac * 100), ["run", p], p)
p = path("random.onnx")
open(p, "wb").write(bytes(random.Random(0).getrandbits(8) for _ in range(4096)))
expect_error("random bytes as a model", ["run", p], p)
expect_error("random bytes, inspect", ["inspect", p], p)
p = path("empty.onnx")
open(p, "wb").close()
expect_error("empty model file", ["run", p], "empty")
expect_error("model file that does not exist", ["run", path("nope.onnx")], "nope.onnx")
expect_error("a folder as the model", ["run", tmp], "not a regular file")

# --- broken graphs ----------------------------------------------------------------------------------
p = save(model([helper.make_node("Add", ["x", "w"], ["y"], name="add")],
               [vi("x", F, [2])], [vi("y", F, [2])]), path("missing_init.onnx"))
expect_error("missing initializer", ["run", p], "'w'", "not produced")
p = save(model([helper.make_node("Identity", ["x"], ["y"], name="id")],
               [vi("x", F, [2])], [vi("dangling", F, [2])]), path("dangling_output.onnx"))
expect_error("dangling graph output", ["run", p], "'dangling'", "not produced")
p = save(model([helper.make_node("Identity", ["ghost_out"], ["y"], name="id")],
               [vi("x", F, [2])], [vi("y", F, [2])]), path("dangling_edge.onnx"))
expect_error("dangling edge (input from no node)", ["run", p], "'ghost_out'")

# Unknown ops: ONE message listing every unsupported type with counts and opset, subgraphs included.
then_g = helper.make_graph([helper.make_node("FooBar", ["x"], ["t"], name="foo_in_then")], "then", [],
                           [vi("t", F, [2])])
else_g = helper.make_graph([helper.make_node("Identity", ["x"], ["e"], name="id_else")], "else", [],
                           [vi("e", F, [2])])
p = save(model([helper.make_node("FooBar", ["x"], ["f1"], name="foo1"),
                helper.make_node("FooBar", ["f1"], ["f2"], name="foo2"),
                helper.make_node("BazQux", ["f2"], ["f3"], name="baz"),
                helper.make_node("If", ["c"], ["y"], name="if", then_branch=then_g, else_branch=else_g)],
               [vi("x", F, [2]), vi("c", TensorProto.BOOL, [])], [vi("f3", F, [2]), vi("y", F, [2])]),
         path("unknown_ops.onnx"))
err = expect_error("unknown ops listed at once", ["run", p], "FooBar (3 nodes, opset 17)", "BazQux (1 node, opset 17)")
u.check("unknown ops: one error line", err.count("error:") == 1, err)

# --- inputs that do not fit -------------------------------------------------------------------------
np.save(path("in", "a_wrong_shape.npy"), np.zeros((3, 2), np.float32))
expect_error("wrong input shape", ["run", good, "--input", "a=" + path("in", "a_wrong_shape.npy")], "'a'", "[3,2]")
np.save(path("in", "a_rank.npy"), np.zeros((6,), np.float32))
expect_error("wrong input rank", ["run", good, "--input", "a=" + path("in", "a_rank.npy")], "'a'", "rank")
np.save(path("in", "a_f64.npy"), np.zeros((2, 3), np.float64))
expect_error("wrong input dtype", ["run", good, "--input", "a=" + path("in", "a_f64.npy")], "'a'", "float64",
             "float32")
np.save(path("dir_missing", "a.npy"), np.zeros((2, 3), np.float32))
expect_error("missing input in --inputs DIR", ["run", good, "--inputs", path("dir_missing")], "missing input", "b.npy")
np.savez(path("in", "only_a.npz"), a=np.zeros((2, 3), np.float32))
expect_error("missing input in --inputs NPZ", ["run", good, "--inputs", path("in", "only_a.npz")], "missing input",
             "'b'")
np.save(path("in", "a_ok.npy"), np.zeros((2, 3), np.float32))
expect_error("extra input via --input", ["run", good, "--input", "nothere=" + path("in", "a_ok.npy")], "'nothere'",
             "'a', 'b'")
np.savez(path("in", "extra.npz"), a=np.zeros((2, 3), np.float32), b=np.zeros(4, np.int64), c=np.zeros(1))
expect_error("extra input in --inputs NPZ", ["run", good, "--inputs", path("in", "extra.npz")], "'c'")
expect_error("extra input via --shape", ["run", good, "--shape", "q=1,2"], "'q'")
expect_error("--shape contradicting a static dim", ["run", good, "--shape", "a=2,4"], "dimension 1")
expect_error("--inputs path that does not exist", ["run", good, "--inputs", path("no_such_dir")], "no_such_dir")
expect_error("bad --shape syntax", ["run", good, "--shape", "a=2,x"], "'x'")
expect_error("bad --input syntax", ["run", good, "--input", "a"], "NAME=FILE")

# --input and --inputs together: one would silently win for the inputs both give, so it is a usage error
# on every command that takes the input flags.
for cmd in (["run"], ["bench"], ["compare"], ["profile"], ["tune-precision", "--precision", "fp16"], ["migrate"]):
    rc, out, err = u.ferry(*cmd, good, "--input", "a=" + path("in", "a_ok.npy"), "--inputs", path("in", "extra.npz"))
    u.check("%s --input with --inputs: exit 2 naming both" % cmd[0],
            rc == 2 and "--input" in err and "--inputs" in err and "excludes" in err, (rc, err[:500]))
# --batch 0: a plain bound, not CLI11's range up to DBL_MAX (300 digits).
for cmd in ("bench", "profile", "migrate"):
    rc, out, err = u.ferry(cmd, good, "--batch", "0")
    u.check("%s --batch 0: exit 2, '--batch: must be 1 or more'" % cmd,
            rc == 2 and "--batch: must be 1 or more" in err and len(err) < 300, (rc, err[:500]))

# Corrupt .npy inputs.
open(path("in", "garbage.npy"), "wb").write(b"this is not numpy")
expect_error("corrupt .npy (garbage)", ["run", good, "--input", "a=" + path("in", "garbage.npy")], "garbage.npy",
             "not a .npy")
raw = open(path("in", "a_ok.npy"), "rb").read()
open(path("in", "cut.npy"), "wb").write(raw[:-7])
expect_error("corrupt .npy (truncated data)", ["run", good, "--input", "a=" + path("in", "cut.npy")], "cut.npy",
             "truncated")
open(path("in", "lying.npy"), "wb").write(raw.replace(b"(2, 3)", b"(9, 3)"))
expect_error("corrupt .npy (lying shape)", ["run", good, "--input", "a=" + path("in", "lying.npy")], "lying.npy")


def npy_bytes(header_dict, data):
    """A version 1.0 .npy image with a hand-written header dict."""
    h = header_dict.encode()
    h += b" " * ((64 - (10 + len(h) + 1) % 64) % 64) + b"\n"
    return b"\x93NUMPY\x01\x00" + len(h).to_bytes(2, "little") + h + data


open(path("in", "huge.npy"), "wb").write(
    npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999, 99999999999, 9), }", b"\0" * 24))
expect_error("corrupt .npy (absurd shape)", ["run", good, "--input", "a=" + path("in", "huge.npy")], "huge.npy",
             "more than")
open(path("in", "header_len.npy"), "wb").write(b"\x93NUMPY\x01\x00\xff\xff{'descr'")
expect_error("corrupt .npy (header length past the end)",
             ["run", good, "--input", "a=" + path("in", "header_len.npy")], "header_len.npy", "truncated")
open(path("in", "cplx.npy"), "wb").write(
    npy_bytes("{'descr': '<c8', 'fortran_order': False, 'shape': (2, 3), }", b"\0" * 48))
expect_error("unsupported .npy dtype (complex)", ["run", good, "--input", "a=" + path("in", "cplx.npy")], "cplx.npy",
             "complex")
open(path("in", "bad.npz"), "wb").write(b"PK\x03\x04" + b"\0" * 40)
expect_error("corrupt .npz", ["run", good, "--inputs", path("in", "bad.npz")], "bad.npz")

# --- dynamic and absurd dimensions ------------------------------------------------------------------
dyn = save(model([helper.make_node("Identity", ["x"], ["y"], name="id")],
                 [vi("x", F, ["batch", 4])], [vi("y", F, ["batch", 4])]), path("dynamic.onnx"))
expect_error("dynamic dim without --shape", ["run", dyn], "--shape x=<batch>,4")
expect_error("absurd dim via --shape (2^40)", ["run", dyn, "--shape", "x=%d,4" % (1 << 40)], "'x'")
expect_error("overflowing dims via --shape", ["run", dyn, "--shape", "x=99999999999999999999,4"], "not a dimension")
p = save(model([helper.make_node("Identity", ["x"], ["y"], name="id")],
               [vi("x", F, [1 << 40])], [vi("y", F, [1 << 40])]), path("absurd_input.onnx"))
expect_error("absurd declared input dim (2^40)", ["run", p], "'x'", "memory budget")
w = TensorProto(name="w", data_type=F, dims=[1 << 40], raw_data=b"\0" * 16)  # helper.make_tensor checks sizes
p = save(model([helper.make_node("Identity", ["w"], ["y"], name="id")], [], [vi("y", F, [1 << 40])], [w]),
         path("absurd_init.onnx"))
expect_error("initializer claiming 2^40 elements", ["run", p], "'w'")
w = TensorProto(name="w", data_type=F, dims=[1 << 21, 1 << 21, 1 << 21], raw_data=b"\0" * 16)
p = save(model([helper.make_node("Identity", ["w"], ["y"], name="id")], [], [vi("y", F, [2])], [w]),
         path("overflow_init.onnx"))
expect_error("initializer whose element count overflows", ["run", p], "'w'")


# --- external data pointing outside the model's folder ----------------------------------------------
def external_model(folder, location, offset=None, length=None):
    t = TensorProto(name="w", data_type=F, dims=[4])
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", location), ("offset", offset), ("length", length)):
        if v is not None:
            e = t.external_data.add()
            e.key, e.value = k, str(v)
    m = model([helper.make_node("Identity", ["w"], ["y"], name="id")], [], [vi("y", F, [4])], [t])
    return save(m, path(folder, "model.onnx"))


secret = path("outside", "secret.bin")
open(secret, "wb").write(np.arange(4, dtype=np.float32).tobytes())
open(path("ext_ok", "weights.bin"), "wb").write(np.arange(4, dtype=np.float32).tobytes())
rc, out, err = u.ferry("run", external_model("ext_ok", "weights.bin"))
u.check("control: external data inside the folder loads", rc == 0 and "[0, 1, 2, 3]" in out, err + out)
expect_error("external data: absolute path", ["run", external_model("ext_abs", secret)], "absolute")
expect_error("external data: '..'", ["run", external_model("ext_dotdot", "../outside/secret.bin")], "..")
expect_error("external data: '..' in the middle",
             ["run", external_model("ext_dotdot2", "sub/../../outside/secret.bin")], "..")
link_model = external_model("ext_link", "link.bin")
os.symlink(secret, path("ext_link", "link.bin"))
expect_error("external data: symlink to outside", ["run", link_model], "symlink")
os.makedirs(path("ext_dirlink", "x"), exist_ok=True)
os.symlink(os.path.dirname(secret), path("ext_dirlink", "out"))
expect_error("external data: through a symlinked folder", ["run", external_model("ext_dirlink", "out/secret.bin")],
             "symlink")
open(path("ext_offset", "weights.bin"), "wb").write(b"\0" * 16)
expect_error("external data: offset past the end", ["run", external_model("ext_offset", "weights.bin", offset=1000)],
             "offset")
expect_error("external data: length past the end",
             ["run", external_model("ext_offset", "weights.bin", offset=8, length=16)], "weights.bin")
expect_error("external data: missing file", ["run", external_model("ext_missing", "nothing.bin")], "nothing.bin")

# --- mutated models: random byte changes end in a clean result or `error:`, never a signal -------------
w = numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(2, 3), "w")
zero = numpy_helper.from_array(np.array(0, np.float32), "zero")
then_g = helper.make_graph([helper.make_node("Identity", ["y"], ["t"])], "then", [], [vi("t", F, [2, 3])])
else_g = helper.make_graph([helper.make_node("Neg", ["y"], ["e"])], "else", [], [vi("e", F, [2, 3])])
fz = model([helper.make_node("Add", ["x", "w"], ["y"], name="add"),
            helper.make_node("ReduceSum", ["y"], ["r"], name="sum", keepdims=0),
            helper.make_node("Greater", ["r", "zero"], ["c"], name="gt"),
            helper.make_node("If", ["c"], ["o"], name="if", then_branch=then_g, else_branch=else_g)],
           [vi("x", F, [2, 3])], [vi("o", F, [2, 3])], [w, zero]).SerializeToString()
rnd = random.Random(1)
bad = []
for i in range(150):
    b = bytearray(fz)
    for _ in range(rnd.randint(1, 4)):
        b[rnd.randrange(len(b))] = rnd.randrange(256)
    p = path("mutated", "m%d.onnx" % i)
    open(p, "wb").write(bytes(b))
    rc, out, err = u.ferry("run", p)
    u.record_case(kind="mutated", name="mutated model %d" % i, args=["run", p], rc=rc, stderr=err)
    if rc not in (0, 1) or (rc == 1 and not err.startswith("error:")):
        bad.append("%s: rc=%d %s" % (p, rc, err.strip()[-200:]))
u.check("150 mutated models: exit 0 or 1 with error:, no signal", not bad, "\n".join(bad[:5]))

# --- usage errors exit 2 ------------------------------------------------------------------------------
for args in (["run"], ["run", good, "--no-such-flag"], ["frobnicate"], [], ["run", good, "--seed", "abc"]):
    rc, out, err = u.ferry(*args)
    u.check("usage error %r exits 2" % (args,), rc == 2 and err.startswith("error:"), "rc=%d %s" % (rc, err))

u.finish()
