"""ferry.evaluate from Python and on Ray: resnet18 (random weights, dynamic batch) over augmented
photographs that scikit-image ships and generated .npy samples.

- a folder, the same samples as a Python list of arrays, and a PyTorch DataLoader give the same
  per-sample metrics; labels from (inputs, label) items give accuracy;
- a model compiled with preprocess= gives the host path's outputs (<= 1e-6) on every image;
- a Ray cluster started here on 127.0.0.1 (a head with 2 CPUs: 2 actor processes, token authentication
  on) runs the evaluation and returns the local report: the same per-sample metrics and the same
  order-independent aggregates, from ferry.ray.evaluate and from `ferry evaluate --ray ADDRESS`; the
  cluster is stopped at the end.
"""
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tests", "cli"))
import evaluate_data  # noqa: E402

import ferry  # noqa: E402
import ferry.ray  # noqa: E402

SPEC = "resize=128,crop=112,scale=1/255,mean=0.485:0.456:0.406,std=0.229:0.224:0.225"
VENV_BIN = os.path.dirname(sys.executable)


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    d = tmp_path_factory.mktemp("evaluate")
    data = d / "data"
    images = evaluate_data.make_images(str(data), per_class=5)
    evaluate_data.make_npy(str(data / "tensors"), 8)
    model = evaluate_data.export_resnet18(str(d / "r18.onnx"))
    return {"dir": d, "data": str(data), "images": images, "model": model}


def per_sample(out):
    with open(os.path.join(out, "samples.jsonl")) as f:
        return {s["id"]: s for s in map(json.loads, f)}


def metrics(s):
    o = s["outputs"][0]
    return o["cosine"], o["max_abs"], o["golden_class"], o["target_class"]


def aggregates(rep):
    r = rep.to_dict()["result"]
    return {k: r.get(k) for k in ("samples", "outputs", "labels")}, [w["id"] for w in r["worst"]]


def test_folder_list_and_dataloader_agree(work):
    d = work["dir"]
    folder = ferry.evaluate(work["model"], work["data"], out=d / "folder", preprocess=SPEC, precision="fp16")
    assert folder.samples == len(work["images"]) + 8
    assert folder.top1_agreement is not None and folder.worst
    paths = sorted(os.path.join(work["data"], i) for i in work["images"])
    arrays = [ferry.preprocess_image(p, SPEC) for p in paths]
    listed = ferry.evaluate(work["model"], [(a, k % 3) for k, a in enumerate(arrays)], out=d / "list",
                            precision="fp16")
    assert listed.samples == len(paths)
    by_id = per_sample(d / "folder")
    got = per_sample(d / "list")
    ids = sorted(os.path.relpath(p, work["data"]) for p in paths)
    for k, sid in enumerate(ids):
        assert metrics(got["sample_%06d" % k]) == metrics(by_id[sid]), sid
    assert listed.accuracy["labelled"] == len(paths)

    torch = pytest.importorskip("torch")
    x = torch.from_numpy(np.concatenate(arrays))
    y = torch.arange(len(arrays)) % 3
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=4)
    batched = ferry.evaluate(work["model"], loader, out=d / "loader", precision="fp16", batch=2)
    assert batched.samples == len(paths)
    assert batched.accuracy["labelled"] == len(paths)
    assert "DataLoader" in batched["data"]
    for sid, s in per_sample(d / "loader").items():
        ref = got[sid]
        assert abs(s["outputs"][0]["cosine"] - ref["outputs"][0]["cosine"]) < 1e-5


