"""ferry.torch.check: `ferry check` findings grouped by module, with the aten op and source line."""
import inspect
import json
import os

import pytest

torch = pytest.importorskip("torch", reason="ferry.torch's tests need PyTorch in the venv (scripts/setup.sh)")

import ferry.torch as ft  # noqa: E402

nn = torch.nn


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.post = nn.Fold((3, 3), (2, 2))  # ONNX Col2Im: not in ascend310p's operator list
        self.act = nn.Mish()  # ONNX Mish: rewritten for ascend310p

    def forward(self, x):
        return self.post(self.act(self.fc(x)).reshape(1, 4, 4))


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Linear(4, 4)
        self.head = Head()

    def forward(self, x):
        return self.head(self.stem(x))


# The line of Head.forward that calls self.post: where the user's code meets the Col2Im.
POST_LINE = inspect.getsourcelines(Head.forward)[1] + 1


@pytest.fixture(scope="module")
def ascend_report():
    torch.manual_seed(0)
    return ft.check(Model(), torch.randn(4, 4), target="ascend310p")


def test_findings_are_grouped_by_module(ascend_report):
    rep = ascend_report
    assert [m.module for m in rep.modules] == ["head.act", "head.post"]  # execution order
    (fold,) = rep.by_module("head.post")
    assert fold.placement == "host fallback" and fold.op == "Col2Im" and fold.aten == "aten::col2im"
    assert fold.module_class == "Fold"
    assert fold.source == f"{os.path.abspath(__file__)}:{POST_LINE}"
    (mish,) = rep.by_module("head.act")
    assert mish.placement == "rewritten" and mish.aten == "aten::mish"
    assert rep.by_module("stem") == [] and rep.counts["host"] == 1 and rep.counts["rewritten"] == 1


def test_messages_speak_module_terms(ascend_report):
    msg = ascend_report.by_module("head.post")[0].message()
    assert msg.startswith(f"`aten::col2im` in `head.post` (Col2Im, test_torch_check.py:{POST_LINE}) "
                          "falls back to the host: ")
    assert "Col2Im" in msg.split(": ", 1)[1]
    text = ascend_report.format()
    assert "head.post (Fold):" in text and "1 device/host border(s)" in text


def test_report_keeps_the_cli_json(ascend_report):
    data = json.loads(ascend_report.to_json())
    assert data["check"]["target"] == "ascend310p" and data["check"]["default_precision"] == "fp16"
    assert {n["name"] for n in data["check"]["nodes"]} >= {f.node for f in ascend_report.findings}
    assert data["modules"][1]["nodes"][0]["aten"] == "aten::col2im" and data["messages"]


def test_cpu_runs_everything(tmp_path):
    torch.manual_seed(0)
    rep = ft.check(Model(), torch.randn(4, 4), target="cpu", workdir=str(tmp_path))
    assert rep.modules == [] and rep.counts["host"] == 0
    assert rep.model_path == str(tmp_path / "model.onnx") and os.path.exists(rep.model_path)
    assert "every module runs on cpu's device" in rep.format()
