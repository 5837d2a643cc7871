"""What a page's includes bring into it is checked as the page's own text is.

The page's own lines are checked in ``on_page_markdown`` (figures' captions, excerpts), before
pymdownx.snippets expands its includes inside the Markdown conversion. An included Markdown file
can bring a figure or an excerpt fence too, so this extension looks at the page again right after
its includes are expanded (the lines before and after pymdownx.snippets' preprocessor):

* a generated figure with no ``/// caption`` under it fails the build, as on the page itself
  (:func:`site_build.generated.uncaptioned`);
* an excerpt fence an include brings fails the build: an excerpt stands on the page itself, where
  the build labels it ("Excerpt ·", no copy button, the note naming its lines) and checks that its
  section is marked once (:mod:`site_build.copyable`);
* a citation an include brings fails the build: citations are checked and made links on the page's
  own lines (:mod:`site_build.citations`), before the includes are expanded.

Each error names the page, the line of the page's include that brought it (found by aligning the
lines before and after the includes were expanded, :func:`_origins`) and what it brought.
"""

from __future__ import annotations

import bisect
import re
from pathlib import Path

from markdown.extensions import Extension
from markdown.preprocessors import Preprocessor

from netcl_lite.files import shown_path

from . import citations, generated, markers
from .includes import CurrentPage

#: the priorities around pymdownx.snippets' preprocessor (32): just before it and just after it
_BEFORE, _AFTER = 33, 31


def _page_lines(before: list[str]) -> list[tuple[str, object]]:
    """``before`` read as pymdownx.snippets reads a page: each line as ``("own", the text it keeps)``,
    ``("include", its Include)`` (replaced by what it brings) or ``("gone", None)`` (a block marker, a
    section marker, a commented-out path: removed)."""
    snippets = markers._snippets()
    found = {inc.index: inc for inc in markers.includes(before)}
    read, block = [], False
    for i, line in enumerate(before):
        m = snippets.RE_ALL_SNIPPETS.match(line)
        if i in found:
            read.append(("include", found[i]))
        elif m and m["escape"]:
            read.append(("own", line.replace(";", "", 1)))
        elif m:
            if not m["inline_marker"]:
                block = not block
            read.append(("gone", None))
        elif block:                                       # a blank path line is kept as a blank line
            read.append(("own", "") if not line.strip() else ("gone", None))
        else:
            s = snippets.match_section(line)
            if s is None:
                read.append(("own", line))
            elif s["escape"]:
                read.append(("own", s["pre"] + s["escape"].replace(";", "", 1) + s["inline_marker"]
                             + s["section"] + s["post"]))
            else:
                read.append(("gone", None))
    return read


def _origins(before: list[str], after: list[str]) -> list[tuple[markers.Include, ...]]:
    """For each line of ``after``, the includes of ``before`` whose expansion may have brought it: none
    for one of ``before``'s own lines, one where the alignment is sure, several where includes stand
    with only blank lines of the page between them (where one ends is not known from the lines alone).
    One walk of both lists, linear time but for a logarithmic look-up: the page's own lines before its
    first include and after its last are matched from each end; between, each own non-blank line is
    found at its first place past the last one found, the blank own lines before it just above it, and
    the lines between belong to the includes passed since the last own line found."""
    read = _page_lines(before)
    kinds = [kind for kind, _ in read]
    origin: list[tuple[markers.Include, ...]] = [()] * len(after)
    if "include" not in kinds:
        return origin
    first, last = kinds.index("include"), len(kinds) - 1 - kinds[::-1].index("include")
    end = len(after)
    for kind, text in reversed(read[last + 1:]):          # the page's own lines after its last include
        if kind == "own" and end > 0 and after[end - 1] == text:
            end -= 1
    j = sum(kind == "own" for kind in kinds[:first])      # the page's own lines before its first include
    places: dict[str, list[int]] = {}
    for q in range(j, end):
        places.setdefault(after[q], []).append(q)
    passed: list[markers.Include] = []
    blanks = 0
    for kind, value in read[first:last + 1]:
        if kind == "include":
            passed.append(value)
            blanks = 0
        elif kind == "own" and not value.strip():
            blanks += 1
        elif kind == "own":
            at = places.get(value, [])
            i = bisect.bisect_left(at, j + blanks)
            if i == len(at):                              # not found: left to the includes before it
                continue
            q = at[i]
            for jj in range(j, q - blanks):
                origin[jj] = tuple(passed)
            j, blanks, passed = q + 1, 0, []
    for jj in range(j, end):
        origin[jj] = tuple(passed)
    return origin


