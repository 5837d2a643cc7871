"""Show what a block printed when this build ran it.

Some outputs cannot be typed into a page: a training loss, a timing, sampled text
depend on the machine and the run. For those a page puts a marker under the block,

    <!-- build-output: snippets/chapter9/training.py -->

and this stage runs that snippet at build time (:func:`site_build.runner.run_snippet`: a fresh
interpreter and a scratch folder, as the doc tests run every block), and puts its stdout in the
marker's place as a text block titled "printed when this site was built". A snippet that prints a
Markdown table (its last lines) takes the marker ``<!-- build-output: PATH as markdown -->``:
its stdout is rendered as Markdown, and the table gets the caption "printed as
Markdown when this site was built, by the block above" (output whose last lines are no table fails). It is not an ``output``
block: those are the outputs the doc tests compare, and the browser test counts them. The shown
numbers are therefore this build's; what must hold on any machine is asserted inside the snippet,
so a run that misses it fails the build (and the doc test that runs the same block).
:mod:`site_build.markers` checks that each marker sits right under the block that includes its
snippet.

Printed text never passes through the page's Markdown: the marker's place holds a placeholder, and
the printed text, escaped, replaces it in the page's HTML (:meth:`BuildOutputs.insert`), so no line
it prints can close its block, include a file (``--8<--``), become a marker, math or HTML. Control
characters (other than tab and newline), line separators and format characters (bidi marks,
zero-width spaces and joiners, the soft hyphen, tag characters: Unicode's Cf) are shown as
``\\xNN``, ``\\uNNNN`` or ``\\UNNNNNNNN``. Output ``as markdown`` is rendered on its own by a Markdown with paragraphs, pipe tables,
emphasis, code spans and character references only (:func:`markdown_html`; a reference to a
character shown as an escape is shown as that escape): anything else it prints,
raw HTML, links, images, headings, lists, fences, attribute lists or includes, shows as the text it
is. A snippet fails the build, with an error that names the page, the marker's line and the snippet,
when it holds an include line (the page would show it expanded, the run reads it as written), exits
with an error, runs longer than :data:`TIMEOUT_S`, prints more than
:data:`OUTPUT_LIMIT` bytes (it is stopped there, unread), prints bytes that are not UTF-8 or prints
nothing.

A snippet's stdout is kept in the execution cache (:mod:`site_build.store`), keyed by the code,
the library, the packages and the device (:func:`code_key`): a rebuild runs only the snippets whose
key changed (``NETCL_LITE_RERUN=1`` runs them all). The key is that of the code, not of the file,
so the doc test of the page block that shows the same snippet (:func:`run_stored`) finds what the
build printed, and the reverse: each runs once per set of inputs. A marker's path is checked by
:func:`site_build.includes.marker_path`.
"""

from __future__ import annotations

import html
import itertools
import re
import secrets
import subprocess
from collections.abc import Callable
from pathlib import Path

from netcl_lite import fingerprint

from . import markers, runner, store
from .includes import marker_path
from .paths import ROOT

#: the most a build output may print: bytes of UTF-8 on stdout (a page shows it whole)
OUTPUT_LIMIT = 64 * 1024
#: the longest a build-output snippet may run, in seconds
TIMEOUT_S = 900
#: the title of a build output's block
TITLE = "printed when this site was built"
#: the caption of a build output printed as Markdown
CAPTION = "Printed as Markdown when this site was built, by the block above."

