"""ferry.torch.compare on resnet18 and a 2-layer transformer encoder: module paths in every row, the
first divergent module is the planted fault, the three-way split labels a known fp16-sensitive layer
inherent (and the proposed keep-list fixes it) and a planted fault conversion; the HTML report."""
import os
import json
from html.parser import HTMLParser
from xml.etree import ElementTree

import pytest

torch = pytest.importorskip("torch", reason="ferry.torch's tests need PyTorch in the venv (scripts/setup.sh)")
torchvision = pytest.importorskip("torchvision", reason="ferry.torch's tests need torchvision in the venv")

import ferry.torch as ft  # noqa: E402

nn = torch.nn


def resnet18():
    torch.manual_seed(0)
    return torchvision.models.resnet18(weights=None).eval()


def encoder():
    torch.manual_seed(0)
    return nn.TransformerEncoder(nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0), 2, enable_nested_tensor=False)


class RMSNorm(nn.Module):
    """RMSNorm written out as in LLaMA: x * x overflows fp16 (65504) once |x| passes 256."""

    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        return x / torch.sqrt((x * x).mean(-1, keepdim=True) + self.eps) * self.weight


class Sensitive(nn.Module):
    """Activations of a few hundred into an RMSNorm: fine in fp32, inherently broken in fp16."""

    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(16, 32)
        self.norm = RMSNorm(32)
        self.head = nn.Linear(32, 8)
        with torch.no_grad():
            self.inp.weight.mul_(300.0)

    def forward(self, x):
        return self.head(torch.relu(self.norm(self.inp(x))))


def sensitive():
    torch.manual_seed(0)
    return Sensitive(), torch.randn(4, 16)


@pytest.fixture(scope="module")
def image():
    torch.manual_seed(1)
    return torch.randn(1, 3, 32, 32)


@pytest.fixture(scope="module")
def resnet_fault_fp32(image):
    return ft.compare(resnet18(), image, perturb=ft.planted_fault("layer3.1.bn2"))


@pytest.fixture(scope="module")
def resnet_fault_fp16(image):
    return ft.compare(resnet18(), image, precision="fp16", perturb=ft.planted_fault("layer3.1.bn2"))


@pytest.fixture(scope="module")
def sequence():
    torch.manual_seed(2)
    return torch.randn(6, 2, 16)


def test_resnet_rows_are_module_paths_and_the_fault_is_found(resnet_fault_fp32):
    rep = resnet_fault_fp32
    paths = dict(resnet18().named_modules())
    assert all(r.path in paths for r in rep.modules)
    assert rep.first_divergent == "layer3.1.bn2"
    row = rep.first_divergent_row
    assert row.origin and row.cls == "BatchNorm2d" and row.label is None  # no ideal run at fp32
    assert row.source.rsplit(":", 1)[0].endswith("resnet.py")
    before = rep.modules[:rep.modules.index(row)]
    assert all(r.status in ("pass", "absorbed") for r in before) and len(before) > 30
    # conv2 has no node of its own: the exporter folded it into bn2's, where it is compared.
    conv2 = rep.row("layer3.1.conv2")
    assert conv2.status == "absorbed" and conv2.absorbed_into == "layer3.1.bn2"
    assert rep.modules.index(conv2) == rep.modules.index(row) - 1
    assert [r.path for r in rep.divergent() if r.origin] == ["layer3.1.bn2"]
    (out,) = rep.outputs
    assert out.top1 is not None and out.top5 is not None


def test_resnet_fault_under_fp16_is_a_conversion_error(resnet_fault_fp16):
    rep = resnet_fault_fp16
    assert rep.precision == "fp16" and rep.ideal_error is None
    assert rep.first_divergent == "layer3.1.bn2"
    row = rep.first_divergent_row
    assert row.label == "conversion" and row.ideal.passed and row.ideal.error < 0.1 * row.target.error
    # Before the fault ferry's fp16 tracks eager fp16: both only round.
    for r in rep.modules[:rep.modules.index(row)]:
        if r.target is not None:
            assert r.status == "pass" and r.target.error < 5 * r.ideal.error + 1e-4, r.path
    assert rep.keep_fp32_proposal == []  # a conversion error is not fixed by keeping fp32


