"""`ferry doctor` on this machine: every area is reported, the ISA features match /proc/cpuinfo (AVX-512 and
bf16 where the CPU has them, AVX2 alone on others), oneDNN's dispatch ISA, the bf16 choice with its reason,
the measured fp32 peak and the venv's onnxruntime version are named, JSON (file and '-') has the same findings, and a bad flag is a usage error.

usage: test_doctor.py PATH/TO/ferry
"""
import json
import os
import subprocess
import sys

import cli_util as u
from cli_util import check

tmp = u.init()
js = os.path.join(tmp, "doctor.json")
rc, out, err = u.ferry("doctor", "--json", js)
check("doctor: exit 0 on this machine (no problems)", rc == 0, (rc, out, err))
for area in ("cpu:", "isa:", "kernels:", "threads:", "memory:", "gpu:", "python:"):
    check("doctor text: section %s" % area, area in out, out)
rep = json.load(open(js)) if os.path.exists(js) else {"findings": []}
check("doctor json: schema", rep.get("schema") == "ferry.doctor/1", rep.get("schema"))
f = {x["name"]: x for x in rep["findings"]}

flags = set()
for line in open("/proc/cpuinfo"):
    if line.startswith("flags"):
        flags = set(line.split(":", 1)[1].split())
        break
# What oneDNN dispatches to: the CPU's flags, less what an ONEDNN_MAX_CPU_ISA cap (scripts/test.sh's AVX2
# run) takes away.
cap = (os.environ.get("ONEDNN_MAX_CPU_ISA") or os.environ.get("DNNL_MAX_CPU_ISA") or "").upper()
isa_flags = {x for x in flags if not x.startswith("avx512") and not x.startswith("amx")} if cap.startswith("AVX2") else flags
for name in ("avx2", "avx512f", "avx512_bf16", "f16c"):
    want = "yes" if name in flags else "no"
    check("doctor: %s = %s as /proc/cpuinfo says" % (name, want), f.get(name, {}).get("value") == want, f.get(name))
# oneDNN dispatches to the best ISA the CPU has (AVX-512 with VNNI/bf16 "avx512_core...", AVX2 "avx2").
want_isa = "avx512_core" if "avx512bw" in isa_flags else ("avx2" if "avx2" in isa_flags else "")
check("doctor: oneDNN's dispatch ISA named (%s)" % want_isa,
      "dispatching to " + want_isa in f.get("oneDNN", {}).get("value", ""), f.get("oneDNN"))
check("doctor: no ISA mismatch hint here", f.get("oneDNN", {}).get("ok") is True, f.get("oneDNN"))
# The bf16 choice: native or emulated, with a reason (AMX, a measured rate, or the override).
b = f.get("bf16 Conv/MatMul", {}).get("value", "")
check("doctor: the bf16 choice is named with its reason",
      (b.startswith("native (") or b.startswith("emulated (")) and ("AMX" in b or "FMA flop rate" in b or
                                                                      "avx512_bf16" in b), b)
check("doctor: without avx512_bf16 the choice is emulated", "avx512_bf16" in isa_flags or b.startswith("emulated ("), b)
out0 = subprocess.run([u.FERRY, "doctor", "--cpu-bf16", "off"], capture_output=True, text=True).stdout
# Where the ISA has no bf16 that is the reason given, forced off or not.
why0 = ("--cpu-bf16 off" if "avx512_bf16" in isa_flags else
        "oneDNN dispatches below avx512_bf16" if "avx512_bf16" in flags else "this CPU has no avx512_bf16")
check("doctor --cpu-bf16 off: reported as emulated", "emulated (%s" % why0 in out0, out0)
g = f.get("GEMM (fp32 Linear layers)", {}).get("value", "")
vendor = open("/proc/cpuinfo").read()
want_gemm = ("own packed AVX2 GEMM (" if "avx512f" not in isa_flags and "avx2" in isa_flags else
             "MKL packed sgemm (" if "GenuineIntel" in vendor else "oneDNN matmul (")
check("doctor: the GEMM choice with its reason (%s)" % want_gemm, g.startswith(want_gemm) or "without MKL" in g, g)
check("doctor: the few-rows GEMM path is named on an AVX2 CPU", "avx2" not in isa_flags or "few-rows path" in g, g)
outg = subprocess.run([u.FERRY, "doctor", "--cpu-gemm", "onednn"], capture_output=True, text=True).stdout
check("doctor --cpu-gemm onednn: no few-rows path", "few-rows" not in outg.split("GEMM (fp32 Linear layers)")[1].split("\n")[0], outg)
check("doctor --cpu-gemm onednn: the forced choice is shown", "oneDNN matmul (--cpu-gemm onednn)" in outg, outg)
for row in ("Winograd 3x3 conv", "blocked 1x1 conv", "depthwise conv"):
    check("doctor: kernel choice row '%s'" % row, row in f, sorted(f))
peak = f.get("fp32 FMA peak (measured)", {}).get("value", "")
check("doctor: the fp32 FMA peak is measured (AVX2 or AVX-512)", "avx2" not in isa_flags or " GFLOP/s on " in peak, peak)
py = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".venv", "bin", "python")
ver = subprocess.run([py, "-c", "import onnxruntime; print(onnxruntime.__version__)"], capture_output=True, text=True).stdout.strip()
check("doctor: the venv's onnxruntime version", ver and f.get("onnxruntime (golden reference)", {}).get("value", "").startswith(ver),
      (ver, f.get("onnxruntime (golden reference)")))
check("doctor: the cores figure", str(len(os.sched_getaffinity(0))) in f.get("cores", {}).get("value", ""), f.get("cores"))

rc, out, err = u.ferry("doctor", "--json", "-")
check("doctor --json -: exit 0 and JSON only", rc == 0 and json.loads(out)["findings"], out[:200])
# A thread count above the cores is a problem with a hint, and exit 1.
env = dict(os.environ, OMP_NUM_THREADS=str(len(os.sched_getaffinity(0)) * 4))
p = subprocess.run([sys.argv[1], "doctor"], capture_output=True, text=True, env=env)
check("doctor with OMP_NUM_THREADS above the cores: exit 1 with a hint", p.returncode == 1 and "hint:" in p.stdout
      and "OMP_NUM_THREADS" in p.stdout, (p.returncode, p.stdout))
rc, out, err = u.ferry("doctor", "--frobnicate")
check("doctor bad flag: exit 2", rc == 2, (rc, err))
u.finish()
