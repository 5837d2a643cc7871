"""What a stage's output depends on, seen cheaply: under ``mkdocs serve`` the plugin lives across
rebuilds, and a stage whose inputs are unchanged since its last run in this process is skipped.

A stage's inputs are files (their path, size and modification time: a save changes them) and the
environment variables that change results (:func:`netcl_lite.fingerprint.result_variables`). The
first build of a process runs every stage; the execution cache (:mod:`site_build.store`) then
decides by content what runs again.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path

from netcl_lite import fingerprint


def signature(paths: Iterable[Path]) -> tuple:
    """The path, size and modification time of each of ``paths`` (``None`` for a missing one), and the
    result variables: a change to any file's content or to a variable changes it."""
    seen = []
    for path in sorted(set(map(Path, paths))):
        try:
            st = os.stat(path)
        except FileNotFoundError:
            seen.append((str(path), None))
        else:
            seen.append((str(path), st.st_size, st.st_mtime_ns))
    return tuple(seen) + tuple(fingerprint.result_variables())


class InputWatch:
    """The signature each stage ran with last, and values computed from them (the key context)."""

    def __init__(self):
        self._seen: dict[str, tuple] = {}
        self._values: dict[str, tuple[tuple, object]] = {}

    def changed(self, stage: str, paths: Iterable[Path]) -> bool:
        """True when ``stage`` has not run in this process or its inputs ``paths`` changed since; a forced
        rerun (``NETCL_LITE_RERUN``) always runs it. Records the new signature."""
        if not isinstance(stage, str) or not stage:
            raise ValueError(f"stage must be a non-empty name, got {stage!r}")
        now = signature(paths)
        if fingerprint.rerun_forced() or self._seen.get(stage) != now:
            self._seen[stage] = now
            return True
        return False

    def forget(self, stage: str) -> None:
        """Make ``stage`` run on the next build (after it failed half way), and compute the value of
        that name again on its next use."""
        self._seen.pop(stage, None)
        self._values.pop(stage, None)

    def value(self, name: str, paths: Iterable[Path], compute: Callable[[], object]) -> object:
        """``compute()``, reused while ``paths`` and the result variables are unchanged."""
        if not callable(compute):
            raise TypeError(f"compute must be callable, got {compute!r}")
        now = signature(paths)
        held = self._values.get(name)
        if held is None or held[0] != now:
            held = (now, compute())
            self._values[name] = held
        return held[1]
