"""Typed reports of ferry.check / compile / compare / bench.

Each wraps the JSON the CLI writes for that command (``ferry check --json`` ...): ``to_dict()`` returns
it unchanged and ``to_json()`` serializes it, so scripts can move between the CLI and Python; the
properties name the figures people look at first. Schemas: docs/cli.md, docs/compare.md.
"""
from __future__ import annotations

import copy
import json
from typing import Any, Dict, List, Optional


class Report:
    """A ferry report: the CLI's JSON as ``to_dict()``, with typed properties on top."""

    def __init__(self, data: Dict[str, Any]) -> None:
        self._data = data

    def to_dict(self) -> Dict[str, Any]:
        """The report as the CLI's ``--json`` writes it (a deep copy)."""
        return copy.deepcopy(self._data)

    def to_json(self, indent: Optional[int] = 2) -> str:
        """The report as JSON text."""
        return json.dumps(self._data, indent=indent)

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __repr__(self) -> str:
        keys = ", ".join(list(self._data)[:6])
        return f"<{type(self).__name__} {keys} ...>"


class TextReport(Report):
    """A report that also carries the CLI's printed text, which ``str()`` returns."""

    def __init__(self, data: Dict[str, Any], text: str = "") -> None:
        super().__init__(data)
        self._text = text

    def __str__(self) -> str:
        return self._text


class CheckReport(Report):
    """``ferry check``: where each node runs on the target and why."""

    @property
    def target(self) -> str:
        return self._data["target"]

    @property
    def rows(self) -> List[Dict[str, Any]]:
        """One per ONNX node: name, op, domain, opset, placement, reason, rule."""
        return self._data["nodes"]

    @property
    def findings(self) -> List[str]:
        return self._data.get("findings", [])

    @property
    def counts(self) -> Dict[str, int]:
        """Nodes on the device, rewritten, on the host, unsupported."""
        return {k: self._data["summary"][k] for k in ("device", "rewritten", "host", "unsupported")}

    def by_placement(self, placement: str) -> List[Dict[str, Any]]:
        """The rows placed so ("device", "rewritten", "host", "unsupported")."""
        return [r for r in self.rows if r["placement"] == placement]


class CompileReport(Report):
    """``ferry compile``: the .ferry file written, what the passes did, precision, weights and time."""

    @property
    def output(self) -> str:
        return self._data["output"]

    @property
    def nodes_before(self) -> int:
        return self._data["nodes_before"]

    @property
    def nodes_after(self) -> int:
        return self._data["nodes_after"]


class CompareReport(Report):
    """``ferry compare``: per output (and per layer with ``layerwise``) metrics against a golden."""

    @property
    def passed(self) -> bool:
        """Every output passes the thresholds."""
        return bool(self._data["pass"])

    @property
    def outputs(self) -> List[Dict[str, Any]]:
        return self._data["outputs"]

    @property
    def layers(self) -> List[Dict[str, Any]]:
        return self._data.get("layers", [])

    @property
    def first_divergent_node(self) -> Optional[str]:
        """The ONNX node whose output diverges first (layerwise), or None."""
        return self._data.get("first_divergent_node")


class BenchReport(Report):
    """``ferry bench``: latency statistics per batch, and peers' figures and ratios when asked."""

    @property
    def results(self) -> List[Dict[str, Any]]:
        return self._data["results"]

    @property
    def median_ms(self) -> float:
        """Median latency of the first batch, in milliseconds."""
        return self._data["results"][0]["latency_ms"]["median"]


class EvaluateReport(TextReport):
    """``ferry evaluate``: per-output metric percentiles over the data set, agreement, accuracy, worst cases.
    ``str()`` is the CLI's summary; ``to_dict()`` its report.json (schema ferry.evaluate/1, docs/evaluate.md)."""

    @property
    def samples(self) -> int:
        return self._data["result"]["samples"]

    @property
    def outputs(self) -> List[Dict[str, Any]]:
        """One per model output: samples, passed, cosine/max_abs/max_rel/rel_euclid percentiles, agreement."""
        return self._data["result"]["outputs"]

    @property
    def top1_agreement(self) -> Optional[float]:
        """Top-1 agreement of the first classifier output (None without one)."""
        for o in self.outputs:
            if o.get("top1_agreement") is not None:
                return o["top1_agreement"]
        return None

    @property
    def accuracy(self) -> Optional[Dict[str, Any]]:
        """Against the labels: golden and target top-1/top-5 accuracy (None without labels)."""
        return self._data["result"].get("labels")

    @property
    def worst(self) -> List[Dict[str, Any]]:
        """The worst samples, worst first: id, path, metrics per output, replay (.npz) and replay_command."""
        return self._data["result"]["worst"]

    @property
    def timing(self) -> Dict[str, float]:
        return self._data["timing"]

    @property
    def html(self) -> Optional[str]:
        """report.html next to the samples file (None for a merged report written nowhere)."""
        f = self._data.get("samples_file")
        return f and f.rsplit("/", 1)[0] + "/report.html"
