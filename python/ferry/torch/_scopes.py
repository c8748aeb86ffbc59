"""Where an ONNX node came from in the user's nn.Module, as each exporter records it.

The dynamo exporter (torch 2.x, ``torch.onnx.export(..., dynamo=True)``) writes per-node
``metadata_props``; the values are Python list reprs, e.g.

    pkg.torch.onnx.name_scopes     "['', 'layer1', 'layer1.0', 'layer1.0.bn1', '_native_batch_norm_1']"
    pkg.torch.onnx.class_hierarchy "['torchvision.models.resnet.ResNet', ..., 'aten.relu.default']"
    pkg.torch.onnx.stack_trace     'File "/x/model.py", line 10, in forward\\n    y = self.b(x)\\n  File ...'

The two lists run in parallel: every entry but the last is a module (path, class), the last is the FX
node (its name, and the aten op it called). A module called twice keeps one path (some torch versions
add "@1"; it is stripped). The TorchScript exporter (torch 1.13, or ``dynamo=False``) writes none of
this; its node names carry the scope instead ("/layer3/layer3.1/conv2/Conv", "/fc_1/MatMul" for a
second call of ``fc``), resolved here against the module itself.
"""
from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass, field
from typing import List, Optional, Sequence

NAME_SCOPES = "pkg.torch.onnx.name_scopes"
CLASS_HIERARCHY = "pkg.torch.onnx.class_hierarchy"
STACK_TRACE = "pkg.torch.onnx.stack_trace"
REWRITE_RULE = "pkg.onnxscript.rewriter.rule_name"

_CALL_SUFFIX = re.compile(r"@\d+$")  # "fc@1": the second call of fc
_TS_CALL_SUFFIX = re.compile(r"_\d+$")  # TorchScript's "fc_1" for the same
_FRAME = re.compile(r'File "([^"]+)", line (\d+)')


@dataclass
class NodeScope:
    """The module a node belongs to: its path ("" for the root), the path's ancestors' classes, and
    the aten op and user source line where the exporter recorded them."""

    module: str
    classes: List[str] = field(default_factory=list)  # qualified class per module on the path, root first
    paths: List[str] = field(default_factory=list)  # the module paths on the way, root ("") first
    op: Optional[str] = None  # "aten.relu.default"
    source: Optional[str] = None  # "/path/model.py:88"
    rewrite: Optional[str] = None  # onnxscript rewrite rules that made the node ("FuseBatchNormIntoConv")


def parse_list(value: str) -> List[str]:
    """A metadata list value ("['', 'fc', 'linear']") as strings. Python's literal syntax first; a
    value that is not one (a future format) is split on commas so that a map is still made."""
    value = value.strip()
    try:
        parsed = ast.literal_eval(value)
        if isinstance(parsed, (list, tuple)):
            return [str(v) for v in parsed]
    except (ValueError, SyntaxError):
        pass
    inner = value[1:-1] if value.startswith("[") and value.endswith("]") else value
    return [part.strip().strip("'\"") for part in inner.split(",")] if inner else []


def _torch_dirs() -> List[str]:
    """Folders whose frames are torch internals, never the user's line."""
    dirs = []
    for name in ("torch", "onnxscript", "functorch"):
        try:
            mod = __import__(name)
        except ImportError:
            continue
        dirs.append(os.path.dirname(os.path.abspath(mod.__file__)) + os.sep)
    return dirs


_INTERNAL_DIRS: Optional[List[str]] = None


def user_frame(stack_trace: str) -> Optional[str]:
    """The innermost frame of a stack trace outside torch itself, as "file:line"; None when every
    frame is torch's (an nn.Module of torch's own, called from torch's code)."""
    global _INTERNAL_DIRS
    if _INTERNAL_DIRS is None:
        _INTERNAL_DIRS = _torch_dirs()
    frames = _FRAME.findall(stack_trace or "")
    for path, line in reversed(frames):
        if not any(os.path.abspath(path).startswith(d) for d in _INTERNAL_DIRS):
            return f"{path}:{line}"
    return None


