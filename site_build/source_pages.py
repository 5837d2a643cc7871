"""Every source file of the wheel (the package's Python, the kernels) as a page of the site, in the
theme: ``source/<path>.html``.

A library excerpt on a page links to the lines it shows in the whole file (:mod:`.copyable`); this
module makes those files' pages. Each is a page like the others (the theme's header, palette and
search box), titled by the file's path, with links back to the pages that show excerpts of it,
then the file highlighted by Pygments with a line number before each line. Line ``n`` is the
anchor ``#L<n>``; each excerpt's range is the anchor ``#L<first>-L<last>``, which the site's script
(``docs/assets/source-lines.js``) marks on arrival. The pages stay out of the search index (their
code would crowd out the prose) and out of the navigation.

MkDocs renders a page's Markdown (title, links back, a placeholder); :func:`fill` then puts the
highlighted file in place of the placeholder and tells MkDocs its anchors, which its link check
uses (parsing eighty files of raw HTML as Markdown would cost seconds a build). Pygments' output
is kept under the cache root by Pygments' version, the lexer and the file's digest, each entry
checked against its own digest as it is read, so a build highlights only the files that changed, and a ``mkdocs serve --dirty`` save renders again only the pages
whose Markdown or listing changed (:class:`SourcePage`).
"""

from __future__ import annotations

import functools
import hashlib
import posixpath
import re
from pathlib import Path
from urllib.parse import quote

from mkdocs.structure.files import File

from . import markers
from .paths import ROOT, page_stem

#: a whole excerpt's opening line and include: ```` ```{.python .excerpt …} ```` then ``--8<-- "path:section"``
#: where a source page's Markdown takes its listing (:func:`fill`)
PLACEHOLDER = "<!-- source-listing -->"
#: a bidirectional formatting character (marks, embeddings, overrides, isolates), which a listing would
#: copy into the page: the line would show its code reordered (Trojan source)
_BIDI = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
#: control characters but tab, line feed, form feed and carriage return: HTML allows them nowhere in a page,
#: and Pygments copies them into a listing as they are, so the listing writes them out as escapes
_CONTROL = re.compile("[\x00-\x08\x0b\x0e-\x1f\x7f-\x9f]")


def _source_text(rel: str) -> str:
    """The file ``rel`` as text: UTF-8, else ValueError naming it (a source page shows the file's
    characters; a module in another encoding is valid Python, but its page would show other ones)."""
    data = (ROOT / rel).read_bytes()
    try:                                # line ends as text mode reads them, as editors and pymdownx do
        return data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        raise ValueError(f"{rel}:{line}: is not UTF-8 (byte 0x{data[err.start]:02x}); a source page shows a "
                         f"UTF-8 file: save it as UTF-8") from None
_ANCHOR = re.compile(r' id="(L[0-9-L]+)"')
#: (the attributes read whole, then searched for the class: a pattern with the class between two runs of
#: ``[^}\n]*`` tries the second from each of the class's places, quadratic time on a line that repeats it)
_OPEN_THEN_INCLUDE = re.compile(r"^[ \t]*`{3,}\{(?P<attributes>[^}\n]*)\}[ \t]*\n(?=(?P<line>.*)$)", re.M)
_EXCERPT_CLASS = re.compile(markers.EXCERPT_CLASS)


def uri(rel: str) -> str:
    """The Markdown page of the file ``rel`` (as in the repository: ``kernels/bpe.cl``)."""
    return f"source/{rel}.md"


def address(rel: str) -> str:
    """Where the site shows the file ``rel``: ``source/<rel>.html``."""
    return f"source/{rel}.html"


def line_range(first: int, last: int) -> str:
    """The anchor of lines ``first``…``last`` on a source page."""
    return f"L{first}-L{last}"


def excerpts(pages: dict[str, str]) -> dict[str, list[tuple[str, int, int]]]:
    """For each file that excerpts show, ``(page, first line, last line)`` of each excerpt, from
    ``pages`` (a page's path under ``docs/`` to its Markdown); an excerpt that cannot be read raises
    ``ValueError`` naming the page and the line of its include (:func:`.copyable.section_lines`)."""
    from .copyable import section_lines

    found: dict[str, list[tuple[str, int, int]]] = {}
    for page, text in pages.items():
        line, counted = 1, 0
        for m in _OPEN_THEN_INCLUDE.finditer(text):
            if not _EXCERPT_CLASS.search(m["attributes"]):
                continue
            inc = markers.include_line(m["line"])
            if inc is not None and inc.ranges is None:
                line += text.count("\n", counted, m.start("line"))
                counted = m.start("line")
                first, last = section_lines(inc.path, inc.section, f"docs/{page}:{line}")
                found.setdefault(inc.path, []).append((page, first, last))
    return found


