"""docs/weights.md's walkthrough and docs/compare.md's repro section run as written: their Python
block, then every `ferry ...` line of their sh blocks, with the exit code the line's comment states."""
import os
import re
import subprocess
import sys

import pytest

from conftest import BUILD, ROOT


def blocks(doc, section, lang):
    with open(os.path.join(ROOT, "docs", doc)) as f:
        text = f.read().split(section, 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```%s\n(.*?)```" % lang, text, re.S)


def run_doc(doc, section, tmp_path, ferry_cli):
    env = dict(os.environ, PYTHONPATH=os.path.join(BUILD, "python"))
    for code in blocks(doc, section, "python"):
        (tmp_path / "block.py").write_text(code)
        out = subprocess.run([sys.executable, "block.py"], cwd=tmp_path, env=env, capture_output=True, text=True,
                             timeout=600)
        assert out.returncode == 0, out.stderr
    ran = 0
    for block in blocks(doc, section, "sh"):
        cwd = tmp_path
        for line in block.splitlines():
            want = int(re.search(r"# exit (\d)", line).group(1)) if "# exit" in line else 0
            cmd = line.split("#", 1)[0].strip()
            if cmd.startswith("cd "):
                cwd = cwd / cmd.split()[1]
                continue
            if not cmd.startswith("ferry "):
                continue
            p = subprocess.run([ferry_cli] + cmd.split()[1:], cwd=cwd, capture_output=True, text=True, timeout=600)
            assert p.returncode == want, "%s: exit %d\n%s%s" % (cmd, p.returncode, p.stdout[-2000:], p.stderr)
            ran += 1
    assert ran >= 2


def test_weights_walkthrough(tmp_path, ferry_cli):
    run_doc("weights.md", "## Walkthrough", tmp_path, ferry_cli)
    assert (tmp_path / "trained.ferry").exists() and (tmp_path / "resnet18.ckpt").exists()


def test_compare_repro_section(tmp_path, ferry_cli):
    run_doc("compare.md", "## Repro bundles", tmp_path, ferry_cli)
    assert (tmp_path / "bundle" / "README.md").exists()
