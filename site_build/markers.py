"""The syntax of every marker a page may hold, defined once for the build and the tests.

========================================================  =========================================
in a page                                                 what it is
========================================================  =========================================
``<!-- build-output: snippets/<page>/<name>.py -->``      what the snippet printed in this build
``<!-- build-output: PATH as markdown -->``               the same, put into the page as Markdown
``<!-- needs-extra: NAME -->``                            a note naming the extra the block needs
``<!-- kernels.json: NAME -->``                           a measured section of Chapter 8
``--8<-- "path"`` / ``--8<-- "path:section"``             an include (pymdownx.snippets; :func:`includes`)
```` ```{.python .excerpt title="…"} ````                 a library excerpt: shown, not run
``<!--pytest-codeblocks:expected-output-->``              the verified output of the block above
``::: netcl_lite.module``                                 an API page's docstrings (mkdocstrings)
========================================================  =========================================

A section of a library file is marked ``# --8<-- [start:name]`` … ``# --8<-- [end:name]``
(``//`` in OpenCL C).

The four comment markers are checked strictly (:func:`find`). Outside fenced code blocks, an HTML
comment whose text starts like a marker's name (any case, any spacing or punctuation, full-width
letters, or a letter off: ``<!--Build_Output:…-->``, ``<!-- kernel.json: … -->``) must be that
marker, whole and alone on its line (trailing spaces allowed), or the build fails naming the page
and the line. A build output sits right under the block that includes its snippet, one per
block; a needs-extra note right above its python block; a verified output's comment right under
the python block it is the output of and right above the ```text block that holds it (pytest-codeblocks
takes the next block under it, of any language, as the output of the last block above it). Inside a code block a marker is text,
shown as written: a fenced block, or an indented one as Python-Markdown reads the page
(:func:`indented_code`: after a blank line, in a quote, an admonition or a list item, but not a
list item's own indented continuation, nor a paragraph's next line), and so is one in inline code.
A line inside a fenced block that CommonMark would take for its close and pymdownx.superfences does
not (a longer fence, or the same one indented more) fails the build naming the page and the line.
pytest-codeblocks' other comments (``skip``, ``cont``, ``pytest.mark.…``) are refused: every
block runs, on its own, and its output is compared exactly. As pytest-codeblocks reads any line
outside its backtick blocks for its comments, one the page shows as code (in an indented code block,
say) fails the build too (:func:`pytest_codeblocks_comments`).
"""

from __future__ import annotations

import difflib
import re
import secrets
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

#: ``<!-- build-output: PATH -->`` or ``<!-- build-output: PATH as markdown -->`` on a line of its own
BUILD_OUTPUT = re.compile(r"^<!-- build-output: (?P<path>\S+)(?P<markdown> as markdown)? -->[ \t]*$", re.M)
#: ``<!-- needs-extra: NAME -->`` on a line of its own, indented as the block under it
NEEDS_EXTRA = re.compile(r"^(?P<indent>[ \t]*)<!-- needs-extra: (?P<extra>[\w-]+) -->[ \t]*$", re.M)
#: ``<!-- kernels.json: NAME -->`` on a line of its own
KERNELS_JSON = re.compile(r"^<!-- kernels\.json: (?P<section>[\w-]+) -->[ \t]*$", re.M)
#: the excerpt class in a fence's attributes: ``.excerpt`` itself, not ``.excerpt-x`` or ``.excerpts``
#: (a class name goes on with letters, digits, ``_`` and ``-``)
EXCERPT_CLASS = r"\.excerpt(?![\w-])"
#: the opening line of an excerpt fence: ```` ```{.python .excerpt title="…"} ````
EXCERPT_OPEN = re.compile(
    rf"^(?P<indent>[ \t]*)(?P<ticks>`{{3,}})\{{(?P<attrs>[^}}\n]*{EXCERPT_CLASS}[^}}\n]*)\}}[ \t]*$")
