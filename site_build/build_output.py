"""Show what a block printed when this build ran it.

Some outputs cannot be typed into a page: a training loss, a timing, sampled text
depend on the machine and the run. For those a page puts a marker under the block,

    <!-- build-output: snippets/chapter9/training.py -->

and this stage runs that snippet at build time (:func:`site_build.runner.run_snippet`: a fresh
interpreter and a scratch folder, as the doc tests run every block), and puts its stdout in the
marker's place as a text block titled "printed when this site was built". A snippet that prints a
Markdown table (its last lines) takes the marker ``<!-- build-output: PATH as markdown -->``:
its stdout goes into the page as Markdown, and the table gets the caption "printed as
Markdown when this site was built, by the block above". It is not an ``output``
block: those are the outputs the doc tests compare, and the browser test counts them. The shown
numbers are therefore this build's; what must hold on any machine is asserted inside the snippet,
so a run that misses it fails the build (and the doc test that runs the same block).
tests/test_capstone.py checks that each marker sits right under the block that includes its snippet.

A snippet's stdout is kept in the execution cache (:mod:`site_build.store`), keyed by the code,
the library, the packages and the device (:func:`code_key`): a rebuild runs only the snippets whose
key changed (``NETCL_LITE_RERUN=1`` runs them all). The key is that of the code, not of the file,
so the doc test of the page block that shows the same snippet (:func:`run_stored`) finds what the
build printed, and the reverse: each runs once per set of inputs. A marker's path is checked by
:func:`site_build.includes.marker_path`.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from pathlib import Path

from netcl_lite import fingerprint

from . import markers, runner, store
from .includes import marker_path
from .paths import ROOT


def code_key(code: str, shared: str | None = None) -> str:
    """The execution-cache key of ``code`` run as :mod:`site_build.runner` runs it (how it is run,
    the code without its leading and trailing blank lines, which change nothing it does, and
    ``shared``: the key context, :func:`site_build.store.context` when None)."""
    if not isinstance(code, str):
        raise TypeError(f"code must be str, got {type(code).__name__}")
    return fingerprint.key(runner.HOW + "\n" + code.strip("\n") + "\n",
                           shared=store.context() if shared is None else shared)


def snippet_key(path: str, shared: str | None = None) -> str:
    """The execution-cache key of a build-output snippet: :func:`code_key` of its text."""
    return code_key((ROOT / path).read_text(encoding="utf-8"), shared)


def run_stored(code: str, folder: str | Path, shared: str) -> subprocess.CompletedProcess:
    """``code`` run by :func:`site_build.runner.run_code` in ``folder``, unless the store holds what it
    printed under :func:`code_key` (``shared``: the key context of the interpreter and environment it
    runs in, :func:`site_build.store.context`); a hit runs nothing and returns a completed process
    with that stdout. A run that exits 0 is stored; a failing one is not, so it runs again."""
    key = code_key(code, shared)
    stored = store.lookup("build_output", key)
    if stored is not None:
        return subprocess.CompletedProcess(["python", "block.py"], 0, stored.decode("utf-8"), "")
    proc = runner.run_code(code, folder)
    if proc.returncode == 0:
        store.store("build_output", key, proc.stdout.encode("utf-8"))
    return proc


class BuildOutputs:
    """The build outputs of one build: each snippet's stdout, from the store or run now.
    ``context``: the build's shared key context, asked for once, on the first marker."""

    def __init__(self, context: Callable[[], str] = store.context):
        if not callable(context):
            raise TypeError(f"context must be a callable that returns the key context, got {context!r}")
        self._context = context
        self._shared: str | None = None
        self.reused = 0

    def cached_output(self, path: str) -> str:
        """What the snippet prints: from the store when its key is there, else run now and stored."""
        if self._shared is None:
            self._shared = self._context()
        key = snippet_key(path, self._shared)
        stored = store.lookup("build_output", key)
        if stored is not None:
            self.reused += 1
            return stored.decode("utf-8")
        store.log.info(f"execution cache: ran {path}")
        text = runner.run_snippet(ROOT / path)
        store.store("build_output", key, text.encode("utf-8"))
        return text

    def render(self, markdown: str, page: str) -> str:
        """``markdown`` of ``page`` (``docs/<page>``, for errors) with each marker replaced by what its
        snippet printed."""
        def output(m: re.Match) -> str:
            marker_path(m.group("path"), page)
            text = self.cached_output(m.group("path")).rstrip("\n")
            if m.group("markdown"):
                return (f"{text}\n\n/// table-caption\nPrinted as Markdown when this site was built, "
                        f"by the block above.\n///")
            return f'```text title="printed when this site was built"\n{text}\n```'

        return markers.BUILD_OUTPUT.sub(output, markdown)
