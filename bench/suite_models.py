"""The benchmark suite's models that Debian's torch 1.13 / torchvision 0.14 export (bench/export_models.py
runs under `/usr/bin/python3 -E -s`): every torchvision classification model, the segmentation models, the
detection models' backbone + head, the recurrent models and bert_like. The transformers built from
Hugging Face configs are in hf_models.py (they need the venv's torch and `transformers`).

Lists come from torchvision itself (`list_models`), not a hand list, so a newer torchvision brings its new
models in. torch/torchvision are imported lazily: the harness imports this module for names only.

A builder takes a seeded torch.Generator and returns a Spec dict:
    model    nn.Module in eval mode          args     example inputs, dim 0 = TRACE_BATCH
    inputs   input names                     outputs  output names (None: "output" or output0..N)
    opset    ONNX opset                      grad / preserve   the torch 1.13 MHA workaround (see below)
    what     one line for info.json
"""
import os

SEED = 20241202
TRACE_BATCH = 2  # > 1 so nothing specific to batch 1 is traced into the graph
EXPORTER = "debian"  # bench/export_models.py under /usr/bin/python3: Debian's python3-torch 1.13
OPSET = 13           # as the model tests use
BERT = dict(hidden=768, heads=12, ffn=3072, layers=12, seq=128)
SEG_SIZE = 320  # torchvision evaluates at 520; 320 keeps a batch-8 iteration of the ResNet-101 ones near 10 s
DET_SIZE = {"ssdlite320_mobilenet_v3_large": 320, "ssd300_vgg16": 300}  # their fixed sizes
DET_DEFAULT_SIZE = 512  # the FPN detectors resize to >= 800 themselves; 512 keeps batch 8 affordable
# Their backbone + RPN head is fasterrcnn_resnet50_fpn's (v2's): a second row would measure the same graph.
DET_SAME_AS = {"maskrcnn_resnet50_fpn", "keypointrcnn_resnet50_fpn", "maskrcnn_resnet50_fpn_v2"}
RECURRENT = {
    "lstm_2layer": "2-layer LSTM, input 256, hidden 512, 100 steps, batch-first (ONNX LSTM)",
    "gru_2layer": "2-layer GRU, input 256, hidden 512, 100 steps, batch-first (ONNX GRU)",
    "crnn_ocr": "OCR CRNN: 7-conv VGG-style feature extractor on a 1x32x128 text line, 2-layer "
                "bidirectional LSTM (hidden 256) over the 31 columns, 37-class head",
}
RNN = dict(input=256, hidden=512, layers=2, steps=100)
CORE = ["resnet50", "mobilenet_v2", "efficientnet_b0", "convnext_tiny", "vit_b_16", "bert_like"]

torch = tv = None


def _import_torch():
    global torch, tv
    if torch is None:
        import torch as _t
        import torchvision as _tv
        torch, tv = _t, _tv


def _entry(name, family, shape, what, dtype="float32"):
    return {"name": name, "family": family, "exporter": EXPORTER,
            "inputs": [{"name": "input", "shape": ["batch"] + list(shape), "dtype": dtype}], "what": what}


def vision_size(name):
    """The smallest crop size among torchvision's weights for the model (224 for most; EfficientNet-B1..B7
    and V2, Inception-v3, Swin-V2 have their own); 224 when it has none."""
    sizes = [w.transforms().crop_size[0] for w in tv.models.get_model_weights(name)]
    return min(sizes) if sizes else 224


