"""Builds the module map (module_map.py) from an exported onnx.ModelProto and the nn.Module it came from."""
from __future__ import annotations

from typing import Dict, List, Optional

from ._scopes import NodeScope, dynamo_scope, short_class, torchscript_scope, within
from ._weights import match_initializers
from .module_map import VERSION, ModuleMap

# Ops whose output equals their first input up to shape or type: a module's output seen through them
# is the same values, and ferry's eliminate_identity pass may remove them (its output then carries
# the input's name).
_PASS_THROUGH = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Expand", "Identity", "Dropout", "Cast"}
# Elementwise ops that pass a value through when the other operand is a neutral constant (Mul by
# ones: an RMSNorm's freshly initialised weight), which eliminate_identity removes too.
_NEUTRAL = {"Mul": 1.0, "Div": 1.0, "Add": 0.0, "Sub": 0.0}


def build_module_map(model, module) -> ModuleMap:
    """The map of ``model`` (an onnx.ModelProto exported from ``module``)."""
    import torch

    graph = model.graph
    props = [{p.key: p.value for p in node.metadata_props} for node in graph.node]
    dynamo = any(_has_scope(p) for p in props)
    scopes = _node_scopes(graph, props, module, dynamo)
    initializers = match_initializers(graph, module)
    _add_weight_aliases(graph, initializers, module)
    nodes = _node_entries(graph, scopes, initializers, module)
    modules = _module_entries(scopes, module)
    _add_boundaries(graph, scopes, modules)
    data = {
        "version": VERSION,
        "exporter": "dynamo" if dynamo else "torchscript",
        "torch": torch.__version__,
        "root": type(module).__name__,
        "modules": modules,
        "order": _execution_order(graph, modules),
        "nodes": nodes,
        "tensors": {out: scopes[i].module for i, node in enumerate(graph.node) for out in node.output if out},
        "initializers": initializers,
        "absorbed": _absorbed(nodes, modules),
        "state": _state_signature(module),
    }
    return ModuleMap(data)


def _state_signature(module) -> Dict[str, dict]:
    """Every state_dict entry's shape, dtype and module class: what a checkpoint for this model must hold
    (``ferry weights audit`` reads it; folded BatchNorm statistics have no initializer to tell)."""
    modules = dict(module.named_modules())
    out = {}
    for key, tensor in module.state_dict().items():
        owner = modules.get(key.rsplit(".", 1)[0] if "." in key else "")
        entry = {"shape": list(tensor.shape), "dtype": str(tensor.dtype).replace("torch.", ""),
                 "class": type(owner).__name__ if owner is not None else ""}
        if isinstance(getattr(owner, "eps", None), float):  # normalization layers: refit refolds with it
            entry["eps"] = owner.eps
        out[key] = entry
    return out


def _add_weight_aliases(graph, initializers: Dict[str, dict], module) -> None:
    """The TorchScript exporter shares one initializer between modules with equal weights through
    Identity nodes whose outputs carry the other modules' state_dict names: those names are weights too."""
    keys = set(module.state_dict().keys())
    for node in graph.node:
        if node.op_type == "Identity" and node.input and node.input[0] in initializers:
            out = node.output[0]
            if out in keys and out not in initializers:
                initializers[out] = {"key": out, "match": "alias", "of": node.input[0]}


def _has_scope(props: dict) -> bool:
    from ._scopes import NAME_SCOPES

    return NAME_SCOPES in props


def _node_scopes(graph, props: List[dict], module, dynamo: bool) -> List[NodeScope]:
    """A scope per node. Nodes the exporter left without one (constants, nodes its optimizer made)
    join the module of the node that reads their output, else the root."""
    scopes: List[Optional[NodeScope]] = []
    for node, p in zip(graph.node, props):
        scopes.append(dynamo_scope(p) if dynamo else torchscript_scope(node.name, module))
    consumers = _consumers(graph)
    # Backwards, so a chain of unscoped constants inherits from the scoped node at its end.
    for i in reversed(range(len(scopes))):
        if scopes[i] is not None:
            continue
        readers = [j for out in graph.node[i].output for j in consumers.get(out, [])]
        scoped = [scopes[j] for j in readers if scopes[j] is not None]
        scopes[i] = NodeScope(module=scoped[0].module, classes=scoped[0].classes, paths=scoped[0].paths) \
            if scoped else NodeScope(module="", paths=[""])
    return scopes  # type: ignore[return-value]


def _consumers(graph) -> Dict[str, List[int]]:
    """tensor name -> indices of the nodes that read it."""
    readers: Dict[str, List[int]] = {}
    for j, node in enumerate(graph.node):
        for name in node.input:
            if name:
                readers.setdefault(name, []).append(j)
    return readers


def _node_entries(graph, scopes: List[NodeScope], initializers: Dict[str, dict], module) -> Dict[str, dict]:
    nodes: Dict[str, dict] = {}
    for i, node in enumerate(graph.node):
        scope = scopes[i]
        entry = {"module": scope.module, "class": _module_class(module, scope)[0]}
        if scope.op:
            entry["op"] = scope.op
        if scope.source:
            entry["source"] = scope.source
        fused = _fused_modules(node, scope, initializers)
        if fused:
            entry["fused"] = fused
        nodes[node.name or f"#{i}"] = entry
    return nodes


