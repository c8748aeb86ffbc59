"""Precision flags end to end: `--precision fp16|bf16|mixed-*` on run, compile (stored in the .ferry),
bench and inspect; fp16 results equal NumPy's float16 round-trip emulation of the same graph and are
labelled emulated; --keep-fp32 (file, by name) and --keep-io-types change exactly what they say; bad
values are usage errors (exit 2), bad files errors naming the file and line or key (exit 1).

usage: test_precision.py PATH/TO/ferry
"""
import json
import os
import re

import numpy as np
from onnx import TensorProto, helper, numpy_helper

import cli_util as u
from cli_util import check, expect_error, model, save, vi

tmp = u.init()
F = TensorProto.FLOAT
rng = np.random.default_rng(7)
W = (rng.standard_normal((8, 8)) * 0.7).astype(np.float32)
B = rng.standard_normal(8).astype(np.float32)
X = (rng.standard_normal((2, 8)) * 3).astype(np.float32)
m = model([helper.make_node("MatMul", ["x", "w"], ["h"], name="mm"),
           helper.make_node("Add", ["h", "b"], ["y"], name="bias")],
          [vi("x", F, [2, 8])], [vi("y", F, [2, 8])],
          [numpy_helper.from_array(W, "w"), numpy_helper.from_array(B, "b")])
src = save(m, os.path.join(tmp, "model.onnx"))
xin = os.path.join(tmp, "x.npy")
np.save(xin, X)


def h(a):
    return a.astype(np.float16).astype(np.float32)


def run(*flags, model_path=src, tag="out"):
    out = os.path.join(tmp, tag)
    rc, so, se = u.ferry("run", model_path, "--input", "x=" + xin, "--output-dir", out, *flags)
    y = np.load(os.path.join(out, "y.npy")) if rc == 0 else None
    return rc, so, se, y


# --- fp16 = NumPy's float16 emulation; labelled emulated ----------------------------------------------
rc, out, err, y32 = run(tag="fp32")
check("fp32 run: exit 0", rc == 0, err)
rc, out, err, y16 = run("--precision", "fp16", tag="fp16")
check("fp16 run: exit 0", rc == 0, err)
check("fp16 run: says emulated", "emulated" in out, out)
# FusedMatMul (MatMul + bias) in fp16: inputs, weights and bias rounded, fp32 arithmetic, output rounded.
want = h(h(X).astype(np.float64) @ h(W).astype(np.float64) + h(B)).astype(np.float32)
if y16 is not None:
    err16 = float(np.max(np.abs(y16 - want)))
    check("fp16 output = float16 round trip of the emulated graph (within one fp16 ulp)",
          err16 <= float(np.max(np.abs(want))) * 2 ** -10, err16)
    check("fp16 output values are fp16 values", np.array_equal(h(y16), y16))
    check("fp16 output differs from fp32", not np.array_equal(y16, y32))
rc, out, err, ybf = run("--precision", "bf16", tag="bf16")
check("bf16 run: exit 0", rc == 0, err)
if ybf is not None:
    bits = ybf.view(np.uint32) & 0xFFFF
    check("bf16 output values are bf16 values", not bits.any())
    check("bf16 close to fp32", np.max(np.abs(ybf - y32)) <= 0.05 * np.max(np.abs(y32)), np.max(np.abs(ybf - y32)))
# The label says what this CPU does, as `ferry doctor` reports the choice: native bf16 with AMX or a
# full-rate avx512_bf16, EMULATED otherwise and with --cpu-bf16 off (the same numbers computed in fp32
# on the rounded values). --cpu-bf16 on forces native wherever the ISA has bf16.
_, doc, _ = u.ferry("doctor")
# avx512_bf16 as oneDNN dispatches it (an ONEDNN_MAX_CPU_ISA=AVX2 cap takes it away).
has_bf16 = re.search(r"avx512_bf16\s+yes", doc) is not None and "capped" not in doc
native_here = re.search(r"bf16 Conv/MatMul\s+native", doc) is not None
check("bf16 run: labelled native or EMULATED as doctor's choice says",
      ("native bf16 on the cpu backend" in out) == native_here and ("EMULATED" in out) != native_here, (out, doc))
rc, out0, err, ybf0 = run("--precision", "bf16", "--cpu-bf16", "off", tag="bf16_emulated")
# The label gives the reason: the override where the CPU has bf16, the missing ISA where it has not.
why0 = "--cpu-bf16 off" if has_bf16 else "avx512_bf16"
check("--cpu-bf16 off: bf16 run says EMULATED", rc == 0 and "EMULATED" in out0 and why0 in out0, (out0, err))
ybf1 = None
if has_bf16:
    rc, out1, err, ybf1 = run("--precision", "bf16", "--cpu-bf16", "on", tag="bf16_native")
    check("--cpu-bf16 on: bf16 run says native", rc == 0 and "native bf16 on the cpu backend: --cpu-bf16 on" in out1,
          (out1, err))