def entries():
    """Every model this module builds, in suite order (core first, then by family)."""
    _import_torch()
    out = []
    for n in tv.models.list_models(module=tv.models):
        s = vision_size(n)
        out.append(_entry(n, "vision", [3, s, s], "torchvision %s %s" % (tv.__version__, n)))
    for n in tv.models.list_models(module=tv.models.segmentation):
        out.append(_entry(n, "segmentation", [3, SEG_SIZE, SEG_SIZE], "torchvision %s, 21 classes" % n))
    for n in tv.models.list_models(module=tv.models.detection):
        if n in DET_SAME_AS:
            continue
        s = DET_SIZE.get(n, DET_DEFAULT_SIZE)
        part = "RPN head" if "rcnn" in n else "head"
        out.append(_entry(n, "detection", [3, s, s], "torchvision %s: backbone + %s, raw outputs (no box "
                                                        "decoding or NMS: those do not export at dynamic batch)" % (n, part)))
    out.append(_entry("bert_like", "transformers", [BERT["seq"], BERT["hidden"]],
                      "BERT-base-like nn.TransformerEncoder on summed embeddings"))
    out.append(_entry("lstm_2layer", "recurrent", [RNN["steps"], RNN["input"]], RECURRENT["lstm_2layer"]))
    out.append(_entry("gru_2layer", "recurrent", [RNN["steps"], RNN["input"]], RECURRENT["gru_2layer"]))
    out.append(_entry("crnn_ocr", "recurrent", [1, 32, 128], RECURRENT["crnn_ocr"]))
    core = {e["name"]: e for e in out if e["name"] in CORE}
    return [core[n] for n in CORE] + [e for e in out if e["name"] not in core]


def spec(model, args, family, what, **how):
    s = {"model": model, "args": args, "family": family, "inputs": ["input"], "outputs": None, "opset": OPSET,
         "grad": False,
         "preserve": False, "what": "%s, random weights (seed %d)" % (what, SEED)}
    s.update(how)
    return s


def randomize_like_trained(model, shape, gen):
    """Random init leaves BatchNorm as the identity, LayerNorm's affine 1/0, and some heads zero (ViT's):
    a kernel that ignored them, or a comparison of all-zero outputs, would pass. Shape them like a trained
    model's (BatchNorm statistics calibrated on random batches of `shape`)."""
    from torch_export_common import calibrate_batchnorm, randomize_layernorm
    if any(isinstance(m, torch.nn.modules.batchnorm._BatchNorm) for m in model.modules()):
        calibrate_batchnorm(model, shape, gen)
    randomize_layernorm(model, gen)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.Linear) and not m.weight.any():
                m.weight.normal_(0.0, 0.02, generator=gen)
    model.eval()


def has_mha(model):
    return any(isinstance(m, torch.nn.MultiheadAttention) for m in model.modules())


def build_vision(name, gen):
    s = vision_size(name)
    model = tv.models.get_model(name, weights=None)
    randomize_like_trained(model, (4, 3, s, s), gen)
    x = torch.randn(TRACE_BATCH, 3, s, s, generator=gen)
    # nn.MultiheadAttention's eval/no_grad fast path has no ONNX export in torch 1.13: export it with
    # grad enabled and PRESERVE (eval mode kept, dropout inactive).
    mha = has_mha(model)
    return spec(model, (x,), "vision", "torchvision %s %s" % (tv.__version__, name), grad=mha, preserve=mha)


def _wrappers():
    """nn.Module wrappers, defined after torch is imported (this module imports without torch)."""
    nn = torch.nn

    class SegOut(nn.Module):
        """torchvision's segmentation models return {"out": ...}: the exporter needs tensors."""
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, x):
            return self.m(x)["out"]

    class DetHead(nn.Module):
        """Backbone + (RPN) head of a detector: its dense compute, without the box decoding, NMS and
        RoI stages, which trace to a fixed batch (a list of images) and data-dependent shapes."""
        def __init__(self, m):
            super().__init__()
            self.backbone = m.backbone
            self.head = m.rpn.head if hasattr(m, "rpn") else m.head

        def forward(self, x):
            feats = self.backbone(x)
            feats = list(feats.values()) if isinstance(feats, dict) else [feats]
            out = self.head(feats)
            if isinstance(out, dict):
                return tuple(out.values())
            return tuple(t for level in out for t in level)  # RPN: (objectness per level, deltas per level)

    class Rnn(nn.Module):
        def __init__(self, cell):
            super().__init__()
            self.rnn = cell(RNN["input"], RNN["hidden"], num_layers=RNN["layers"], batch_first=True)

        def forward(self, x):
            return self.rnn(x)[0]

    class Crnn(nn.Module):
        """The CRNN of Shi et al. (2015) at its usual size: conv features of a 32-pixel-high text line
        pooled to height 1, a BiLSTM over the columns, per-column class scores (CTC is not part of it)."""
        def __init__(self, classes=37):
            super().__init__()
            chans = [(1, 64), (64, 128), (128, 256), (256, 256), (256, 512), (512, 512)]
            pools = {0: (2, 2), 1: (2, 2), 3: (2, 1), 5: (2, 1)}
            layers = []
            for i, (ci, co) in enumerate(chans):
                layers += [nn.Conv2d(ci, co, 3, 1, 1), nn.BatchNorm2d(co), nn.ReLU(inplace=True)]
                if i in pools:
                    layers.append(nn.MaxPool2d(pools[i], pools[i]))
            layers += [nn.Conv2d(512, 512, (2, 2)), nn.BatchNorm2d(512), nn.ReLU(inplace=True)]
            self.cnn = nn.Sequential(*layers)
            self.rnn = nn.LSTM(512, 256, num_layers=2, bidirectional=True, batch_first=True)
            self.fc = nn.Linear(512, classes)

        def forward(self, x):
            f = self.cnn(x).squeeze(2).permute(0, 2, 1)  # [N, 512, 1, 31] -> [N, 31, 512]
            return self.fc(self.rnn(f)[0])

    return SegOut, DetHead, Rnn, Crnn


