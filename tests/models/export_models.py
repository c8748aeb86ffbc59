#!/usr/bin/python3
"""Exports the model-test models from Debian's torch/torchvision into the per-machine cache.

Run with Debian's python (/usr/bin/python3: python3-torch 1.13, python3-torchvision 0.14), never the
project venv: PyPI's numpy 2 in the venv breaks Debian's torch. torch 1.13's exporter writes the
ONNX protobuf itself, so the `onnx` module is not needed here.

For every model it writes
    ${FERRY_CACHE:-~/.cache/ferry}/models/<name>/model.onnx
    .../<name>/inputs/<input name>.npy      the fixed input
    .../<name>/torch_out/<output name>.npy  PyTorch's output for it
    .../<name>/stamp                        hash of this script + torch/torchvision versions
An up-to-date model (files present, stamp matching) is skipped, so editing this script re-exports.

    /usr/bin/python3 tests/models/export_models.py [--cache DIR] [--force] [NAME ...]
"""
import argparse
import os
import shutil
import sys
import time
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
from torch_export_common import cache_dir, calibrate_batchnorm, randomize_layernorm, stamp_of  # noqa: E402

# numpy, torch and torchvision are imported in load_torch(): an up-to-date cache is then checked in
# a fraction of a second instead of the seconds `import torch` takes.
np = torch = torchvision = None


def load_torch():
    global np, torch, torchvision
    import numpy as np
    import torch
    import torchvision

SEED = 20240601
BATCH = 2           # >1 so the dynamic "batch" dim and per-row argmax are exercised
TRANSFORMER = dict(d_model=96, nhead=4, dim_feedforward=192, num_layers=2, seq=16)


def make_classifier(arch):
    def make(gen):
        model = getattr(torchvision.models, arch)(weights=None)
        calibrate_batchnorm(model, (4, 3, 224, 224), gen)
        x = torch.randn(BATCH, 3, 224, 224, generator=gen)
        return model, {"input": x}, ["logits"], dict(grad=False, preserve=False)
    return make


def make_transformer(gen):
    c = TRANSFORMER
    layer = torch.nn.TransformerEncoderLayer(
        d_model=c["d_model"], nhead=c["nhead"], dim_feedforward=c["dim_feedforward"],
        dropout=0.0, activation="gelu", batch_first=True)
    model = torch.nn.TransformerEncoder(layer, num_layers=c["num_layers"],
                                        norm=torch.nn.LayerNorm(c["d_model"]),
                                        enable_nested_tensor=False)
    # LayerNorm starts as 1/0: give it random affine parameters like a trained model has.
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.LayerNorm):
                m.weight.uniform_(0.5, 1.5, generator=gen)
                m.bias.normal_(0.0, 0.1, generator=gen)
    model.eval()
    x = torch.randn(BATCH, c["seq"], c["d_model"], generator=gen)
    # torch 1.13: eval mode under no_grad takes the fused "fast path" (torch._transformer_encoder_layer_fwd),
    # which has no ONNX export. With grad enabled it takes the plain path; PRESERVE keeps eval mode
    # (dropout is 0 anyway) instead of letting the exporter toggle the mode.
    return model, {"src": x}, ["out"], dict(grad=True, preserve=True)


MODELS = {
    "resnet18": make_classifier("resnet18"),
    "mobilenet_v2": make_classifier("mobilenet_v2"),
    "transformer_encoder": make_transformer,
}


def up_to_date(d, stamp):
    try:
        with open(os.path.join(d, "stamp")) as f:
            if f.read().strip() != stamp:
                return False
    except OSError:
        return False
    return (os.path.isfile(os.path.join(d, "model.onnx"))
            and os.path.isdir(os.path.join(d, "inputs")) and os.listdir(os.path.join(d, "inputs"))
            and os.path.isdir(os.path.join(d, "torch_out")) and os.listdir(os.path.join(d, "torch_out")))


def export_one(name, root, stamp):
    final = os.path.join(root, name)
    # Build in a private folder and swap it in at the end, so a concurrent or interrupted run
    # never leaves a half-written model that a stamp would vouch for.
    tmp = os.path.join(root, f".{name}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(os.path.join(tmp, "inputs"))
    os.makedirs(os.path.join(tmp, "torch_out"))

    torch.manual_seed(SEED)
    gen = torch.Generator().manual_seed(SEED)
    model, inputs, output_names, how = MODELS[name](gen)
    input_names = list(inputs)
    args = tuple(inputs[n] for n in input_names)

    with torch.set_grad_enabled(how["grad"]):
        outs = model(*args)
    outs = outs if isinstance(outs, (tuple, list)) else (outs,)

    dynamic_axes = {n: {0: "batch"} for n in input_names + output_names}
    with torch.set_grad_enabled(how["grad"]), warnings.catch_warnings():
        # PRESERVE + constant folding warns about models in training mode; ours are in eval mode.
        warnings.filterwarnings("ignore", message=".*do_constant_folding.*")
        torch.onnx.export(
            model, args, os.path.join(tmp, "model.onnx"), opset_version=13,
            input_names=input_names, output_names=output_names, dynamic_axes=dynamic_axes,
            do_constant_folding=True,
            training=torch.onnx.TrainingMode.PRESERVE if how["preserve"] else torch.onnx.TrainingMode.EVAL)

    for n, t in inputs.items():
        np.save(os.path.join(tmp, "inputs", f"{n}.npy"), t.detach().numpy().astype(np.float32))
    for n, t in zip(output_names, outs):
        np.save(os.path.join(tmp, "torch_out", f"{n}.npy"), t.detach().numpy())
    with open(os.path.join(tmp, "stamp"), "w") as f:
        f.write(stamp + "\n")

    shutil.rmtree(final, ignore_errors=True)
    os.replace(tmp, final)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("names", nargs="*", help=f"models to export (default: all of {', '.join(MODELS)})")
    ap.add_argument("--cache", help="models folder (default: ${FERRY_CACHE:-~/.cache/ferry}/models)")
    ap.add_argument("--force", action="store_true", help="re-export even when the cache is up to date")
    a = ap.parse_args()
    names = a.names or list(MODELS)
    for n in names:
        if n not in MODELS:
            print(f"error: unknown model '{n}' (known: {', '.join(MODELS)})", file=sys.stderr)
            return 2
    root = cache_dir("models", a.cache)
    os.makedirs(root, exist_ok=True)
    stamp = stamp_of(__file__)
    for n in names:
        d = os.path.join(root, n)
        if not a.force and up_to_date(d, stamp):
            print(f"export: {n}: up to date ({d})")
            continue
        if torch is None:
            load_torch()
            torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
        t0 = time.time()
        export_one(n, root, stamp)
        size = sum(os.path.getsize(os.path.join(p, f)) for p, _, fs in os.walk(d) for f in fs)
        print(f"export: {n}: exported in {time.time() - t0:.1f} s, {size / 2**20:.1f} MiB ({d})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
