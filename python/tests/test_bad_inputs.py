"""The bad-input corpus of the CLI tests (tests/cli/test_bad_inputs.py) given to the Python API: every
file that makes `ferry` exit 1 makes the same call in Python raise ferry.Error with the CLI's message,
and none crashes the interpreter (each case runs in this process)."""
import json
import os
import subprocess
import sys

import pytest

import ferry
from conftest import ROOT


def cli_message(stderr):
    """The message of the CLI's `error: ...` line(s), as the Python exception carries it."""
    assert stderr.startswith("error: "), stderr
    return stderr[len("error: "):].rstrip("\n")


def python_call(args):
    """The Python API call that does what `ferry compare ARGS...` does, for the input flags the corpus uses."""
    model, rest = args[1], args[2:]
    inputs, shapes, i = {}, {}, 0
    while i < len(rest):
        flag, value = rest[i], rest[i + 1]
        if flag == "--input":
            name, eq, path = value.partition("=")
            if not eq:
                return "flag syntax"  # NAME=FILE is the flag's syntax; Python takes {name: file}
            inputs[name] = path
        elif flag == "--inputs":
            inputs = value
        elif flag == "--shape":
            name, _, dims = value.partition("=")
            if not all(d.isdigit() and int(d) < 1 << 63 for d in dims.split(",")):
                return "flag syntax"  # the CLI flag's own syntax: Python takes a list of ints instead
            shapes[name] = [int(d) for d in dims.split(",")]
        else:
            return None  # a flag with no keyword (none in the corpus today)
        i += 2
    return lambda: ferry.compare(model, inputs or None, shapes=shapes or None)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, ferry_cli):
    manifest = tmp_path_factory.mktemp("bad") / "cases.jsonl"
    env = dict(os.environ, FERRY_ERROR_MANIFEST=str(manifest))
    subprocess.run([sys.executable, os.path.join(ROOT, "tests", "cli", "test_bad_inputs.py"), ferry_cli], env=env,
                   check=True, stdout=subprocess.DEVNULL)
    return [json.loads(line) for line in manifest.read_text().splitlines()]


def test_every_bad_file_raises_ferry_error_with_the_cli_message(corpus, ferry_cli):
    replayed, skipped = 0, []
    for case in corpus:
        args = case["args"]
        if case["kind"] != "error" or args[0] != "run" or case["rc"] != 1:
            continue
        call = python_call(args)
        if call == "flag syntax":
            continue
        if call is None:
            skipped.append(case["name"])
            continue
        # The same files through `ferry compare` (the command the Python call stands for) and through Python.
        cli = subprocess.run([ferry_cli, "compare", *args[1:]], capture_output=True, text=True, errors="replace")
        if cli.returncode != 1:
            skipped.append(case["name"] + " (compare exits %d)" % cli.returncode)
            continue
        with pytest.raises(ferry.Error) as raised:
            call()
        assert str(raised.value) == cli_message(cli.stderr), case["name"]
        replayed += 1
    assert replayed >= 35, (replayed, skipped)
    assert not skipped, skipped


def test_bad_shapes_raise_invalid_argument_naming_the_input(corpus):
    dynamic = next(c["args"][1] for c in corpus if c["name"] == "dynamic dim without --shape")
    for dims in ([99999999999999999999, 4], [-1, 4], ["x", 4]):
        with pytest.raises(ferry.InvalidArgument, match="shapes\\['x'\\]"):
            ferry.compare(dynamic, shapes={"x": dims})
        with pytest.raises(ferry.InvalidArgument, match="shapes\\['x'\\]"):
            ferry.Session(dynamic, shapes={"x": dims})


def test_mutated_models_raise_ferry_error_or_load(corpus):
    mutated = [c for c in corpus if c["kind"] == "mutated"]
    assert len(mutated) == 150
    errors = 0
    for case in mutated:
        try:
            ferry.Session(case["args"][1])
        except ferry.Error as e:
            if case["rc"] == 1:
                assert str(e) in cli_message(case["stderr"]), case["name"]
            errors += 1
    assert errors > 0
