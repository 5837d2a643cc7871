"""Under ``mkdocs serve --dirty``, rebuild a page when anything it shows changed.

A dirty build renders a page again only when its Markdown file is newer than its HTML, which
makes a prose edit show in about a second: the other pages, the API reference above all, are
not rendered again. But a page also shows what it includes (``--8<--`` snippets and library
sections), its build outputs and figures, Chapter 8's measured tables and, on the reference
pages, the library's docstrings. :class:`DirtyPages` keeps a digest of those inputs per page and
deletes the HTML of a page whose digest changed, so the dirty build renders that page too.
Without ``--dirty`` every build renders every page and it does nothing. A file's digest is
computed again only when the file's status changed (:class:`FileDigests`), so a save does not
read the whole library again for the pages that show it.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

from netcl_lite import fingerprint

from . import markers
from .measured import REPORT, RESULTS
from .paths import FIGURES, ROOT


def page_inputs(text: str, library: list[Path] | None = None) -> list[Path]:
    """The files besides its Markdown that a page's HTML is made from (``library``: the library's
    sources, :func:`netcl_lite.fingerprint.library_sources` when None)."""
    paths = [ROOT / inc.path for inc in markers.includes(text.split("\n"))]
    paths += [FIGURES / f"{m.group('name')}.svg" for m in markers.FIGURE.finditer(text)]
    if "<!-- kernels.json:" in text:
        paths += [RESULTS, REPORT]
    if "<!-- build-output:" in text or markers.API.search(text):
        # what a build output prints; an API page's docstrings
        paths += fingerprint.library_sources() if library is None else library
    return paths


class FileDigests:
    """The SHA-256 of files, each read again only when its size, modification or status-change time
    or inode changed since it was last read (any write changes the status-change time, which no
    tool sets back; an editor's replace-by-rename changes the inode)."""

    def __init__(self):
        self._held: dict[Path, tuple[tuple[int, ...], bytes]] = {}

    def __call__(self, path: Path) -> bytes:
        """The digest of ``path``'s bytes, or ``b"(missing)"`` when it is not a file."""
        try:
            st = os.stat(path)
        except (OSError, ValueError):                # missing, or a name the system refuses (too long, a NUL)
            return b"(missing)"
        if not stat.S_ISREG(st.st_mode):
            return b"(missing)"
        seen = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
        held = self._held.get(path)
        if held is None or held[0] != seen:
            held = (seen, hashlib.sha256(Path(path).read_bytes()).digest())
            self._held[path] = held
        return held[1]


def digest(src: Path, files: FileDigests | None = None, library: list[Path] | None = None) -> str:
    """A digest of a page's Markdown and of every file in its :func:`page_inputs` (``files``: the
    digests of files already read, kept across builds, so the library is read once for all API
    pages and again only where it changed; ``library``: as :func:`page_inputs` takes it)."""
    files = FileDigests() if files is None else files
    if not isinstance(files, FileDigests):
        raise TypeError(f"files must be a FileDigests or None, got {type(files).__name__}")
    data = Path(src).read_bytes()              # not UTF-8: MkDocs reports it, naming the page
    h = hashlib.sha256(data)
    for path in page_inputs(data.decode("utf-8", errors="replace"), library):
        h.update(str(path).encode() + b"\0" + files(path))
    return h.hexdigest()


class DirtyPages:
    """The digest of each page's inputs as the last build saw them (one per serve session)."""

    def __init__(self, dirty: bool = False):
        self.dirty = dirty
        self.digests: dict[str, str] = {}
        self.files = FileDigests()

    def invalidate(self, files) -> None:
        """Under ``--dirty``: delete the built HTML of each page whose inputs changed since the last build,
        so that MkDocs renders it again."""
        if not self.dirty:
            return
        library = fingerprint.library_sources()         # listed once for all the pages
        for file in files.documentation_pages():
            now = digest(Path(file.abs_src_path), self.files, library)
            if self.digests.get(file.src_uri, now) != now:
                Path(file.abs_dest_path).unlink(missing_ok=True)   # MkDocs renders a page without HTML
            self.digests[file.src_uri] = now