#: a fence's opening line that carries the ``.excerpt`` class in any form (tildes, a space before the
#: braces, the language first, a backtick in its attributes, which pymdownx.superfences accepts after
#: either fence): only :data:`EXCERPT_OPEN`'s form is labelled and checked, the others refused. The
#: fence is read whole (possessive), so a line of many backticks or tildes is read once
EXCERPT_LIKE = re.compile(rf"^[ \t]*(?:`{{3,}}+|~{{3,}}+)[^\n]*?{EXCERPT_CLASS}")
#: a whole excerpt fence in a page's text: indent, ticks, ``{attributes}``, body
EXCERPT_FENCE = re.compile(rf"^(\s*)(`{{3,}})(\{{[^}}\n]*{EXCERPT_CLASS}[^}}\n]*\}})\s*\n((?:.*\n)*?)\1\2\s*$", re.M)
#: what precedes a block's verified output (pytest-codeblocks' own marker)
EXPECTED_OUTPUT = "<!--pytest-codeblocks:expected-output-->"
#: the line that holds :data:`EXPECTED_OUTPUT`
EXPECTED_OUTPUT_LINE = re.compile(r"^[ \t]*" + re.escape(EXPECTED_OUTPUT) + r"[ \t]*$")
#: a generated figure a page shows: ``figures/<page>/<name>.svg``
FIGURE = re.compile(r"figures/(?P<name>[\w-]+/[\w-]+)\.svg")
#: a line that asks mkdocstrings for an object's docstrings
API = re.compile(r"^::: ", re.M)

BIBLIOGRAPHY = re.compile(r"^<!-- bibliography -->[ \t]*$", re.M)
GLOSSARY = re.compile(r"^<!-- glossary -->[ \t]*$", re.M)
#: the page that each apparatus marker belongs on (it becomes that page's list of entries)
APPARATUS_PAGES = {"bibliography": "docs/bibliography.md", "glossary": "docs/glossary.md"}

#: every comment marker: its name, the line it must be (None: refused), and that line in words
KINDS: dict[str, tuple[re.Pattern | None, str]] = {
    "build-output": (BUILD_OUTPUT, "<!-- build-output: snippets/<page>/<name>.py --> (or ending "
                                   "' as markdown -->'), alone on its line from its first column"),
    "needs-extra": (NEEDS_EXTRA, "<!-- needs-extra: NAME --> alone on its line"),
    "kernels.json": (KERNELS_JSON, "<!-- kernels.json: NAME --> alone on its line from its first column"),
    "pytest-codeblocks": (EXPECTED_OUTPUT_LINE, f"{EXPECTED_OUTPUT} alone on its line, the only "
                                                "pytest-codeblocks marker a page may hold (every block "
                                                "runs on its own and is compared exactly)"),
    "pytest.mark": (None, "no pytest.mark comment: every block on a page runs"),
    "bibliography": (BIBLIOGRAPHY, "<!-- bibliography --> alone on its line, on the Bibliography page"),
    "glossary": (GLOSSARY, "<!-- glossary --> alone on its line, on the Glossary page"),
}


class MarkerError(ValueError):
    """Something on a page looks like a marker but is not one, or a marker stands where it does not belong."""


@dataclass(frozen=True)
class Marker:
    """A marker found on a page: its kind, its line and the match of its line."""

    kind: str
    page: str        # as errors name it: docs/<page>
    line: int        # 1-based, in the page's file
    index: int       # 0-based, in the text it was found in
    match: re.Match

    @property
    def where(self) -> str:
        """``docs/<page>:<line>: <the marker>``, how an error about this marker starts."""
        from netcl_lite.files import visible

        return f"{self.page}:{self.line}: {visible(self.match.group(0).strip())}"


def build_output(path: str, as_markdown: bool = False) -> str:
    """The marker that shows what ``path`` printed in this build."""
    return f"<!-- build-output: {path}{' as markdown' if as_markdown else ''} -->"


def needs_extra(extra: str) -> str:
    """The marker above a block that needs the extra ``extra`` of netcl_lite."""
    return f"<!-- needs-extra: {extra} -->"


def include(path: str, section: str | None = None) -> str:
    """The include line of ``path`` (or of its ``section``)."""
    return f'--8<-- "{path}{":" + section if section else ""}"'


@dataclass(frozen=True)
class Include:
    """An include that pymdownx.snippets reads on a line of a text: the line's index (0-based), the
    path, the section (``path:name``) or the line ranges as written (``path:1:3``, ``path:2:,8:9``),
    None for what is not given, and the line itself."""

    index: int
    path: str
    section: str | None
    ranges: str | None
    line: str


@lru_cache(maxsize=1)
def _snippets():
    """A pymdownx.snippets preprocessor, whose own patterns and path parser :func:`includes` uses."""
    import markdown

    return markdown.Markdown(extensions=["pymdownx.snippets"]).preprocessors["snippet"]


