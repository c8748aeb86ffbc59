"""``compare``: run the user's nn.Module through ferry for a target and say, in module paths, where and
why its numbers leave the eager golden.

Steps, each streaming so that no run holds more than one activation besides its own working set:
  1. export the module with its module map (export.py);
  2. golden: the eager module in fp32, every module's output written to disk as it returns (golden.py);
  3. ideal: the eager module in the target's low precision, each module's output compared against
     the golden as it returns and dropped (skipped at fp32);
  4. target: ferry runs the exported model under the target's precision and hands every ONNX tensor
     to a callback as it is computed; a tensor that is a module's boundary is compared against that
     module's golden there and dropped;
  5. rows in execution order, the first divergent module, the three-way split and the keep-fp32
     proposal (_analysis.py).

ferry runs at opt level 1 by default: constant folding and cleanup, no fusion, so every module's
boundary tensor exists. At opt level 2 (what ``ferry compile`` deploys) fusions hide tensors inside
the fused kernels, and modules whose boundary is hidden are reported as "not observed".
"""
from __future__ import annotations

import contextlib
import os
import shutil
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from . import _runtime
from ._analysis import keep_proposal, label_rows, mark_origins
from ._workdir import work_folder
from .compare_report import (ABSORBED, FAIL, NOT_OBSERVED, NOT_RECORDED, PASS, SHAPE_MISMATCH, ModuleCompareReport,
                             ModuleRow, OutputRow)
from .export import as_args, export
from .golden import ActivationStore, Recording, record_module_outputs
from .metrics import TensorMetrics, Thresholds, compute_metrics, topk_agreement
from .module_map import ModuleMap

Perturb = Callable[[Any, ModuleMap], Any]


def _apply_perturb(path: str, mm: ModuleMap, perturb: Perturb) -> None:
    """Lets ``perturb(model, module_map)`` edit the exported model (a planted fault) and saves it."""
    import onnx

    model = onnx.load(path)
    changed = perturb(model, mm)
    onnx.save(changed if changed is not None else model, path)


def _graph(path: str):
    import onnx

    return onnx.load(path, load_external_data=False).graph


def _keep_modules(mm: ModuleMap, entries: Sequence[str]) -> List[str]:
    """Module paths for a keep list of module paths and node names (the eager ideal keeps modules)."""
    paths: List[str] = []
    for e in entries:
        path = mm.module_of_node(e) if mm.node_info(e) is not None else e
        if path is not None and path not in paths:
            paths.append(path)
    return paths


@dataclass
class _Ideal:
    precision: Optional[str] = None
    metrics: Dict[str, TensorMetrics] = field(default_factory=dict)
    error: Optional[str] = None
    outputs: List[np.ndarray] = field(default_factory=list)


def _ideal_run(module, args: tuple, mm: ModuleMap, golden: ActivationStore, precision: str,
               keep_modules: List[str], th: Thresholds) -> _Ideal:
    """Eager PyTorch in the low precision; each module's output compared to the golden as it returns."""
    dtype, autocast = _runtime.ideal_dtype(precision)
    label = f"{precision} (" + ("CPU autocast)" if autocast else "module and inputs cast)")
    metrics: Dict[str, TensorMetrics] = {}

    def sink(path: str, array: np.ndarray) -> None:
        if path in golden:
            with contextlib.suppress(ValueError):  # an earlier call of a shared module: shapes may differ
                metrics[path] = compute_metrics(golden.load(path), array, th)

    try:
        rec = record_module_outputs(module, args, modules=mm.modules, dtype=dtype, autocast=autocast,
                                    keep_fp32=keep_modules, sink=sink)
    except (RuntimeError, TypeError, NotImplementedError) as e:
        # An op without a kernel in that precision on the CPU: say so rather than guess.
        return _Ideal(label, {}, f"{type(e).__name__}: {str(e).splitlines()[0]}", [])
    return _Ideal(label, metrics, None, rec.outputs)


