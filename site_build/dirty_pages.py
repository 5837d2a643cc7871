"""Under ``mkdocs serve --dirty``, rebuild a page when anything it shows changed.

A dirty build renders a page again only when its Markdown file is newer than its HTML, which
makes a prose edit show in about a second: the other pages, the API reference above all, are
not rendered again. But a page also shows what it includes (``--8<--`` snippets and library
sections), its build outputs and figures, Chapter 8's measured tables and, on the reference
pages, the library's docstrings. :class:`DirtyPages` keeps a digest of those inputs per page and
deletes the HTML of a page whose digest changed, so the dirty build renders that page too.
Without ``--dirty`` every build renders every page and it does nothing.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from netcl_lite import fingerprint

from . import markers
from .measured import REPORT, RESULTS
from .paths import FIGURES, ROOT


def page_inputs(text: str) -> list[Path]:
    """The files besides its Markdown that a page's HTML is made from."""
    paths = [ROOT / m.group("path") for m in markers.INCLUDE.finditer(text)]
    paths += [FIGURES / f"{m.group('name')}.svg" for m in markers.FIGURE.finditer(text)]
    if "<!-- kernels.json:" in text:
        paths += [RESULTS, REPORT]
    if "<!-- build-output:" in text or markers.API.search(text):
        paths += fingerprint.library_sources()   # what a build output prints; an API page's docstrings
    return paths


def _file_digest(path: Path) -> bytes:
    return hashlib.sha256(path.read_bytes()).digest() if path.is_file() else b"(missing)"


def digest(src: Path, seen: dict[Path, bytes] | None = None) -> str:
    """A digest of a page's Markdown and of every file in its :func:`page_inputs` (``seen``: the
    digests of files already read in this pass, so the library is read once for all API pages)."""
    seen = {} if seen is None else seen
    text = src.read_text(encoding="utf-8")
    h = hashlib.sha256(text.encode())
    for path in page_inputs(text):
        if path not in seen:
            seen[path] = _file_digest(path)
        h.update(str(path).encode() + b"\0" + seen[path])
    return h.hexdigest()


class DirtyPages:
    """The digest of each page's inputs as the last build saw them (one per serve session)."""

    def __init__(self, dirty: bool = False):
        self.dirty = dirty
        self.digests: dict[str, str] = {}

    def invalidate(self, files) -> None:
        """Under ``--dirty``: delete the built HTML of each page whose inputs changed since the last build,
        so that MkDocs renders it again."""
        if not self.dirty:
            return
        seen: dict[Path, bytes] = {}
        for file in files.documentation_pages():
            now = digest(Path(file.abs_src_path), seen)
            if self.digests.get(file.src_uri, now) != now:
                Path(file.abs_dest_path).unlink(missing_ok=True)   # MkDocs renders a page without HTML
            self.digests[file.src_uri] = now
