"""ferry.torch.audit and ferry.weights from Python: a live nn.Module against its checkpoint (clean, and
with a planted problem found by module and key), the reader's tensors equal torch's, and a malicious
pickle raises ferry.InvalidArgument with the CLI's message while its payload never runs.
"""
import os

import numpy as np
import pytest
import torch

import ferry
import ferry.torch
import ferry.weights


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3)
        self.bn = torch.nn.BatchNorm2d(4)
        self.head = torch.nn.Linear(4, 2)

    def forward(self, x):
        return self.head(self.bn(self.conv(x)).mean((2, 3)))


@pytest.fixture()
def net():
    torch.manual_seed(0)
    n = Net().train()
    with torch.no_grad():
        n(torch.randn(2, 3, 8, 8))
    return n.eval()


def test_clean_checkpoint_and_tensors_equal_torch(net, tmp_path):
    path = tmp_path / "net.pth"
    torch.save({"epoch": 3, "model": net.state_dict()}, path)
    report = ferry.torch.audit(net, path)
    assert report.clean and report.matched == len(net.state_dict()), str(report)
    assert "no findings" in str(report)
    ck = ferry.weights.load(path)
    assert ck.container == "model" and ck.other["epoch"] == "3" and ck.format == "torch zip (.pth)"
    for key, value in net.state_dict().items():
        np.testing.assert_array_equal(ck[key], value.numpy())


def test_strided_and_shared_storages_read_as_torch_does(tmp_path):
    base = torch.arange(24, dtype=torch.float32).reshape(4, 6)
    sd = {"t": base.t(), "slice": base[1:3, ::2], "same": base}  # views of one storage
    torch.save(sd, tmp_path / "views.pth")
    ck = ferry.weights.load(tmp_path / "views.pth")
    for key, value in sd.items():
        np.testing.assert_array_equal(ck[key], value.numpy())


def test_planted_problem_found_by_module_and_key(net, tmp_path):
    sd = net.state_dict()
    sd["head.weight"] = sd["head.weight"].t().contiguous()
    sd.pop("bn.running_var")
    torch.save(sd, tmp_path / "bad.pth")
    report = ferry.torch.audit(net, tmp_path / "bad.pth")
    kinds = {(f["kind"], f["key"], f["module"]) for f in report.findings}
    assert ("transposed", "head.weight", "head") in kinds, kinds
    assert ("bn-stats", "bn.running_var", "bn") in kinds, kinds


class Payload:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, ("touch " + self.marker,))


def test_malicious_pickle_raises_and_never_runs(net, tmp_path):
    marker = str(tmp_path / "pwned")
    torch.save({"w": torch.zeros(2), "x": Payload(marker)}, tmp_path / "evil.pth")
    with pytest.raises(ferry.InvalidArgument) as e:
        ferry.weights.load(tmp_path / "evil.pth")
    with pytest.raises(ferry.Error):
        ferry.torch.audit(net, tmp_path / "evil.pth")
    assert "posix.system" in str(e.value) and "refused" in str(e.value)
    assert not os.path.exists(marker)
