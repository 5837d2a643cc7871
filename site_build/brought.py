"""What a page's includes bring into it is checked as the page's own text is.

The page's own lines are checked in ``on_page_markdown`` (figures' captions, excerpts), before
pymdownx.snippets expands its includes inside the Markdown conversion. An included Markdown file
can bring a figure or an excerpt fence too, so this extension looks at the page again right after
its includes are expanded:

* a generated figure with no ``/// caption`` under it fails the build, as on the page itself
  (:func:`site_build.generated.uncaptioned`);
* an excerpt fence an include brings fails the build: an excerpt stands on the page itself, where
  the build labels it ("Excerpt ·", no copy button, the note naming its lines) and checks that its
  section is marked once (:mod:`site_build.copyable`);
* a citation an include brings fails the build: citations are checked and made links on the page's
  own lines (:mod:`site_build.citations`), before the includes are expanded.

Which lines an include brought is recorded as the includes are expanded
(:class:`site_build.includes.Expansion`), not guessed from the text afterwards: a line of the page
that an included file repeats is still the page's, and a line the file brings is the file's, even
where it reads like one of the page's. Each error names the page, the line of the page's include
that brought the line, the include, the file that holds the line and its line there.
"""

from __future__ import annotations

import bisect
import re

from markdown.extensions import Extension
from markdown.preprocessors import Preprocessor

from netcl_lite.files import shown_path

from . import citations, generated, markers
from .includes import CurrentPage, Expansion

#: the priority just after pymdownx.snippets' preprocessor (32)
_AFTER = 31


def _where(page: CurrentPage, expansion: Expansion, j: int) -> str:
    """``docs/<page>:<line>: <the include>``, for the include on the page that brought line ``j`` of
    ``expansion.after`` (the page's line as its file numbers it; the page alone if it is not found)."""
    index = expansion.origins[j][0][1]
    before = expansion.before
    found = markers.includes(before)
    inc = next((inc for inc in found if inc.index == index), None)
    if inc is None:                                    # an include the page's lines do not hold
        return page.name
    nth = sum(other.path == inc.path for other in found if other.index < index)
    at = page.line_of(inc.path, nth)
    return f"{page.name}{f':{at}' if at is not None else ''}: {shown_path(markers.include(inc.path))}"


def _brought(expansion: Expansion, j: int) -> bool:
    """Whether line ``j`` of ``expansion.after`` came from an include (not from the page itself)."""
    return len(expansion.origins[j]) > 1


def _check_figures(page: CurrentPage, expansion: Expansion) -> None:
    """Raise ``ValueError`` naming the include and the file's line when a generated figure with a line an
    include brought has no caption under it once the includes are expanded, and naming the page's line
    for a figure of the page's own lines that has none only then: the page's own lines were checked
    before, so what the include brought made it a figure (a link reference definition) or showed it
    (it ends a comment around it, or it turns an indented code block into a list item's text)."""
    for i, last, image in generated.uncaptioned("\n".join(expansion.after)):
        j = next((j for j in range(i, last + 1) if _brought(expansion, j)), None)
        if j is None:
            at = page.own_line(expansion.before, expansion.origins[i][0][1])
            raise ValueError(f"{page.name}{f':{at}' if at is not None else ''}: {shown_path(image)}: has no "
                             f"caption under it once the page's includes are expanded (one brings its link "
                             f"reference definition, or ends a comment or code block around it): "
                             f"{generated.CAPTION_RULE}")
        raise ValueError(f"{_where(page, expansion, j)}: brings the figure {shown_path(image)} "
                         f"({expansion.source(j)}): {generated.CAPTION_RULE}")