def includes(lines: list[str]) -> list[Include]:
    """Every include that pymdownx.snippets reads in ``lines`` (a page's, or an included file's), in
    order, read as it reads them (its own patterns and path parser): a line ``--8<-- "path"`` (any
    number of dashes each side, at least one; double or single quotes; indented or not), and each
    path line between two lines ``--8<--`` alone (its block form); the path may end ``:section`` or
    line ranges. An escaped include (``;--8<-- …``), a path starting ``;`` (commented out) and an
    inline one inside the block form (which it skips) are no includes."""
    snippets, found, block = _snippets(), [], False
    for i, line in enumerate(lines):
        m = snippets.RE_ALL_SNIPPETS.match(line)
        if m:
            if m["escape"] or (block and m["inline_marker"]):
                continue
            if not m["inline_marker"]:
                block = not block
                continue
            path = m["snippet"][1:-1].strip()
        elif block:
            path = line.strip()
        else:
            continue
        if not path or path.startswith(";"):
            continue
        target = snippets.split_path(path)
        if target is not None and target[0].strip():
            name, ranges, section = target
            found.append(Include(i, name.strip(), section[1:] if section else None, ranges, line))
    return found


def include_line(line: str) -> Include | None:
    """The include that ``line`` is on its own (``--8<-- "path"`` in any form pymdownx.snippets takes,
    see :func:`includes`), or None."""
    found = includes([line])
    return found[0] if found else None


def ranges_named(line: str) -> str | None:
    """The line ranges (``:1:5,9:12``) that the include on ``line`` names, read as pymdownx.snippets
    reads them, whether ``line`` is a whole include or a path line of its block form; else None."""
    snippets = _snippets()
    m = snippets.RE_ALL_SNIPPETS.match(line)
    text = m["snippet"][1:-1].strip() if m and m["inline_marker"] else line.strip()
    target = snippets.split_path(text) if text else None
    return target[1] if target else None


def section_bounds(section: str) -> tuple[str, str]:
    """The texts that open and close ``section`` in a library file."""
    return f"[start:{section}]", f"[end:{section}]"


def file_lines(text: str) -> list[str]:
    """``text`` (a file read in text mode, its CRs already ``\\n``) as numbered lines, split at ``\\n``
    only, as editors, the source pages' ``#L`` anchors and pymdownx.snippets count them: a form
    feed, U+0085 or U+2028 stays inside its line (``str.splitlines`` would break there); a final
    newline ends the last line and starts no new one."""
    lines = text.split("\n")
    return lines[:-1] if lines[-1] == "" else lines


def _squash(text: str) -> str:
    """``text``'s ASCII letters and digits, lower case, after NFKC (full-width and other
    compatibility forms of letters count as the letters they read as)."""
    return re.sub(r"[^0-9a-z]", "", unicodedata.normalize("NFKC", text).lower())


_SQUASHED = {_squash(name): name for name in KINDS}


def looks_like(comment: str) -> str | None:
    """The kind of marker the text of an HTML comment starts like, or None. ``comment`` is what
    stands between ``<!--`` and ``-->``; case, spacing and punctuation do not count, and a name one
    letter off still counts (``kernel.json``, ``needs-extras``, ``buildoutput``)."""
    text = _squash(comment)
    for key, name in _SQUASHED.items():
        if text.startswith(key):
            return name
    for key, name in _SQUASHED.items():
        if max(difflib.SequenceMatcher(None, text[:len(key) + d], key).ratio() for d in (-1, 0, 1)) >= 0.8:
            return name
    return None


@lru_cache(maxsize=1)
def _backticks():
    """Python-Markdown's own inline processor of code spans (its pattern and its pairing of backticks)."""
    from markdown.inlinepatterns import BACKTICK_RE, BacktickInlineProcessor

    return BacktickInlineProcessor(BACKTICK_RE)


def without_code_spans(text: str) -> str:
    """``text`` with each inline code span (backticks included) blanked to spaces, its newlines kept
    so that lines keep their numbers. The spans are those Python-Markdown renders as ``<code>``: its
    own processor pairs the backticks (an escaped one opens none), within a paragraph (a span may
    go over lines, never over a blank line)."""
    processor, out = _backticks(), []
    for part in re.split(r"(\n[ \t]*\n)", text):            # paragraphs, and the blank lines between them
        pos, kept = 0, []
        while (m := processor.compiled_re.search(part, pos)) is not None:
            element, begin, end = processor.handleMatch(m, part)
            end = max(end if end is not None else m.end(), m.start() + 1)
            if element is not None and getattr(element, "tag", None) == "code":
                kept += [part[pos:begin], re.sub(r"[^\n]", " ", part[begin:end])]
            else:
                kept.append(part[pos:end])
            pos = end
        out += [*kept, part[pos:]]
    return "".join(out)


_CLOSE_LIKE = re.compile(r"(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})[ \t]*$")


