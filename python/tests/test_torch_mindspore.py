"""The PyTorch -> MindSpore weights route with the real MindSpore (PyPI's CPU wheel): torchvision's
ResNet-18, its state_dict saved by torch.save, converted by ferry.mindspore.convert for a ResNet-18
written in MindSpore, loaded with mindspore.load_checkpoint, gives torch's outputs within fp32
tolerance. A port whose stem is named differently is mapped by position; the CLI's convert with a
PARAMS.txt writes the same checkpoint.
"""
import subprocess

import numpy as np
import pytest
import torch
import torchvision

ms = pytest.importorskip("mindspore", reason="PyPI's mindspore (scripts/setup.sh installs it)")
from mindspore import nn, ops  # noqa: E402

import ferry.mindspore  # noqa: E402
import ferry.weights  # noqa: E402

ms.set_context(mode=ms.PYNATIVE_MODE, device_target="CPU")


def conv(cin, cout, k, stride=1, pad=0):
    return nn.Conv2d(cin, cout, k, stride=stride, pad_mode="pad", padding=pad, has_bias=False)


class BasicBlock(nn.Cell):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = conv(cin, cout, 3, stride, 1)
        self.bn1 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU()
        self.conv2 = conv(cout, cout, 3, 1, 1)
        self.bn2 = nn.BatchNorm2d(cout)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.SequentialCell(conv(cin, cout, 1, stride), nn.BatchNorm2d(cout))

    def construct(self, x):
        y = self.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return self.relu(y + (self.downsample(x) if self.downsample is not None else x))


class ResNet18(nn.Cell):
    """torchvision's resnet18 in MindSpore; `stem` names the first conv/BN pair differently (a port
    that does not keep torch's names)."""

    def __init__(self, stem_names=("conv1", "bn1"), num_classes=10):
        super().__init__()
        self.stem_names = stem_names
        setattr(self, stem_names[0], conv(3, 64, 7, 2, 3))
        setattr(self, stem_names[1], nn.BatchNorm2d(64))
        self.relu = nn.ReLU()
        self.pad = nn.Pad(((0, 0), (0, 0), (1, 1), (1, 1)), mode="CONSTANT")
        self.maxpool = nn.MaxPool2d(3, 2, pad_mode="valid")
        widths, cin, layers = [64, 128, 256, 512], 64, []
        for i, w in enumerate(widths):
            stride = 1 if i == 0 else 2
            layers.append(nn.SequentialCell(BasicBlock(cin, w, stride), BasicBlock(w, w, 1)))
            cin = w
        self.layer1, self.layer2, self.layer3, self.layer4 = layers
        self.fc = nn.Dense(512, num_classes)

    def construct(self, x):
        x = getattr(self, self.stem_names[1])(getattr(self, self.stem_names[0])(x))
        x = self.relu(x)
        # torch pads max pooling with -inf: after ReLU every value is >= 0, so zero padding is the same
        x = self.maxpool(self.pad(x))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(ops.mean(x, (2, 3)))


@pytest.fixture(scope="module")
def torch_resnet(tmp_path_factory):
    torch.manual_seed(0)
    net = torchvision.models.resnet18(num_classes=10)
    net.train()
    with torch.no_grad():  # running statistics away from their defaults
        for _ in range(2):
            net(torch.randn(4, 3, 64, 64))
    net.eval()
    path = str(tmp_path_factory.mktemp("ms") / "resnet18.pth")
    torch.save(net.state_dict(), path)
    return net, path


def run_both(net, ms_net):
    x = np.random.default_rng(0).standard_normal((2, 3, 64, 64)).astype(np.float32)
    with torch.no_grad():
        want = net(torch.from_numpy(x)).numpy()
    ms_net.set_train(False)
    got = ms_net(ms.Tensor(x)).asnumpy()
    return want, got


@pytest.mark.parametrize("stem", [("conv1", "bn1"), ("stem_conv", "stem_norm")])
def test_converted_checkpoint_gives_torch_outputs(torch_resnet, tmp_path, stem):
    net, pth = torch_resnet
    ms_net = ResNet18(stem)
    out = str(tmp_path / "resnet18.ckpt")
    report = ferry.mindspore.convert(pth, ms_net, out=out)
    assert report.audit.clean, str(report)
    how = {m["target"]: m["how"] for m in report.mapping if m["target"]}
    assert "moving_variance" in how["layer1.0.bn1.moving_variance"]
    if stem[0] != "conv1":
        assert how["stem_conv.weight"].startswith("by position"), how["stem_conv.weight"]
        assert how["stem_norm.gamma"].startswith(("by position", "renamed")), how["stem_norm.gamma"]
    left = [m for m in report.mapping if not m["target"]]
    assert all("num_batches_tracked" in m["source"] for m in left), left
    not_loaded, _ = ms.load_param_into_net(ms_net, ms.load_checkpoint(out))
    assert not not_loaded, not_loaded
    want, got = run_both(net, ms_net)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_cli_convert_writes_the_same_checkpoint(torch_resnet, tmp_path, ferry_cli):
    _, pth = torch_resnet
    ms_net = ResNet18()
    names = tmp_path / "params.txt"
    names.write_text("".join("%s %s %s\n" % (n, ",".join(map(str, s)), d)
                             for n, s, d, _ in ferry.mindspore.parameters(ms_net)))
    py = ferry.mindspore.convert(pth, ms_net, out=str(tmp_path / "py.ckpt"))
    p = subprocess.run([ferry_cli, "weights", "convert", pth, "--to", "mindspore", "--names", str(names),
                        "-o", str(tmp_path / "cli.ckpt")], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "cli.ckpt").read_bytes() == (tmp_path / "py.ckpt").read_bytes()
    back = ferry.weights.load(tmp_path / "cli.ckpt")
    assert back.format == "mindspore ckpt" and len(back) == sum(1 for m in py.mapping if m["target"])
