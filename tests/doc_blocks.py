"""Read the pages the way MkDocs renders them, and pull out their code blocks.

``expand(page)`` runs pymdownx.snippets (the build's contained form) with the settings in ``mkdocs.yml``, so
``--8<--`` includes become the code the reader sees. ``blocks(page)`` then
normalizes fence info strings (``python title="x"``, ``py``, ``{.python}``…)
to plain ``python`` before handing the text to
``pytest_codeblocks.extract_from_buffer``, which otherwise skips any fence
whose info string is not exactly ``python``. Blocks marked ``.excerpt`` are
library excerpts: shown, not run, and checked to be real file sections.
"""

from __future__ import annotations

import io
import os
import re
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path

import markdown
from mkdocs.config import load_config
from pytest_codeblocks import extract_from_buffer

from site_build import markers

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PYTHON_NAMES = {"python", "py", "python3"}
_FENCE = re.compile(r"^(?P<indent>\s*)(?P<ticks>`{3,})(?P<info>[^`]*)$")
_TILDE_FENCE = re.compile(r"^\s*~{3,}")


@contextmanager
def _in_root():
    old = os.getcwd()
    os.chdir(ROOT)  # pymdownx.snippets resolves base_path against the working directory
    try:
        yield
    finally:
        os.chdir(old)


@lru_cache(maxsize=1)
def config():
    with _in_root():
        return load_config(str(ROOT / "mkdocs.yml"))


def pages() -> list[Path]:
    """Every Markdown page MkDocs builds (dot-folders are excluded, as MkDocs does)."""
    return sorted(p for p in DOCS.rglob("*.md") if not any(part.startswith(".") for part in p.relative_to(DOCS).parts))


def expand(page: Path) -> str:
    """The page text after pymdownx.snippets, exactly as MkDocs would preprocess it: with the settings in
    ``mkdocs.yml``, through the build's contained form of it (:func:`site_build.includes.contained_snippets`,
    which, unlike pymdownx.snippets alone, keeps a page's own line that shows a section marker)."""
    from site_build import includes

    cfg = config()
    text = page.read_text(encoding="utf-8")
    name = f"docs/{page.relative_to(DOCS).as_posix()}" if page.is_relative_to(DOCS) else str(page)
    snippets = includes.contained_snippets(includes.CurrentPage(name, text),
                                           **cfg["mdx_configs"].get("pymdownx.snippets", {}))
    md = markdown.Markdown(extensions=[snippets])
    with _in_root():
        lines = md.preprocessors["snippet"].run(text.split("\n"))
    return "\n".join(lines) + "\n"


def fence_language(info: str) -> tuple[str, set[str]]:
    """('python', {'excerpt'}) for '{.python .excerpt title="x"}'; ('text', set()) for 'text'."""
    info = info.strip()
    if info.startswith("{") and info.endswith("}"):
        classes = re.findall(r"\.([\w-]+)", info)
        return (classes[0] if classes else ""), set(classes[1:])
    words = info.split()
    return (words[0] if words else ""), set()


def normalize(text: str) -> str:
    """Rewrite python fence openers to 'python' (runnable) or 'python-excerpt'."""
    out, inside = [], None
    for line in text.split("\n"):
        if _TILDE_FENCE.match(line):
            raise ValueError(f"tilde fences are not collected by the doc tests; use backticks: {line!r}")
        m = _FENCE.match(line)
        if m and inside is None and m["info"].strip():
            lang, classes = fence_language(m["info"])
            if lang in PYTHON_NAMES:
                line = m["indent"] + m["ticks"] + ("python-excerpt" if "excerpt" in classes else "python")
            inside = m["ticks"]
        elif m and inside is None:
            inside = m["ticks"]
        elif m and inside is not None and m["ticks"] == inside and not m["info"].strip():
            inside = None
        out.append(line)
    return "\n".join(out)


def blocks(page: Path):
    """All python blocks of a page after expansion, as pytest_codeblocks.CodeBlock objects."""
    found = extract_from_buffer(io.StringIO(normalize(expand(page))))
    return [b for b in found if b.syntax in ("python", "python-excerpt")]


def runnable(page: Path):
    return [b for b in blocks(page) if b.syntax == "python"]


def excerpts(page: Path, python_only: bool = False) -> list[tuple[str, str]]:
    """(include target, fence opener) for each excerpt fence in the *unexpanded* page."""
    text = page.read_text(encoding="utf-8")
    found = []
    for m in markers.EXCERPT_FENCE.finditer(text):
        if python_only and fence_language(m.group(3))[0] not in PYTHON_NAMES:
            continue
        found.append((m.group(4).strip(), m.group(3)))
    return found


def rendered_page(site: Path, page: Path) -> Path:
    """Where MkDocs (use_directory_urls) writes a page: a.md → a/index.html, index.md → index.html."""
    rel = page.relative_to(DOCS).with_suffix("")
    folder = rel.parent if rel.name == "index" else rel
    return site / folder / "index.html"


def count_rendered_python(html: str) -> tuple[int, int]:
    """(runnable, excerpt) python blocks in a built page.

    API signatures that mkdocstrings renders from the code itself (``doc-signature``)
    are not examples and are left out; docstring examples render as ``pycon`` and are
    run by the doctest test.
    """
    divs = [c.split() for c in re.findall(r'<div class="([^"]*\blanguage-(?:python|py|python3)\b[^"]*)"', html)]
    divs = [c for c in divs if "doc-signature" not in c]
    excerpt = sum(1 for classes in divs if "excerpt" in classes)
    return len(divs) - excerpt, excerpt
