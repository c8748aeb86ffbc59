"""`ferry evaluate` end to end on resnet18 (torchvision, random weights, exported with a dynamic batch) over
200 augmented photographs that scikit-image ships plus generated .npy samples, 4 of them planted outliers
whose fp16 inputs overflow and flip the class:
- fp32 through a manifest with labels: every sample passes, top-1 agreement 100%, accuracy side by side;
- fp16 over the folder: exit 3, agreement and percentiles reported, the planted samples are the top of the
  worst list (flipped), and the worst case's replay command (`ferry compare`) reproduces its metric;
- --shard 0/3, 1/3, 2/3 + --merge, and --batch 5 (last batch padded), give the local report's per-sample
  metrics and aggregates;
- a model compiled with --preprocess (uint8 NHWC input) gives the same per-sample metrics as the host path;
- report.html renders in headless Chromium with its sections and thumbnails, self-contained;
- bad input (a manifest path leaving its folder, an image without --preprocess, a corrupt JPEG, an unknown
  preprocessing key, a missing shard, a sample lacking an input) is an error naming the file or flag.

usage: test_evaluate.py PATH/TO/ferry
"""
import json
import os
import re
import shutil
import subprocess

import cli_util as u
import evaluate_data as data
from cli_util import check

tmp = u.init()
model = data.export_resnet18(os.path.join(tmp, "r18.onnx"))
root = os.path.join(tmp, "data")
image_ids = data.make_images(root)
data.make_npy(os.path.join(root, "tensors"), 20)
planted = [os.path.relpath(p, root) for p in data.make_npy(os.path.join(root, "tensors"), 4, seed=7, scale=1e5,
                                                          prefix="planted")]
SPEC = "resize=128,crop=112,scale=1/255,mean=0.485:0.456:0.406,std=0.229:0.224:0.225"
classes = sorted(os.path.splitext(s)[0] for s in data.SOURCES)
manifest = os.path.join(root, "manifest.txt")
with open(manifest, "w") as f:
    f.write("# images with their class, then tensors without\n")
    for i in image_ids:
        f.write("%s %d\n" % (i, classes.index(i.split("/")[0])))
    for n in sorted(os.listdir(os.path.join(root, "tensors"))):
        f.write("tensors/%s\n" % n)
total = len(image_ids) + 24


def evaluate(out, *args, data_arg=root):
    rc, stdout, err = u.ferry("evaluate", model, "--data", data_arg, "-o", os.path.join(tmp, out), *args, timeout=600)
    path = os.path.join(tmp, out, "report.json")
    return rc, stdout, err, (json.load(open(path)) if os.path.exists(path) else {})


def samples(out):
    with open(os.path.join(tmp, out, "samples.jsonl")) as f:
        return {s["id"]: s for s in map(json.loads, f)}


# fp32 through the manifest, with labels.
rc, out, err, rep = evaluate("fp32", "--preprocess", SPEC, data_arg=manifest)  # labels from the manifest
res = rep.get("result", {})
check("fp32: exit 0", rc == 0, (rc, err[-800:]))
check("fp32: every sample evaluated and passing", res.get("samples") == total and
      res["outputs"][0]["passed"] == total, json.dumps(res.get("outputs", [{}])[0])[:400])
check("fp32: top-1 agreement 100%", res.get("outputs", [{}])[0].get("top1_agreement") == 1.0)
labels = res.get("labels", {})
check("fp32: accuracy against the labels, golden and target side by side",
      labels.get("labelled") == len(image_ids) and labels["golden_top1"] == labels["target_top1"], labels)
check("fp32: samples.jsonl holds one line per sample", len(samples("fp32")) == total)

# fp16 over the folder: the planted outliers flip.
rc, out, err, rep = evaluate("fp16", "--preprocess", SPEC, "--precision", "fp16")
res = rep.get("result", {})
o = res.get("outputs", [{}])[0]
check("fp16: exit 3 (some samples fail)", rc == 3, (rc, err[-800:]))
# Random weights leave a few images with two near-tied logits, which fp16 rounding may also flip.
check("fp16: agreement reported, the planted samples and at most a few near-ties disagree",
      o.get("classifier_samples") == total and total - len(planted) - 3 <= o.get("top1_agree", -1) <= total - len(planted),
      o.get("top1_agree"))
check("fp16: metric percentiles", all(k in o.get("cosine", {}) for k in ("min", "p1", "p50")) and
      all(k in o.get("max_abs", {}) for k in ("p50", "p99", "max")), o.get("cosine"))