def _brought_by(origins: tuple[markers.Include, ...], line: str) -> markers.Include | None:
    """The one include of ``origins`` that brought ``line``: the only one, or the only one whose file
    (read from the working directory, as the site's includes are) holds it; else None."""
    if len(origins) == 1:
        return origins[0]
    holding = []
    for inc in origins:
        try:
            text = Path(inc.path).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        if line.strip() in text:
            holding.append(inc)
    return holding[0] if len(holding) == 1 else None


def _where(page: CurrentPage, before: list[str], origins: tuple[markers.Include, ...], line: str) -> str:
    """``docs/<page>:<line>: <the include>`` for the include that brought ``line``; where the lines leave
    several possible, each of them; the page alone when none is known."""
    one = _brought_by(origins, line)
    named = []
    for inc in ([one] if one is not None else origins):
        nth = sum(other.path == inc.path for other in markers.includes(before[:inc.index]))
        at = page.line_of(inc.path, nth)
        named.append(f"{page.name}{f':{at}' if at is not None else ''}: {shown_path(markers.include(inc.path))}")
    if not named:
        return f"{page.name}: an include"
    return named[0] if len(named) == 1 else f"{named[0]} (or the include at " + ", ".join(
        n.split(":", 1)[1] for n in named[1:]) + ")"


def _check_citations(page: CurrentPage, before: list[str], after: list[str]) -> None:
    """Raise ``ValueError`` naming ``page`` and the include when an include brought text that cites a work
    or looks like a citation (an ``@`` beginning a word in prose, :mod:`site_build.citations`)."""
    text = "\n".join(after)
    if "@" not in text:
        return
    hits = [m for start, end in citations.prose_spans(text) for m in citations.AT.finditer(text, start, end)]
    if not hits:
        return
    starts = [0]
    for line in after[:-1]:
        starts.append(starts[-1] + len(line) + 1)
    origins = _origins(before, after)
    for m in hits:
        j = bisect.bisect_right(starts, m.start()) - 1
        if not origins[j]:                               # the page's own, checked and rendered already
            continue
        cited = re.match(r"\[[^\]\n]*\]|-?@[\w.:-]*", after[j][max(0, m.start() - starts[j] - 1):])
        shown = cited.group(0) if cited and "@" in cited.group(0) else m.group(0)
        raise ValueError(f"{_where(page, before, origins[j], after[j])}: brings the citation {shown!r}; a "
                         f"citation stands on the page itself, where the build checks its key, makes it a link "
                         f"and lists the page on the Bibliography: write the sentence that cites on the page")


def check(page: CurrentPage, before: list[str], after: list[str]) -> None:
    """Raise ``ValueError`` naming ``page`` and the include when what the includes brought into the
    page's lines ``before`` (giving ``after``) holds a generated figure without its caption, a citation
    or an excerpt fence."""
    if after == before:
        return
    figures = generated.uncaptioned("\n".join(after))
    if figures:
        j, m = figures[0]
        where = _where(page, before, _origins(before, after)[j], after[j])
        raise ValueError(f"{where}: brings the figure {shown_path(m.group(0))}: {generated.CAPTION_RULE}")
    _check_citations(page, before, after)
    count = sum(markers.EXCERPT_LIKE.match(line) is not None for line in after)
    if count <= sum(markers.EXCERPT_LIKE.match(line) is not None for line in before):
        return
    origins = _origins(before, after)
    for start, _ in markers.fences(after):            # an excerpt fence shown inside a code block is text
        if not markers.EXCERPT_LIKE.match(after[start]):
            continue
        if not origins[start]:                          # the page's own, labelled and checked already
            continue
        raise ValueError(f"{_where(page, before, origins[start], after[start])}: brings the excerpt fence {shown_path(after[start].strip())}; "
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
