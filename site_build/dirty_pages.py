"""Under ``--dirty`` (``mkdocs serve --dirty``, ``mkdocs build --dirty``), rebuild a page when anything it
shows changed.

A dirty build renders a page again only when its Markdown file is newer than its HTML, which
makes a prose edit show in about a second: the other pages, the API reference above all, are
not rendered again. But a page also shows what it includes (``--8<--`` snippets and library
sections, and what those include), its build outputs (the library and the data files they print
from) and figures, Chapter 8's measured tables, its citations' references, the glossary's
definitions and, on the reference pages, the library's docstrings. :class:`DirtyPages` keeps a
digest of those inputs per page and deletes the HTML of a page whose digest changed, so the dirty
build renders that page too. Without ``--dirty`` every build renders every page and it does nothing.

Two sources name a page's inputs, so that neither alone has to be complete:

* :func:`page_inputs`, read from the page's Markdown before it renders (what its markers, includes
  and citations name, and the files the stages they run are known to read);
* every file the process opened for reading while the page rendered (:class:`PageReads`, an audit
  hook: whatever a stage, an extension or a report module reads, whether or not anyone listed it).

A file a stage only looks at without opening (the pages the Glossary links, checked to exist) is read
by neither: :func:`page_checks` names those, and their existence is part of the digest.

A file's digest is computed again only when the file's status changed (:class:`FileDigests`), so a
save does not read the whole library again for the pages that show it.
"""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

from netcl_lite import fingerprint

from . import citations, glossary, markers, store
from .inputs import FileDigests
from .measured import REPORT, RESULTS
from .paths import DOCS, FIGURES, ROOT, pages

__all__ = ["DirtyPages", "FileDigests", "PageReads", "digest", "page_checks", "page_inputs"]

#: what Chapter 8's measured sections read besides kernels.json as they render
MEASURED_DATA = (RESULTS.with_name("roofline.json"),)


def _nested_includes(paths: list[Path]) -> list[Path]:
    """The files that ``paths`` (included files) include in turn, at any depth, as pymdownx.snippets
    reads them (paths from the project's root); each file is read once, and one that is missing,
    not a regular file or not text includes nothing."""
    seen, todo, found = set(paths), list(paths), []
    while todo:
        path = todo.pop()
        try:
            text = path.read_text(encoding="utf-8-sig")
        except (OSError, ValueError):               # missing, a folder, not UTF-8, a name refused
            continue
        for inc in markers.includes(text.split("\n")):
            nested = ROOT / inc.path
            if nested not in seen:
                seen.add(nested)
                todo.append(nested)
                found.append(nested)
    return found


def _build_outputs(text: str) -> list[str]:
    """The snippets that the build-output markers of a page's Markdown ``text`` name, as the build reads
    them (:func:`site_build.markers.find`): a marker shown in a code block or a code span is text, and
    names no input. On a page whose markers the build refuses, every line that reads as one (the
    build fails there, naming the page and the line)."""
    try:
        return [m.match["path"] for m in markers.find(text, "page") if m.kind == "build-output"]
    except markers.MarkerError:
        return [m["path"] for m in markers.BUILD_OUTPUT.finditer(text)]