def dynamo_scope(props: dict) -> Optional[NodeScope]:
    """A node's scope from the dynamo exporter's metadata (``{key: value}`` of its metadata_props);
    None when the node has none (a constant or a node an optimizer pass created)."""
    if NAME_SCOPES not in props:
        return None
    scopes = [_CALL_SUFFIX.sub("", s) for s in parse_list(props[NAME_SCOPES])]
    classes = parse_list(props.get(CLASS_HIERARCHY, "[]"))
    op = None
    if len(classes) == len(scopes) and scopes:
        # The last pair is the FX node, not a module.
        op = classes[-1]
        scopes, classes = scopes[:-1], classes[:-1]
    elif len(scopes) > 1:
        scopes = scopes[:-1]
    paths = scopes or [""]
    return NodeScope(module=paths[-1], classes=classes, paths=paths, op=op,
                     source=user_frame(props.get(STACK_TRACE, "")), rewrite=props.get(REWRITE_RULE))


def _resolve_component(module, prefix: str, component: str) -> Optional[str]:
    """The module path a TorchScript scope component names under ``prefix``, or None. The component
    is the attribute name in the parent ("self_attn", "layers.0") or, for an nn.Sequential's child,
    its path from the Sequential's parent ("layer3.1", "downsample.0"); a repeated call adds "_N"
    ("relu_1"). The result must lie inside ``prefix``."""
    tries = [component]
    stripped = _TS_CALL_SUFFIX.sub("", component)
    if stripped != component:
        tries.append(stripped)
    bases = [prefix] + list(reversed(ancestors(prefix)))
    for name in tries:
        for base in bases:
            path = f"{base}.{name}" if base else name
            if path != prefix and within(path, prefix) and _has_submodule(module, path):
                return path
    return None


def _has_submodule(module, path: str) -> bool:
    try:
        module.get_submodule(path)
        return True
    except (AttributeError, IndexError, KeyError, TypeError):
        return False


def torchscript_scope(node_name: str, module) -> Optional[NodeScope]:
    """A node's scope from its TorchScript name ("/layer3/layer3.1/conv2/Conv"): the longest prefix
    of the scope components that names submodules of ``module``; unresolvable components leave the
    node at the deepest module found. None for names without a scope ("Identity_3", which the
    exporter adds to share one weight between modules)."""
    if not node_name.startswith("/"):
        return None
    parts = node_name.split("/")[1:-1]
    paths = [""]
    for component in parts:
        resolved = _resolve_component(module, paths[-1], component)
        if resolved is None:
            break
        paths.append(resolved)
    classes = [_class_name(module.get_submodule(p)) if p else _class_name(module) for p in paths]
    return NodeScope(module=paths[-1], classes=classes, paths=paths)


def _class_name(obj) -> str:
    cls = type(obj)
    return f"{cls.__module__}.{cls.__qualname__}"


def short_class(qualified: Optional[str]) -> str:
    """"torch.nn.modules.conv.Conv2d" -> "Conv2d"."""
    return (qualified or "").rsplit(".", 1)[-1]


def aten_display(op: Optional[str]) -> Optional[str]:
    """"aten.unique_consecutive.default" -> "aten::unique_consecutive" (how torch users write it)."""
    if not op:
        return None
    parts = op.split(".")
    if len(parts) >= 2 and parts[0] in ("aten", "prims", "quantized"):
        return f"{parts[0]}::{parts[1]}"
    return op


def ancestors(path: str) -> Sequence[str]:
    """"a.b.c" -> ["", "a", "a.b"]: the modules containing ``path`` (a module path's components may
    themselves hold dots, "layers.0", so only real prefixes of the dotted path are produced)."""
    if not path:
        return []
    parts = path.split(".")
    return [""] + [".".join(parts[:i]) for i in range(1, len(parts))]


def within(path: str, root: str) -> bool:
    """Whether module ``path`` is ``root`` or inside it."""
    return root == "" or path == root or path.startswith(root + ".")
