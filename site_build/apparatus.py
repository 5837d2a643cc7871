"""The book's apparatus on each page: citations and the Bibliography (:mod:`.citations`), the
Glossary and its tooltips (:mod:`.glossary`). The plugin calls :func:`render_markdown` after the
other Markdown stages and :func:`render_content` last, once the page's math is MathML.
"""

from __future__ import annotations

import collections
import html
import re
import urllib.parse

_unescape = html.unescape
from pathlib import Path

from . import citations, glossary

#: the printable book, as mkdocs-print-site-plugin writes it under the site
PRINT_PAGE = Path("print_page") / "index.html"
#: a start tag: its name, then text and quoted values up to its ``>``; no part crosses a ``<`` (serializers
#: escape it in values), so a tag left open ends its try at the next one and a page is read in one pass
_TAG = re.compile(r"""<[A-Za-z][^\s<>/]*([^<>"']*(?:(?:"[^"<]*"|'[^'<]*')[^<>"']*)*)>""")
#: an attribute of a start tag's text, its value quoted or not: read in turn, so text inside another
#: attribute's value (``title="id='x'"``) is no attribute
_ATTRIBUTE = re.compile(r"""([^\s"'<>/=]+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'=<>`]+)))?""")
_LINK_OPEN = re.compile(r"<a\b")
#: a link's own ``href`` to an anchor of the page (not ``data-href`` nor ``xlink:href``, which lead nowhere)
_LOCAL_HREF = re.compile(r'(?<![\w:-])href="#([^"]+)"')
#: a page's section in the printable book, as print-site wraps it, by its key
_SECTION = re.compile(r'<section class="print-page" id="([^"]+)"')


def check_markdown(markdown: str, page_uri: str, first_line: int = 1) -> None:
    """Raise ``ValueError`` naming the page and the line for a citation whose key is not in the
    bibliography and for text that looks like a citation but is not one (:func:`.citations.check`);
    run on the page as written, before other stages add lines. A page that is not Markdown (a drill
    notebook, whose text MkDocs hands on as its JSON) is not read (:func:`.citations.cites`)."""
    if citations.cites(page_uri):
        citations.check(markdown, page_uri, first_line=first_line)


def entries(marker, page_uri: str, files) -> str:
    """The Markdown that takes the place of an apparatus ``marker`` (a :class:`.markers.Marker` of kind
    ``bibliography`` or ``glossary``, which :mod:`.markers` finds on its own page only, outside code):
    every work of the Bibliography or every term of the Glossary."""
    if marker.kind == "bibliography":
        return citations.bibliography(files)
    return glossary.glossary(page_uri)


def render_markdown(markdown: str, page_uri: str, files) -> str:
    """The page ``page_uri``'s Markdown with its citations as links (the apparatus markers are
    replaced by :func:`entries` in the markers' pass, :func:`.markers.replace`, which leaves a marker
    in code as the text it is); a page that is not Markdown, as it is (:func:`.citations.cites`)."""
    return citations.render(markdown, page_uri) if citations.cites(page_uri) else markdown


def check_content(html: str, page_uri: str, markdown: str, first_line: int = 1) -> None:
    """Raise ``ValueError`` naming the page and the line of ``markdown`` (the page as written) for a
    citation that did not become a link in the rendered ``html`` (:func:`.citations.check_rendered`)."""
    citations.check_rendered(html, page_uri, markdown, first_line)


def render_content(html: str, page_uri: str) -> str:
    """The page's HTML with a tooltip on each glossary term's first use, on the pages that get them."""
    if page_uri in glossary.TOOLTIP_PAGES:
        html, _ = glossary.mark_first_uses(html)
    return html


def no_print_page(config) -> None:
    """Leave out the printable book (the print-site plugin's page) from this session's builds.

    Under ``mkdocs serve --dirty`` a save renders only the edited pages, but the print page is made
    from every page's HTML (print-site renders none of its own), and making it takes seconds: the
    quick loop goes without it. ``mkdocs build`` and a plain ``mkdocs serve`` make it."""
    plugin = config.plugins.get("print-site")
    if plugin is not None:
        plugin.config["enabled"] = False


