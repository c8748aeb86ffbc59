"""ferry.torch.compare(repro=DIR): a planted fault in resnet18's layer2.0.downsample.1 (a BatchNorm folded into its Conv) gives
a bundle for the first divergent ONNX node, and its README's command, run alone in a fresh copy of the
folder, reproduces the failure (exit 3)."""
import re
import shutil
import subprocess

import torch
import torchvision

import ferry.torch as ft


def test_planted_fault_bundle_reproduces_alone(tmp_path, ferry_cli):
    torch.manual_seed(0)
    net = torchvision.models.resnet18(num_classes=10).eval()
    image = torch.randn(1, 3, 32, 32)
    rep = ft.compare(net, image, perturb=ft.planted_fault("layer2.0.downsample.1"), repro=str(tmp_path / "bundle"))
    assert rep.first_divergent == "layer2.0.downsample.1", rep.first_divergent
    assert rep.repro and rep.repro["dir"] == str(tmp_path / "bundle"), rep.repro
    fresh = tmp_path / "fresh"
    shutil.copytree(tmp_path / "bundle", fresh)
    readme = (fresh / "README.md").read_text()
    cmd = re.search(r"```\n(ferry compare [^\n]+)\n```", readme).group(1).split()
    p = subprocess.run([ferry_cli] + cmd[1:], cwd=fresh, capture_output=True, text=True)
    assert p.returncode == 3, p.stdout + p.stderr
    size = sum(f.stat().st_size for f in (tmp_path / "bundle").rglob("*") if f.is_file())
    assert size < 0.01 * sum(p.numel() * 4 for p in net.parameters()), size
