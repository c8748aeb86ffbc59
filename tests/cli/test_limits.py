"""Resource limits through the `ferry` binary: the memory budget (--max-memory) refuses a model before it
allocates, with the figure; a 10,000-deep nested If chain and a million-node graph end in a result or a
clean error, never a crash (stack overflow); an .npz whose member inflates past the budget is refused
without inflating it.

usage: test_limits.py PATH/TO/ferry
"""
import os
import resource
import subprocess
import time
import zlib

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import cli_util as u
from cli_util import expect_error, model, save, vi

tmp = u.init()
F = TensorProto.FLOAT


def path(name):
    return os.path.join(tmp, name)


def peak_rss_mib(args):
    """Runs `ferry ARGS` and returns (rc, stderr, its peak resident memory in MiB)."""
    p = subprocess.Popen([u.FERRY, *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    err = p.stderr.read()  # to its end: the process has exited or closed stderr
    _, status, rusage = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)  # reaped here, so Popen must not wait again
    return p.returncode, err, rusage.ru_maxrss / 1024


# --- a 2^40-element intermediate: refused at load, before anything is allocated, with the figure --------
huge = save(model([helper.make_node("Expand", ["x", "shape"], ["big"], name="expand"),
                   helper.make_node("ReduceSum", ["big"], ["y"], name="sum", keepdims=0)],
                  [vi("x", F, [1])], [vi("y", F, [])],
                  [numpy_helper.from_array(np.array([1 << 40], np.int64), "shape")]), path("huge.onnx"))
expect_error("2^40-element intermediate refused with the figure", ["run", huge],
             "value 'big' (output of Expand 'expand')", "float32[1099511627776]", "4.00 TiB (4398046511104 bytes)",
             "memory budget", "the machine's memory")
rc, err, rss = peak_rss_mib(["run", huge])
u.check("2^40 intermediate: refused before allocating (peak RSS %.0f MiB)" % rss, rc == 1 and rss < 300, err)
expect_error("2^40 intermediate, compare", ["compare", huge], "4.00 TiB")
expect_error("2^40 intermediate, compile", ["compile", huge, "-o", path("huge.ferry")], "4.00 TiB")

# --- --max-memory ------------------------------------------------------------------------------------------
w = numpy_helper.from_array(np.ones((256, 256), np.float32), "w")
mid = save(model([helper.make_node("MatMul", ["x", "w"], ["h"], name="mm"),
                  helper.make_node("Relu", ["h"], ["y"], name="relu")],
                 [vi("x", F, [1024, 256])], [vi("y", F, [1024, 256])], [w]), path("mid.onnx"))  # 1 MiB tensors
rc, out, err = u.ferry("run", mid, "--max-memory", "64M")
u.check("--max-memory 64M: a model needing a few MiB runs", rc == 0, err)
expect_error("--max-memory 512K: a 1 MiB tensor refused with both figures", ["run", mid, "--max-memory", "512K"],
             "1.00 MiB (1048576 bytes)", "more than the memory budget of 512 KiB (--max-memory)")
for cmd in (["bench", "--iterations", "2"], ["compare"], ["profile"]):
    expect_error("--max-memory on %s" % cmd[0], [cmd[0], mid, *cmd[1:], "--max-memory", "512K"], "memory budget")
rc, out, err = u.ferry("run", mid, "--max-memory", "8X")
u.check("--max-memory 8X: usage error naming the value", rc == 2 and "'8X' is not a memory size" in err, err)
dyn = save(model([helper.make_node("Relu", ["x"], ["y"], name="relu")], [vi("x", F, ["n", 256])],
                 [vi("y", F, ["n", 256])]), path("dyn.onnx"))
expect_error("dynamic shape past the budget at run time", ["run", dyn, "--shape", "x=4096,256", "--max-memory", "1M"],
             "memory budget")

# --- .npz decompression is bounded ---------------------------------------------------------------------------
# One deflated member: a .npy header claiming float32[2^28] (1 GiB) followed by 1 GiB of zeros, which
# deflates to about 1 MiB. With a 256 MiB budget it must be refused without being inflated.
def deflate_bomb(dst, elements):
    header = ("{'descr': '<f4', 'fortran_order': False, 'shape': (%d,), }" % elements).encode()
    header += b" " * ((64 - (10 + len(header) + 1) % 64) % 64) + b"\n"
    npy_head = b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header
    size = len(npy_head) + 4 * elements
    comp = zlib.compressobj(9, zlib.DEFLATED, -15)
    crc = zlib.crc32(npy_head)
    body = [comp.compress(npy_head)]
    chunk = bytes(64 << 20)
    for _ in range(4 * elements // len(chunk)):
        body.append(comp.compress(chunk))
        crc = zlib.crc32(chunk, crc)
    body.append(comp.flush())
    data = b"".join(body)
    name = b"x.npy"
    local = (b"PK\x03\x04" + (20).to_bytes(2, "little") + b"\0\0" + (8).to_bytes(2, "little") + b"\0\0\0\0" +
             crc.to_bytes(4, "little") + len(data).to_bytes(4, "little") + size.to_bytes(4, "little") +
             len(name).to_bytes(2, "little") + b"\0\0" + name)
    central = (b"PK\x01\x02" + (20).to_bytes(2, "little") * 2 + b"\0\0" + (8).to_bytes(2, "little") + b"\0\0\0\0" +
               crc.to_bytes(4, "little") + len(data).to_bytes(4, "little") + size.to_bytes(4, "little") +
               len(name).to_bytes(2, "little") + b"\0" * 16 + name)  # extra, comment, disk, attrs, offset 0
    end = (b"PK\x05\x06" + b"\0" * 4 + (1).to_bytes(2, "little") * 2 + len(central).to_bytes(4, "little") +
           (len(local) + len(data)).to_bytes(4, "little") + b"\0\0")
    with open(dst, "wb") as f:
        f.write(local + data + central + end)
    return dst


ident = save(model([helper.make_node("Identity", ["x"], ["y"], name="id")], [vi("x", F, ["n"])], [vi("y", F, ["n"])]),
             path("ident.onnx"))
bomb = deflate_bomb(path("bomb.npz"), 1 << 28)
u.check("the bomb is small on disk (%d KiB)" % (os.path.getsize(bomb) // 1024), os.path.getsize(bomb) < (4 << 20))
rc, err, rss = peak_rss_mib(["run", ident, "--inputs", bomb, "--max-memory", "256M"])
u.check("npz bomb with --max-memory 256M: refused without inflating (peak RSS %.0f MiB)" % rss,
        rc == 1 and "bomb.npz" in err and rss < 300, err)

# --- deep nesting: a 10,000-deep If chain ----------------------------------------------------------------
def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def ld(num, payload):
    """A length-delimited protobuf field (the tag itself a varint: field numbers past 15 take two bytes)."""
    return varint((num << 3) | 2) + varint(len(payload)) + payload


def vf(num, v):
    """A varint protobuf field."""
    return varint(num << 3) + varint(v)


def nested_if_bytes(depth):
    """ModelProto bytes of If inside If ... `depth` levels, written as protobuf wire format directly
    (Python's protobuf refuses to serialize messages nested this deep)."""
    def value_info(name):  # ValueInfoProto{name, type{tensor_type{elem_type FLOAT, shape{dim{1}}}}}
        tensor = vf(1, TensorProto.FLOAT) + ld(2, ld(1, vf(1, 1)))
        return ld(1, name.encode()) + ld(2, ld(1, tensor))

    leaf = ld(1, ld(1, b"x") + ld(2, b"o0") + ld(4, b"Identity")) + ld(2, b"leaf") + ld(12, value_info("o0"))
    graph = leaf
    for level in range(1, depth + 1):  # the then branch nests; the else branch is the leaf (not 2^depth)
        attr_then = ld(1, b"then_branch") + ld(6, graph) + vf(20, 5)  # AttributeProto.type = GRAPH
        attr_else = ld(1, b"else_branch") + ld(6, leaf) + vf(20, 5)
        node = ld(1, b"c") + ld(2, ("o%d" % level).encode()) + ld(4, b"If") + ld(5, attr_then) + ld(5, attr_else)
        graph = ld(1, node) + ld(2, ("g%d" % level).encode()) + ld(12, value_info("o%d" % level))
    main = graph + ld(11, value_info("x")) + ld(11, ld(1, b"c") + ld(2, ld(1, vf(1, TensorProto.BOOL) + ld(2, b""))))
    return vf(1, 8) + ld(7, main) + ld(8, vf(2, 17))


np.save(path("x.npy"), np.ones(1, np.float32))
np.save(path("c.npy"), np.array(True))
feeds = ("--input", "x=" + path("x.npy"), "--input", "c=" + path("c.npy"))
for depth in (1, 20):  # the builder makes models ONNX reads, and ferry runs them
    p = path("if_%d.onnx" % depth)
    with open(p, "wb") as f:
        f.write(nested_if_bytes(depth))
    onnx.checker.check_model(onnx.load(p))
    rc, out, err = u.ferry("run", p, *feeds)
    u.check("%d-deep nested If runs" % depth, rc == 0 and "o%d" % depth in out, err[-500:])
p = path("if_10000.onnx")
with open(p, "wb") as f:
    f.write(nested_if_bytes(10000))
rc, out, err = u.ferry("run", p, *feeds, timeout=300)
u.check("10,000-deep nested If: an error that says how deep they nest and how deep is allowed (rc=%d)" % rc,
        rc == 1 and err.startswith("error:") and "nest 10000 levels deep, more than the 31" in err, err[-500:])

# --- a million-node graph ------------------------------------------------------------------------------------
def chain_bytes(n):
    """A chain of n Neg nodes, x -> t1 -> ... -> y, as protobuf wire format (onnx.helper takes minutes)."""
    nodes = [ld(1, ld(1, (b"t%d" % i) if i else b"x") + ld(2, (b"t%d" % (i + 1)) if i + 1 < n else b"y") +
                 ld(4, b"Neg")) for i in range(n)]
    vi_ = lambda name: ld(1, name) + ld(2, ld(1, vf(1, TensorProto.FLOAT) + ld(2, ld(1, vf(1, 4)))))
    graph = b"".join(nodes) + ld(2, b"chain") + ld(11, vi_(b"x")) + ld(12, vi_(b"y"))
    return vf(1, 8) + ld(7, graph) + ld(8, vf(2, 17))


p = path("million.onnx")
with open(p, "wb") as f:
    f.write(chain_bytes(1_000_000))
for level in ("0", "2"):
    t0 = time.time()
    rc, out, err = u.ferry("run", p, "--opt-level", level, timeout=600)
    u.check("a million-node chain at opt level %s: runs (%.0f s)" % (level, time.time() - t0),
            rc == 0 and "y" in out, err[-500:])

u.finish()
