"""MkDocs hook: under ``mkdocs serve --dirty``, rebuild a page when anything it shows changed.

A dirty build renders a page again only when its Markdown file is newer than its HTML, which
makes a prose edit show in about a second: the other pages, the API reference above all, are
not rendered again. But a page also shows what it includes (``--8<--`` snippets and library
sections), its build outputs and figures, Chapter 8's measured tables and, on the reference
pages, the library's docstrings. This hook keeps a digest of those inputs per page and deletes
the HTML of a page whose digest changed, so the dirty build renders that page too. Without
``--dirty`` every build renders every page and the hook does nothing.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from netcl_lite import execution_cache as cache

ROOT = Path(__file__).resolve().parents[2]
_INCLUDE = re.compile(r'--8<--\s+"([^":]+)')
_FIGURE = re.compile(r"figures/([\w-]+/[\w-]+\.svg)")
_state: dict = {"dirty": False, "digests": {}}


def page_inputs(text: str) -> list[Path]:
    """The files besides its Markdown that a page's HTML is made from."""
    paths = [ROOT / p for p in _INCLUDE.findall(text)]
    paths += [ROOT / "docs" / "figures" / p for p in _FIGURE.findall(text)]
    if "<!-- kernels.json:" in text:
        paths += [ROOT / "benchmarks" / "results" / "kernels.json", ROOT / "benchmarks" / "report_kernels.py"]
    if "<!-- build-output:" in text or re.search(r"^::: ", text, re.M):
        paths += cache.library_sources()       # what a build output prints; the docstrings an API page shows
    return paths


def _digest(src: Path) -> str:
    text = src.read_text(encoding="utf-8")
    h = hashlib.sha256(text.encode())
    for path in page_inputs(text):
        h.update(str(path).encode() + b"\0" + (path.read_bytes() if path.is_file() else b"(missing)"))
    return h.hexdigest()


def on_startup(command, dirty: bool) -> None:
    _state["dirty"] = dirty


def on_files(files, config):
    if not _state["dirty"]:
        return files
    for file in files.documentation_pages():
        digest = _digest(Path(file.abs_src_path))
        if _state["digests"].get(file.src_uri, digest) != digest:
            Path(file.abs_dest_path).unlink(missing_ok=True)     # MkDocs renders a page whose HTML is missing
        _state["digests"][file.src_uri] = digest
    return files
