"""ferry.torch's use of the ferry binding: importing it with a clear error, precision names, the
target's default precision, and feeding a session from a module's example inputs."""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

PRECISIONS = ("fp32", "fp16", "bf16", "mixed-fp16", "mixed-bf16")
_ALIASES = {"mixed": "mixed-fp16", "float32": "fp32", "float16": "fp16", "half": "fp16", "bfloat16": "bf16"}


def binding():
    """The ``ferry`` package with its extension module; ImportError saying how to build it otherwise."""
    try:
        import ferry

        ferry.Session  # noqa: B018  (the extension module's classes are what is needed)
    except (ImportError, AttributeError) as e:
        raise ImportError(
            "ferry.torch needs ferry's extension module (ferry._ferry) to run models: build it with "
            f"scripts/setup.sh, or put the build tree's python/ folder on PYTHONPATH ({e})") from e
    return ferry


def normalize_precision(precision: Optional[str]) -> Optional[str]:
    """"mixed" -> "mixed-fp16", "mixed_bf16" -> "mixed-bf16"; None stays None; others raise ValueError."""
    if precision is None:
        return None
    p = str(precision).strip().lower().replace("_", "-")
    p = _ALIASES.get(p, p)
    if p not in PRECISIONS:
        raise ValueError(f"precision {precision!r}: expected one of {', '.join(PRECISIONS)} (or 'mixed')")
    return p


def target_precision(model_path: str, target: Optional[str], precision: Optional[str]) -> str:
    """The precision a session runs in: the one asked for, else the target's default as its profile
    gives it (`ferry check`'s default_precision: fp16 for the Ascend targets, fp32 for cpu)."""
    asked = normalize_precision(precision)
    if asked:
        return asked
    if not target or target == "cpu":
        return "fp32"
    ferry = binding()
    default = ferry.check(model_path, target=target).to_dict().get("default_precision") or "fp32"
    return normalize_precision(default) or "fp32"


def is_low(precision: str) -> bool:
    return precision != "fp32"


def ideal_dtype(precision: str) -> Tuple[Any, bool]:
    """(torch dtype, autocast) of the ideal eager run for a precision: fp16/bf16 cast the module,
    the mixed modes run it under CPU autocast; (None, False) for fp32."""
    import torch

    if precision == "fp32":
        return None, False
    dtype = torch.bfloat16 if "bf16" in precision else torch.float16
    return dtype, precision.startswith("mixed")


def input_arrays(args: tuple) -> List[np.ndarray]:
    """The tensors among a module's arguments (nested ones too), as numpy, in the order the exporter
    makes them graph inputs. Non-tensor arguments are constants of the exported graph."""
    from .golden import all_tensors

    return [t.detach().cpu().numpy() for t in all_tensors(list(args))]


def feeds_for(session, arrays: Sequence[np.ndarray]) -> Dict[str, np.ndarray]:
    """{input name: array} for a session, matched by position, each cast to the input's dtype."""
    inputs = session.get_inputs()
    if len(inputs) != len(arrays):
        raise ValueError(f"the exported model takes {len(inputs)} input(s) "
                         f"({', '.join(i.name for i in inputs)}) but {len(arrays)} tensor(s) were given")
    feeds = {}
    for info, array in zip(inputs, arrays):
        want = getattr(info, "dtype", None)
        feeds[info.name] = np.ascontiguousarray(array.astype(want, copy=False) if want else array)
    return feeds


def open_session(path: str, target: Optional[str], precision: Optional[str], keep_fp32: Optional[Sequence[str]] = None,
                 opt_level: int = 2, threads: Optional[int] = None, **options: Any):
    """A ferry.Session on ``path`` with these options (None values left to ferry's defaults)."""
    ferry = binding()
    return ferry.Session(path, target=target, precision=precision, keep_fp32=list(keep_fp32) if keep_fp32 else None,
                         opt_level=opt_level, threads=threads, **options)