def repair_print_page(site_dir: Path) -> int:
    """Unwrap each link of the printable book whose target is not in it, and say how many.

    print-site turns every cross-reference into an anchor of the one page, also those whose
    target has no anchor there: mkdocstrings' optional references to Python's own classes
    (``RuntimeError``), which the pages themselves leave as plain text. The book shows them as
    plain text too. A link whose target print-site left unprefixed (it prefixes the anchors of
    headings, footnotes and list items only: a Glossary term's is a ``<dt>``'s) is led to it instead,
    when the book holds that anchor once."""
    path = Path(site_dir) / PRINT_PAGE
    if not path.is_file():
        return 0
    text = path.read_text(encoding="utf-8")
    found = _ids(text)
    ids = set(found)
    once = {i for i, n in collections.Counter(found).items() if n == 1}
    # print-site prefixes a link's anchor with its page's section ("glossary.md#term-token" becomes
    # "#glossary-term-token") but the anchor itself only on headings, footnotes and list items: a link
    # to another element's (a Glossary term's <dt>, an attribute list's id) leads to it unprefixed, when
    # the book holds that id once
    sections = set(_SECTION.findall(text))
    broken = relinked = 0

    kept, at, scan = [], 0, 0
    while (m := _LINK_OPEN.search(text, scan)) is not None:    # one pass: linear, closed links or not
        tag_end = text.find(">", m.end())
        if tag_end < 0:
            break
        href = _LOCAL_HREF.search(text, m.end(), tag_end)
        if href is None:                                    # not a local link: look past its tag
            scan = tag_end + 1
            continue
        close = text.find("</a>", tag_end + 1)
        if close < 0:                                       # no link closes here, nor after it
            break
        if not _leads_to(href.group(1), ids):
            unprefixed = _unprefixed(href.group(1), sections, once)
            if unprefixed is not None:
                kept += [text[at:href.start(1)], unprefixed]
                at, relinked = href.end(1), relinked + 1
            else:
                kept += [text[at:m.start()], text[tag_end + 1:close]]
                at, broken = close + len("</a>"), broken + 1
        scan = close + len("</a>")
    kept.append(text[at:])
    repaired = "".join(kept)
    if broken or relinked:
        path.write_text(repaired, encoding="utf-8")
    return broken


def _leads_to(anchor: str, ids: set[str]) -> bool:
    """Whether the link ``#anchor`` (as the page's HTML writes it) leads to one of ``ids``, as a browser
    finds a fragment's element: its character references read, then as written or percent-decoded."""
    anchor = _unescape(anchor)
    return anchor in ids or urllib.parse.unquote(anchor) in ids


def _ids(html: str) -> list[str]:
    """Every element's ``id`` in ``html``, in order: the ``id`` attributes of its start tags, not text that
    reads ``id="..."`` in prose (kept as text by Markdown), in another attribute (``data-id``) or inside
    another attribute's value."""
    found = []
    for tag in _TAG.finditer(html):
        for attribute in _ATTRIBUTE.finditer(tag.group(1)):
            if attribute.group(1).lower() == "id":
                value = next((v for v in attribute.group(2, 3, 4) if v is not None), "")
                if value:
                    found.append(_unescape(value))
    return found


def _unprefixed(anchor: str, sections: set[str], once: set[str]) -> str | None:
    """The id that the printable book's link ``#anchor`` (``<section>-<id>``, as print-site rewrites a link
    to another page's anchor) leads to when print-site left that id unprefixed and the book holds it once."""
    for at in (i for i, c in enumerate(anchor) if c == "-"):
        if anchor[:at] in sections and anchor[at + 1:] in once:
            return anchor[at + 1:]
    return None
