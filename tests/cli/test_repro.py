"""`ferry compare --repro DIR` end to end: resnet18 (torchvision, random weights, exported by the venv's
torch) with one planted single-node fault (the weight of layer3.0's downsample Conv scaled), compared
against the clean model: the bundle holds the cut-out subgraph, its golden inputs and output and a
README whose command, run alone in a fresh copy of the folder, reproduces the row's metrics (exit 3);
the bundle is under 1% of the model's size. Without a divergence nothing is written.

usage: test_repro.py PATH/TO/ferry
"""
import json
import os
import re
import shutil
import subprocess

import numpy as np
import onnx
import torch
import torchvision
from onnx import numpy_helper

import cli_util as u
from cli_util import check

tmp = u.init()
torch.manual_seed(0)
net = torchvision.models.resnet18().eval()
clean = os.path.join(tmp, "resnet18.onnx")
torch.onnx.export(net, torch.randn(1, 3, 112, 112), clean, input_names=["x"], output_names=["logits"], opset_version=17,
                  dynamo=False)

m = onnx.load(clean)
inits = {i.name: i for i in m.graph.initializer}
target = next(n for n in m.graph.node if n.op_type == "Conv" and list(inits[n.input[1]].dims) == [256, 128, 1, 1])
w = numpy_helper.to_array(inits[target.input[1]])
inits[target.input[1]].CopyFrom(numpy_helper.from_array((w * 1.5).astype(np.float32), target.input[1]))
faulty = os.path.join(tmp, "faulty.onnx")
onnx.save(m, faulty)

bundle = os.path.join(tmp, "bundle")
report = os.path.join(tmp, "compare.json")
rc, out, err = u.ferry("compare", faulty, "--golden", clean, "--repro", bundle, "--json", report)
rep = json.load(open(report)) if os.path.exists(report) else {}
check("compare with --repro: exit 3 (the fault is seen)", rc == 3, "rc=%d %s" % (rc, err))
row = next((r for r in rep.get("layers", []) if r["onnx_node"] == rep.get("first_divergent_node")), {})
check("the first divergent node is (or covers) the planted one",
      target.name == row.get("onnx_node") or target.name in row.get("provenance", []), json.dumps(row)[:500])
check("the report names the bundle and its command", rep.get("repro", {}).get("dir") == bundle and "repro:" in out,
      json.dumps(rep.get("repro")))
files = sorted(os.path.relpath(os.path.join(d, f), bundle) for d, _, fs in os.walk(bundle) for f in fs)
check("bundle files", {"model.onnx", "inputs.npz", "README.md"} <= set(files) and
      any(f.startswith("golden/") for f in files), str(files))
size = sum(os.path.getsize(os.path.join(bundle, f)) for f in files)
check("bundle under 1%% of the model (%d of %d bytes)" % (size, os.path.getsize(clean)),
      size < 0.01 * os.path.getsize(clean))
sub = onnx.load(os.path.join(bundle, "model.onnx"))
check("the subgraph holds the planted node and few others", target.name in [n.name for n in sub.graph.node] and
      len(sub.graph.node) <= 4, str([n.name for n in sub.graph.node]))
readme = open(os.path.join(bundle, "README.md")).read()
check("README: metrics, ferry version and CPU", "cosine" in readme and "ferry " in readme and "CPU:" in readme, readme)

# Run the README's command alone, in a fresh copy of the folder.
fresh = os.path.join(tmp, "elsewhere")
shutil.copytree(bundle, fresh)
cmd = re.search(r"```\n(ferry compare [^\n]+)\n```", readme).group(1)
p = subprocess.run([u.FERRY] + cmd.split()[1:] + ["--json", "again.json"], cwd=fresh, capture_output=True, text=True)
again = json.load(open(os.path.join(fresh, "again.json"))) if os.path.exists(os.path.join(fresh, "again.json")) else {}
out_row = ((again.get("outputs") or [{}])[0].get("metrics") or {})
row_metrics = row.get("metrics") or {}
check("the bundle reproduces the fault alone (exit 3)", p.returncode == 3, p.stdout[-500:] + p.stderr)
for metric in ("cosine", "rel_euclid", "max_abs"):
    check("same %s as in the model (%s vs %s)" % (metric, out_row.get(metric), row_metrics.get(metric)),
          out_row.get(metric) is not None and abs(out_row[metric] - row_metrics[metric]) <= 1e-6 * max(1, abs(row_metrics[metric])))

# No divergence: nothing written, a note says so.
rc, out, err = u.ferry("compare", clean, "--golden", clean, "--repro", os.path.join(tmp, "none"))
check("no divergence: exit 0, nothing written, a note", rc == 0 and not os.path.exists(os.path.join(tmp, "none")) and
      "nothing written" in out, out + err)
u.finish()
