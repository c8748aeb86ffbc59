"""ferry refit: a model exported once with random weights and refitted with the trained state_dict gives
the outputs of a fresh export of the trained model, on resnet18 (Conv weights the exporter folded with
their BatchNorm are refolded) and on a transformer encoder; as .onnx and as a compiled .ferry; a
checkpoint that does not fit is refused with the audit's findings.
"""
import copy

import numpy as np
import pytest
import torch
import torchvision

import ferry
import ferry.torch


def train_a_little(net, shape, steps=2):
    """Different weights and BatchNorm statistics away from their defaults: a 'trained' copy."""
    trained = copy.deepcopy(net)
    with torch.no_grad():
        for p in trained.parameters():
            p.add_(0.05 * torch.randn_like(p))
    trained.train()
    with torch.no_grad():
        for _ in range(steps):
            trained(torch.randn(*shape))
    return trained.eval()


def outputs(path, x):
    sess = ferry.Session(str(path), backend="reference")
    return sess.run(None, {sess.get_inputs()[0].name: x})[0]


def check_refit(net, trained, shape, tmp_path, rtol):
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    ferry.torch.export(net.eval(), torch.from_numpy(x), tmp_path / "random.onnx")
    ferry.torch.export(trained, torch.from_numpy(x), tmp_path / "fresh.onnx")
    torch.save(trained.state_dict(), tmp_path / "trained.pth")
    report = ferry.torch.refit(tmp_path / "random.onnx", tmp_path / "trained.pth", tmp_path / "refit.onnx")
    want = outputs(tmp_path / "fresh.onnx", x)
    got = outputs(tmp_path / "refit.onnx", x)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * np.abs(want).max())
    with torch.no_grad():
        np.testing.assert_allclose(got, trained(torch.from_numpy(x)).numpy(), rtol=1e-3, atol=1e-3 * np.abs(want).max())
    stale = outputs(tmp_path / "random.onnx", x)
    assert not np.allclose(stale, want, rtol=1e-2), "the planted difference is too small to test anything"
    ferry.torch.refit(tmp_path / "random.onnx", trained, tmp_path / "refit.ferry")
    np.testing.assert_allclose(outputs(tmp_path / "refit.ferry", x), want, rtol=rtol, atol=rtol * np.abs(want).max())
    return report


def test_resnet18_refolds_batchnorm(tmp_path):
    torch.manual_seed(0)
    net = torchvision.models.resnet18(num_classes=10).eval()
    report = check_refit(net, train_a_little(net, (4, 3, 64, 64)), (1, 3, 64, 64), tmp_path, 1e-5)
    assert report["refolded"] == 20 and report.untouched == [], str(report)


def encoder():
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(64, 4, 128, dropout=0.0, batch_first=True)
    return torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False).eval()


def test_transformer_encoder(tmp_path):
    net = encoder()
    with torch.no_grad():  # every weight its own values (TransformerEncoder deep-copies one layer)
        for p in net.parameters():
            p.copy_(0.1 * torch.randn_like(p))
    report = check_refit(net, train_a_little(net, (2, 16, 64)), (1, 16, 64), tmp_path, 1e-5)
    assert report["replaced"] + report["transposed"] > 0 and report.untouched == [], str(report)


def test_merged_initializers_are_refused_when_the_checkpoint_splits_them(tmp_path):
    net = encoder()  # the two layers are copies: the exporter merges their identical weights
    ferry.torch.export(net, torch.randn(1, 16, 64), tmp_path / "m.onnx")
    with pytest.raises(ferry.InvalidArgument) as e:
        ferry.torch.refit(tmp_path / "m.onnx", train_a_little(net, (2, 16, 64)), tmp_path / "out.onnx")
    assert "merged" in str(e.value) and "layers.1." in str(e.value), str(e.value)


def test_checkpoint_that_does_not_fit_is_refused(tmp_path):
    torch.manual_seed(0)
    net = torchvision.models.resnet18(num_classes=10).eval()
    ferry.torch.export(net, torch.randn(1, 3, 64, 64), tmp_path / "m.onnx")
    sd = net.state_dict()
    sd.pop("layer1.0.bn1.running_var")
    sd["fc.weight"] = sd["fc.weight"].t().contiguous()
    torch.save(sd, tmp_path / "bad.pth")
    with pytest.raises(ferry.InvalidArgument) as e:
        ferry.weights.refit(tmp_path / "m.onnx", tmp_path / "bad.pth", tmp_path / "out.onnx")
    assert "layer1.0.bn1.running_var" in str(e.value) and "transposed" in str(e.value)
    assert not (tmp_path / "out.onnx").exists()