def _check_citations(page: CurrentPage, expansion: Expansion) -> None:
    """Raise ``ValueError`` naming ``page`` and the include when an include brought text that cites a work
    or looks like a citation (an ``@`` beginning a word in prose, :mod:`site_build.citations`)."""
    after = expansion.after
    if not any("@" in after[j] for j in range(len(after)) if _brought(expansion, j)):
        return
    text = "\n".join(after)
    hits = [m for start, end in citations.prose_spans(text) for m in citations.AT.finditer(text, start, end)]
    starts = [0]
    for line in after[:-1]:
        starts.append(starts[-1] + len(line) + 1)
    for m in hits:
        j = bisect.bisect_right(starts, m.start()) - 1
        if not _brought(expansion, j):                 # the page's own, checked and rendered already
            continue
        col = m.start() - starts[j]                    # the '@' (or '-@'); a bracket before it opens the citation
        cited = re.match(r"\[[^\]\n]*\]|-?@[\w.:-]*", after[j][col - 1 if col and after[j][col - 1] == "[" else col:])
        shown = cited.group(0) if cited and "@" in cited.group(0) else m.group(0)
        raise ValueError(f"{_where(page, expansion, j)}: brings the citation {shown!r} ({expansion.source(j)}); "
                         f"a citation stands on the page itself, where the build checks its key, makes it a "
                         f"link and lists the page on the Bibliography: write the sentence that cites on the page")


def _check_excerpts(page: CurrentPage, expansion: Expansion) -> None:
    """Raise ``ValueError`` naming ``page`` and the include when an include brought a line that opens an
    excerpt fence (one shown inside a code block is text)."""
    after = expansion.after
    if not any(markers.EXCERPT_LIKE.match(after[j]) for j in range(len(after)) if _brought(expansion, j)):
        return
    for start, _ in markers.fences(after):
        if _brought(expansion, start) and markers.EXCERPT_LIKE.match(after[start]):
            raise ValueError(f"{_where(page, expansion, start)}: brings the excerpt fence "
                             f"{shown_path(after[start].strip())} ({expansion.source(start)}); an excerpt stands "
                             f"on the page itself, where the build labels it and checks its section: put the "
                             f"fence and its include on the page")


def check(page: CurrentPage, expansion: Expansion) -> None:
    """Raise ``ValueError`` naming ``page``, the include and the included file's line when what the
    includes brought into the page (``expansion``, recorded as they were expanded) holds a generated
    figure without its caption, a citation or an excerpt fence."""
    if not isinstance(page, CurrentPage):
        raise TypeError(f"page must be a CurrentPage, got {type(page).__name__}")
    if not isinstance(expansion, Expansion):
        raise TypeError(f"expansion must be an includes.Expansion, got {type(expansion).__name__}")
    if len(expansion.origins) != len(expansion.after):
        raise ValueError(f"expansion: {len(expansion.origins)} origins for {len(expansion.after)} lines; "
                         f"record one origin per line the includes gave")
    if not any(len(origin) > 1 for origin in expansion.origins):
        return
    _check_figures(page, expansion)
    _check_citations(page, expansion)
    _check_excerpts(page, expansion)


class _After(Preprocessor):
    def __init__(self, md, page: CurrentPage):
        super().__init__(md)
        self.page = page

    def run(self, lines):
        expansion = getattr(self.md, "expansion", None)
        if expansion is None:                          # no includes expanded (no pymdownx.snippets)
            return lines
        self.md.expansion = None
        if expansion.after is not lines:
            raise RuntimeError(f"{self.page.name}: the page's lines changed between pymdownx.snippets and the "
                               f"check of what its includes brought; register that preprocessor after "
                               f"priority {_AFTER}")
        check(self.page, expansion)
        return lines


class BroughtChecked(Extension):
    """The checks of :func:`check`, run on each page as the build renders it (``page``: the page being
    rendered, as the build plugin keeps it), on the expansion its contained includes recorded
    (:func:`site_build.includes.contained_snippets`)."""

    def __init__(self, page: CurrentPage, **kwargs):
        if not isinstance(page, CurrentPage):
            raise TypeError(f"page must be a CurrentPage, got {type(page).__name__}")
        self.page = page
        super().__init__(**kwargs)

    def extendMarkdown(self, md):
        md.preprocessors.register(_After(md, self.page), "brought_after", _AFTER)
