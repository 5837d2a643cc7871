"""What a page's includes bring into it is checked as the page's own text is.

The page's own lines are checked in ``on_page_markdown`` (figures' captions, excerpts), before
pymdownx.snippets expands its includes inside the Markdown conversion. An included Markdown file
can bring a figure or an excerpt fence too, so this extension looks at the page again right after
its includes are expanded (the lines before and after pymdownx.snippets' preprocessor):

* a generated figure with no ``/// caption`` under it fails the build, as on the page itself
  (:func:`site_build.generated.uncaptioned`);
* an excerpt fence an include brings fails the build: an excerpt stands on the page itself, where
  the build labels it ("Excerpt ·", no copy button, the note naming its lines) and checks that its
  section is marked once (:mod:`site_build.copyable`).

Each error names the page, the line of the page's include that brought it (found by aligning the
lines before and after the includes were expanded) and what it brought.
"""

from __future__ import annotations

import difflib

from markdown.extensions import Extension
from markdown.preprocessors import Preprocessor

from netcl_lite.files import shown_path

from . import generated, markers
from .includes import CurrentPage

#: the priorities around pymdownx.snippets' preprocessor (32): just before it and just after it
_BEFORE, _AFTER = 33, 31


def _include_that_brought(before: list[str], after: list[str], j: int) -> markers.Include | None:
    """The include of ``before`` whose expansion brought the line ``after[j]``, or None when that line is
    one of ``before``'s own: the lines are aligned, and a line in a stretch that differs belongs to the
    last include at or before the stretch's end in ``before``."""
    matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if j1 <= j < j2:
            if tag == "equal":
                return None
            found = markers.includes(before[:max(i2, i1 + 1)])
            return found[-1] if found else None
    return None


def _where(page: CurrentPage, before: list[str], inc: markers.Include | None) -> str:
    """``docs/<page>:<line>: <the include>``, or the page alone when the include is not known."""
    if inc is None:
        return f"{page.name}: an include"
    nth = sum(other.path == inc.path for other in markers.includes(before[:inc.index]))
    line = page.line_of(inc.path, nth)
    return f"{page.name}{f':{line}' if line is not None else ''}: {shown_path(markers.include(inc.path))}"


def check(page: CurrentPage, before: list[str], after: list[str]) -> None:
    """Raise ``ValueError`` naming ``page`` and the include when what the includes brought into the
    page's lines ``before`` (giving ``after``) holds a generated figure without its caption or an
    excerpt fence."""
    if after == before:
        return
    figures = generated.uncaptioned("\n".join(after))
    if figures:
        j, m = figures[0]
        where = _where(page, before, _include_that_brought(before, after, j))
        raise ValueError(f"{where}: brings the figure {shown_path(m.group(0))}: {generated.CAPTION_RULE}")
    count = sum(markers.EXCERPT_OPEN.match(line) is not None for line in after)
    if count <= sum(markers.EXCERPT_OPEN.match(line) is not None for line in before):
        return
    for start, _ in markers.fences(after):            # an excerpt fence shown inside a code block is text
        if not markers.EXCERPT_OPEN.match(after[start]):
            continue
        inc = _include_that_brought(before, after, start)
        if inc is None:                                  # the page's own, labelled and checked already
            continue
        raise ValueError(f"{_where(page, before, inc)}: brings the excerpt fence {shown_path(after[start].strip())}; "
                         f"an excerpt stands on the page itself, where the build labels it and checks its "
                         f"section: put the fence and its include on the page")


class _Before(Preprocessor):
    def run(self, lines):
        self.md.brought_before = list(lines)
        return lines


class _After(Preprocessor):
    def __init__(self, md, page: CurrentPage):
        super().__init__(md)
        self.page = page

    def run(self, lines):
        check(self.page, getattr(self.md, "brought_before", lines), lines)
        return lines


class BroughtChecked(Extension):
    """The checks of :func:`check`, run on each page as the build renders it (``page``: the page being
    rendered, as the build plugin keeps it)."""

    def __init__(self, page: CurrentPage, **kwargs):
        if not isinstance(page, CurrentPage):
            raise TypeError(f"page must be a CurrentPage, got {type(page).__name__}")
        self.page = page
        super().__init__(**kwargs)

    def extendMarkdown(self, md):
        md.preprocessors.register(_Before(md), "brought_before", _BEFORE)
        md.preprocessors.register(_After(md, self.page), "brought_after", _AFTER)