def test_encoder_passes_then_finds_the_planted_fault(sequence):
    clean = ft.compare(encoder(), sequence)
    assert clean.passed and clean.first_divergent is None
    assert [r.path for r in clean.modules][:6] == ["layers.0.self_attn", "layers.0.norm1", "layers.0.linear1",
                                                   "layers.0.linear2", "layers.0.norm2", "layers.0"]
    assert clean.modules[-1].path == "" and all(r.status == "pass" for r in clean.modules)
    faulty = ft.compare(encoder(), sequence, perturb=ft.planted_fault("layers.1.linear1"))
    assert faulty.first_divergent == "layers.1.linear1"
    assert faulty.row("layers.0.linear1").status == "pass"  # the merged weight was copied, not shared


def test_torchscript_export_path(sequence):
    rep = ft.compare(encoder(), sequence, dynamo=False, perturb=ft.planted_fault("layers.0.linear2"))
    assert rep.exporter == "torchscript"
    assert rep.first_divergent == "layers.0.linear2"


def test_inherent_layer_is_labelled_and_the_keep_list_fixes_it():
    model, x = sensitive()
    rep = ft.compare(model, x, precision="fp16")
    assert rep.first_divergent == "norm"
    norm = rep.row("norm")
    assert norm.label == "inherent" and norm.origin and not norm.ideal.passed
    assert rep.row("inp").status == "pass"
    assert rep.keep_fp32_modules == ["norm"]
    assert rep.keep_fp32_proposal and all(rep_node.startswith("node_") for rep_node in rep.keep_fp32_proposal)
    fixed = ft.compare(model, x, precision="fp16", keep_fp32=rep.keep_fp32_modules)
    assert fixed.row("norm").status == "pass" and fixed.passed
    assert sorted(fixed.keep_fp32) == sorted(rep.keep_fp32_proposal) and fixed.unmatched_keep_fp32 == []
    # The same model in fp32 is fine: the sensitivity is the precision's.
    assert ft.compare(model, x).passed


def test_fault_next_to_an_inherent_layer_is_still_conversion():
    model, x = sensitive()
    rep = ft.compare(model, x, precision="fp16", keep_fp32=["norm"], perturb=ft.planted_fault("head", scale=0.3))
    assert rep.first_divergent == "head" and rep.row("head").label == "conversion"


class Pair(nn.Module):
    """Returns (features, their sum): the first tensor is not the last one computed."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 6)

    def forward(self, x):
        y = self.fc(x)
        return y, y.sum(-1)


class WithPair(nn.Module):
    def __init__(self):
        super().__init__()
        self.pair = Pair()
        self.out = nn.Linear(6, 2)

    def forward(self, x):
        features, total = self.pair(x)
        return self.out(features) * total.unsqueeze(-1)


def test_tuple_output_compares_its_first_tensor():
    torch.manual_seed(0)
    rep = ft.compare(WithPair(), torch.randn(3, 4))
    row = rep.row("pair")
    assert row.status == "pass" and row.target.count == 18  # the (3, 6) features, not the (3,) sum
    assert row.tensor == rep.row("pair.fc").tensor


class NoHalfKernel(nn.Module):
    """Stands for a layer whose op eager PyTorch lacks in fp16 on the CPU."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        if x.dtype == torch.float16:
            raise RuntimeError("\"addmm_impl_cpu_\" not implemented for 'Half'")
        return self.fc(x)


def test_ideal_run_that_fails_is_reported_not_guessed():
    torch.manual_seed(0)
    rep = ft.compare(NoHalfKernel(), torch.randn(2, 4), precision="fp16")
    assert rep.ideal_error.startswith("RuntimeError: \"addmm_impl_cpu_\" not implemented for 'Half'")
    assert rep.to_dict()["ideal"]["available"] is False and all(r.ideal is None for r in rep.modules)
    assert "ideal:     unavailable (RuntimeError" in rep.format()


