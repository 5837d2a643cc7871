"""What a stage's output depends on, seen cheaply: under ``mkdocs serve`` the plugin lives across
rebuilds, and a stage whose inputs are unchanged since its last run in this process is skipped.

A stage's inputs are files (their path, content digest and the owner's executable bit, which the
shipped wheel records as the file's mode, :class:`FileDigests`: an edit that keeps the size and
modification time, ``cp -p`` or a restored mtime, still changes them) and the
environment variables that change results (:func:`netcl_lite.fingerprint.result_variables`). The
first build of a process runs every stage; the execution cache (:mod:`site_build.store`) then
decides by content what runs again.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Callable, Iterable
from pathlib import Path

from netcl_lite import fingerprint


class FileDigests:
    """The SHA-256 of files, each read again only when its size, modification or status-change time
    or inode changed since it was last read (any write changes the status-change time, which no
    tool sets back; an editor's replace-by-rename changes the inode)."""

    def __init__(self):
        self._held: dict[Path, tuple[tuple[int, ...], bytes]] = {}

    def __call__(self, path: Path) -> bytes:
        """The digest of ``path``'s bytes, and whether its owner may execute it (hatchling writes the
        file into the wheel as 755 or 644 by that bit), or ``b"(missing)"`` when it is not a file."""
        try:
            st = os.stat(path)
        except (OSError, ValueError):                # missing, or a name the system refuses (too long, a NUL)
            return b"(missing)"
        if not stat.S_ISREG(st.st_mode):
            return b"(missing)"
        seen = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
        held = self._held.get(path)
        if held is None or held[0] != seen:
            try:
                held = (seen, hashlib.sha256(Path(path).read_bytes()).digest())
            except OSError:                          # removed or made unreadable since the stat
                return b"(missing)"
            self._held[path] = held
        return held[1] + (b" executable" if st.st_mode & stat.S_IXUSR else b"")


def signature(paths: Iterable[Path], files: FileDigests | None = None) -> tuple:
    """The path and content digest of each of ``paths`` (``b"(missing)"`` for a missing one), and the
    result variables: a change to any file's content or to a variable changes it (``files``: the
    digests kept from earlier calls, so that an unchanged file is not read again)."""
    files = FileDigests() if files is None else files
    seen = tuple((str(path), files(path)) for path in sorted(set(map(Path, paths))))
    return seen + tuple(fingerprint.result_variables())


class InputWatch:
    """The signature each stage ran with last, and values computed from them (the key context)."""

    def __init__(self):
        self._seen: dict[str, tuple] = {}
        self._values: dict[str, tuple[tuple, object]] = {}
        self._files = FileDigests()

    def changed(self, stage: str, paths: Iterable[Path]) -> bool:
        """True when ``stage`` has not run in this process or its inputs ``paths`` changed since; a forced
        rerun (``NETCL_LITE_RERUN``) always runs it. Records the new signature."""
        if not isinstance(stage, str) or not stage:
            raise ValueError(f"stage must be a non-empty name, got {stage!r}")
        now = signature(paths, self._files)
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
        now = signature(paths, self._files)
        held = self._values.get(name)
        if held is None or held[0] != now:
            held = (now, compute())
            self._values[name] = held
        return held[1]