def _invisible_class() -> str:
    """A regex class of what a page would not show as itself: the control characters but tab and
    newline (Cc), the line and paragraph separators (Zl, Zp) and every format character (Cf: bidi
    marks, zero-width spaces and joiners, the soft hyphen, tag characters), as this Python's Unicode
    database has them."""
    import sys
    import unicodedata

    chars = [c for c in map(chr, range(sys.maxunicode + 1))
             if unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") and c not in "\t\n"]
    ranges, start, last = [], None, None
    for c in chars:
        if last is not None and ord(c) == ord(last) + 1:
            last = c
            continue
        if start is not None:
            ranges.append((start, last))
        start = last = c
    ranges.append((start, last))
    return "[" + "".join(re.escape(a) if a == b else f"{re.escape(a)}-{re.escape(b)}" for a, b in ranges) + "]"


_INVISIBLE = re.compile(_invisible_class())


class BuildOutputError(RuntimeError):
    """A build output cannot be shown: its snippet failed, ran too long, printed too much, nothing or
    what is not text, or its place did not reach the page's HTML."""


def visible(text: str) -> str:
    """``text`` with each control character (but tab and newline), line or paragraph separator and
    format character (invisible: bidi marks, zero-width spaces and joiners, the soft hyphen, tag
    characters) written out as ``\\xNN``, ``\\uNNNN`` or ``\\UNNNNNNNN``, as Python writes them, so a
    page shows what was printed."""
    return _INVISIBLE.sub(lambda m: _escape(ord(m[0])), text)


def _escape(code: int) -> str:
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def markdown_html(text: str) -> list[str]:
    """``text``, printed Markdown, rendered on its own to HTML, as a list of its top-level elements.
    Only paragraphs, pipe tables, ``*emphasis*``, ``**strong**``, ``\\`` escapes, code spans and
    character references are read as Markdown; all else (raw HTML, links, images, headings, lists,
    quotes, fences, indented code) stays text, escaped. A table row with more cells than its header
    raises :class:`BuildOutputError` (Markdown would drop the extra cells)."""
    import markdown

    md = markdown.Markdown(extensions=[_whole_row_tables()])
    for registry, names in ((md.preprocessors, ("html_block",)),
                            (md.parser.blockprocessors, ("indent", "code", "hashheader", "setextheader", "hr",
                                                         "olist", "ulist", "quote", "reference")),
                            (md.inlinePatterns, ("reference", "link", "image_link", "image_reference",
                                                 "short_reference", "short_image_ref", "autolink", "automail",
                                                 "linebreak", "html"))):
        for name in names:
            registry.deregister(name, strict=False)
    converted = _visible_references(md.convert(visible(text)))
    return re.split(r"\n(?=<(?:p|table)>)", converted) if converted else []


def _whole_row_tables():
    """Markdown's ``tables`` extension, but a row with more cells than its header fails
    (:class:`BuildOutputError`, naming the row) rather than dropping the cells past the header's, and
    what they printed, from the page (a row with fewer cells gets empty ones, as Markdown makes it)."""
    from markdown.extensions.tables import TableExtension, TableProcessor

    class WholeRows(TableProcessor):
        def _build_row(self, row, parent, align):
            cells = self._split_row(row)
            if any(cell.strip() for cell in cells[len(align):]):
                raise BuildOutputError(f"printed a table row with more cells ({len(cells)}) than its header "
                                       f"({len(align)}), which the page would leave off: {row.strip()!r:.200}")
            super()._build_row(row, parent, align)

    class Extension(TableExtension):
        def extendMarkdown(self, md):
            super().extendMarkdown(md)
            md.parser.blockprocessors.register(WholeRows(md.parser, self.getConfigs()), "table", 75)

    return Extension()


#: a character reference as a browser reads it (a numeric one may lack its semicolon)
_REFERENCE = re.compile(r"&(?:#[xX][0-9a-fA-F]+|#[0-9]+|[A-Za-z][A-Za-z0-9]*);?")


def _visible_references(converted: str) -> str:
    """``converted``, Markdown's HTML, with each character reference that names a character
    :func:`visible` writes out (``&#x202e;``, ``&rlm;``, ``&#7;``) replaced by that escape: Markdown
    passes references through, and the browser would show the character they name."""
    def show(m: re.Match) -> str:
        named = _referenced(m[0])
        return html.escape(visible(named), quote=False) if _INVISIBLE.search(named) else m[0]

    return _REFERENCE.sub(show, converted)


def _referenced(reference: str) -> str:
    """What a browser shows for the character ``reference``: as :func:`html.unescape` reads it, but a
    numeric reference to a control character is that character (``html.unescape`` drops it), and
    one of any length is read (past U+10FFFF it is U+FFFD)."""
    if reference[1] != "#":
        return html.unescape(reference)
    hexadecimal = reference[2] in "xX"
    digits = reference[3 if hexadecimal else 2:].rstrip(";").lstrip("0") or "0"
    if len(digits) > 8:
        return "\ufffd"
    code = int(digits, 16 if hexadecimal else 10)
    return html.unescape(f"&#{code};") or chr(code)


def _include_line(code: str) -> int | None:
    """The number of the first line of ``code`` that ``pymdownx.snippets`` reads as an include (or an
    escaped one, which it shows without its ``;``) when a page includes the file, or None."""
    from pymdownx.snippets import SnippetPreprocessor

    return next((n for n, line in enumerate(re.split(r"\r\n?|\n", code), 1)
                 if "8<-" in line and SnippetPreprocessor.RE_ALL_SNIPPETS.match(line)), None)


def code_key(code: str, shared: str | None = None) -> str:
    """The execution-cache key of ``code`` run as :mod:`site_build.runner` runs it: how it is run and
    the code exactly as it runs (nothing stripped or normalised: a snippet that reads its own file,
    ``__file__``, prints another size once a blank line is added or its line endings change; leading
    blank lines move the line numbers it may print), and ``shared``: the key context,
    :func:`site_build.store.context` when None."""
    if not isinstance(code, str):
        raise TypeError(f"code must be str, got {type(code).__name__}")
    return fingerprint.key(runner.HOW + "\n" + code, shared=store.context() if shared is None else shared)


def snippet_key(path: str, shared: str | None = None) -> str:
    """The execution-cache key of a build-output snippet: :func:`code_key` of its bytes as they are
    (the run copies them, :func:`site_build.runner.run_snippet`), decoded as UTF-8 with its line
    endings as written."""
    return code_key((ROOT / path).read_bytes().decode("utf-8"), shared)


def run_stored(code: str, folder: str | Path, shared: str,
               where: str = "the block") -> subprocess.CompletedProcess:
    """``code`` run in ``folder`` as the build runs a snippet (:func:`site_build.runner.run_as_snippet`:
    the same file name, stdout read as bytes, so what it prints is what the build would store), unless
    the store holds what it printed under :func:`code_key` (``shared``: the key context of the
    interpreter and environment it runs in, :func:`site_build.store.context`); a hit runs nothing and
    returns a completed process with that stdout. A run that exits 0 and prints UTF-8 is stored; a
    failing one is not, so it runs again. A run past :data:`TIMEOUT_S` raises
    :class:`subprocess.TimeoutExpired`; one that prints more than :data:`OUTPUT_LIMIT` bytes, the most a
    build output shows, is stopped there, unread past it, and raises :class:`BuildOutputError` naming
    ``where`` (the page and line of the block)."""
    if not isinstance(code, str):
        raise TypeError(f"code must be str, got {type(code).__name__}")
    # a page's block is a snippet as the page includes it, after the blank line the include adds and
    # with the line the fence's end adds: run (and keyed) from its first line to one newline after its
    # last, the bytes of a snippet file that ends its last line, so the block and the snippet's own
    # build output run the same bytes and share a run
    code = code.lstrip("\n").rstrip("\n") + "\n"
    command = ["python", runner.SCRIPT_NAME]
    key = code_key(code, shared)
    stored = store.lookup("build_output", key)
    if stored is not None:
        return subprocess.CompletedProcess(command, 0, stored.decode("utf-8"), "")
    run = runner.run_as_snippet(code.encode("utf-8"), folder, TIMEOUT_S, limit=OUTPUT_LIMIT)
    if run.stopped == "timeout":
        raise subprocess.TimeoutExpired(command, TIMEOUT_S, run.stdout, run.stderr)
    if run.stopped == "limit":
        raise BuildOutputError(f"{where} printed more than {OUTPUT_LIMIT:,} bytes, the most a build output "
                               f"may show; stopped it there")
    try:
        printed = run.stdout.decode("utf-8")
    except UnicodeDecodeError:
        printed = None
    if run.returncode == 0 and printed is not None:
        store.store("build_output", key, run.stdout)
    stdout = run.stdout.decode("utf-8", "replace") if printed is None else printed
    return subprocess.CompletedProcess(command, run.returncode, stdout, run.stderr.decode("utf-8", "replace"))


class BuildOutputs:
    """The build outputs of one build: each snippet's stdout, from the store or run now, and the
    outputs of each page waiting for its HTML. ``context``: the build's shared key context, asked
    for once, on the first marker."""

    def __init__(self, context: Callable[[], str] = store.context):
        if not callable(context):
            raise TypeError(f"context must be a callable that returns the key context, got {context!r}")
        self._context = context
        self._shared: str | None = None
        self.reused = 0
        self._token = f"buildoutput{secrets.token_hex(8)}n"        # no page or snippet can guess it
        self._count = itertools.count()
        self._pending: dict[str, dict[str, tuple[str, bool, str]]] = {}

    def cached_output(self, path: str, where: str | None = None) -> str:
        """What the snippet ``path`` prints: from the store when its key is there, else run now and
        stored. Raises :class:`BuildOutputError` starting with ``where`` (the page, line and marker;
        ``path`` when None) when it cannot be shown (see the module's docstring)."""
        where = path if where is None else where
        if self._shared is None:
            self._shared = self._context()
        try:
            # read once: the key and the run are of the same bytes (a save between two reads, under
            # mkdocs serve, stored what the new code printed under the old code's key)
            code = (ROOT / path).read_bytes()
            key = code_key(code.decode("utf-8"), self._shared)
        except (OSError, UnicodeDecodeError) as err:
            raise BuildOutputError(f"{where}: cannot read {path} as UTF-8 text: {err}") from None
        included = _include_line(code.decode("utf-8"))
        if included is not None:
            raise BuildOutputError(f"{where}: {path}:{included} is an include line ('--8<--'), which the page "
                                   f"that includes {path} shows expanded (an escaped one without its ';') "
                                   f"while the build runs the line as written: a build output's snippet "
                                   f"includes nothing")
        stored = store.lookup("build_output", key)
        if stored is not None:
            self.reused += 1
            return self._checked(stored, path, where)
        store.log.info(f"execution cache: ran {path}")
        try:
            text = runner.run_snippet(ROOT / path, limit=OUTPUT_LIMIT, timeout=TIMEOUT_S, code=code)
        except runner.SnippetError as err:
            raise BuildOutputError(f"{where}: {err}") from None
        self._checked(text.encode("utf-8"), path, where)
        store.store("build_output", key, text.encode("utf-8"))
        return text

    @staticmethod
    def _checked(printed: bytes, path: str, where: str) -> str:
        if len(printed) > OUTPUT_LIMIT:
            raise BuildOutputError(f"{where}: {path} printed {len(printed):,} bytes; a build output shows "
                                   f"at most {OUTPUT_LIMIT:,}")
        try:
            text = printed.decode("utf-8")
        except UnicodeDecodeError as err:
            raise BuildOutputError(f"{where}: {path} printed bytes that are not UTF-8 (at byte {err.start})") from None
        if not text.strip():
            printed_what = (f"only whitespace ({len(text):,} characters such as {text[0]!r})" if text
                            else "nothing")
            raise BuildOutputError(f"{where}: {path} printed {printed_what} on stdout, which is what a build "
                                   f"output shows (stderr is not shown): print the output to show")
        return text

    def _place(self, page: str, html: str, paragraph: bool, where: str) -> str:
        token = f"{self._token}{next(self._count)}"
        self._pending.setdefault(page, {})[token] = (html, paragraph, where)
        return token

    def block(self, marker: markers.Marker) -> str:
        """The Markdown that takes the place of a build-output ``marker``: a text block, or for output
        ``as markdown`` paragraphs and a captioned table, each holding a placeholder that
        :meth:`insert` replaces with the printed text once the page is HTML."""
        path, where = marker.match["path"], marker.where
        marker_path(path, f"{marker.page}:{marker.line}")          # its error names the marker once
        text = self.cached_output(path, where)
        if not marker.match["markdown"]:
            token = self._place(marker.page, html.escape(visible(text).strip("\n"), quote=False), False, where)
            return f'\n```text title="{TITLE}"\n{token}\n```\n'
        try:
            parts = markdown_html(text)
        except BuildOutputError as err:
            raise BuildOutputError(f"{where}: {path} {err}") from None
        if not parts or not parts[-1].startswith("<table>"):      # the caption is a table's
            raise BuildOutputError(f"{where}: {path} printed no Markdown table as its last lines; output "
                                   f"'as markdown' ends with the table its caption names (or drop ' as markdown')")
        *before, last = parts
        tokens = [self._place(marker.page, part, True, where) for part in ("\n".join(before), last) if part]
        return "\n" + "\n\n".join(tokens) + f"\n\n/// table-caption\n{CAPTION}\n///\n"

    def render(self, markdown: str, page: str, first_line: int = 1) -> str:
        """``markdown`` of ``page`` (``docs/<page>``, for errors) with each build-output marker replaced
        by :meth:`block` (``first_line``: the file's line of the text's first line)."""
        return markers.replace(markdown, page, {"build-output": self.block}, first_line)

    def insert(self, html: str, page: str) -> str:
        """``html``, the rendered ``page``, with what each of its build outputs printed in the place
        :meth:`block` left. Raises :class:`BuildOutputError` when a place did not reach the HTML as it
        was left (a marker inside an HTML block, or a place repeated)."""
        pending = self._pending.pop(page, {})
        token = re.escape(self._token) + r"\d+"

        def put(m: re.Match) -> str:
            found = m[1] or m[2]
            if found not in pending or pending[found][1] != bool(m[1]):
                where = pending[found][2] if found in pending else page
                raise BuildOutputError(f"{where}: the output's place is not where the marker left it "
                                       f"(the marker inside another block?)")
            return pending.pop(found)[0]

        html = re.sub(rf"<p>({token})</p>|({token})", put, html)
        if pending:
            where = next(iter(pending.values()))[2]
            raise BuildOutputError(f"{where}: the output's place did not reach the page's HTML (the marker "
                                   f"inside an HTML block or a comment?)")
        return html