worst = res.get("worst", [])
check("fp16: 20 worst cases listed", len(worst) == 20, len(worst))
check("fp16: the planted samples top the worst list, flipped",
      sorted(w["id"] for w in worst[:4]) == sorted(planted) and all(w["flipped"] for w in worst[:4]),
      [(w["id"], w["flipped"]) for w in worst[:6]])
check("fp16: the summary names them", all(p in out for p in planted) and "class " in out, out[-1500:])
for w in (worst[0], worst[4]):  # a planted outlier and the worst ordinary image
    cmd = w.get("replay_command", "").split()
    check("fp16: %s has a replay .npz and command" % w["id"], os.path.isfile(w.get("replay", "")) and
          cmd[:2] == ["ferry", "compare"], w.get("replay_command"))
    if len(cmd) > 2:
        js = os.path.join(tmp, "replay.json")
        rc2, out2, err2 = u.ferry(*cmd[1:], "--json", js)
        c = json.load(open(js))["outputs"][0]["metrics"] if os.path.exists(js) else {}
        e = w["outputs"][0]
        check("fp16: replaying %s reproduces its metric (cos %.6f vs %.6f, relE %.3g vs %.3g)" % (
              w["id"], c.get("cosine", -9), e["cosine"], c.get("rel_euclid", -9), e["rel_euclid"]),
              abs(c.get("cosine", -9) - e["cosine"]) < 1e-4 and abs(c.get("rel_euclid", -9) - e["rel_euclid"]) <=
              0.02 * e["rel_euclid"] + 1e-6, (rc2, err2[-500:]))

# Shards and merge, and batching, give the same report.
local = samples("fp16")
parts = []
for i in range(3):
    rc, out, err, prep = evaluate("part%d" % i, "--preprocess", SPEC, "--precision", "fp16", "--shard", "%d/3" % i)
    check("shard %d/3: a partial report" % i, rc in (0, 3) and prep.get("shard") == {"index": i, "count": 3},
          (rc, err[-500:]))
    parts.append(os.path.join(tmp, "part%d" % i, "report.json"))
rc, out, err = u.ferry("evaluate", "--merge", *parts, "-o", os.path.join(tmp, "merged"))
merged = json.load(open(os.path.join(tmp, "merged", "report.json"))) if rc in (0, 3) else {}
check("merge: exit 3 like the local run", rc == 3, (rc, err[-500:]))
sharded = {}
for i in range(3):
    sharded.update(samples("part%d" % i))
check("shards: the same per-sample metrics as the local run", sharded == local,
      [k for k in local if sharded.get(k) != local[k]][:5])


def aggregates(r):
    res = r.get("result", {})
    return {k: res.get(k) for k in ("samples", "outputs", "labels")}, [w["id"] for w in res.get("worst", [])]


check("merge: the local run's aggregates (sketches, counts) and worst list", aggregates(merged) == aggregates(rep),
      json.dumps(aggregates(merged))[:300])
rc, out, err, brep = evaluate("batch5", "--preprocess", SPEC, "--precision", "fp16", "--batch", "5")
batched = samples("batch5") if rc in (0, 3) else {}
# Batched kernels round differently (ulps): metrics agree closely, and a class may only change where two
# logits nearly tie (random weights make some), so a couple of samples may differ.
close = all(abs(batched[k]["outputs"][0]["cosine"] - v["outputs"][0]["cosine"]) < 1e-5 for k, v in local.items()
            if k in batched)
moved = [k for k, v in local.items() if k in batched and
         batched[k]["outputs"][0]["target_class"] != v["outputs"][0]["target_class"]]
check("--batch 5: every sample, the same metrics (padded last batch), classes but for near-ties (%d)" % len(moved),
      len(batched) == total and close and len(moved) <= 2, (rc, err[-500:], moved))

# The preprocessing inside the model gives what the host path gives.
images = os.path.join(root, "images.txt")
with open(images, "w") as f:
    f.write("\n".join(image_ids) + "\n")
compiled = os.path.join(tmp, "r18_pre.ferry")
rc, out, err = u.ferry("compile", model, "-o", compiled, "--preprocess", SPEC)
check("compile --preprocess: exit 0", rc == 0, err[-500:])
# fp32: with --precision fp16 the inserted nodes run in fp16 like the rest of the model (as a device's
# preprocessing unit would), which the host's fp32 normalization does not.
rc, out, err, _ = evaluate("host", "--preprocess", SPEC, data_arg=images)
rc2, out2, err2, _ = evaluate("inmodel", "--preprocess", SPEC, "--preprocess-in-model", data_arg=images)
host, inmodel = samples("host"), (samples("inmodel") if rc2 in (0, 3) else {})
diff = max((abs(host[k]["outputs"][0][m] - inmodel[k]["outputs"][0][m]) for k in host if k in inmodel
            for m in ("cosine", "max_abs")), default=1.0)
