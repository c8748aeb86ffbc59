"""What the two torch exporters share (bench/export_models.py for the benchmark models,
tests/models/export_models.py for the model tests): the per-machine cache location, the stamp that
says an export is up to date, and the weight randomization that makes random-init models look trained.

Runs under Debian's python (python3-torch 1.13, python3-torchvision 0.14); torch is imported only by
the functions that need it, so checking an up-to-date cache stays instant.
"""
import hashlib
import importlib.metadata
import os


def cache_dir(sub, arg=None):
    """--cache DIR when given, else ${FERRY_CACHE:-~/.cache/ferry}/<sub>."""
    if arg:
        return os.path.abspath(arg)
    base = os.environ.get("FERRY_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "ferry")
    return os.path.join(base, sub)


def stamp_of(script):
    """Hash of the exporting script, this module and the torch/torchvision versions: editing either
    file or upgrading torch re-exports."""
    h = hashlib.sha256()
    for path in (os.path.abspath(script), os.path.abspath(__file__)):
        with open(path, "rb") as f:
            h.update(f.read())
    v = importlib.metadata.version
    h.update(f"torch={v('torch')} torchvision={v('torchvision')}".encode())
    return h.hexdigest()


def calibrate_batchnorm(model, shape, gen):
    """Random weights leave BatchNorm as (almost) the identity: running stats 0/1, affine 1/0. Give it
    realistic statistics by averaging over two random batches of `shape` in train mode, and a random
    affine part. (The eval-mode export folds each BatchNorm into its Conv, so this shapes the Conv
    weights and biases like a trained model's rather than adding BatchNormalization nodes.)"""
    import torch
    bns = [m for m in model.modules() if isinstance(m, torch.nn.BatchNorm2d)]
    with torch.no_grad():
        for bn in bns:
            bn.reset_running_stats()
            bn.momentum = None  # cumulative average over the calibration batches
            bn.weight.uniform_(0.5, 1.5, generator=gen)
            bn.bias.normal_(0.0, 0.1, generator=gen)
        model.train()
        for _ in range(2):
            model(torch.randn(*shape, generator=gen))
    model.eval()


def randomize_layernorm(model, gen):
    """LayerNorm's affine part away from 1/0, so a kernel that ignores it cannot pass."""
    import torch
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.LayerNorm):
                m.weight.uniform_(0.5, 1.5, generator=gen)
                m.bias.normal_(0.0, 0.1, generator=gen)