class _Observer:
    """The target run's callback: compares a module's boundary (or what it was passed through from)
    against the golden as it arrives. The module's other exits are compared too but only used when
    the boundary holds a different number of elements than the golden (a tuple output whose first
    tensor is not the last computed); a boundary ferry fused away leaves the module not observed,
    rather than compared against some other tensor."""

    def __init__(self, mm: ModuleMap, golden: ActivationStore, th: Thresholds) -> None:
        self._golden, self._th = golden, th
        self._by_tensor: Dict[str, List[Tuple[str, int, bool]]] = {}  # tensor -> [(module, rank, primary)]
        for path in mm.modules:
            for rank, tensor in enumerate(mm.boundary_candidates(path)):
                self._by_tensor.setdefault(tensor, []).append((path, rank, True))
            for rank, tensor in enumerate(mm.other_exits(path)):
                self._by_tensor.setdefault(tensor, []).append((path, rank, False))
        # path -> (rank, tensor, metrics or None when the sizes differ, why not)
        self._primary: Dict[str, Tuple[int, str, Optional[TensorMetrics], str]] = {}
        self._fallback: Dict[str, Tuple[int, str, TensorMetrics]] = {}

    def __call__(self, name: str, array: np.ndarray) -> None:
        for path, rank, primary in self._by_tensor.get(name, ()):
            if path not in self._golden:
                continue
            best = (self._primary if primary else self._fallback).get(path)
            if best is not None and best[2] is not None and best[0] <= rank:
                continue
            try:
                metrics = compute_metrics(self._golden.load(path), array, self._th)
            except ValueError as e:
                if primary and best is None:
                    self._primary[path] = (rank, name, None, str(e))
                continue
            if primary:
                self._primary[path] = (rank, name, metrics, "")
            else:
                self._fallback[path] = (rank, name, metrics)

    def result(self, path: str) -> Optional[Tuple[str, Optional[TensorMetrics], str]]:
        """(tensor, metrics or None, why not) of what was compared for the module; None: not seen."""
        primary = self._primary.get(path)
        if primary is None:
            return None
        if primary[2] is None and path in self._fallback:
            _, tensor, metrics = self._fallback[path]
            return tensor, metrics, ""
        return primary[1], primary[2], primary[3]


def _target_run(path: str, mm: ModuleMap, golden: ActivationStore, arrays: List[np.ndarray], th: Thresholds,
                session_options: Dict[str, Any]) -> Tuple[_Observer, Any, List[np.ndarray]]:
    session = _runtime.open_session(path, **session_options)
    observer = _Observer(mm, golden, th)
    outputs = session.run_layers(_runtime.feeds_for(session, arrays), observer)
    return observer, session, outputs


def _row(path: str, mm: ModuleMap, golden: Recording, ideal: _Ideal, observer: _Observer, opt_level: int) -> ModuleRow:
    row = ModuleRow(path=path, cls=mm.module_class(path) or "", status=NOT_OBSERVED,
                    calls=golden.calls.get(path, 0), source=mm.module_source(path))
    seen = observer.result(path)
    if golden.store is None or path not in golden.store:
        row.status, row.note = NOT_RECORDED, "the eager module gave no tensor for it"
    elif mm.boundary_tensor(path) is None:
        row.note = "no output tensor in the exported graph"
    elif seen is None:
        row.note = f"its output tensor is inside a kernel ferry fused (opt level {opt_level})"
    elif seen[1] is None:
        row.status, row.tensor, row.note = SHAPE_MISMATCH, seen[0], seen[2]
    else:
        row.tensor, row.target = seen[0], seen[1]
        row.status = PASS if seen[1].passed else FAIL
        row.ideal = ideal.metrics.get(path)
    return row


def _rows(module, mm: ModuleMap, golden: Recording, ideal: _Ideal, observer: _Observer,
          opt_level: int) -> List[ModuleRow]:
    """A row per module in the eager execution order; modules the exporter folded into another
    module's node come just before that module."""
    in_map = set(mm.modules)
    order = [p for p in golden.order if p in in_map] + [p for p in mm.modules if p not in set(golden.order)]
    absorbed: Dict[str, List[str]] = {}
    for path in golden.order:
        into = mm.absorbed_into(path)
        if into is not None and path not in in_map:
            absorbed.setdefault(into, []).append(path)
    rows: List[ModuleRow] = []
    for path in order:
        for folded in absorbed.get(path, []):
            rows.append(ModuleRow(path=folded, cls=type(module.get_submodule(folded)).__name__, status=ABSORBED,
                                  calls=golden.calls.get(folded, 0), absorbed_into=path,
                                  note=f"folded into {path or '(root)'}'s node by the exporter: compared there"))
        rows.append(_row(path, mm, golden, ideal, observer, opt_level))
    return rows


def _output_rows(names: List[str], outputs: List[np.ndarray], golden: Recording, ideal: _Ideal,
                 th: Thresholds) -> List[OutputRow]:
    rows = []
    for i, (name, out) in enumerate(zip(names, outputs)):
        if i >= len(golden.outputs) or not isinstance(out, np.ndarray):
            rows.append(OutputRow(name=name, target=None))
            continue
        g = golden.outputs[i]
        try:
            row = OutputRow(name=name, target=compute_metrics(g, out, th),
                            top1=topk_agreement(g, out, 1), top5=topk_agreement(g, out, 5))
        except ValueError:
            row = OutputRow(name=name, target=None)
        if i < len(ideal.outputs) and ideal.outputs[i].size == g.size:
            row.ideal = compute_metrics(g, ideal.outputs[i], th)
            row.ideal_top1 = topk_agreement(g, ideal.outputs[i].reshape(g.shape), 1)
            row.ideal_top5 = topk_agreement(g, ideal.outputs[i].reshape(g.shape), 5)
        rows.append(row)
    return rows


