"""Where check and compare put the exported model and the golden."""
from __future__ import annotations

import contextlib
import os
import tempfile
from typing import Iterator, Optional


@contextlib.contextmanager
def work_folder(workdir: Optional[str], prefix: str) -> Iterator[str]:
    """The given folder (created, and kept afterwards), or a temporary one removed afterwards."""
    if workdir:
        os.makedirs(workdir, exist_ok=True)
        yield os.fspath(workdir)
    else:
        with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
            yield tmp