@lru_cache(maxsize=1)
def _superfences_scanner():
    """A pymdownx.superfences preprocessor, set up as the site's Markdown sets it up (attribute lists,
    highlighting), that records where its fenced blocks stand instead of rendering them: the blocks of
    a page are those superfences itself finds, in block quotes, list items, at any indent, with
    backticks or tildes, and with the fence lines it accepts (an unrecognized option after the fence
    is no fence)."""
    import markdown
    from pymdownx.superfences import SuperFencesBlockPreprocessor

    md = markdown.Markdown(extensions=["attr_list", "pymdownx.highlight", "pymdownx.superfences"])
    found = md.preprocessors["fenced_code_block"]

    class Scanner(SuperFencesBlockPreprocessor):
        def process_nested_block(self, ws, content, start, end):
            if self.formatter is not None:            # superfences renders it: a block
                self.blocks.append((start, end - 1))
            self.clear()

        def _content(self, evaluate, ws, content, start, end):
            held = len(self.code)
            evaluate(ws, content, start, end)
            fence = self.fence
            if fence is not None and len(self.code) > held and (near := _CLOSE_LIKE.match(content)) \
                    and near["fence"][0] == fence[0] and len(near["fence"]) >= len(fence):
                self.odd.append((end - 1, start))     # a content line CommonMark would take for the close

        def eval_fence(self, ws, content, start, end):
            self._content(super().eval_fence, ws, content, start, end)

        def eval_quoted(self, ws, content, quote_level, start, end):
            self._content(lambda *a: super(Scanner, self).eval_quoted(a[0], a[1], quote_level, a[2], a[3]),
                          ws, content, start, end)

        def reassemble(self, lines):
            return lines

        def search_nested(self, lines):
            def counted():                            # the line being read, for the fences opened
                for self.at, line in enumerate(lines):
                    yield line
            return super().search_nested(counted())

        def _opens(self, accepted):
            if accepted:
                self.opened = self.at
            return accepted

        def parse_options(self, m):
            return self._opens(super().parse_options(m))

        def handle_attrs(self, m):
            return self._opens(super().handle_attrs(m))

        def handle_unrecognized(self, m):
            return self._opens(super().handle_unrecognized(m))

        def clear(self):
            # a block whose reading ends with no closing fence (a line indented less, a quote level
            # dropped); a block left open by the scan before is cleared as this one starts, unrecorded
            if getattr(self, "fence", None) is not None and getattr(self, "opened", None) is not None:
                self.ended.append((self.opened, self.at))
            super().clear()

        def scan(self, lines):
            self.blocks, self.odd, self.opened, self.ended = [], [], None, []
            self.run(lines)
            self.unclosed = self.opened if self.fence is not None else None
            return self.blocks, self.odd

    scanner = Scanner(found.md)
    scanner.extension, scanner.config = found.extension, found.config
    return scanner


def _scan(lines) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """:func:`fences`, and the lines inside a block that CommonMark would take for its close and
    pymdownx.superfences does not (a longer fence, or the same one indented more), as (line,
    opening line) indices."""
    return _superfences_scanner().scan(lines)


def fences(lines: list[str]) -> list[tuple[int, int]]:
    """The fenced code blocks of a page's ``lines``, as (opening line, closing line) indices, as
    pymdownx.superfences finds them (it runs, recording instead of rendering): in block quotes
    (after ``>``), list items and at any indent (a fence indented as code still takes its lines
    as code), with backticks or tildes; once a fence opens, its lines are its content until the
    exact closing fence at the same indent, and a line indented less ends the attempt."""
    return _scan(lines)[0]


def attempts(lines: list[str]) -> list[tuple[int, int, str]]:
    """Each fenced block pymdownx.superfences starts reading in ``lines``, in order, as (opening line,
    last line, how it ends): ``"close"`` at its closing line (a block of :func:`fences`), ``"clear"``
    at the line that ends its reading with no closing fence (its lines stay Markdown), ``"open"`` at
    the end of ``lines`` (never closed)."""
    blocks = fences(lines)
    scanner = _superfences_scanner()
    closed = set(blocks)
    found = [(start, end, "close") for start, end in blocks]
    found += [(start, end, "clear") for start, end in scanner.ended if (start, end) not in closed]
    if scanner.unclosed is not None:
        found.append((scanner.unclosed, len(lines), "open"))
    return sorted(found)


def unclosed_fence(lines: list[str]) -> int | None:
    """The index of the line of ``lines`` that opens a fenced block pymdownx.superfences is still
    reading at their end (no closing fence came), or None: text that ends inside an open block,
    such as an included file, would make the lines after it that block's code."""
    scanner = _superfences_scanner()
    scanner.scan(lines)
    return scanner.unclosed


#: the extensions of ``mkdocs.yml`` that the scan of indented code leaves out: includes, which are
#: expanded after the markers are read (a marker in an included file is not the page's)
_NOT_SCANNED = ("pymdownx.snippets",)


