"""Error metrics of one tensor against its golden, with the CLI's definitions and thresholds
(src/tools/compare/metrics.h), so ``ferry compare`` and ``ferry.torch.compare`` agree on a row:

    cosine      g.c / (|g| |c|)           (1 when both are all zero, 0 when only one is)
    max_abs     max |d|                   rmse = sqrt(mean d^2)        (d = c - g)
    max_rel     max |d| / max(|g|, 1e-7)
    rel_euclid  |d| / |g|                 (0 when d = 0; inf when g = 0 and d != 0)
    allclose    every |d| <= atol + rtol |g|   (NumPy's rule)
    pass        cosine >= cosine_min and rel_euclid <= rel_euclid_max and no value that is finite
                on one side and not on the other (defaults 0.99 and 0.05, msit's "normal")

Sums run over the elements finite on both sides, in float64, a chunk at a time, so a memory-mapped
golden is read once and never copied whole. ``allclose`` is reported but is not part of ``pass``
unless asked (``strict``): a low-precision run fails NumPy's elementwise rule near zero by design.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Dict, Optional

import numpy as np

_CHUNK = 1 << 20  # elements per step


@dataclass
class Thresholds:
    cosine_min: float = 0.99
    rel_euclid_max: float = 0.05
    rtol: float = 1e-3
    atol: float = 1e-4
    strict: bool = False  # also require allclose


@dataclass
class TensorMetrics:
    count: int
    cosine: float
    max_abs: float
    max_rel: float
    rmse: float
    rel_euclid: float
    allclose: bool
    nonfinite_mismatch: int  # elements finite on one side only
    passed: bool

    @property
    def error(self) -> float:
        """The one number the report plots and ranks by: rel_euclid, infinite when values are
        finite on one side only."""
        return math.inf if self.nonfinite_mismatch else self.rel_euclid

    def to_dict(self) -> Dict[str, Any]:
        d = asdict(self)
        return {k: (_json_float(v) if isinstance(v, float) else v) for k, v in d.items()}


def _json_float(v: float) -> Any:
    """JSON has no inf/nan: they are written as strings."""
    return v if math.isfinite(v) else str(v)


class _Sums:
    def __init__(self) -> None:
        self.gg = self.cc = self.gc = self.dd = 0.0
        self.max_abs = self.max_rel = 0.0
        self.count = self.mismatch = 0
        self.allclose = True

    def add(self, g: np.ndarray, c: np.ndarray, rtol: float, atol: float) -> None:
        g = g.astype(np.float64, copy=False)
        c = c.astype(np.float64, copy=False)
        fg, fc = np.isfinite(g), np.isfinite(c)
        self.mismatch += int(np.count_nonzero(fg != fc))
        both = fg & fc
        if not both.all():
            # Non-finite on both sides counts as agreeing only when the values are the same (inf == inf).
            same = ~both & ~(fg | fc) & ((g == c) | (np.isnan(g) & np.isnan(c)))
            self.allclose = self.allclose and bool(np.all(both | same))
            g, c = g[both], c[both]
        self.count += g.size
        if g.size == 0:
            return
        d = c - g
        ad = np.abs(d)
        self.gg += float(g @ g)
        self.cc += float(c @ c)
        self.gc += float(g @ c)
        self.dd += float(d @ d)
        self.max_abs = max(self.max_abs, float(ad.max()))
        self.max_rel = max(self.max_rel, float((ad / np.maximum(np.abs(g), 1e-7)).max()))
        self.allclose = self.allclose and bool(np.all(ad <= atol + rtol * np.abs(g)))


def _cosine(s: _Sums) -> float:
    if s.gg == 0 and s.cc == 0:
        return 1.0
    if s.gg == 0 or s.cc == 0:
        return 0.0
    return s.gc / math.sqrt(s.gg * s.cc)


def _rel_euclid(s: _Sums) -> float:
    if s.dd == 0:
        return 0.0
    return math.inf if s.gg == 0 else math.sqrt(s.dd / s.gg)


def compute_metrics(golden: np.ndarray, candidate: np.ndarray, th: Optional[Thresholds] = None) -> TensorMetrics:
    """Metrics of ``candidate`` against ``golden``. Arrays of different shapes but the same number
    of elements are compared flat (an ONNX Reshape the module did not have); a different number of
    elements raises ValueError naming both shapes."""
    th = th or Thresholds()
    if golden.size != candidate.size:
        raise ValueError(f"shapes differ: golden {tuple(golden.shape)}, candidate {tuple(candidate.shape)}")
    g, c = golden.reshape(-1), np.asarray(candidate).reshape(-1)
    sums = _Sums()
    for start in range(0, g.size, _CHUNK):
        sums.add(np.asarray(g[start:start + _CHUNK]), c[start:start + _CHUNK], th.rtol, th.atol)
    cosine, rel = _cosine(sums), _rel_euclid(sums)
    passed = (sums.mismatch == 0 and cosine >= th.cosine_min and rel <= th.rel_euclid_max
              and (sums.allclose or not th.strict))
    return TensorMetrics(count=int(g.size), cosine=cosine, max_abs=sums.max_abs, max_rel=sums.max_rel,
                         rmse=math.sqrt(sums.dd / sums.count) if sums.count else 0.0, rel_euclid=rel,
                         allclose=sums.allclose and sums.mismatch == 0, nonfinite_mismatch=sums.mismatch,
                         passed=passed)


def is_classifier_output(array: np.ndarray) -> bool:
    """[N, C] (or [C]) floating logits with C >= 2: where top-k agreement means something."""
    return array.dtype.kind == "f" and array.ndim in (1, 2) and array.shape[-1] >= 2


def topk_agreement(golden: np.ndarray, candidate: np.ndarray, k: int) -> Optional[float]:
    """The fraction of rows whose golden argmax is among the candidate's k largest (k=1: the same
    argmax); None when the output is not classifier-shaped or has fewer than k classes."""
    if not is_classifier_output(golden) or golden.shape != candidate.shape or golden.shape[-1] < k:
        return None
    g = np.asarray(golden).reshape(-1, golden.shape[-1])
    c = np.nan_to_num(np.asarray(candidate, dtype=np.float64).reshape(-1, golden.shape[-1]), nan=-np.inf)
    best = g.argmax(axis=1)
    top = np.argsort(-c, axis=1, kind="stable")[:, :k]
    return float(np.mean([best[i] in top[i] for i in range(g.shape[0])]))