def page_inputs(text: str, library: list[Path] | None = None, page_uri: str | None = None) -> list[Path]:
    """The files besides its Markdown that a page's HTML is made from, as its Markdown ``text`` names
    them (``library``: the library's sources, :func:`netcl_lite.fingerprint.library_sources` when
    None; ``page_uri``: the page's path under ``docs/``, for the pages that get glossary tooltips)."""
    paths = [ROOT / inc.path for inc in markers.includes(text.split("\n"))]
    paths += _nested_includes(paths)
    paths += [FIGURES / f"{m.group('name')}.svg" for m in markers.FIGURE.finditer(text)]
    if "<!-- kernels.json:" in text:
        paths += [RESULTS, *MEASURED_DATA, REPORT]
    outputs = _build_outputs(text) if "<!-- build-output:" in text else []
    if outputs or markers.API.search(text):
        # what a build output prints (the library and the data files the key context digests, the
        # snippet); an API page's docstrings
        paths += fingerprint.library_sources() if library is None else library
        paths += store.data_files()
        paths += [ROOT / path for path in outputs]
    if "@" in text:                                 # a citation's link is titled with its reference
        paths.append(citations.SOURCE)
    if markers.BIBLIOGRAPHY.search(text):           # each entry lists the pages that cite it
        paths += [citations.SOURCE, *pages(DOCS)]
    if markers.GLOSSARY.search(text) or page_uri in glossary.TOOLTIP_PAGES:
        paths.append(glossary.SOURCE)
    return paths


def page_checks(text: str) -> list[Path]:
    """The files whose existence alone (not their text) a page's HTML shows, as its Markdown ``text``
    names them: a stage that looks at a file (``is_file``) without opening it is not seen by
    :class:`PageReads`. The Glossary page links each page an entry's ``see`` names once it has checked
    that the page exists, and fails when it is gone (:func:`site_build.glossary.see_pages`)."""
    if markers.GLOSSARY.search(text):
        return glossary.see_pages(glossary.SOURCE)
    return []


def _exists_digest(paths) -> bytes:
    h = hashlib.sha256()
    for path in paths:
        h.update(os.fsencode(path) + b"\0" + (b"file" if Path(path).is_file() else b"(missing)") + b"\0")
    return h.digest()


class PageReads:
    """The files the process opens for reading while a page renders, by the page's path under
    ``docs/``: a Python audit hook (:func:`sys.addaudithook`) sees every ``open`` (``open``,
    ``Path.read_text``, ``io.open_code``, ``os.open``), so a file a stage reads is an input of the
    page whether or not :func:`page_inputs` names it. The hook is added once per process, on the
    first :meth:`start`, and does nothing while no page renders. Each file's status (:func:`status`) is
    taken as it is first opened, so that :meth:`stop` can tell which changed while the page rendered."""

    _current: dict[str, tuple[int, ...] | None] | None = None   # path → status at its first open, while a page renders
    _hooked = False

    @staticmethod
    def _audit(event: str, args: tuple) -> None:
        current = PageReads._current
        if current is None or event != "open":
            return
        path, mode, flags = args
        if isinstance(path, int) or path is None:
            return                                          # a descriptor: its file was opened before
        writes = ("w" in mode or "a" in mode or "x" in mode or "+" in mode) if isinstance(mode, str) else (
            isinstance(flags, int) and flags & os.O_ACCMODE != os.O_RDONLY)
        if not writes:
            path = os.path.abspath(os.fsdecode(path))
            if path not in current:
                current[path] = status(path)

    def start(self) -> None:
        """Record from now on the files opened for reading."""
        if not PageReads._hooked:
            sys.addaudithook(PageReads._audit)
            PageReads._hooked = True
        PageReads._current = {}
        self.changed: list[Path] = []

    def stop(self) -> list[Path]:
        """Stop recording; the files opened for reading since :meth:`start`, sorted. Those whose status
        changed since they were first opened (saved again while the page rendered) are left in
        ``self.changed``."""
        current, PageReads._current = PageReads._current or {}, None
        self.changed = [Path(p) for p, seen in sorted(current.items()) if status(p) != seen]
        return [Path(p) for p in sorted(current)]