def _site_config() -> bytes:
    """``mkdocs.yml`` as it is now: what the scanners below are made from and keyed by (``mkdocs serve``
    reads it again when it changes and builds in the same process)."""
    from .paths import ROOT

    return (ROOT / "mkdocs.yml").read_bytes()


def site_config(config: bytes) -> dict:
    """``mkdocs.yml`` of bytes ``config`` as MkDocs reads it, before it checks the settings
    (:func:`mkdocs.utils.yaml.yaml_load` with MkDocs' loader): its tags (``!ENV``, ``!relative``,
    ``!!python/name:``) and an ``INHERIT`` of a file beside ``mkdocs.yml`` included."""
    import io

    from mkdocs.config.defaults import MkDocsConfig
    from mkdocs.utils.yaml import get_yaml_loader, yaml_load

    from .paths import ROOT

    path = str(ROOT / "mkdocs.yml")
    stream = io.BytesIO(config)
    stream.name = path                                  # what an INHERIT is resolved against, as MkDocs does
    return yaml_load(stream, get_yaml_loader(config=MkDocsConfig(config_file_path=path)))


def page_extensions(config: bytes | None = None) -> tuple[list, dict]:
    """The Markdown extensions of the site's pages and their settings, as ``mkdocs.yml`` lists them
    (``config``: its bytes, None to read it now), less :data:`_NOT_SCANNED`: ``(extensions,
    extension_configs)`` for :class:`markdown.Markdown`. The bytes are read as MkDocs reads them
    (:func:`site_config`)."""
    listed = site_config(_site_config() if config is None else config)["markdown_extensions"]
    names, configs = [], {}
    for entry in listed:
        name, config = next(iter(entry.items())) if isinstance(entry, dict) else (entry, None)
        if name not in _NOT_SCANNED:
            names.append(name)
            if config:
                configs[name] = config
    return names, configs


@lru_cache(maxsize=2)
def _indented_code_scanner(config: bytes):
    """A Markdown set up as the site's pages are (:func:`page_extensions` of ``config``, the bytes of
    ``mkdocs.yml``) whose processor of indented
    code blocks records the text of each block it makes: the blocks of a page are Python-Markdown's
    own, after a blank line, in block quotes, admonitions and list items, never a list item's
    continuation (Python-Markdown takes that for the item's) or a paragraph's lazy line."""
    import markdown

    names, configs = page_extensions(config)
    md = markdown.Markdown(extensions=names, extension_configs=configs)
    code = md.parser.blockprocessors["code"]
    make = code.run

    def run(parent, blocks):
        made = make(parent, blocks)
        if made is not False:                          # pymdownx.superfences' returns False for no block
            md.indented_code.append(code.lastChild(parent)[0].text)   # the <pre>'s <code>, its lines so far
        return made

    code.run = run
    return md


def indented_code(lines: list[str], asked: dict[int, int], width: int = 4) -> set[int]:
    """Which of the ``asked`` lines (index: the column where what is asked about starts, an HTML
    comment's ``<!--``) stand in an indented code block when Python-Markdown renders ``lines`` as the
    site does. The ``width`` characters there (four: ``<!--``) are replaced by a token that no page
    holds, a plain word to Markdown (an HTML comment that does not start its line is text to it too,
    so the blocks stay as they were), and the tokens found in the code blocks name the lines. The
    caller chooses characters whose replacement by a word changes no block of the page."""
    return rendered_places(lines, asked, width)[0]


def rendered_places(lines: list[str], asked: dict[int, int], width: int = 4) -> tuple[set[int], set[int]]:
    """(:func:`indented_code`, and which of the ``asked`` lines stand inside an HTML comment of the
    rendered page, which the reader does not see): one rendering answers both. A comment is what
    Python-Markdown leaves as one: a block that starts ``<!--`` (blank lines and all, up to ``-->``),
    or one inside a paragraph; ``<!--`` shown as text is escaped (``&lt;!--``) and hides nothing.
    A CDATA section or a processing instruction it leaves raw hides what it holds up to its first
    ``>``, where a browser ends it (:data:`HIDING_OPENINGS`)."""
    if not asked:
        return set(), set()
    code, hidden = _rendered_places(_site_config(), "\n".join(lines), tuple(sorted(asked.items())), width)
    return set(code), set(hidden)


