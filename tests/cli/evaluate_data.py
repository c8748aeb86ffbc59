"""The evaluate tests' data: photographs that scikit-image ships (nothing downloaded), augmented into a
small labelled image set (random crops, flips, rotations, colour jitter, sizes, JPEG and PNG, grey-scale
sources), generated .npy samples, and resnet18 (torchvision, random weights, seed 0) exported with a dynamic
batch by the venv's torch."""
import os
import random

import numpy as np

# Class folders are named after the source photograph.
SOURCES = ("astronaut.png", "chelsea.png", "coffee.png", "rocket.jpg", "retina.jpg", "hubble_deep_field.jpg",
           "motorcycle_left.png", "camera.png", "coins.png", "brick.png")


def make_images(root, per_class=20, seed=0):
    """root/<class>/<k>.{jpg,png}: len(SOURCES) * per_class images; returns their ids (paths under root)."""
    import skimage.data
    from PIL import Image, ImageEnhance

    rng = random.Random(seed)
    src_dir = os.path.dirname(skimage.data.__file__)
    ids = []
    for name in SOURCES:
        base = Image.open(os.path.join(src_dir, name))
        cls = os.path.splitext(name)[0]
        os.makedirs(os.path.join(root, cls), exist_ok=True)
        for k in range(per_class):
            img = base.convert("RGB") if k % 5 else base  # some stay grey-scale (decoded to RGB by ferry)
            w, h = img.size
            f = rng.uniform(0.6, 1.0)
            cw, ch = int(w * f), int(h * f)
            x, y = rng.randint(0, w - cw), rng.randint(0, h - ch)
            img = img.crop((x, y, x + cw, y + ch)).rotate(rng.uniform(-15, 15))
            if rng.random() < 0.5:
                img = img.transpose(Image.FLIP_LEFT_RIGHT)
            if img.mode == "RGB":
                img = ImageEnhance.Brightness(img).enhance(rng.uniform(0.7, 1.3))
                img = ImageEnhance.Contrast(img).enhance(rng.uniform(0.7, 1.3))
            side = rng.randint(120, 300)
            img = img.resize((side, int(side * rng.uniform(0.75, 1.33))))
            ext = ".jpg" if k % 2 else ".png"
            path = os.path.join(root, cls, "%03d%s" % (k, ext))
            img.save(path, quality=90) if ext == ".jpg" else img.save(path)
            ids.append(os.path.relpath(path, root))
    return sorted(ids)


def make_npy(root, count, size=112, seed=1, scale=1.0, prefix="t"):
    """root/<prefix>NNN.npy: float32 [3, size, size] samples, N(0, scale^2)."""
    os.makedirs(root, exist_ok=True)
    rng = np.random.default_rng(seed)
    out = []
    for i in range(count):
        p = os.path.join(root, "%s%03d.npy" % (prefix, i))
        np.save(p, (rng.standard_normal((3, size, size)) * scale).astype(np.float32))
        out.append(p)
    return out


def export_resnet18(path, size=112):
    import torch
    import torchvision

    torch.manual_seed(0)
    net = torchvision.models.resnet18().eval()
    torch.onnx.export(net, torch.randn(1, 3, size, size), path, input_names=["x"], output_names=["logits"],
                      dynamic_axes={"x": {0: "batch"}, "logits": {0: "batch"}}, opset_version=17, dynamo=False)
    return path
