"""docs/python.md's quickstart runs as written (in a scratch folder, against this build)."""
import os
import re
import subprocess
import sys

from conftest import BUILD, ROOT


def quickstart():
    with open(os.path.join(ROOT, "docs", "python.md")) as f:
        text = f.read()
    section = text.split("## Quickstart", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_quickstart_is_short_and_runs(tmp_path):
    code = quickstart()
    assert len(code.strip().splitlines()) <= 10
    (tmp_path / "quickstart.py").write_text(code)
    env = dict(os.environ, PYTHONPATH=os.path.join(BUILD, "python"))
    out = subprocess.run([sys.executable, "quickstart.py"], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "compare.html").exists()