@lru_cache(maxsize=16)
def _rendered_places(config: bytes, text: str, asked: tuple[tuple[int, int], ...],
                     width: int = 4) -> tuple[frozenset[int], frozenset[int]]:
    """:func:`rendered_places` of a page's ``text`` under ``config`` (the bytes of ``mkdocs.yml``), kept
    for the next stage that reads its markers."""
    md, token, marked = _indented_code_scanner(config), f"q{secrets.token_hex(8)}n", text.split("\n")
    for i, column in asked:
        marked[i] = f"{marked[i][:column]}{token}{i}x{marked[i][column + width:]}"
    md.reset()
    md.indented_code = []
    rendered = md.convert("\n".join(marked))
    found = re.compile(rf"{token}(\d+)x")
    code = frozenset(int(m[1]) for block in md.indented_code for m in found.finditer(block))
    hidden, pos = set(), 0
    while (opening := _HIDING.search(rendered, pos)) is not None:    # one pass: an unclosed one ends it
        start = opening.end()
        closing = "-->" if opening[0] == "<!--" else ">"
        end = rendered.find(closing, start)
        if end == -1:
            break
        hidden.update(int(m[1]) for m in found.finditer(rendered, start, end))
        pos = end + len(closing)
    return code, frozenset(hidden)


#: what opens text a browser does not show: a comment (to ``-->``), and what HTML reads as a bogus
#: comment (to the first ``>``): a CDATA section outside SVG and MathML, a processing instruction
HIDING_OPENINGS = ("<!--", "<![CDATA[", "<?")
_HIDING = re.compile("|".join(re.escape(o) for o in HIDING_OPENINGS))


def in_raw_html(lines: list[str], asked: dict[int, int]) -> set[int]:
    """Which of the ``asked`` lines (index: the column where the marker on it starts) stand inside a raw
    HTML block when Python-Markdown renders ``lines`` as the site does: a block such as ``<div>`` …
    ``</div>`` (without ``markdown``), ``<pre>`` or ``<script>`` passes through as written, so what a
    marker becomes (Markdown) would be shown there as raw text. Each marker is replaced by a plain word
    that no page holds (a marker on its own line is an HTML block of its own; a word standing alone
    is a paragraph), and the words found in the raw HTML Python-Markdown keeps name the lines. A page
    with no line that starts with a tag is not rendered."""
    if not asked or not any(re.match(r"[ \t]*<[A-Za-z]", line) for line in lines):
        return set()
    md, token = _indented_code_scanner(_site_config()), f"q{secrets.token_hex(8)}n"
    marked = list(lines)
    for i, column in asked.items():
        marked[i] = f"{marked[i][:column]}{token}{i}x"
    md.reset()
    md.indented_code = []
    md.convert("\n".join(marked))
    found = re.compile(rf"{token}(\d+)x")
    return {int(m[1]) for block in md.htmlStash.rawHtmlBlocks if isinstance(block, str)
            for m in found.finditer(block)}


class _Surroundings:
    """What :func:`_misplaced` reads around each marker of one page, worked out once for the page: the
    code blocks' first and last lines, and, for needs-extra notes, where each run of blank lines and
    notes ends and which notes are repeated lower in their run. Read afresh for each marker, a run of
    n notes took n^2/2 lines before any note was checked."""

    def __init__(self, lines: list[str], blocks: list[tuple[int, int]]):
        self.lines = lines
        self.closing = {end: start for start, end in blocks}
        self.opening = {start for start, _ in blocks}
        self._notes: tuple[list[int], set[int]] | None = None
        self.apparatus: dict[str, int] = {}            # an apparatus marker's kind → the line it is on

    def notes(self) -> tuple[list[int], set[int]]:
        """(for each line, the first line from it on, itself included, that is neither blank nor a
        needs-extra note, ``len(lines)`` when none is; the notes whose extra another note lower in the
        same run names). One pass from the page's end, on the first needs-extra marker found."""
        if self._notes is None:
            ends, repeated, end, named = [0] * len(self.lines), set(), len(self.lines), set()
            for i in range(len(self.lines) - 1, -1, -1):
                note = NEEDS_EXTRA.fullmatch(self.lines[i])
                if note is None and self.lines[i].strip():
                    end, named = i, set()
                elif note is not None:
                    if note["extra"] in named:
                        repeated.add(i)
                    named.add(note["extra"])
                ends[i] = end
            self._notes = ends, repeated
        return self._notes


#: the languages of a fenced block that the doc tests run (an excerpt aside)
PYTHON_NAMES = frozenset({"python", "py", "python3"})


def fence_language(line: str) -> str:
    """The language of the fenced block ``line`` opens: ``python`` for ```` ```python title="x" ````
    and ```` ```{.python .excerpt} ````, ``""`` for none."""
    info = line.strip().lstrip("`~").strip()
    if info.startswith("{"):
        m = re.match(r"\{\s*\.([\w-]+)", info)
        return m[1] if m else ""
    return info.split()[0] if info.split() else ""


