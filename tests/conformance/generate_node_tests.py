#!/usr/bin/env python3
"""Writes the ONNX node conformance tests of the installed PyPI `onnx` package to a folder.

Recent `onnx` wheels no longer ship onnx/backend/test/data/node; they ship the test case definitions
(onnx/backend/test/case/node/*.py), which produce exactly that data. This script uses the package's own
collector, so the tests are the package's, in the standard layout:
  OUT/<test name>/model.onnx, OUT/<test name>/test_data_set_N/{input,output}_K.pb
If the installed package does ship the data folder, that folder is copied instead.
Usage: generate_node_tests.py OUT_DIR
"""
import os
import shutil
import sys

import onnx
from onnx import numpy_helper


def write_value(path, value, type_proto, name):
    if type_proto.HasField("sequence_type"):
        proto = numpy_helper.from_list(value, name)
    elif type_proto.HasField("optional_type"):
        proto = numpy_helper.from_optional(value, name)
    elif type_proto.HasField("map_type"):
        proto = numpy_helper.from_dict(value, name)
    elif isinstance(value, onnx.TensorProto):
        proto = value
    else:
        proto = numpy_helper.from_array(value, name)
    with open(path, "wb") as f:
        f.write(proto.SerializeToString())


def main():
    out = sys.argv[1]
    shipped = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "node")
    tmp = out + ".partial"
    shutil.rmtree(tmp, ignore_errors=True)
    if os.path.isdir(shipped):
        shutil.copytree(shipped, tmp)
    else:
        from onnx.backend.test.case import node

        os.makedirs(tmp)
        for case in node.collect_testcases():
            d = os.path.join(tmp, case.name)
            os.makedirs(d, exist_ok=True)
            with open(os.path.join(d, "model.onnx"), "wb") as f:
                f.write(case.model.SerializeToString())
            graph = case.model.graph
            # The case's own tolerances (the data folder alone does not carry them).
            with open(os.path.join(d, "tolerance.txt"), "w") as f:
                f.write(f"{case.rtol!r} {case.atol!r}\n")
            for i, (inputs, outputs) in enumerate(case.data_sets):
                ds = os.path.join(d, f"test_data_set_{i}")
                os.makedirs(ds, exist_ok=True)
                for j, v in enumerate(inputs):
                    write_value(os.path.join(ds, f"input_{j}.pb"), v, graph.input[j].type, graph.input[j].name)
                for j, v in enumerate(outputs):
                    write_value(os.path.join(ds, f"output_{j}.pb"), v, graph.output[j].type, graph.output[j].name)
    shutil.rmtree(out, ignore_errors=True)
    os.rename(tmp, out)
    print(f"conformance data: {len(os.listdir(out))} node tests from onnx {onnx.__version__} in {out}")


if __name__ == "__main__":
    main()
