"""`ferry inspect --plan` and the session flags of `ferry run` (--backend, --opt-level, --threads,
--no-arena): the plan lists every node with its kernel, provenance and outputs, a memory plan in which no
two buffers live at the same time share bytes, and the weight bytes; both backends and the arena give
the same outputs.

usage: test_plan.py PATH/TO/ferry
"""
import json
import os

import numpy as np
from onnx import TensorProto, helper, numpy_helper

import cli_util as u
from cli_util import check, model, save, vi

tmp = u.init()
F = TensorProto.FLOAT
rng = np.random.default_rng(0)

# x[1,3,8,8] -> Conv -> Relu -> MaxPool -> Flatten -> Gemm -> y[1,5]
W = numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "W")
B = numpy_helper.from_array(rng.standard_normal(4).astype(np.float32), "B")
G = numpy_helper.from_array(rng.standard_normal((5, 64)).astype(np.float32), "G")
C = numpy_helper.from_array(rng.standard_normal(5).astype(np.float32), "C")
weight_bytes = sum(numpy_helper.to_array(t).nbytes for t in (W, B, G, C))


def cnn(batch):
    return model([helper.make_node("Conv", ["x", "W", "B"], ["c"], name="conv", pads=[1, 1, 1, 1]),
                  helper.make_node("Relu", ["c"], ["r"], name="relu"),
                  helper.make_node("MaxPool", ["r"], ["p"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
                  helper.make_node("Flatten", ["p"], ["f"], name="flat"),
                  helper.make_node("Gemm", ["f", "G", "C"], ["y"], name="fc", transB=1)],
                 [vi("x", F, [batch, 3, 8, 8])], [vi("y", F, [batch, 5])], [W, B, G, C])


static = save(cnn(1), os.path.join(tmp, "cnn.onnx"))
dynamic = save(cnn("N"), os.path.join(tmp, "cnn_dyn.onnx"))


def plan_json(*args):
    rc, out, err = u.ferry("inspect", *args, "--plan", "--json", "-")
    try:
        return rc, json.loads(out), err
    except Exception:  # noqa: BLE001
        return rc, {}, err + out


def no_live_overlap(buffers):
    for i, a in enumerate(buffers):
        for b in buffers[i + 1:]:
            live = a["first_use"] <= b["last_use"] and b["first_use"] <= a["last_use"]
            inplace = a.get("inplace_of") == b["value"] or b.get("inplace_of") == a["value"]
            apart = a["offset"] + a["bytes"] <= b["offset"] or b["offset"] + b["bytes"] <= a["offset"]
            if live and not inplace and not apart:
                return False
    return True


# --- inspect --plan, reference backend, no optimization ------------------------------------------------
rc, j, err = plan_json(static, "--backend", "reference", "--opt-level", "0")
check("plan: exit 0", rc == 0, err)
nodes = j.get("nodes", [])
check("plan: one entry per node, in order", [n["name"] for n in nodes] == ["conv", "relu", "pool", "flat", "fc"],
      nodes)
check("plan: reference kernels", all(n["kernel"] == "reference" for n in nodes), nodes)
check("plan: provenance per node", all(n["covers"] == [n["name"]] for n in nodes), nodes)
check("plan: output shapes", nodes and nodes[0]["outputs"] == ["c: float32[1,4,8,8]"] and
      nodes[4]["outputs"] == ["y: float32[1,5]"], nodes)
mem = j.get("memory", {})
bufs = mem.get("buffers", [])
check("plan: static intermediates planned (not the Flatten view, not the graph output)",
      sorted(b["value"] for b in bufs) == ["c", "p", "r"], bufs)
check("plan: sizes", {b["value"]: b["bytes"] for b in bufs} == {"c": 1024, "r": 1024, "p": 256}, bufs)
check("plan: offsets aligned", all(b["offset"] % 64 == 0 for b in bufs), bufs)
check("plan: live buffers never share bytes", no_live_overlap(bufs), bufs)
check("plan: arena within [peak live, naive sum]",
      mem.get("peak_live_bytes", 0) <= mem.get("arena_bytes", -1) <= mem.get("naive_bytes", -2) == 1024 + 1024 + 256,
      mem)
check("plan: p is kept until the Gemm reads its view", any(b["value"] == "p" and b["last_use"] == 4 for b in bufs),
      bufs)
check("plan: refined by a run", mem.get("refined_by_run") is True, mem)
check("plan: weight bytes", j.get("weight_bytes") == weight_bytes and j.get("weights") == 4, j.get("weight_bytes"))
check("plan: backend and level reported", j.get("backend") == "reference" and j.get("opt_level") == 0, j)

rc, out, err = u.ferry("inspect", static, "--plan", "--backend", "reference")
for needle in ("plan: ", "backend reference, opt level 2", "kernel", "conv", "reference", "memory plan",
               "arena: ", "peak live", "weights: "):
    check("plan text: shows %r" % needle, needle in out, out)

# --- cpu backend, default level -------------------------------------------------------------------------
rc, j, err = plan_json(static)
check("plan: cpu backend by default", rc == 0 and j.get("backend") == "cpu" and j.get("opt_level") == 2, err)
check("plan: cpu plan is consistent", no_live_overlap(j.get("memory", {}).get("buffers", [])), j.get("memory"))
check("plan: every node has a kernel name", all(n.get("kernel") for n in j.get("nodes", [])), j.get("nodes"))

# --- dynamic model: nothing planned without --shape, planned with it ------------------------------------
rc, j, err = plan_json(dynamic, "--backend", "reference")
check("plan (dynamic): runs", rc == 0, err)
check("plan (dynamic): nothing planned", j.get("memory", {}).get("buffers") == [] and
      j.get("memory", {}).get("refined_by_run") is False, j.get("memory"))
rc, j, err = plan_json(dynamic, "--backend", "reference", "--opt-level", "0", "--shape", "x=2,3,8,8")
check("plan (dynamic + --shape): planned", rc == 0 and
      {b["value"]: b["bytes"] for b in j.get("memory", {}).get("buffers", [])} == {"c": 2048, "r": 2048, "p": 512},
      err + str(j.get("memory")))
u.expect_error("plan: --shape naming no input", ["inspect", dynamic, "--plan", "--shape", "q=1,3,8,8"], "'q'")

# --- run: flags, both backends, arena on and off give the same outputs ----------------------------------
x = rng.standard_normal((1, 3, 8, 8)).astype(np.float32)
np.save(os.path.join(tmp, "x.npy"), x)
outs = {}
for label, args in (("reference", ["--backend", "reference"]),
                    ("reference-noarena", ["--backend", "reference", "--no-arena"]),
                    ("reference-O0", ["--backend", "reference", "--opt-level", "0"]),
                    ("cpu", []),
                    ("cpu-1thread", ["--threads", "1"])):
    od = os.path.join(tmp, "out_" + label)
    rc, out, err = u.ferry("run", static, "--input", "x=" + os.path.join(tmp, "x.npy"), "--output-dir", od, *args)
    check("run %s: exit 0" % label, rc == 0, err)
    if rc == 0:
        outs[label] = np.load(os.path.join(od, "y.npy"))
if len(outs) == 5:
    check("run: arena on/off identical", np.array_equal(outs["reference"], outs["reference-noarena"]))
    check("run: opt levels agree on reference", np.allclose(outs["reference"], outs["reference-O0"], 1e-5, 1e-6))
    check("run: cpu agrees with reference", np.allclose(outs["reference"], outs["cpu"], 1e-4, 1e-5),
          (outs["reference"], outs["cpu"]))
    check("run: --threads 1 agrees", np.allclose(outs["cpu"], outs["cpu-1thread"], 1e-5, 1e-6))
rc, out, err = u.ferry("run", static, "--backend", "reference")
check("run: reports backend and level", rc == 0 and "(reference backend, opt level 2" in out, out + err)
rc, out, err = u.ferry("run", "--help")
check("run --help lists the session flags",
      rc == 0 and all(f in out for f in ("--backend", "--opt-level", "--threads", "--no-arena")), out)
rc, out, err = u.ferry("inspect", "--help")
check("inspect --help lists --plan and the session flags",
      rc == 0 and all(f in out for f in ("--plan", "--backend", "--opt-level", "--threads")), out)
for bad, needle in ((["--opt-level", "5"], "--opt-level"), (["--backend", "gpu"], "--backend"),
                    (["--threads", "0"], "--threads")):
    rc, out, err = u.ferry("run", static, *bad)
    check("run: bad %s is refused" % needle, rc != 0 and err.startswith("error:") and needle in err, err)
u.finish()
