"""`ferry weights audit` and `ferry weights convert` end to end, with checkpoints written by the real
torch.save (the venv's PyPI torch), np.savez, a hand-written .safetensors, and a malicious pickle.

- The right checkpoint gives "no findings" (exit 0), in every format.
- Each planted problem is found, with its kind, key and module: a renamed key, a transposed weight,
  BatchNorm running statistics missing, an extra key, a wrong dtype; stats at their defaults; the
  "module." prefix of DataParallel is stripped with a note.
- A pickle whose __reduce__ calls os.system is refused by name, and the command it carries never ran.
- convert --to mindspore derives BatchNorm's gamma/beta/moving_* names, leaves num_batches_tracked out,
  and its .ckpt reads back (audited: no findings).

usage: test_weights.py PATH/TO/ferry
"""
import io
import json
import os
import pickle
import struct
import zipfile

import numpy as np
import torch

import cli_util as u
from cli_util import check

tmp = u.init()
torch.manual_seed(0)


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn1 = torch.nn.BatchNorm2d(8)
        self.fc = torch.nn.Linear(8, 5)

    def forward(self, x):
        return self.fc(torch.relu(self.bn1(self.conv1(x))).mean((2, 3)))


def trained(net):
    """Running statistics away from their defaults, as after training."""
    net.train()
    with torch.no_grad():
        for _ in range(3):
            net(torch.randn(4, 3, 8, 8))
    return net.eval()


net = trained(Net())
import ferry.torch  # noqa: E402  (after torch; the package under test)

onnx_path = os.path.join(tmp, "net.onnx")
ferry.torch.export(net, torch.randn(1, 3, 8, 8), onnx_path)
state = net.state_dict()


def path(name):
    return os.path.join(tmp, name)


def save_pth(sd, name):
    torch.save(sd, path(name))
    return path(name)


def audit(ckpt, *extra):
    out = path("audit.json")
    rc, stdout, err = u.ferry("weights", "audit", onnx_path, ckpt, "--json", out, *extra)
    rep = json.load(open(out)) if rc in (0, 3) and os.path.exists(out) else None
    return rc, stdout, err, rep


def findings(rep):
    return {(f["kind"], f["key"]): f for f in rep["findings"]} if rep else {}


# --- the right checkpoint, in each format -------------------------------------------------------
rc, out, err, rep = audit(save_pth(state, "good.pth"))
check("right .pth: no findings, exit 0", rc == 0 and rep and rep["findings"] == [] and "no findings" in out,
      "rc=%d %s %s" % (rc, out, err))
check("right .pth: every parameter matched", rep and rep["matched"] == len(state) == rep["expected"], str(rep))

compiled = path("net.ferry")
rc_c, _, err_c = u.ferry("compile", onnx_path, "-o", compiled)
rc, out, err = u.ferry("weights", "audit", compiled, path("good.pth"))
check("audit against the compiled .ferry (its module map travels): no findings", rc_c == 0 and rc == 0,
      "rc=%d %s %s %s" % (rc, out, err, err_c))

training = {"epoch": 90, "state_dict": state, "optimizer": {"lr": 0.1}, "best_acc": 0.76}
rc, out, err, rep = audit(save_pth(training, "training.pth"))
check("training checkpoint: weights from its state_dict entry", rc == 0 and rep and rep["container"] == "state_dict",
      "rc=%d %s %s" % (rc, out, err))

np.savez(path("good.npz"), **{k: v.numpy() for k, v in state.items()})
rc, out, err, rep = audit(path("good.npz"))
check("right .npz: no findings", rc == 0, "rc=%d %s %s" % (rc, out, err))