def test_preprocess_in_the_model_matches_the_host(work):
    compiled = work["dir"] / "r18_pre.ferry"
    ferry.compile(work["model"], compiled, preprocess=SPEC)
    host = ferry.Session(work["model"])
    inside = ferry.Session(str(compiled))
    assert inside.get_inputs()[0].type == "tensor(uint8)"
    worst = 0.0
    for i in work["images"]:
        p = os.path.join(work["data"], i)
        a, = host.run(None, {"x": ferry.preprocess_image(p, SPEC)})
        b, = inside.run(None, {"x": ferry.preprocess_image(p, SPEC, uint8_image=True)})
        worst = max(worst, float(np.abs(a - b).max()))
    assert worst <= 1e-6


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_ray_cluster_gives_the_local_report(work, ferry_cli, monkeypatch):
    pytest.importorskip("ray.data")
    d = work["dir"]
    # One thread everywhere, as each Ray actor has: the same kernels in the same order, the same numbers.
    local = ferry.evaluate(work["model"], work["data"], out=d / "local", preprocess=SPEC, precision="fp16", worst=10,
                           threads=1)
    port = free_port()
    ray = os.path.join(VENV_BIN, "ray")
    # This run's own token (a fresh machine has none in ~/.ray/auth_token): the head requires it, and
    # this process's client and the CLI's --ray subprocess send it from the environment.
    monkeypatch.setenv("RAY_AUTH_TOKEN", secrets.token_hex(32))
    env = dict(os.environ, RAY_AUTH_MODE="token")
    started = subprocess.run([ray, "start", "--head", "--node-ip-address=127.0.0.1", "--port=%d" % port,
                              "--num-cpus=2", "--include-dashboard=false", "--disable-usage-stats"],
                             capture_output=True, text=True, timeout=180, env=env)
    try:
        assert started.returncode == 0, started.stderr[-2000:]
        address = "127.0.0.1:%d" % port
        remote = ferry.ray.evaluate(work["model"], work["data"], out=d / "ray", address=address, actors=2,
                                    preprocess=SPEC, precision="fp16", worst=10, threads=1)
        assert per_sample(d / "ray") == per_sample(d / "local")
        assert aggregates(remote) == aggregates(local)
        assert any("Ray" in n for n in remote["notes"])
        # The CLI's --ray runs the same through the project's python.
        p = subprocess.run([ferry_cli, "evaluate", work["model"], "--data", work["data"], "-o", str(d / "ray_cli"),
                            "--preprocess", SPEC, "--precision", "fp16", "--worst", "10", "--threads", "1",
                            "--ray", address],
                           capture_output=True, text=True, timeout=600, env=dict(os.environ, FERRY_PYTHON=sys.executable))
        assert p.returncode in (0, 3), p.stderr[-2000:]
        assert per_sample(d / "ray_cli") == per_sample(d / "local")
    finally:
        subprocess.run([ray, "stop", "--force"], capture_output=True, timeout=120)


def test_decoding_and_resize_match_pil_and_torch(work):
    """PNG pixels as PIL decodes them; the shorter-side resize as torch's bilinear interpolation with
    half-pixel centers and no antialiasing (what docs/evaluate.md says it is), to rounding."""
    torch = pytest.importorskip("torch")
    from PIL import Image

    png = next(os.path.join(work["data"], i) for i in work["images"] if i.endswith(".png"))
    pil = np.asarray(Image.open(png).convert("RGB"))
    same = ferry.preprocess_image(png, "layout=nhwc,dtype=uint8")
    assert same.shape == (1,) + pil.shape and np.array_equal(same[0], pil)
    out = ferry.preprocess_image(png, "resize=97,layout=nhwc,dtype=uint8")[0]
    h, w = pil.shape[:2]
    size = (97, round(w * 97 / h)) if h <= w else (round(h * 97 / w), 97)
    assert out.shape[:2] == size
    ref = torch.nn.functional.interpolate(torch.from_numpy(pil).permute(2, 0, 1)[None].double(), size=size,
                                          mode="bilinear", align_corners=False, antialias=False)
    ref = ref[0].permute(1, 2, 0).numpy()
    assert np.abs(out.astype(np.float64) - ref).max() <= 0.5 + 1e-6