def _lexer(rel: str):
    """The Pygments lexer of the file ``rel`` by its name: Python for ``.py``, C (OpenCL C's base) for
    the rest."""
    from pygments.lexers import CLexer, PythonLexer

    return PythonLexer if rel.endswith(".py") else CLexer


@functools.lru_cache(maxsize=256)
def _highlighted(rel: str, digest: str) -> tuple[str, ...]:
    """The file's lines as Pygments' HTML, one string per line, kept on disk too under Pygments'
    version, the lexer and the content's digest. An entry holds its own digest (of that place and its
    text) and length (:func:`.store.entry`): one that does not match them (emptied, truncated, copied
    from another file's place), or anything but a regular file at its name (a named pipe, never waited
    on: :func:`.store.read_entry`), is highlighted again and replaced, whole, the name itself
    (:func:`.store.write_entry`: a symlink there is replaced, never written through)."""
    import pygments
    from pygments import highlight
    from pygments.formatters import HtmlFormatter

    from netcl_lite import fingerprint

    from . import store

    lexer = _lexer(rel)
    place = f"pygments-{pygments.__version__}-keepnl/{lexer.__name__}/{digest}.html"
    stored = fingerprint.cache_root() / "source-pages" / place
    key = f"source pages {place}"                  # an entry copied to another file's place is a miss
    try:
        entry = store.read_entry(stored)             # a pipe or a device there: a miss, never waited on
        raw = None if entry is None else store.payload(entry, key)
    except OSError:
        raw = None
    if raw is not None:
        out = raw.decode("utf-8", errors="replace")
    else:
        text = _source_text(rel)
        # stripnl=False: Pygments' default drops a file's leading blank lines, which would number
        # every later line wrong
        out = highlight(text, lexer(stripnl=False), HtmlFormatter(nowrap=True))
        try:
            stored.parent.mkdir(parents=True, exist_ok=True)
            store.write_entry(stored, store.entry(out.encode("utf-8"), key))
        except (OSError, ValueError) as err:        # a file where a folder goes, a folder where the entry does
            store.log.warning(f"highlighting cache: cannot keep {stored} ({err}); {rel} is highlighted "
                              f"again next time")
    out = _CONTROL.sub(lambda m: f'<span class="control-character" title="U+{ord(m[0]):04X}">\\x{ord(m[0]):02x}</span>',
                       out)
    lines = out.split("\n")
    count = len(markers.file_lines(_source_text(rel)))
    return tuple(lines[:count] + [""] * (count - len(lines)))


def listing(rel: str, ranges: list[tuple[int, int]]) -> str:
    """The highlighted file as HTML: a line per block, ``id="L<n>"``, and an anchor per range at its
    first line."""
    text = _source_text(rel)
    if m := _BIDI.search(text):
        line = text.count("\n", 0, m.start()) + 1
        raise ValueError(f"{rel}:{line}: holds the bidirectional formatting character U+{ord(m[0]):04X}, which "
                         f"would show the line's code in an order that is not its own (Trojan source); remove it "
                         f"(write it as an escape, '\\u{ord(m[0]):04x}', in a string)")
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    starts: dict[int, list[str]] = {}
    for first, last in sorted(set(ranges)):
        starts.setdefault(first, []).append(f'<span class="range-anchor" id="{line_range(first, last)}"></span>')
    rows = [f'<span class="line" id="L{n}" data-n="{n}">{"".join(starts.get(n, []))}{code}</span>'
            for n, code in enumerate(_highlighted(rel, digest), 1)]
    language = "python" if rel.endswith(".py") else "c"
    return (f'<div class="highlight source-listing no-copy language-{language}"><pre><code>'
            + "".join(rows) + "</code></pre></div>")


def _page_title(page: str) -> str:
    stem = page_stem(page)
    if stem == "index":
        return "the home page"
    for prefix, name in (("chapter-", "Chapter "), ("week-", "Week ")):
        if stem.startswith(prefix):
            return name + stem.removeprefix(prefix)
    return stem.rsplit("/", 1)[-1].replace("-", " ").capitalize()