def write_safetensors(sd, name):
    names = {torch.float32: "F32", torch.int64: "I64", torch.float16: "F16"}
    header, blobs, offset = {}, [], 0
    for k, v in sd.items():
        b = v.contiguous().numpy().tobytes()
        header[k] = {"dtype": names[v.dtype], "shape": list(v.shape), "data_offsets": [offset, offset + len(b)]}
        blobs.append(b)
        offset += len(b)
    h = json.dumps(header).encode()
    with open(path(name), "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))
    return path(name)


rc, out, err, rep = audit(write_safetensors(state, "good.safetensors"))
check("right .safetensors: no findings", rc == 0, "rc=%d %s %s" % (rc, out, err))

# --- planted problems ------------------------------------------------------------------------------
bad = dict(state)
bad["conv_1.weight"] = bad.pop("conv1.weight")                 # renamed key
bad["fc.weight"] = state["fc.weight"].t().contiguous()          # transposed weight
del bad["bn1.running_mean"], bad["bn1.running_var"]             # BN statistics missing
bad["head.extra.weight"] = torch.zeros(3, 3)                    # extra key
bad["fc.bias"] = state["fc.bias"].double()                      # wrong dtype
rc, out, err, rep = audit(save_pth(bad, "bad.pth"))
f = findings(rep)
check("planted: exit 3", rc == 3, "rc=%d %s %s" % (rc, out, err))
check("planted: renamed key named with both names",
      ("renamed", "conv1.weight") in f and f[("renamed", "conv1.weight")]["checkpoint_key"] == "conv_1.weight" and
      f[("renamed", "conv1.weight")]["module"] == "conv1", str(f.keys()))
check("planted: transposed weight", ("transposed", "fc.weight") in f and f[("transposed", "fc.weight")]["module"] == "fc",
      str(f.keys()))
check("planted: BN running stats missing",
      ("bn-stats", "bn1.running_mean") in f and ("bn-stats", "bn1.running_var") in f and
      f[("bn-stats", "bn1.running_mean")]["module"] == "bn1", str(f.keys()))
check("planted: extra key", ("unexpected", "head.extra.weight") in f, str(f.keys()))
check("planted: wrong dtype", ("dtype", "fc.bias") in f and "float64" in f[("dtype", "fc.bias")]["detail"], str(f))
check("planted: nothing else", len(f) == 6, json.dumps(rep, indent=1) if rep else err)
check("planted: text names module and key", "transposed  fc.weight  (module fc)" in out, out)

fresh = Net().eval().state_dict()  # never trained: running stats at mean 0 / variance 1
rc, out, err, rep = audit(save_pth(fresh, "untrained.pth"))
check("untrained BN: stats at defaults found", ("bn-stats", "bn1.running_mean") in findings(rep) and rc == 3,
      "rc=%d %s %s" % (rc, out, err))

wrapped = {"module." + k: v for k, v in state.items()}
rc, out, err, rep = audit(save_pth(wrapped, "dataparallel.pth"))
check("DataParallel prefix stripped with a note", rc == 0 and rep and any("module." in n for n in rep["notes"]),
      "rc=%d %s %s" % (rc, out, err))

# --- a malicious pickle: never executed -------------------------------------------------------------
marker = path("pwned")


class Payload:
    def __reduce__(self):
        return (os.system, ("touch " + marker,))


torch.save({"conv1.weight": state["conv1.weight"], "evil": Payload()}, path("evil.pth"))
u.expect_error("malicious pickle refused by name", ["weights", "audit", onnx_path, path("evil.pth")],
               "refused", "system")
check("malicious pickle: its command never ran", not os.path.exists(marker))
with zipfile.ZipFile(path("evil2.pth"), "w") as z:  # a bare pickle in torch's layout, posix.system via REDUCE
    z.writestr("archive/data.pkl", pickle.dumps(Payload(), protocol=2))
u.expect_error("malicious bare pickle refused", ["weights", "audit", onnx_path, path("evil2.pth")], "refused")
check("malicious bare pickle: never ran", not os.path.exists(marker))

# --- hostile and unsupported files -----------------------------------------------------------------
with open(path("trunc.pth"), "wb") as f:
    f.write(open(path("good.pth"), "rb").read()[:300])
u.expect_error("truncated .pth", ["weights", "audit", onnx_path, path("trunc.pth")], "trunc.pth")
with open(path("lies.safetensors"), "wb") as f:
    h = json.dumps({"w": {"dtype": "F32", "shape": [1 << 30, 1 << 30], "data_offsets": [0, 16]}}).encode()
    f.write(struct.pack("<Q", len(h)) + h + bytes(16))
u.expect_error("safetensors shape that lies", ["weights", "audit", onnx_path, path("lies.safetensors")],
               "lies.safetensors", "'w'")
with open(path("text.ckpt"), "wb") as f:
    f.write(b"hello, not a checkpoint")
u.expect_error("not a MindSpore checkpoint", ["weights", "audit", onnx_path, path("text.ckpt")], "text.ckpt")
buf = io.BytesIO()
torch.save(state, buf, _use_new_zipfile_serialization=False)
with open(path("legacy.pth"), "wb") as f:
    f.write(buf.getvalue())
u.expect_error("legacy torch format named", ["weights", "audit", onnx_path, path("legacy.pth")], "legacy")

# --- convert --to mindspore ------------------------------------------------------------------------
ms_names = path("params.txt")
with open(ms_names, "w") as f:
    f.write("# a MindSpore network's parameters\n")
    for k, v in state.items():
        if k.endswith("num_batches_tracked"):
            continue
        k = (k.replace("bn1.weight", "bn1.gamma").replace("bn1.bias", "bn1.beta")
             .replace("running_mean", "moving_mean").replace("running_var", "moving_variance"))
        f.write("%s %s float32\n" % (k, ",".join(map(str, v.shape))))
out_ckpt = path("net.ckpt")
rc, out, err = u.ferry("weights", "convert", path("good.pth"), "--to", "mindspore", "--names", ms_names, "-o", out_ckpt,
                       "--json", path("convert.json"))
rep = json.load(open(path("convert.json"))) if rc == 0 else None
check("convert: exit 0, audit clean", rc == 0 and rep and rep["audit"]["findings"] == [], "rc=%d %s %s" % (rc, out, err))
how = {m["target"] or m["source"]: m["how"] for m in rep["mapping"]} if rep else {}
check("convert: BatchNorm renames derived", "BatchNorm" in how.get("bn1.gamma", "") and
      "running_var -> moving_variance" in how.get("bn1.moving_variance", ""), str(how))
check("convert: num_batches_tracked left out with the reason",
      "num_batches_tracked" in how.get("bn1.num_batches_tracked", ""), str(how))
rc, out, err = u.ferry("weights", "convert", out_ckpt, "--to", "mindspore", "--names", ms_names, "-o", path("again.ckpt"))
check("convert: the .ckpt reads back, same names", rc == 0 and "0 checkpoint keys left out" in out, out + err)

u.finish()
