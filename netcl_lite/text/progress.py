"""A one-line progress report on stderr (no dependency), redrawn at most ten times a second."""

from __future__ import annotations

import sys
import time

__all__ = ["Progress"]


class Progress:
    """``Progress(enabled)``: ``update(message)`` redraws one stderr line; ``close()`` ends it.

    ``enabled=None`` means "auto": draw only when stderr is a terminal and the
    work has already taken more than a second, so short runs and logs stay quiet.

    >>> bar = Progress(False); bar.update("merge 1/10"); bar.close()
    """

    def __init__(self, enabled: bool | None, *, stream=None, delay_s: float = 1.0):
        if enabled is not None and not isinstance(enabled, bool):
            raise TypeError(f"progress must be True, False or None (auto), got {enabled!r}")
        self.stream = sys.stderr if stream is None else stream
        if enabled is None:
            enabled = bool(getattr(self.stream, "isatty", lambda: False)())
        else:
            delay_s = 0.0
        self.enabled = enabled
        self._start = time.perf_counter()
        self._show_after = self._start + delay_s
        self._next = self._show_after
        self._drawn = False
        self._width = 0

    def update(self, message: str, *, force: bool = False) -> None:
        if not self.enabled:
            return
        now = time.perf_counter()
        if now < self._next and not force:
            return
        self._next = now + 0.1
        self._drawn = True
        line = f"{message} [{now - self._start:.1f} s]"
        self.stream.write("\r" + line.ljust(self._width))  # pad over a longer previous line
        self._width = len(line)
        self.stream.flush()

    def close(self, message: str | None = None) -> None:
        if self._drawn:
            if message:
                self.update(message, force=True)
            self.stream.write("\n")
            self.stream.flush()
