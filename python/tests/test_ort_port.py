"""An onnxruntime script runs on ferry by changing the import and the class name (issue 21): torchvision
resnet18 and a 2-layer transformer encoder (exported by Debian's torch into the model cache), outputs
within 1e-5 relative of ONNX Runtime's."""
import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import BUILD, cached_torch_model

ORT_SCRIPT = '''
import sys
import numpy as np
import onnxruntime as ort

model, inputs, out = sys.argv[1], sys.argv[2], sys.argv[3]
sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
feeds = {i.name: np.load(f"{inputs}/{i.name}.npy") for i in sess.get_inputs()}
names = [o.name for o in sess.get_outputs()]
results = sess.run(names, feeds)
np.savez(out, **dict(zip(names, results)))
'''


def ported(script):
    """The port: the import and the class name, nothing else."""
    return script.replace("import onnxruntime as ort", "import ferry").replace("ort.InferenceSession", "ferry.Session")


@pytest.mark.parametrize("name", ["resnet18", "transformer_encoder"])
def test_ort_script_runs_on_ferry(name, tmp_path):
    model, _ = cached_torch_model(name)
    inputs = os.path.join(os.path.dirname(model), "inputs")
    env = dict(os.environ, PYTHONPATH=os.path.join(BUILD, "python"))
    outs = {}
    for side, text in (("ort", ORT_SCRIPT), ("ferry", ported(ORT_SCRIPT))):
        script = tmp_path / f"port_{side}.py"  # not ferry.py: it would shadow the package
        script.write_text(text)
        subprocess.run([sys.executable, str(script), model, inputs, str(tmp_path / f"{side}.npz")], check=True, env=env)
        outs[side] = np.load(tmp_path / f"{side}.npz")
    assert "import ferry" in ported(ORT_SCRIPT) and "onnxruntime" not in ported(ORT_SCRIPT)
    assert sorted(outs["ort"].files) == sorted(outs["ferry"].files)
    for k in outs["ort"].files:
        ref, got = outs["ort"][k], outs["ferry"][k]
        assert ref.shape == got.shape and ref.dtype == got.dtype
        rel = np.max(np.abs(got - ref)) / np.max(np.abs(ref))
        assert rel <= 1e-5, f"{name} output {k}: max relative difference {rel:.3g} vs ONNX Runtime"