def _fused_modules(node, scope: NodeScope, initializers: Dict[str, dict]) -> List[str]:
    """Modules whose folded weights this node reads although it belongs to another module: the Conv
    that dynamo's optimizer merged with the following BatchNorm (filed under the BatchNorm)."""
    fused: List[str] = []
    for name in node.input:
        info = initializers.get(name)
        if not info or info["match"] != "folded":
            continue
        owner = info["key"].rsplit(".", 1)[0] if "." in info["key"] else ""
        if not within(owner, scope.module) and owner not in fused:
            fused.append(owner)
    return fused


def _module_class(module, scope: NodeScope, path: Optional[str] = None) -> tuple:
    """(short, qualified) class of the module at ``path`` (default: the scope's module), from the
    module itself when it has that path, else from the exporter's class hierarchy."""
    path = scope.module if path is None else path
    try:
        cls = type(module.get_submodule(path)) if path else type(module)
        return cls.__name__, f"{cls.__module__}.{cls.__qualname__}"
    except (AttributeError, IndexError, KeyError, TypeError):
        pass
    if path in scope.paths and len(scope.classes) == len(scope.paths):
        qualified = scope.classes[scope.paths.index(path)]
        return short_class(qualified), qualified
    return "", ""


def _module_entries(scopes: List[NodeScope], module) -> Dict[str, dict]:
    """Every module on some node's scope path (ancestors included), with its class and node count."""
    modules: Dict[str, dict] = {}
    for scope in scopes:
        for path in scope.paths:
            if path not in modules:
                short, qualified = _module_class(module, scope, path)
                modules[path] = {"class": short, "qualified": qualified, "boundary": None,
                                 "candidates": [], "exits": [], "nodes": 0}
            modules[path]["nodes"] += 1
    return modules


def _add_boundaries(graph, scopes: List[NodeScope], modules: Dict[str, dict]) -> None:
    """Fills each module's boundary and candidates (module_map.py's docstring says which)."""
    consumers = _consumers(graph)
    graph_outputs = {o.name for o in graph.output}
    exits: Dict[str, List[str]] = {path: [] for path in modules}
    for i, node in enumerate(graph.node):
        for out in node.output:
            if not out:
                continue
            reader_modules = [scopes[j].module for j in consumers.get(out, [])]
            for path in scopes[i].paths:
                if out in graph_outputs or any(not within(m, path) for m in reader_modules):
                    exits[path].append(out)
    producer = {out: i for i, node in enumerate(graph.node) for out in node.output if out}
    constants: dict = {}
    for path, outs in exits.items():
        if not outs:
            continue
        boundary = outs[-1]
        candidates = [boundary] + _aliases(graph, producer, boundary, path, scopes, constants)
        modules[path]["boundary"] = boundary
        modules[path]["candidates"] = candidates
        modules[path]["exits"] = [t for t in reversed(outs[:-1]) if t not in candidates]
        if scopes[producer[boundary]].source:
            # Where the module's last node was called from: for a leaf, the line that calls the module.
            modules[path]["source"] = scopes[producer[boundary]].source


def _constant(graph, name: str, cache: dict):
    """The value of an initializer or Constant node output (numpy), else None."""
    if name not in cache:
        from onnx import numpy_helper

        cache[name] = None
        for init in graph.initializer:
            if init.name == name:
                cache[name] = numpy_helper.to_array(init)
        for node in graph.node:
            if node.op_type == "Constant" and node.output and node.output[0] == name:
                for attr in node.attribute:
                    if attr.name == "value":
                        cache[name] = numpy_helper.to_array(attr.t)
    return cache[name]


def _passed_through(graph, node, cache: dict):
    """The input a node passes through unchanged (see _PASS_THROUGH and _NEUTRAL), or None."""
    if node.op_type in _PASS_THROUGH and node.input:
        return node.input[0]
    neutral = _NEUTRAL.get(node.op_type)
    if neutral is None or len(node.input) != 2:
        return None
    commutative = node.op_type in ("Mul", "Add")
    for data, other in ((0, 1), (1, 0)) if commutative else ((0, 1),):
        value = _constant(graph, node.input[other], cache)
        if value is not None and value.size and bool((value == neutral).all()):
            return node.input[data]
    return None


def _aliases(graph, producer: Dict[str, int], tensor: str, path: str, scopes: List[NodeScope],
             cache: Optional[dict] = None) -> List[str]:
    """Tensors inside module ``path`` that ``tensor`` was passed through from unchanged."""
    cache = {} if cache is None else cache
    found: List[str] = []
    while tensor in producer:
        i = producer[tensor]
        source = _passed_through(graph, graph.node[i], cache) if within(scopes[i].module, path) else None
        if source is None or source not in producer or not within(scopes[producer[source]].module, path):
            break
        tensor = source
        found.append(tensor)
    return found


def _execution_order(graph, modules: Dict[str, dict]) -> List[str]:
    """Modules by the position of the node that produces their boundary (when they finish), a child
    before its parent when both end on the same tensor; modules without a boundary go last."""
    producer = {out: i for i, node in enumerate(graph.node) for out in node.output if out}

    def key(path: str) -> tuple:
        boundary = modules[path]["boundary"]
        depth = path.count(".") + (1 if path else 0)
        return (producer.get(boundary, len(graph.node)) if boundary else len(graph.node) + 1, -depth)

    return sorted(modules, key=key)


def _absorbed(nodes: Dict[str, dict], modules: Dict[str, dict]) -> Dict[str, str]:
    """Node-less modules folded into another module's node: {conv path: bn path}."""
    absorbed: Dict[str, str] = {}
    for entry in nodes.values():
        for path in entry.get("fused", []):
            if path not in modules:
                absorbed.setdefault(path, entry["module"])
    return absorbed