def status(path: str | Path) -> tuple[int, ...] | None:
    """What :class:`FileDigests` reads a file again on (size, modification and status-change times,
    inode), or None when ``path`` cannot be looked at."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return (st.st_mode, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


def _files_digest(paths, files: FileDigests) -> bytes:
    h = hashlib.sha256()
    for path in paths:
        h.update(os.fsencode(path) + b"\0" + files(path))    # a name not UTF-8 as its bytes (surrogate escapes)
    return h.digest()


def digest(src: Path, files: FileDigests | None = None, library: list[Path] | None = None,
           page_uri: str | None = None) -> str:
    """A digest of a page's Markdown, of every file in its :func:`page_inputs` and of whether each file
    of its :func:`page_checks` exists (``files``: the
    digests of files already read, kept across builds, so the library is read once for all API
    pages and again only where it changed; ``library`` and ``page_uri``: as :func:`page_inputs`
    takes them)."""
    files = FileDigests() if files is None else files
    if not isinstance(files, FileDigests):
        raise TypeError(f"files must be a FileDigests or None, got {type(files).__name__}")
    data = Path(src).read_bytes()              # not UTF-8: MkDocs reports it, naming the page
    h = hashlib.sha256(data)
    text = data.decode("utf-8", errors="replace")
    h.update(_files_digest(page_inputs(text, library, page_uri), files))
    h.update(_exists_digest(page_checks(text)))
    return h.hexdigest()


def _rendered_pages(files) -> list:
    """The pages of ``files`` that a build may render: MkDocs' included pages and, as ``mkdocs serve``
    renders them too, its drafts (``draft_docs``), which ``documentation_pages()`` leaves out."""
    from mkdocs.structure.files import Files, InclusionLevel

    if isinstance(files, Files):
        return files.documentation_pages(inclusion=InclusionLevel.is_in_serve)
    return files.documentation_pages()


class DirtyPages:
    """The digest of each page's inputs as the last build saw them: those its Markdown names
    (:func:`page_inputs`) and those it read as it rendered (:class:`PageReads`), with the size and time
    of the HTML that build wrote. Kept in memory across the builds of a serve session, and on disk
    (:meth:`save`, under the cache root, one record per site folder) for the next ``mkdocs build
    --dirty``: a page whose HTML is not the one recorded (no record, or another build wrote it since)
    is rendered again, so a dirty build never keeps a page whose inputs changed in between."""

    def __init__(self, dirty: bool = False):
        self.dirty = dirty
        self.digests: dict[str, str] = {}
        self.read: dict[str, tuple[list[Path], bytes]] = {}    # page → the files it read, and their digest
        self.html: dict[str, tuple[int, int]] = {}              # page → its HTML's (mtime_ns, size) as written
        self.files = FileDigests()
        self._reads = PageReads()
        self._rendering: str | None = None
        self._site: Path | None = None                          # the site folder the record is of

    @staticmethod
    def record_path(site_dir: Path) -> Path:
        """Where the record of the pages built into ``site_dir`` is kept (:meth:`save`)."""
        name = hashlib.sha256(os.fsencode(Path(site_dir).resolve())).hexdigest()[:24]
        return fingerprint.cache_root() / "dirty-pages" / f"{name}.json"

    def _load(self, site_dir: Path) -> None:
        """Read the record of ``site_dir`` when this process has not built it yet; a record that is
        missing or unreadable, malformed, naming a path no file system can hold (a lone surrogate, a NUL),
        or anything but a regular file there (a named pipe, never waited on: :func:`.store.read_entry`), is
        no record (every page is rendered)."""
        import json

        site_dir = Path(site_dir).resolve()
        if self._site == site_dir:
            return
        self._site = site_dir
        self.digests, self.read, self.html = {}, {}, {}
        try:
            raw = store.read_entry(self.record_path(site_dir))     # a pipe there: no record, never waited on
            if raw is None:
                return
            record = json.loads(raw.decode("utf-8"))
            for uri, page in record["pages"].items():
                digest_, read, read_digest, html = page["digest"], page["read"], page["read_digest"], page["html"]
                if not (isinstance(digest_, str) and isinstance(read, list) and all(isinstance(r, str) for r in read)
                        and isinstance(read_digest, str) and isinstance(html, list) and len(html) == 2
                        and all(isinstance(v, int) for v in html)):
                    raise ValueError(uri)
                for r in read:       # a path no system can hold (a lone surrogate, a NUL): no record
                    if "\0" in r:
                        raise ValueError(uri)
                    os.fsencode(r)   # UnicodeEncodeError, a ValueError, where it cannot be a file name
                self.digests[uri] = digest_
                self.read[uri] = ([Path(r) for r in read], bytes.fromhex(read_digest))
                self.html[uri] = (html[0], html[1])
        except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError):
            # RecursionError: json.loads of arrays or objects nested deeper than the interpreter recurses
            self.digests, self.read, self.html = {}, {}, {}

    def save(self, files, site_dir: Path) -> None:
        """Under ``--dirty``, after a build: record each page's input digest, what it read, and the
        HTML now in ``site_dir`` (:meth:`record_path`), for the next dirty build in another process."""
        import json

        if not self.dirty or files is None:
            return
        pages = {}
        for file in _rendered_pages(files):
            uri = file.src_uri
            try:
                st = os.stat(file.abs_dest_path)
            except OSError:
                continue
            if uri in self.digests and uri in self.read:
                paths, read_digest = self.read[uri]
                pages[uri] = {"digest": self.digests[uri], "read": [str(p) for p in paths],
                              "read_digest": read_digest.hex(), "html": [st.st_mtime_ns, st.st_size]}
                self.html[uri] = (st.st_mtime_ns, st.st_size)
        path = self.record_path(site_dir)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            store.write_entry(path, json.dumps({"pages": pages}, sort_keys=True).encode())   # a link there replaced
        except OSError:
            pass                                         # no record: the next dirty build renders every page

    def rendering(self, page_uri: str) -> None:
        """Under ``--dirty``: the page ``page_uri`` starts rendering; record the files it reads."""
        if self.dirty:
            self._rendering = page_uri
            self._reads.start()

    def rendered(self) -> None:
        """Under ``--dirty``: the page :meth:`rendering` named is rendered; keep what it read, with
        the files' digests as they were read."""
        if self.dirty and self._rendering is not None:
            paths = self._reads.stop()
            # a file saved again while the page rendered may show in the HTML as it was before: no digest
            # is recorded that the next build could match, so that build renders the page again
            read_digest = b"" if self._reads.changed else _files_digest(paths, self.files)
            self.read[self._rendering] = (paths, read_digest)
            self._rendering = None

    def invalidate(self, files, site_dir: Path | None = None) -> None:
        """Under ``--dirty``: delete the built HTML of each page whose inputs changed since the last build
        (of this process, or the one recorded for ``site_dir``), or whose HTML is not the one that
        build wrote, so that MkDocs renders it again."""
        if not self.dirty:
            return
        if site_dir is not None:
            self._load(site_dir)
        self._reads.stop()                              # a render that failed half way recorded no page
        self._rendering = None
        library = fingerprint.library_sources()         # listed once for all the pages
        for file in _rendered_pages(files):
            uri, dest = file.src_uri, Path(file.abs_dest_path)
            try:
                now = digest(Path(file.abs_src_path), self.files, library, uri)
            except OSError:
                # a page that cannot be read (a dangling link, a folder, no permission): MkDocs reports
                # it as it reads the page, naming it; keep no record of it, so it is rendered again
                dest.unlink(missing_ok=True)
                self.digests.pop(uri, None)
                self.read.pop(uri, None)
                continue
            read = self.read.get(uri)
            try:
                st = dest.stat()
                html = (st.st_mtime_ns, st.st_size)
            except OSError:
                html = None
            if (self.digests.get(uri, now) != now
                    or read is not None and _files_digest(read[0], self.files) != read[1]
                    or site_dir is not None and html is not None and self.html.get(uri) != html):
                dest.unlink(missing_ok=True)            # MkDocs renders a page without HTML
                self.read.pop(uri, None)
            self.digests[uri] = now