def _text(shown: str) -> str:
    """``shown`` as Markdown text that reads as itself: its ASCII punctuation as character references, so a
    page's name (``a*b*``, ``a]b``, ``<b>``) is neither emphasis, nor the end of a link's text, nor HTML."""
    return "".join(f"&#{ord(c)};" if c.isascii() and not c.isalnum() and c != " " else c for c in shown)


def _destination(path: str) -> str:
    """A relative path as a link's destination: percent-encoded (MkDocs decodes it as it resolves the link),
    so a name's '#' is not read as the anchor's start, its '%' not as an escape, its blank not as the end."""
    return quote(path, safe="/")


def _code(shown: str) -> str:
    """``shown`` as a Markdown code span: fenced by one backtick more than its longest run of them, and
    padded by a blank where it holds one (which the span then strips), so a name's backtick stays in it."""
    if "`" not in shown:
        return f"`{shown}`"
    fence = "`" * (max(len(run) for run in re.findall("`+", shown)) + 1)
    return f"{fence} {shown} {fence}"


def markdown(rel: str, shown: list[tuple[str, int, int]], wheel: str) -> str:
    """The Markdown of the page of ``rel``, whose excerpts ``shown`` (page, first, last) link to it."""
    here = posixpath.dirname(uri(rel))
    count = len(markers.file_lines(_source_text(rel)))
    if shown:
        by_page: dict[str, list[str]] = {}
        for page, first, last in shown:
            by_page.setdefault(page, []).append(f"[lines {first}–{last}](#{line_range(first, last)})")
        back = "; ".join(f"[{_text(_page_title(page))}]({_destination(posixpath.relpath(page, here))}) shows "
                         + ", ".join(links) for page, links in by_page.items())
        back = f"Excerpts of it: {back}."
    else:
        back = f"No page shows an excerpt of it; [the home page]({posixpath.relpath('index.md', here)}) links them all."
    return ("---\nsearch:\n  exclude: true\n---\n\n"
            f"# {_code(rel)}\n\n"
            f"A file of `{wheel}`, {count} lines, shown with its line numbers. {back}\n"
            "{: .source-intro }\n\n"
            f"{PLACEHOLDER}\n")


class SourcePage(File):
    """A source page (its Markdown in memory, its listing in :attr:`listing`), rendered by a dirty
    build only when either changed since the last build of this session or its HTML is missing (a
    clean build renders every page, as MkDocs does)."""

    rendered: dict[str, str] = {}   # destination → the Markdown and listing it was last rendered from
    listing: str = ""

    def _made_from(self) -> str:
        return self.content_string + self.listing

    def is_modified(self) -> bool:
        return (not Path(self.abs_dest_path).is_file()
                or SourcePage.rendered.get(self.abs_dest_path) != self._made_from())


def add_pages(files, config, sources: list[Path], wheel: str) -> None:
    """Add a page to ``files`` for each of ``sources`` (the wheel's files), linked from the excerpts on
    the documentation pages already in ``files``."""
    # a page that is not UTF-8 is read with replacements here: MkDocs reports it, naming the page
    pages = {f.src_uri: Path(f.abs_src_path).read_text(encoding="utf-8-sig", errors="replace")
             for f in files.documentation_pages() if f.abs_src_path}
    shown = excerpts(pages)
    for path in sources:
        rel = path.relative_to(ROOT).as_posix()
        page = SourcePage.generated(config, uri(rel), content=markdown(rel, shown.get(rel, []), wheel))
        page.listing = listing(rel, [(a, b) for _, a, b in shown.get(rel, [])])
        page.dest_uri = address(rel)
        page.url = address(rel)
        files.append(page)


def fill(content: str, page) -> str:
    """A source page's HTML with its listing in place of the placeholder, its anchors given to MkDocs'
    link check (``page.present_anchor_ids``); any other page as it is."""
    if not isinstance(page.file, SourcePage):
        return content
    if page.present_anchor_ids is not None:
        page.present_anchor_ids |= set(_ANCHOR.findall(page.file.listing))
    return content.replace(PLACEHOLDER, page.file.listing, 1)


def remember_rendered(page) -> None:
    """After ``page`` is written: remember what its source page was rendered from."""
    if isinstance(page.file, SourcePage):
        SourcePage.rendered[page.file.abs_dest_path] = page.file._made_from()