check("--preprocess in the model and on the host: the same per-sample metrics (max diff %.2g)" % diff,
      len(inmodel) == len(image_ids) and diff <= 1e-6, (rc2, err2[-500:]))
rc, out, err = u.ferry("evaluate", compiled, "--data", images, "--preprocess", SPEC, "-o", os.path.join(tmp, "ferry"),
                       timeout=600)
check("the .ferry compiled with --preprocess takes the images (uint8 NHWC): exit 0, every sample",
      rc == 0 and len(samples("ferry")) == len(image_ids), (rc, err[-500:]))

# report.html in a real browser.
chromium = shutil.which("chromium") or shutil.which("chromium-browser")
html_path = os.path.join(tmp, "fp16", "report.html")
html = open(html_path).read()
check("html: self-contained, thumbnails inline", not re.search(r"(src|href)\s*=\s*\"(https?:|//)", html) and
      "<script" not in html and html.count("data:image/png;base64,") >= 10)
check("chromium is installed (scripts/setup.sh installs Debian's chromium)", chromium is not None)
if chromium:
    env = dict(os.environ, HOME=tmp)
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
             "--user-data-dir=" + os.path.join(tmp, "chromium-profile")]
    png = os.path.join(tmp, "report.png")
    s = subprocess.run([chromium, *flags, "--window-size=1280,2400", "--screenshot=" + png, "file://" + html_path],
                       capture_output=True, text=True, timeout=120, env=env)
    check("html: chromium screenshot", s.returncode == 0 and os.path.isfile(png) and os.path.getsize(png) > 30000,
          (s.returncode, s.stderr[-300:]))
    dom = subprocess.run([chromium, *flags, "--dump-dom", "file://" + html_path], capture_output=True, text=True,
                         timeout=120, env=env).stdout
    check("html: rendered sections", all(('id="%s"' % x) in dom for x in ("verdict", "worst", "time")) and
          'class="output"' in dom)
    svgs = re.findall(r"<svg.*?</svg>", dom, re.S)
    check("html: distributions plotted without NaN coordinates", len(svgs) >= 3 and
          not any(re.search(r'="[^"]*(nan|inf)', x, re.I) for x in svgs), len(svgs))

# Bad input.
bad = os.path.join(tmp, "bad")
os.makedirs(bad)
with open(os.path.join(bad, "escape.txt"), "w") as f:
    f.write("../data/tensors/t000.npy\n")
u.expect_error("manifest path leaving its folder", ["evaluate", model, "--data", os.path.join(bad, "escape.txt"),
                                                    "-o", os.path.join(tmp, "x")], "leads outside", "escape.txt:1")
u.expect_error("image without --preprocess", ["evaluate", model, "--data", images, "-o", os.path.join(tmp, "x")],
               "needs --preprocess", ".png")
os.makedirs(os.path.join(bad, "img"))
with open(os.path.join(bad, "img", "broken.jpg"), "wb") as f:
    f.write(b"\xff\xd8\xff\xe0" + b"\x00" * 64)
u.expect_error("corrupt JPEG", ["evaluate", model, "--data", os.path.join(bad, "img"), "--preprocess", SPEC,
                                "-o", os.path.join(tmp, "x")], "broken.jpg", "JPEG")
u.expect_error("unknown preprocessing key", ["evaluate", model, "--data", images, "--preprocess", "resize=128,blur=2",
                                             "-o", os.path.join(tmp, "x")], "unknown key 'blur'")
u.expect_error("a shard missing from --merge", ["evaluate", "--merge", parts[0], parts[2], "-o",
                                                os.path.join(tmp, "x")], "1/3 missing")
import numpy as np  # noqa: E402
np.savez(os.path.join(bad, "wrong.npz"), y=np.zeros((3, 112, 112), np.float32))
with open(os.path.join(bad, "npz.txt"), "w") as f:
    f.write("wrong.npz\n")
u.expect_error("an .npz lacking the model's input", ["evaluate", model, "--data", os.path.join(bad, "npz.txt"),
                                                     "-o", os.path.join(tmp, "x")], "wrong.npz", "'x'")
rc, out, err = u.ferry("evaluate", model, "--data", images, "-o", os.path.join(tmp, "x"), "--shard", "3/3")
check("--shard 3/3: an error naming the flag", rc == 1 and "--shard 3/3" in err, (rc, err))
u.finish()