def _misplaced(marker: Marker, around: _Surroundings) -> str | None:
    """Why ``marker`` stands where it does not belong, or None."""
    lines = around.lines
    if marker.kind == "build-output":
        path = marker.match["path"]
        above = next((j for j in range(marker.index - 1, -1, -1) if lines[j].strip()), None)
        body = lines[around.closing[above] + 1:above] if above in around.closing else []
        if not any(inc.path == path for inc in includes(body)):
            return (f"a build output goes right under the block that includes its snippet "
                    f"({include(path)}), one marker per block")
    if marker.kind in APPARATUS_PAGES and marker.page != APPARATUS_PAGES[marker.kind]:
        return f"the {marker.kind} marker belongs on {APPARATUS_PAGES[marker.kind]} alone"
    if marker.kind in APPARATUS_PAGES:                 # it becomes every entry, each with its id: once
        first = around.apparatus.setdefault(marker.kind, marker.line)
        if first != marker.line:
            return (f"the {marker.kind} marker is given twice (first on line {first}): each entry would "
                    f"be listed twice, with its id twice; keep one")
    if marker.kind == "pytest-codeblocks":
        # pytest-codeblocks takes the next fenced block under the comment, whatever it is and whatever
        # stands between, as the output of the last block above it; the page labels as output only a
        # text block right under it (outputs.label), and the doc tests run python blocks alone
        above = next((j for j in range(marker.index - 1, -1, -1) if lines[j].strip()), None)
        below = next((j for j in range(marker.index + 1, len(lines)) if lines[j].strip()), None)
        ran = above in around.closing and fence_language(lines[around.closing[above]]) in PYTHON_NAMES \
            and not re.search(EXCERPT_CLASS, lines[around.closing[above]])
        if not ran or below not in around.opening or fence_language(lines[below]) != "text" \
                or not lines[below].lstrip(" \t").startswith("`"):
            return ("a verified output goes right under the python block it is the output of (not an "
                    "excerpt), and right above a ```text block that holds it, one per block")
    if marker.kind == "needs-extra":
        ends, repeated = around.notes()
        if marker.index in repeated:                   # a note is its own line: its run goes on below it
            return "the same note twice above one block"
        below = ends[marker.index]
        if below not in around.opening or not lines[below].lstrip(" \t").startswith("`") \
                or fence_language(lines[below]) not in PYTHON_NAMES:
            return "a needs-extra note goes right above the python block that needs the extra"
    return None


#: a line pytest-codeblocks reads as one of its comments, once stripped (its own patterns)
_PYTEST_CODEBLOCKS_COMMENT = re.compile(r"<!--[-\s]*(?:pytest-codeblocks:.*|pytest\.mark\..*)-->")


def pytest_codeblocks_comments(lines: list[str]) -> list[int]:
    """The lines that pytest-codeblocks, which the doc tests read pages with, reads as one of its
    comments: each line outside the blocks it sees (from a line starting ```, after any indent, to the
    next line starting with as many backticks), stripped, that starts ``<!--`` and a
    ``pytest-codeblocks:`` or ``pytest.mark.`` comment, whether Markdown shows it as code or not."""
    found, ticks = [], None
    for i, line in enumerate(lines):
        stripped = line.lstrip()
        if ticks is not None:
            if stripped[:ticks] == "`" * ticks:
                ticks = None
        elif stripped.startswith("```"):
            ticks = len(stripped) - len(stripped.lstrip("`"))
        elif _PYTEST_CODEBLOCKS_COMMENT.match(line.strip()):
            found.append(i)
    return found