def compare(module, example_inputs: Any, target: str = "cpu", precision: Optional[str] = None,
            rtol: float = 1e-3, atol: float = 1e-4, keep_fp32: Optional[Sequence[str]] = None,
            cosine_min: float = 0.99, rel_euclid_max: float = 0.05, strict: bool = False,
            workdir: Optional[str] = None, opt_level: int = 1, ideal: bool = True, dynamo: bool = True,
            opset: Optional[int] = None, perturb: Optional[Perturb] = None,
            threads: Optional[int] = None, repro: Optional[str] = None) -> ModuleCompareReport:
    """Compares ferry's run of ``module`` on ``target`` against the module's own eager outputs, module
    by module (the module docstring gives the steps).

    Args:
        module: the nn.Module; example_inputs: a tensor or a tuple of positional arguments.
        target: "cpu", "ascend310p", "ascend910b", ... (ferry's targets).
        precision: "fp32", "fp16", "bf16", "mixed-fp16" ("mixed"), "mixed-bf16"; default the target's
            (fp16 on the Ascend targets).
        rtol, atol: the allclose column (and the pass rule with ``strict``).
        keep_fp32: module paths (or ONNX node names) to keep in fp32: ferry keeps their nodes, the
            ideal run keeps the modules; a report's ``keep_fp32_modules`` goes here as is.
        cosine_min, rel_euclid_max: the pass rule (metrics.py).
        workdir: keep the exported model and the golden there (default: a temporary folder).
        opt_level: ferry's optimization level for the run (1 keeps every module boundary).
        ideal: run the eager low-precision reference (needed for the inherent/conversion labels).
        dynamo, opset: export options (export.py).
        perturb: ``perturb(onnx_model, module_map)`` edits the exported model before ferry runs it
            (plants a fault: faults.perturb_module_weights).
        threads: ferry's kernel threads.
        repro: a folder for the evidence a vendor needs: the first divergent ONNX node cut out as a
            standalone .onnx with its inputs, golden output and the ``ferry compare`` command that
            reproduces it (``ferry compare --repro``; the golden is the unperturbed export under
            ``perturb``, else the fp32 reference run of the same model).

    Returns:
        ModuleCompareReport.
    """
    th = Thresholds(cosine_min=cosine_min, rel_euclid_max=rel_euclid_max, rtol=rtol, atol=atol, strict=strict)
    args = as_args(example_inputs)
    with work_folder(workdir, "ferry-compare-") as work:
        exp = export(module, args, os.path.join(work, "model.onnx"), dynamo=dynamo, opset=opset)
        mm = exp.module_map
        clean = None
        if perturb is not None:
            clean = os.path.join(work, "unperturbed.onnx")
            shutil.copyfile(exp.path, clean)
            _apply_perturb(exp.path, mm, perturb)
        prec = _runtime.target_precision(exp.path, target, precision)
        keep_nodes = mm.node_names_for(keep_fp32 or [])
        store = ActivationStore(os.path.join(work, "golden"))
        golden = record_module_outputs(module, args, modules=mm.modules, sink=store)
        ideal_run = (_ideal_run(module, args, mm, store, prec, _keep_modules(mm, keep_fp32 or []), th)
                     if ideal and _runtime.is_low(prec) else _Ideal())
        observer, session, outputs = _target_run(
            exp.path, mm, store, _runtime.input_arrays(args), th,
            dict(target=target, precision=prec, keep_fp32=keep_nodes, opt_level=opt_level, threads=threads))
        rows = _rows(module, mm, golden, ideal_run, observer, opt_level)
        label_rows(rows, ideal_available=ideal_run.error is None and ideal_run.precision is not None)
        mark_origins(_graph(exp.path), mm, rows)
        modules, nodes = keep_proposal(mm, rows)
        info = session.info
        bundle = None
        if repro is not None:
            bundle = _repro(exp.path, clean, session, args, target, prec, keep_nodes, opt_level, th, repro)
        return ModuleCompareReport(
            model=type(module).__name__, target=target, target_label=info.get("target", ""), precision=prec,
            ideal_precision=ideal_run.precision, ideal_error=ideal_run.error, thresholds=th,
            exporter=exp.exporter, opt_level=opt_level, modules=rows,
            outputs=_output_rows([o.name for o in session.get_outputs()], outputs, golden, ideal_run, th),
            keep_fp32=keep_nodes, keep_fp32_proposal=nodes, keep_fp32_modules=modules,
            unmatched_keep_fp32=list(info.get("unmatched_keep_fp32", [])), repro=bundle)


def _repro(model: str, clean: Optional[str], session, args, target, precision, keep_nodes, opt_level, th,
           folder: str) -> Optional[dict]:
    """``ferry compare --repro`` on the exported model: node-level evidence for the first divergence."""
    from ..tools import compare as ferry_compare

    feeds = _runtime.feeds_for(session, _runtime.input_arrays(args))
    rep = ferry_compare(model, feeds, golden=clean or "reference", target=target, precision=precision,
                        keep_fp32=keep_nodes or None, opt_level=opt_level, cosine=th.cosine_min,
                        rel_euclid=th.rel_euclid_max, repro=folder)
    return rep.to_dict().get("repro")
