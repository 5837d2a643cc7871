"""Run a snippet as a reader runs it: ``python <snippet>`` in a fresh interpreter, in a scratch
folder, with ``PYTHONPATH`` unset and no pytest variables, so only the installed ``netcl_lite`` is
importable. The build runs build-output snippets this way, and the tests run every page block this
way (``tests/test_docs_blocks.py``)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

#: how a snippet runs; part of the execution-cache key of what it prints
HOW = "stdout of: python <snippet>, fresh interpreter, scratch folder, PYTHONPATH unset"


def reader_env(drop: tuple[str, ...] = ()) -> dict[str, str]:
    """The environment a reader's ``python`` sees: this one without ``PYTHONPATH``, ``PYTEST*``
    variables and any variable that starts with one of ``drop``."""
    if not isinstance(drop, tuple) or not all(isinstance(p, str) and p for p in drop):
        raise TypeError(f"drop must be a tuple of non-empty variable-name prefixes, got {drop!r}")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", *drop))}
    env.pop("PYTHONPATH", None)
    return env


def run_python(script: str | Path, cwd: str | Path | None = None, timeout: float = 900,
               python: str | Path = sys.executable, env: dict[str, str] | None = None
               ) -> subprocess.CompletedProcess:
    """``python <script>`` in ``cwd`` (None: a new empty scratch folder, removed afterwards), its
    output captured as text; ``python`` is this interpreter unless another install is named, and
    ``env`` is :func:`reader_env` unless given."""
    if not isinstance(script, (str, Path)):
        raise TypeError(f"script must be a path, got {type(script).__name__}")
    if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or timeout <= 0:
        raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
    command = [str(python), str(Path(script).resolve())]
    env = reader_env() if env is None else env
    if cwd is not None:
        return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    with tempfile.TemporaryDirectory() as tmp:
        return subprocess.run(command, cwd=tmp, env=env, capture_output=True, text=True, timeout=timeout)


def run_code(code: str, folder: str | Path, timeout: float = 600, **how) -> subprocess.CompletedProcess:
    """``code`` written to ``folder/block.py`` and run there by :func:`run_python` (``how``: its
    ``python`` and ``env``): a page block as a reader who pasted it into a file runs it."""
    if not isinstance(code, str):
        raise TypeError(f"code must be str, got {type(code).__name__}")
    script = Path(folder) / "block.py"
    script.write_text(code, encoding="utf-8")
    return run_python(script, cwd=folder, timeout=timeout, **how)


def run_snippet(path: str | Path) -> str:
    """The stdout of the snippet file ``path`` run by :func:`run_python` in a scratch folder; a
    failing snippet raises ``RuntimeError`` with the end of its stderr."""
    proc = run_python(path)
    if proc.returncode:
        raise RuntimeError(f"{path} failed at build time:\n{proc.stderr[-4000:]}")
    return proc.stdout