def find(markdown: str, page: str, first_line: int = 1) -> list[Marker]:
    """Every comment marker of the page ``page`` (``docs/<page>``, for errors) whose text is
    ``markdown`` (``first_line``: the file's line of its first line, after any front matter), in
    order. Raises :class:`MarkerError`, naming the page and the line, for a comment that looks like
    a marker and is not one, a marker that shares its line, and one that stands where it does not
    belong, and for a line inside a code block that CommonMark would take for its closing fence
    and pymdownx.superfences does not (a longer fence, or one indented more). Code blocks, fenced
    and indented (:func:`indented_code`), are skipped, and so are inline code spans."""
    lines = markdown.split("\n")
    blocks, odd = _scan(lines)
    if odd:
        j, start = odd[0]
        raise MarkerError(f"{page}:{first_line + j}: {lines[j].strip()!r} would close the code block opened "
                          f"on line {first_line + start} ({lines[start].strip()!r}) in CommonMark, but "
                          f"pymdownx.superfences ends a block only at its opening fence repeated exactly, at "
                          f"the same indent, so the page would render malformed: close it with the same "
                          f"fence, or open it with a longer one to show this line as code")
    fenced = {i for start, end in blocks for i in range(start, end + 1)}
    text = "\n".join("" if i in fenced else without_code_spans(line) for i, line in enumerate(lines))
    comments, pos = [], 0
    index, line_start, counted = 0, 0, 0                # the line and its start, counted up to `counted`
    while (start := text.find("<!--", pos)) >= 0:
        end = text.find("-->", start + 4)
        pos = len(text) if end < 0 else end + 3
        kind = looks_like(text[start + 4:pos])
        if kind is not None:                           # counted on from the last comment, not from the top
            index += text.count("\n", counted, start)
            line_start = max(line_start, text.rfind("\n", counted, start) + 1)
            counted = start
            comments.append((kind, index, start - line_start))
    # a comment that starts its line (up to 3 spaces in) is an HTML block to Markdown, never code
    code = indented_code(lines, {index: column for _, index, column in comments
                                 if not re.match(r" {0,3}<!--", lines[index])})
    found, around = [], _Surroundings(lines, blocks)
    checked = []
    for kind, index, column in comments:
        if index in code:                              # shown as code, as written
            continue
        line, where = lines[index], f"{page}:{first_line + index}"
        pattern, form = KINDS[kind]
        m = pattern.fullmatch(line) if pattern is not None else None
        if m is None:
            shown = line.strip(" \t")                 # other white space (U+00A0, CR) stays visible in the repr
            raise MarkerError(f"{where}: {shown!r} looks like a {kind} marker but is not one; "
                              f"write {form}")
        checked.append((kind, index, column, m))
    read = {index for _, index, _, _ in checked}
    for index in pytest_codeblocks_comments(lines):
        if index not in read:                          # shown as code or text, yet read by the doc tests
            raise MarkerError(f"{page}:{first_line + index}: {lines[index].strip()!r} is read by pytest-codeblocks "
                              f"(the doc tests) as its comment, but the page shows it as code: the doc tests "
                              f"would skip, join or compare blocks without a word; put it in a fenced block "
                              f"(```) to show it, or make it a marker of its own line")
    # what a marker becomes is Markdown: inside a raw HTML block it would show as written
    raw = in_raw_html(lines, {index: column for _, index, column, _ in checked})
    for kind, index, _, m in checked:
        if index in raw:
            raise MarkerError(f"{page}:{first_line + index}: {lines[index].strip()!r} stands inside a raw HTML "
                              f"block, which Markdown passes through as written: what the marker becomes would "
                              f"show as raw text; put it outside the HTML block (or give the block the "
                              f"'markdown' attribute)")
        marker = Marker(kind, page, first_line + index, index, m)
        why = _misplaced(marker, around)
        if why:
            raise MarkerError(f"{marker.where}: {why}")
        found.append(marker)
    return found


def replace(markdown: str, page: str, handlers: dict[str, Callable[[Marker], str]],
            first_line: int = 1) -> str:
    """``markdown`` of ``page`` with the line of each marker of a kind in ``handlers`` replaced by
    what its handler returns for it, in one pass (a replacement is not searched for markers again).
    Every marker of the page is checked first (:func:`find`)."""
    unknown = set(handlers) - set(KINDS)
    if unknown:
        raise ValueError(f"handlers: no marker kind {sorted(unknown)}; the kinds are {sorted(KINDS)}")
    lines = markdown.split("\n")
    for marker in find(markdown, page, first_line):
        if marker.kind in handlers:
            lines[marker.index] = handlers[marker.kind](marker)
    return "\n".join(lines)


def unreplaced(html: str, page: str) -> None:
    """Raise :class:`MarkerError` naming ``page`` when its rendered ``html`` still holds a comment that
    looks like a marker other than :data:`EXPECTED_OUTPUT` (which stays, for the output labels): a
    marker that no stage replaced, such as one inside an HTML block or an included file."""
    pos = 0
    while (start := html.find("<!--", pos)) != -1:       # each comment, '<!--' to the next '-->', in one
        end = html.find("-->", start + 4)                # pass: once one is never closed, no later one is
        if end == -1:
            return
        pos = end + 3
        comment = html[start:pos]
        if comment != EXPECTED_OUTPUT and looks_like(html[start + 4:end]):
            raise MarkerError(f"{page}: {comment[:200]!r} is left in the rendered page: a marker stands "
                              f"where the build does not read it (inside an HTML block, a list or an "
                              f"included file?), or it is not a marker; write markers alone on their line")
