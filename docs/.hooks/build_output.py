"""MkDocs hook: show what a block printed when this build ran it.

Some outputs cannot be typed into a page: a training loss, a timing, sampled text
depend on the machine and the run. For those a page puts a marker under the block,

    <!-- build-output: snippets/chapter9/bits_per_byte.py -->

and this hook runs that snippet at build time, in a fresh interpreter and a scratch
folder (as the doc tests run every block), and puts its stdout in the marker's place
as a text block titled "printed when this site was built". It is not an ``output``
block: those are the outputs the doc tests compare, and the browser test counts them. The shown numbers are therefore this build's; what must hold on any
machine is asserted inside the snippet, so a run that misses it fails the build (and
the doc test that runs the same block). tests/test_capstone_page.py checks that each
marker sits right under the block that includes its snippet.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MARKER = re.compile(r"^<!-- build-output: (?P<path>snippets/[\w/.-]+\.py) -->$", re.M)


def run_snippet(path: str) -> str:
    """The stdout of ``python <path>`` run as a reader would run the block (fails loudly)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    env.pop("PYTHONPATH", None)
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.run([sys.executable, str(ROOT / path)], cwd=tmp, env=env, capture_output=True,
                              text=True, timeout=900)
    if proc.returncode:
        raise RuntimeError(f"{path} failed at build time:\n{proc.stderr[-4000:]}")
    return proc.stdout


def on_page_markdown(markdown: str, page, config, files) -> str:
    def output(m: re.Match) -> str:
        text = run_snippet(m.group("path")).rstrip("\n")
        return f'```text title="printed when this site was built"\n{text}\n```'

    return MARKER.sub(output, markdown)
