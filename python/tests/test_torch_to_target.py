"""ferry.torch.to_target: the module runs through ferry, compiled once per input signature; and
`import ferry.torch` without PyTorch says what is missing."""
import os
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="ferry.torch's tests need PyTorch in the venv (scripts/setup.sh)")

import ferry.torch as ft  # noqa: E402

nn = torch.nn


class Net(nn.Module):
    """A small CNN with two outputs: logits and the pooled features."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.fc = nn.Linear(8, 5)

    def forward(self, x):
        features = torch.relu(self.bn(self.conv(x))).mean((2, 3))
        return self.fc(features), features


def net():
    torch.manual_seed(0)
    return Net().eval()


def test_outputs_match_eager_and_come_back_as_torch_tensors():
    model, x = net(), torch.randn(2, 3, 16, 16)
    fast = ft.to_target(model, x)
    logits, features = fast(x)
    assert isinstance(logits, torch.Tensor) and logits.dtype == torch.float32
    with torch.no_grad():
        want_logits, want_features = model(x)
    torch.testing.assert_close(logits, want_logits, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(features, want_features, rtol=1e-4, atol=1e-5)
    fast.close()


def test_one_compilation_per_signature(tmp_path):
    model = net()
    fast = ft.to_target(model, torch.randn(1, 3, 16, 16), workdir=str(tmp_path))
    first = fast.session_for(torch.randn(1, 3, 16, 16))
    fast(torch.randn(1, 3, 16, 16))
    assert len(fast.signatures) == 1 and fast.session_for(torch.zeros(1, 3, 16, 16)) is first
    batch = torch.randn(4, 3, 16, 16)
    logits, _ = fast(batch)
    assert len(fast.signatures) == 2 and logits.shape == (4, 5)
    assert sorted(os.listdir(tmp_path)) == ["model_0.onnx", "model_1.onnx"]
    with torch.no_grad():
        torch.testing.assert_close(logits, model(batch)[0], rtol=1e-4, atol=1e-5)


def test_single_output_and_a_low_precision_target():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4)).eval()
    x = torch.randn(3, 8)
    fast = ft.to_target(model, x, target="ascend310p")  # fp16 by the target's default
    y = fast(x)
    assert isinstance(y, torch.Tensor) and y.shape == (3, 4)
    with torch.no_grad():
        want = model(x)
    err = (y - want).abs().max().item()
    assert 0 < err < 1e-2  # fp16 rounding, not fp32 exactness
    exact = ft.to_target(model, x, target="ascend310p", precision="fp32")
    torch.testing.assert_close(exact(x), want, rtol=1e-5, atol=1e-6)


def test_keep_fp32_takes_module_paths():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4)).eval()
    x = torch.randn(3, 8)
    fast = ft.to_target(model, x, precision="fp16", keep_fp32=["2"])
    info = fast.session_for(x).info
    assert info["kept_fp32"] and info["unmatched_keep_fp32"] == []


def test_import_without_torch_says_what_is_missing():
    # A Python where `import torch` fails: ferry.torch must say so plainly.
    code = ("import sys; sys.modules['torch'] = None\n"
            "try:\n    import ferry.torch\nexcept ImportError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)})
    assert "ferry.torch needs PyTorch" in out.stdout, out.stderr
    np.testing.assert_equal(out.returncode, 0)
