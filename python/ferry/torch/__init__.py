"""ferry.torch: check, compare and run an nn.Module on a target, in the module's own terms.

    import ferry.torch
    report = ferry.torch.check(model, example, target="ascend310p")      # findings by module path
    report = ferry.torch.compare(model, example, target="ascend310p")    # per-module error vs eager
    print(report.first_divergent, report.keep_fp32_proposal)
    fast = ferry.torch.to_target(model, example, target="ascend310p")    # model.to('npu'), for ferry
    out = fast(example)
    ferry.torch.audit(model, "checkpoint.pth")                           # keys that would not load, and why

Everything starts from ``export``: the module to ONNX with a *module map* in the model's metadata
(module path, class, aten op and source line of every node; state_dict key of every weight), so
ferry's findings come back as ``layer3.1.conv2`` rather than ``/layer3/layer3.1/conv2/Conv``.
docs/python.md.
"""
try:
    import torch as _torch  # noqa: F401
except ImportError as _e:  # pragma: no cover - depends on the environment
    raise ImportError(
        "ferry.torch needs PyTorch, which is not installed in this Python "
        "(pip install torch; the project venv gets it from scripts/setup.sh). "
        "The rest of ferry (ferry.Session, ferry.check, ...) works without it.") from _e

from .audit import audit, refit
from .check import ModuleCheckReport, ModuleFindings, NodeFinding, check
from .compare import compare
from .compare_report import ModuleCompareReport, ModuleRow, OutputRow
from .export import ExportResult, export
from .faults import perturb_module_weights, planted_fault
from .golden import ActivationStore, Recording, record_module_outputs
from .metrics import TensorMetrics, Thresholds
from .module_map import ModuleMap, load_module_map
from .to_target import TargetModule, to_target

__all__ = [
    "audit", "refit",
    "export", "ExportResult", "ModuleMap", "load_module_map",
    "check", "ModuleCheckReport", "ModuleFindings", "NodeFinding",
    "compare", "ModuleCompareReport", "ModuleRow", "OutputRow", "TensorMetrics", "Thresholds",
    "to_target", "TargetModule",
    "record_module_outputs", "ActivationStore", "Recording",
    "planted_fault", "perturb_module_weights",
]
