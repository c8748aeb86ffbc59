"""Shared helpers for the CLI tests: tiny ONNX models built with onnx.helper, and a runner for the
`ferry` binary that records exit code, stdout and stderr."""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

FERRY = None
FAILURES = []
TMP = None


def init():
    global FERRY, TMP
    if len(sys.argv) < 2:
        sys.exit("usage: %s PATH/TO/ferry" % sys.argv[0])
    FERRY = os.path.abspath(sys.argv[1])
    # With a manifest (record_case), the files stay next to it for the test that replays them.
    manifest = os.environ.get("FERRY_ERROR_MANIFEST")
    TMP = tempfile.mkdtemp(prefix="ferry_cli_test_", dir=os.path.dirname(manifest) if manifest else None)
    return TMP


def ferry(*args, cwd=None, timeout=120):
    p = subprocess.run([FERRY, *map(str, args)], capture_output=True, text=True, errors="replace", cwd=cwd,
                       timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def model(nodes, inputs, outputs, initializers=(), opset=17, name="g", ir_version=8):
    g = helper.make_graph(nodes, name, inputs, outputs, initializer=list(initializers))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = ir_version
    return m


def save(m, path):
    with open(path, "wb") as f:
        f.write(m.SerializeToString())
    return path


def vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def check(name, cond, detail=""):
    """Records one assertion; the script exits non-zero at the end if any failed."""
    if cond:
        print("ok   %s" % name)
    else:
        print("FAIL %s %s" % (name, detail))
        FAILURES.append(name)


def record_case(**fields):
    """With FERRY_ERROR_MANIFEST set, appends one JSON line describing a bad-input case, so another test
    (python/tests/test_bad_inputs.py) can give the same files to the Python API."""
    manifest = os.environ.get("FERRY_ERROR_MANIFEST")
    if manifest:
        with open(manifest, "a") as f:
            f.write(json.dumps(fields) + "\n")


def expect_error(name, args, *needles, cwd=None):
    """`ferry ARGS` must exit 1 (not a signal), stderr must start with 'error:' and contain each needle."""
    rc, out, err = ferry(*args, cwd=cwd)
    record_case(kind="error", name=name, args=[str(a) for a in args], rc=rc, stderr=err)
    detail = "\n    rc=%d\n    stderr: %s\n    stdout: %s" % (rc, err.strip()[:2000], out.strip()[:500])
    if rc < 0:
        detail = " killed by signal %s" % signal.Signals(-rc).name + detail
    ok = rc == 1 and err.startswith("error:")
    for n in needles:
        if n.lower() not in err.lower():
            ok = False
            detail = " (missing %r)" % n + detail
    check(name, ok, detail)
    if ok:
        print("       " + err.strip().splitlines()[0][:300])
    return err


def finish():
    if FAILURES:
        print("\n%d check(s) failed: %s (files kept in %s)" % (len(FAILURES), ", ".join(FAILURES), TMP))
        sys.exit(1)
    if not os.environ.get("FERRY_ERROR_MANIFEST"):
        shutil.rmtree(TMP, ignore_errors=True)
    print("\nall checks passed")