def build_segmentation(name, gen):
    SegOut = _wrappers()[0]
    model = SegOut(tv.models.get_model(name, weights=None, weights_backbone=None))
    randomize_like_trained(model, (2, 3, SEG_SIZE, SEG_SIZE), gen)
    x = torch.randn(TRACE_BATCH, 3, SEG_SIZE, SEG_SIZE, generator=gen)
    return spec(model, (x,), "segmentation", "torchvision %s %s (the 'out' head), input %d x %d" % (
        tv.__version__, name, SEG_SIZE, SEG_SIZE))


def build_detection(name, gen):
    DetHead = _wrappers()[1]
    s = DET_SIZE.get(name, DET_DEFAULT_SIZE)
    model = DetHead(tv.models.get_model(name, weights=None, weights_backbone=None))
    randomize_like_trained(model, (2, 3, s, s), gen)
    x = torch.randn(TRACE_BATCH, 3, s, s, generator=gen)
    part = "RPN head" if "rcnn" in name else "head"
    return spec(model, (x,), "detection", "torchvision %s %s: backbone + %s, raw outputs, input %d x %d" % (
        tv.__version__, name, part, s, s))


def build_recurrent(name, gen):
    _, _, Rnn, Crnn = _wrappers()
    if name == "crnn_ocr":
        model = Crnn()
        x = torch.randn(TRACE_BATCH, 1, 32, 128, generator=gen)
        randomize_like_trained(model, (4, 1, 32, 128), gen)
    else:
        model = Rnn(torch.nn.LSTM if name.startswith("lstm") else torch.nn.GRU)
        x = torch.randn(TRACE_BATCH, RNN["steps"], RNN["input"], generator=gen)
        model.eval()
    return spec(model, (x,), "recurrent", RECURRENT[name])


def build_bert_like(gen):
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
    from torch_export_common import randomize_layernorm
    randomize_layernorm(model, gen)
    model.eval()
    x = torch.randn(TRACE_BATCH, c["seq"], c["hidden"], generator=gen)
    # Same torch 1.13 pitfall as vit: the fused encoder fast path has no export.
    return spec(model, (x,), "transformers", "BERT-base-like encoder: 12 post-LN layers, hidden 768, 12 heads, FFN 3072, GELU, "
                             "seq 128; input = summed embeddings", grad=True, preserve=True)


def build(name, gen):
    """The Spec of one model of entries()."""
    _import_torch()
    if name == "bert_like":
        return build_bert_like(gen)
    if name in RECURRENT:
        return build_recurrent(name, gen)
    if name in tv.models.list_models(module=tv.models.segmentation):
        return build_segmentation(name, gen)
    if name in tv.models.list_models(module=tv.models.detection):
        return build_detection(name, gen)
    if name in tv.models.list_models(module=tv.models):
        return build_vision(name, gen)
    raise KeyError("unknown model %r" % name)


def source_files():
    """What an export of these models depends on, for the cache stamp."""
    return [os.path.abspath(__file__)]