def test_mixed_precision_ideal_runs_under_autocast(sequence):
    rep = ft.compare(encoder(), sequence, precision="mixed")
    assert rep.precision == "mixed-fp16" and "autocast" in rep.ideal_precision
    assert rep.passed and all(r.ideal is not None for r in rep.modules)


def test_fused_boundaries_at_opt_level_2_are_reported_not_observed():
    model, x = sensitive()
    rep = ft.compare(model, x, opt_level=2)
    assert rep.opt_level == 2 and rep.passed
    assert {r.status for r in rep.modules} <= {"pass", "not observed"}


def test_report_serialises(resnet_fault_fp16):
    data = json.loads(resnet_fault_fp16.to_json())
    assert data["first_divergent"] == "layer3.1.bn2" and data["precision"] == "fp16"
    assert data["modules"][0] == {**data["modules"][0], "module": "conv1", "status": "absorbed", "target": None}
    assert data["ideal"]["available"] and data["modules"][1]["target"]["cosine"] > 0.99
    row = next(m for m in data["modules"] if m["module"] == "layer3.1.bn2")
    assert row["label"] == "conversion" and row["origin"]
    text = resnet_fault_fp16.format()
    assert "first divergent module: layer3.1.bn2 (BatchNorm2d" in text and "conversion" in text


class _Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def test_html_report_is_self_contained_with_an_svg_chart(resnet_fault_fp16, tmp_path):
    path = resnet_fault_fp16.write_html(str(tmp_path / "report.html"))
    text = open(path, encoding="utf-8").read()
    assert text.startswith("<!DOCTYPE html>") and text.rstrip().endswith("</html>")
    parser = _Tags()
    parser.feed(text)
    names = [t for t, _ in parser.tags]
    assert "svg" in names and "table" in names and "script" not in names
    assert not any(a.get("src") or a.get("href") for _, a in parser.tags)  # nothing external
    svg = ElementTree.fromstring(text[text.index("<svg"):text.index("</svg>") + len("</svg>")])
    ns = "{http://www.w3.org/2000/svg}"
    curves = svg.findall(f"{ns}path")
    assert len(curves) == 2  # target and ideal
    titles = [t.text for t in svg.iter(f"{ns}title")]
    assert any(t.startswith("layer3.1.bn2 (BatchNorm2d) target") for t in titles)
    assert any("ideal" in t for t in titles)


def test_html_report_renders_in_chromium(resnet_fault_fp16, tmp_path):
    """A real browser (Debian's chromium, headless, no network) draws the page: a screenshot and the
    rendered DOM with both curves, finite coordinates and the table."""
    import re
    import shutil
    import subprocess
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    assert chromium, "chromium is missing (scripts/setup.sh installs Debian's chromium)"
    page = resnet_fault_fp16.write_html(str(tmp_path / "report.html"))
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
             "--user-data-dir=" + str(tmp_path / "profile")]
    env = dict(os.environ, HOME=str(tmp_path))
    png = tmp_path / "report.png"
    shot = subprocess.run([chromium, *flags, "--window-size=1280,2000", "--screenshot=" + str(png), "file://" + page],
                          capture_output=True, text=True, timeout=120, env=env)
    assert shot.returncode == 0 and png.stat().st_size > 20000, shot.stderr[-500:]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    dom = subprocess.run([chromium, *flags, "--dump-dom", "file://" + page], capture_output=True, text=True,
                         timeout=120, env=env).stdout
    svg = re.search(r"<svg.*?</svg>", dom, re.S).group(0)
    assert len(re.findall(r"<path ", svg)) == 2
    assert not re.search(r'="[^"]*(nan|inf)', svg, re.I)
    assert "layer3.1.bn2" in dom and "<table" in dom
