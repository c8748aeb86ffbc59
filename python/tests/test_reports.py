"""ferry.check / compile / compare / bench: typed reports whose to_dict() is the CLI's JSON."""
import json
import subprocess

import numpy as np
import pytest

import ferry
from test_session import linear_relu_model


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("reports") / "linear.onnx")
    linear_relu_model(path)
    return path


def cli_json(cli, *args, json_file=None):
    """The command's JSON: from stdout (`--json -`), or from json_file."""
    out = subprocess.run([cli, *args], capture_output=True, text=True)
    assert out.returncode in (0, 3), out.stderr
    if json_file:
        with open(json_file) as f:
            return json.load(f)
    return json.loads(out.stdout)


def test_check_equals_cli_json(model, ferry_cli):
    r = ferry.check(model, target="ascend310p", shapes={"x": [2, 4]})
    assert isinstance(r, ferry.CheckReport)
    assert r.to_dict() == cli_json(ferry_cli, "check", model, "--target", "ascend310p", "--shape", "x=2,4", "--json", "-")
    assert r.target == "ascend310p"
    assert sum(r.counts.values()) == len(r.rows) == 4
    assert json.loads(r.to_json()) == r.to_dict()


def test_compile_writes_a_file_sessions_open(model, tmp_path, ferry_cli):
    out = tmp_path / "m.ferry"
    r = ferry.compile(model, out, target="ascend310p", shapes={"x": [2, 4]})
    assert isinstance(r, ferry.CompileReport) and r.output == str(out)
    d = r.to_dict()
    cli = cli_json(ferry_cli, "compile", model, "-o", str(tmp_path / "cli.ferry"), "--target", "ascend310p",
                   "--shape", "x=2,4", "--json", "-")
    for key in ("schema", "nodes_before", "nodes_after", "passes", "target", "precision", "weight_bytes", "gears"):
        assert d[key] == cli[key], key
    x = np.ones((2, 4), np.float32)
    assert np.array_equal(ferry.Session(str(out)).run(None, {"x": x})[0],
                          ferry.Session(model, target="ascend310p", shapes={"x": [2, 4]}).run(None, {"x": x})[0])


def test_compare_equals_cli_json(model, tmp_path, ferry_cli):
    x = np.random.default_rng(3).standard_normal((2, 4)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    r = ferry.compare(model, {"x": x}, precision="fp16", layerwise=True)
    assert isinstance(r, ferry.CompareReport)
    cli = cli_json(ferry_cli, "compare", model, "--input", f"x={tmp_path / 'x.npy'}", "--precision", "fp16",
                   "--layerwise", "--json", str(tmp_path / "c.json"), json_file=tmp_path / "c.json")
    d = r.to_dict()
    # The inputs' sources are the files each side read.
    for side in (d, cli):
        for i in side["inputs"]:
            i.pop("source")
    assert d == cli
    assert r.passed and [o["tensor"] for o in r.outputs] == ["y", "z"]


def test_bench_report(model, ferry_cli, tmp_path):
    r = ferry.bench(model, shapes={"x": [2, 4]}, warmup=1, iterations=5)
    assert isinstance(r, ferry.BenchReport)
    d = r.to_dict()
    cli = cli_json(ferry_cli, "bench", model, "--shape", "x=2,4", "--warmup", "1", "--iterations", "5",
                   "--json", str(tmp_path / "b.json"), json_file=tmp_path / "b.json")
    assert d.keys() == cli.keys()
    assert d["results"][0]["latency_ms"].keys() == cli["results"][0]["latency_ms"].keys()
    assert d["results"][0]["iterations"] == 5 and r.median_ms > 0


def test_tool_errors_are_ferry_errors(model, tmp_path):
    with pytest.raises(ferry.Error, match="nosuch"):
        ferry.check(model, target="nosuch")
    with pytest.raises(ferry.Error, match="missing.onnx"):
        ferry.compile(tmp_path / "missing.onnx", tmp_path / "o.ferry")
    with pytest.raises(ferry.InvalidArgument, match="'y'"):
        ferry.compare(model, {"y": np.ones(3, np.float32)})
