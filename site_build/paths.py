"""Where the build reads and writes: the repository that holds this package (an editable install)."""

from __future__ import annotations

import functools
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SNIPPETS = ROOT / "snippets"
DOCS = ROOT / "docs"
FIGURES = DOCS / "figures"


def is_page(name: str) -> bool:
    """Whether MkDocs makes a page of a file named ``name``: its name ends with one of MkDocs' own
    Markdown suffixes (:data:`mkdocs.utils.markdown_extensions`: ``.md``, ``.markdown``, ``.mdown`` and
    the others), exactly as MkDocs tells them."""
    from mkdocs.utils import is_markdown_file

    return is_markdown_file(name)


def page_stem(uri: str) -> str:
    """``uri`` without the Markdown suffix that makes it a page (:func:`is_page`), if it has one."""
    from mkdocs.utils import markdown_extensions

    for suffix in markdown_extensions:
        if uri.endswith(suffix):
            return uri[:-len(suffix)]
    return uri


def pages(docs: Path = DOCS) -> list[Path]:
    """The Markdown files under ``docs`` that MkDocs makes pages of (:func:`is_page`), sorted: not only
    the ``*.md`` ones, and none it leaves out of the site (:func:`excluded`)."""
    return sorted(p for p in docs.rglob("*")
                  if is_page(p.name) and p.is_file() and not excluded(p.relative_to(docs).as_posix()))


def excluded(uri: str) -> bool:
    """Whether MkDocs leaves the file ``uri`` (a path under docs/, with ``/``) out of the site it builds:
    its default exclusion (a dot file or folder, the top ``templates/`` folder) or ``exclude_docs`` of
    ``mkdocs.yml``, matched as MkDocs matches them (gitignore patterns)."""
    return _exclusion((ROOT / "mkdocs.yml").read_bytes()).match_file(uri)


@functools.lru_cache(maxsize=2)
def _exclusion(config: bytes):
    """MkDocs' exclusion of files from the site for a ``mkdocs.yml`` of bytes ``config``
    (:func:`mkdocs.structure.files.set_exclusions`)."""
    import pathspec
    from mkdocs.structure import files

    default = getattr(files, "_default_exclude", None) or \
        pathspec.gitignore.GitIgnoreSpec.from_lines([".*", "/templates/"])
    from .markers import site_config

    patterns = site_config(config).get("exclude_docs")
    if isinstance(patterns, str) and patterns.strip():
        return default + pathspec.gitignore.GitIgnoreSpec.from_lines(patterns.splitlines())
    return default


def drafted(uri: str) -> bool:
    """Whether ``uri`` (a path under docs/, with ``/``) is a draft of ``mkdocs.yml``'s ``draft_docs``:
    a page ``mkdocs serve`` shows but ``mkdocs build`` leaves out of the site."""
    return _drafts((ROOT / "mkdocs.yml").read_bytes()).match_file(uri)


@functools.lru_cache(maxsize=2)
def _drafts(config: bytes):
    """The ``draft_docs`` patterns of a ``mkdocs.yml`` of bytes ``config``, matched as MkDocs matches them."""
    import pathspec

    from .markers import site_config

    patterns = site_config(config).get("draft_docs")
    lines = patterns.splitlines() if isinstance(patterns, str) else []
    return pathspec.gitignore.GitIgnoreSpec.from_lines(lines)


@functools.lru_cache(maxsize=4)
def pyproject_version(text: str) -> str:
    """``[project].version`` of a pyproject.toml whose text is ``text``: the version the wheel carries."""
    try:
        project = tomllib.loads(text).get("project", {})
    except tomllib.TOMLDecodeError as err:
        raise ValueError(f"pyproject.toml: not valid TOML ({err})") from err
    except RecursionError:                      # arrays or tables nested deeper than tomllib recurses
        raise ValueError("pyproject.toml: not valid TOML (nested deeper than it can be read)") from None
    version = project.get("version") if isinstance(project, dict) else None
    if not isinstance(version, str) or not version:
        raise ValueError("pyproject.toml: no version in [project]; set [project].version to a string")
    # the wheel's file name and its metadata carry the version as hatchling normalizes it (PEP 440):
    # '1.0-RC1' is built as netcl_lite-1.0rc1-...; the raw text would name a wheel never built
    from packaging.version import InvalidVersion, Version
    try:
        return str(Version(version))
    except InvalidVersion:
        raise ValueError(f"pyproject.toml: [project].version {version!r:.80} is not a PEP 440 version, which "
                         f"the wheel needs; set it to one such as '0.1.0'") from None
