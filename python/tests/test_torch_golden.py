"""ferry.torch's golden (forward hooks streaming each module's output), its ideal low-precision run,
and the metrics every comparison uses."""
import json
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="ferry.torch's tests need PyTorch in the venv (scripts/setup.sh)")

import ferry.torch as ft  # noqa: E402
from ferry.torch.metrics import compute_metrics, topk_agreement  # noqa: E402

nn = torch.nn


class Block(nn.Module):
    """A shared ReLU called twice, like torchvision's BasicBlock."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 4, 3, padding=1)
        self.conv2 = nn.Conv2d(4, 4, 3, padding=1)
        self.relu = nn.ReLU()
        self.head = nn.Linear(4, 5)

    def forward(self, x):
        y = self.relu(self.conv2(self.relu(self.conv1(x))))
        return self.head(y.mean((2, 3)))


def block():
    torch.manual_seed(0)
    return Block()


def test_outputs_are_streamed_one_module_at_a_time_in_execution_order():
    model, x = block(), torch.randn(2, 3, 8, 8)
    seen = []
    rec = ft.record_module_outputs(model, x, sink=lambda path, array: seen.append((path, array.shape)))
    # Every call reaches the sink as it returns (relu twice); the order is where each module finished last.
    assert [p for p, _ in seen] == ["conv1", "relu", "conv2", "relu", "head", ""]
    assert rec.order == ["conv1", "conv2", "relu", "head", ""] and rec.calls["relu"] == 2
    assert rec.store is None and len(rec.outputs) == 1
    np.testing.assert_allclose(rec.outputs[0], model.eval()(x).detach().numpy(), rtol=1e-6)


def test_store_keeps_the_last_call_on_disk_memory_mapped(tmp_path):
    model, x = block(), torch.randn(2, 3, 8, 8)
    rec = ft.record_module_outputs(model, x, modules=["conv1", "relu"], sink=str(tmp_path))
    assert rec.store.paths == ["conv1", "relu"] and len(list(tmp_path.iterdir())) == 2
    relu = rec.store.load("relu")
    assert isinstance(relu, np.memmap)
    with torch.no_grad():
        expected = torch.relu(model.conv2(torch.relu(model.conv1(x))))
    np.testing.assert_allclose(relu, expected.numpy(), rtol=1e-6)
    assert rec.order == ["conv1", "conv2", "relu", "head", ""]  # the order covers modules not stored


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_ideal_low_precision_run_on_a_copy(dtype):
    model, x = block(), torch.randn(2, 3, 8, 8)
    low = getattr(torch, dtype)
    arrays = {}
    rec = ft.record_module_outputs(model, x, dtype=low, sink=lambda p, a: arrays.__setitem__(p, a))
    assert all(a.dtype == np.float32 for a in arrays.values())  # recorded upcast to fp32
    assert next(model.parameters()).dtype == torch.float32  # the user's module is untouched
    golden = model(x).detach().numpy()
    err = np.abs(rec.outputs[0] - golden).max()
    assert 0 < err < (0.05 if dtype == "bfloat16" else 0.01)


def test_autocast_and_keep_fp32_in_the_ideal_run():
    model, x = block(), torch.randn(2, 3, 8, 8)
    mixed = ft.record_module_outputs(model, x, dtype=torch.float16, autocast=True, sink=lambda p, a: None)
    assert mixed.outputs[0].dtype == np.float32
    kept = ft.record_module_outputs(model, x, dtype=torch.float16, keep_fp32=["head"], sink=lambda p, a: None)
    low = ft.record_module_outputs(model, x, dtype=torch.float16, sink=lambda p, a: None)
    golden = model(x).detach().numpy()
    assert np.abs(kept.outputs[0] - golden).max() <= np.abs(low.outputs[0] - golden).max()
    assert model.head.forward.__func__ is nn.Linear.forward  # kept on the copy, not the user's module


def test_metric_definitions_match_the_cli():
    g = np.array([1.0, 2.0, 3.0, 0.0], np.float32)
    same = compute_metrics(g, g.copy())
    assert same.passed and same.allclose and same.cosine == 1.0 and same.rel_euclid == 0.0
    c = g + np.array([0, 0, 0.3, 0], np.float32)
    m = compute_metrics(g, c)
    assert math.isclose(m.rel_euclid, 0.3 / math.sqrt(14), rel_tol=1e-5)
    assert math.isclose(m.max_abs, 0.3, rel_tol=1e-5) and math.isclose(m.max_rel, 0.1, rel_tol=1e-5)
    assert not m.passed and not m.allclose  # rel_euclid 0.08 > 0.05
    zeros = compute_metrics(np.zeros(3, np.float32), np.ones(3, np.float32))
    assert zeros.cosine == 0.0 and math.isinf(zeros.rel_euclid)
    inf = compute_metrics(g, np.array([1, 2, np.inf, 0], np.float32))
    assert inf.nonfinite_mismatch == 1 and not inf.passed and math.isinf(inf.error)
    assert compute_metrics(g.reshape(2, 2), g).passed  # same elements, other shape: compared flat
    with pytest.raises(ValueError, match="shapes differ"):
        compute_metrics(g, g[:3])
    assert json.loads(json.dumps(zeros.to_dict()))["rel_euclid"] == "inf"  # JSON has no inf


def test_strict_adds_allclose_to_the_pass_rule():
    g = np.linspace(-1, 1, 100).astype(np.float32)
    c = g + 1e-3
    assert compute_metrics(g, c).passed
    assert not compute_metrics(g, c, ft.Thresholds(strict=True)).passed


def test_topk_agreement():
    g = np.array([[0.1, 0.9, 0.0], [0.8, 0.1, 0.1]], np.float32)
    c = np.array([[0.2, 0.7, 0.1], [0.1, 0.8, 0.1]], np.float32)
    assert topk_agreement(g, c, 1) == 0.5
    assert topk_agreement(g, c, 2) == 1.0
    assert topk_agreement(g, c, 5) is None  # fewer than 5 classes
    assert topk_agreement(np.zeros((2, 3, 4), np.float32), np.zeros((2, 3, 4), np.float32), 1) is None