rc, outr, err, _ = run("--precision", "bf16", "--backend", "reference", tag="bf16_reference")
check("bf16 on the reference backend says EMULATED", rc == 0 and "EMULATED on the reference backend" in outr, (outr, err))
if ybf1 is not None and ybf0 is not None:
    step = np.abs(ybf0) * 2 ** -7 + 1e-6
    check("native and emulated bf16 agree within one bf16 step", np.all(np.abs(ybf1 - ybf0) <= step),
          float(np.max(np.abs(ybf1 - ybf0))))

# --- keep lists and keep-io-types ---------------------------------------------------------------------
keep = os.path.join(tmp, "keep.txt")
open(keep, "w").write("# keep the matmul (fused with its bias add into one node; its ONNX name still works)\nmm\n")
rc, out, err, yk = run("--precision", "fp16", "--keep-fp32", keep, tag="keep")
check("keep-fp32 by ONNX name of a fused node: exit 0", rc == 0, err)
if yk is not None:
    check("keep-fp32: the kept node computes the fp32 result", np.allclose(yk, y32, rtol=1e-5, atol=1e-5),
          np.max(np.abs(yk - y32)))
rc, out, err, yio = run("--precision", "fp16", "--keep-io-types", tag="io")
check("keep-io-types: exit 0", rc == 0, err)
if yio is not None:
    check("keep-io-types: the output is not rounded to fp16", not np.array_equal(h(yio), yio))

# --- compile stores the precision; run of the .ferry computes the same; another --precision is refused ---
fer = os.path.join(tmp, "m16.ferry")
rc, out, err = u.ferry("compile", src, "-o", fer, "--precision", "fp16")
check("compile --precision fp16: exit 0", rc == 0, err)
check("compile: reports the precision", "precision: fp16 (emulated" in out, out)
rc, out, err, yf = run(model_path=fer, tag="ferry16")
check("run .ferry fp16: exit 0", rc == 0, err)
check("run .ferry fp16: says the file's precision", "precision fp16" in out, out)
if yf is not None and y16 is not None:
    check("run .ferry fp16 = run .onnx --precision fp16 (bitwise)", yf.tobytes() == y16.tobytes())
expect_error("run .ferry with another --precision", ["run", fer, "--input", "x=" + xin, "--precision", "bf16"],
             "compiled with precision fp16")

# --- bench and inspect take the flags ----------------------------------------------------------------
js = os.path.join(tmp, "bench.json")
rc, out, err = u.ferry("bench", src, "--precision", "fp16", "--iterations", "2", "--warmup", "0", "--json", js)
check("bench --precision fp16: exit 0", rc == 0, err)
check("bench: header says emulated", "precision fp16 (emulated" in out, out)
if rc == 0:
    check("bench json: precision", "emulated" in json.load(open(js))["precision"])
rc, out, err = u.ferry("inspect", src, "--plan", "--precision", "mixed-fp16")
check("inspect --plan --precision mixed-fp16: exit 0 and RoundFloat nodes", rc == 0 and "RoundFloat" in out, err)

# --- mixlist --------------------------------------------------------------------------------------------
mix = os.path.join(tmp, "mix.json")
json.dump({"black-list": {"to-add": ["FusedMatMul", "MatMul"]}}, open(mix, "w"))
rc, out, err, ym = run("--precision", "mixed-fp16", "--mixlist", mix, tag="mix")
check("mixlist: MatMul denied -> fp32 result", rc == 0 and np.allclose(ym, y32, rtol=1e-5, atol=1e-5), err)

# --- errors ---------------------------------------------------------------------------------------------
for label, args in (("--precision fp8", ["--precision", "fp8"]), ("--precision empty", ["--precision", ""])):
    rc, out, err = u.ferry("run", src, "--input", "x=" + xin, *args)
    check("run bad %s: exit 2" % label, rc == 2 and "precision" in err, (rc, err))
rc, out, err = u.ferry("compile", src, "-o", fer, "--precision", "fp64")
check("compile bad --precision: exit 2", rc == 2, (rc, err))
bad_keep = os.path.join(tmp, "bad_keep.txt")
open(bad_keep, "w").write("mm\nOpType::\n")
expect_error("bad keep file names file and line", ["run", src, "--input", "x=" + xin, "--precision", "fp16",
                                                   "--keep-fp32", bad_keep], "bad_keep.txt:2")
expect_error("missing keep file", ["run", src, "--input", "x=" + xin, "--precision", "fp16", "--keep-fp32",
                                   os.path.join(tmp, "nope.txt")], "nope.txt")
bad_mix = os.path.join(tmp, "bad_mix.json")
open(bad_mix, "w").write('{"allow": {"to-add": ["Exp"]},\n "purple-list": {}}')
expect_error("bad mixlist names the key", ["run", src, "--input", "x=" + xin, "--precision", "mixed-fp16",
                                           "--mixlist", bad_mix], "purple-list")
open(bad_mix, "w").write('{"allow": [\n')
expect_error("mixlist that is not JSON names file and line", ["run", src, "--input", "x=" + xin, "--precision",
                                                              "mixed-fp16", "--mixlist", bad_mix], "bad_mix.json:")
expect_error("mixlist without a mixed mode", ["run", src, "--input", "x=" + xin, "--precision", "fp16",
                                              "--mixlist", mix], "mixed")
u.finish()
