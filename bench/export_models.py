#!/usr/bin/python3
"""Exports the benchmark models from Debian's torch/torchvision into the per-machine cache.

Run with Debian's python (`/usr/bin/python3 -E -s`: python3-torch 1.13, python3-torchvision 0.14), never
the project venv (PyPI's numpy 2 there breaks Debian's torch). Random weights from a fixed seed; every
model has a dynamic batch dim ("batch") on its input and output; opset 13, as the model tests use.

    ${FERRY_CACHE:-~/.cache/ferry}/bench-models/<name>/model.onnx
    .../<name>/info.json   input name, shape per batch (dim 0 = batch), what the model is
    .../<name>/stamp       hash of this script + torch/torchvision versions

An up-to-date model is skipped, so editing this script re-exports.

Models: resnet50, mobilenet_v2, efficientnet_b0, convnext_tiny, vit_b_16 (torchvision, input
float32[batch,3,224,224]) and bert_like: a BERT-base-sized encoder (12 post-LayerNorm layers, hidden 768,
12 heads, FFN 3072, GELU, sequence 128) taking the summed embeddings float32[batch,128,768] as input, so
it measures the encoder itself rather than an embedding lookup (which is a Gather that costs nothing).

    /usr/bin/python3 -E -s bench/export_models.py [--cache DIR] [--force] [NAME ...]
"""
import argparse
import json
import os
import shutil
import sys
import time
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
from torch_export_common import cache_dir, calibrate_batchnorm, randomize_layernorm, stamp_of  # noqa: E402

torch = torchvision = None  # imported on first export: checking an up-to-date cache stays instant

SEED = 20241202
TRACE_BATCH = 2  # > 1 so nothing specific to batch 1 is traced into the graph
BERT = dict(hidden=768, heads=12, ffn=3072, layers=12, seq=128)


def make_vision(arch, transformer=False):
    def make(gen):
        model = getattr(torchvision.models, arch)(weights=None)
        if transformer:
            randomize_layernorm(model, gen)
            # torchvision zero-initializes the ViT head, which makes every output 0 and an output
            # comparison against a peer vacuous.
            with torch.no_grad():
                for p in model.heads.parameters():
                    p.normal_(0.0, 0.02, generator=gen)
            model.eval()
        else:
            calibrate_batchnorm(model, (4, 3, 224, 224), gen)
            randomize_layernorm(model, gen)  # convnext
        x = torch.randn(TRACE_BATCH, 3, 224, 224, generator=gen)
        # vit_b_16 uses nn.MultiheadAttention, whose eval/no_grad fast path has no ONNX export in torch
        # 1.13: export it with grad enabled and PRESERVE (eval mode kept, dropout inactive).
        info = {"input": "input", "shape": ["batch", 3, 224, 224],
                "what": f"torchvision 0.14 {arch}, random weights (seed {SEED})"}
        return model, x, info, dict(grad=transformer, preserve=transformer)
    return make


def make_bert(gen):
    c = BERT
    layer = torch.nn.TransformerEncoderLayer(d_model=c["hidden"], nhead=c["heads"], dim_feedforward=c["ffn"],
                                             dropout=0.0, activation="gelu", batch_first=True,
                                             layer_norm_eps=1e-12)
    model = torch.nn.TransformerEncoder(layer, num_layers=c["layers"], enable_nested_tensor=False)
    # The 12 layers are deep copies of one: without their own weights, the exporter's initializer
    # deduplication would store one layer's weights for all twelve (a 27 MiB file instead of 340).
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0.0, 0.02, generator=gen)  # BERT's initializer range
    randomize_layernorm(model, gen)
    model.eval()
    x = torch.randn(TRACE_BATCH, c["seq"], c["hidden"], generator=gen)
    info = {"input": "input", "shape": ["batch", c["seq"], c["hidden"]],
            "what": "BERT-base-like encoder: 12 post-LN layers, hidden 768, 12 heads, FFN 3072, GELU, seq 128; "
                    f"input = summed embeddings; random weights (seed {SEED})"}
    # Same torch 1.13 pitfall as vit: the fused encoder fast path has no export.
    return model, x, info, dict(grad=True, preserve=True)


MODELS = {
    "resnet50": make_vision("resnet50"),
    "mobilenet_v2": make_vision("mobilenet_v2"),
    "efficientnet_b0": make_vision("efficientnet_b0"),
    "convnext_tiny": make_vision("convnext_tiny"),
    "vit_b_16": make_vision("vit_b_16", transformer=True),
    "bert_like": make_bert,
}


def up_to_date(d, stamp):
    try:
        with open(os.path.join(d, "stamp")) as f:
            ok = f.read().strip() == stamp
    except OSError:
        return False
    return ok and os.path.isfile(os.path.join(d, "model.onnx")) and os.path.isfile(os.path.join(d, "info.json"))


def export_one(name, root, stamp):
    final = os.path.join(root, name)
    tmp = os.path.join(root, f".{name}.tmp-{os.getpid()}")  # swapped in at the end: never half-written
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    torch.manual_seed(SEED)
    gen = torch.Generator().manual_seed(SEED)
    model, x, info, how = MODELS[name](gen)
    with torch.set_grad_enabled(how["grad"]), warnings.catch_warnings():
        warnings.filterwarnings("ignore")
        torch.onnx.export(
            model, (x,), os.path.join(tmp, "model.onnx"), opset_version=13,
            input_names=["input"], output_names=["output"],
            dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}}, do_constant_folding=True,
            training=torch.onnx.TrainingMode.PRESERVE if how["preserve"] else torch.onnx.TrainingMode.EVAL)
    info["params"] = sum(p.numel() for p in model.parameters())
    with open(os.path.join(tmp, "info.json"), "w") as f:
        json.dump(info, f, indent=1)
    with open(os.path.join(tmp, "stamp"), "w") as f:
        f.write(stamp + "\n")
    shutil.rmtree(final, ignore_errors=True)
    os.replace(tmp, final)


def main():
    global torch, torchvision
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("names", nargs="*", help=f"models (default: all of {', '.join(MODELS)})")
    ap.add_argument("--cache", help="models folder (default: ${FERRY_CACHE:-~/.cache/ferry}/bench-models)")
    ap.add_argument("--force", action="store_true", help="re-export even when up to date")
    a = ap.parse_args()
    names = a.names or list(MODELS)
    for n in names:
        if n not in MODELS:
            print(f"error: unknown model '{n}' (known: {', '.join(MODELS)})", file=sys.stderr)
            return 2
    root = cache_dir("bench-models", a.cache)
    os.makedirs(root, exist_ok=True)
    stamp = stamp_of(__file__)
    for n in names:
        d = os.path.join(root, n)
        if not a.force and up_to_date(d, stamp):
            print(f"export: {n}: up to date ({d})", flush=True)
            continue
        if torch is None:
            import torch as _t
            import torchvision as _tv
            torch, torchvision = _t, _tv
            torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
        t0 = time.time()
        print(f"export: {n}: exporting ...", flush=True)
        export_one(n, root, stamp)
        size = os.path.getsize(os.path.join(d, "model.onnx"))
        print(f"export: {n}: exported in {time.time() - t0:.1f} s, {size / 2**20:.1f} MiB ({d})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
