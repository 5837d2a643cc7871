"""Citations by key, and the Bibliography page, from one BibTeX file (``docs/references.bib``).

A page cites a work by its key (``authorYEARword``: ``vaswani2017attention``), Pandoc's way:

==================================  =============================================  ==========================
in a page                           shown as                                       for
==================================  =============================================  ==========================
``[@vaswani2017attention]``         (Vaswani et al., 2017)                         a parenthetical citation
``[@dao2022flashattention, Thm 2]`` (Dao et al., 2022, Thm 2)                      with a locator
``[@kuhn1990cache; @cleary1984data]`` (Kuhn & De Mori, 1990; Cleary & Witten, 1984) several works
``@xiong2020layer``                 Xiong et al. (2020)                            the authors in the sentence
``@dao2022flashattention [Thm 2]``  Dao et al. (2022, Thm 2)                       the same, with a locator
``[-@burrows1994block]``            (1994)                                         the year alone
==================================  =============================================  ==========================

Each becomes a Markdown link to the work's entry on the Bibliography page (``bibliography.md#KEY``,
which MkDocs checks under ``--strict``), titled with the full reference. Code (fenced and indented
blocks, inline code, raw HTML ``<code>``, ``<pre>``, ``<kbd>``, ``<samp>``), math, HTML comments and
HTML tags (their attributes) are left as they are. A key that is not in the source, and anything
else in prose that looks like a citation (an ``@`` beginning a word: ``[@near-miss]``, ``[see @key]``,
``[@a, @b]``), fails the build, naming the page and the line. The Bibliography page holds ``<!-- bibliography -->``, which becomes every
entry, sorted by first author and year, with the pages that cite it.
"""

from __future__ import annotations

import bisect
import functools
import html as _html
import posixpath
import re
from dataclasses import dataclass
from pathlib import Path

from .paths import DOCS

SOURCE = DOCS / "references.bib"
PAGE = "bibliography.md"
#: where the Bibliography page puts the entries
MARKER = "<!-- bibliography -->"
#: a citation key: lower-case letters, the year, then letters or digits (``dao2024flashattention2``)
KEY = r"[a-z][a-z-]*(?:19|20)\d\d[a-z0-9]*"
#: ``[@key]``, ``[-@key, locator]``, ``[@a; @b]``: a bracketed citation of one or more works
BRACKETED = re.compile(rf"\[(?P<items>-?@{KEY}[^\]\[;@]*(?:;\s*-?@{KEY}[^\]\[;@]*)*)\]")
#: ``@key`` or ``@key [locator]``: a narrative citation (not an e-mail address, not a decorator in code)
#: (a bracket that is a link's text, ``[text](url)`` or ``[text][ref]``, or a footnote's ``[^1]``, is no locator)
NARRATIVE = re.compile(rf"(?<![\w@./\\-])@(?P<key>{KEY})\b(?:[ \t]\[(?P<locator>[^\]\[@^][^\]\[@]*)\](?![(\[]))?")
_ITEM = re.compile(rf"^\s*(?P<year_only>-)?@(?P<key>{KEY})\s*(?:,\s*(?P<locator>.*?))?\s*$", re.S)
#: where something that is not prose may start inside a block of text: a run of backticks (inline
#: code), ``\(`` or ``\[`` (math), an HTML comment, a raw HTML element whose text is code (``<code>``,
#: ``<pre>``, ``<kbd>``, ``<samp>``, ``<script>``, ``<style>``, ``<textarea>``) or any other HTML tag (its
#: name and attributes are not prose: a citation there would become a link inside an attribute)
_NOT_PROSE_START = re.compile(r"(?P<escape>\\[\\$`])|(?P<ticks>`+)|\\(?P<math>[(\[])|(?P<comment><!--)"
                              r"|(?P<dollars>\$\$)|(?P<dollar>\$)(?!\s)|(?m:^)[ \t]*(?-i:\\begin\{(?P<env>[a-z]+\*?)\})"
                              r"|<(?P<tag>code|pre|kbd|samp|script|style|textarea)\b|(?P<html></?[A-Za-z])", re.I)
#: ``$…$`` math's text and its end as arithmatex reads it, from after the opening ``$``: characters but
#: a backslash or ``$``, or a backslash and the character it escapes, up to the next ``$``
_DOLLAR_CLOSE = re.compile(r"(?:[^\\$]|\\.)*\$", re.S)
#: ``\(…\)`` and ``\[…\]`` math's text and end likewise: an escaped pair (``\\)``) does not end it
_MATH_END = {"(": re.compile(r"(?:[^\\]|\\[^)])*\\\)", re.S), "[": re.compile(r"(?:[^\\]|\\[^\]])*\\\]", re.S)}
#: a whole HTML tag from its ``<``: a name, then anything but ``<`` and ``>`` outside quoted values
_HTML_TAG = re.compile(r"</?[A-Za-z][\w:-]*(?:[^<>\"']|\"[^\"]*\"|'[^']*')*>")
#: the opening line of a fenced code block (a backtick fence's info holds no backtick)
_FENCE_OPEN = re.compile(r"^(?P<ws>[ \t>]*)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
#: a list item's marker with nothing after it: a number there is what makes the line an item
_BARE_ITEM = re.compile(r"(?:[-*+]|\d+[.)])[ \t]*")
#: an HTML tag (its name and attributes may make the block what it is: ``<div markdown>``)
_TAG = re.compile(r"</?[A-Za-z][^<>]*>")
#: what looks like the start of a citation: an ``@`` (or ``-@``) that begins a word
AT = re.compile(r"(?<![\w.@/\\-])-?@(?=[\w-])")
_MD_SPECIAL = re.compile(r"([\\`*_\[\]>#|])")


@dataclass(frozen=True)
class Work:
    """One entry of the source, as the pages show it."""

    key: str
    kind: str                 # the BibTeX entry type
    authors: tuple[str, ...]  # full names, "others" last when the list is cut
    surnames: tuple[str, ...]
    year: str
    title: str
    venue: str
    details: str              # volume, number, pages
    identifiers: tuple[str, ...]
    note: str

    @property
    def who(self) -> str:
        """The authors as a citation names them: one, two joined by &, or the first et al."""
        names = [s for s in self.surnames if s != "others"]
        if len(names) == 1 and len(self.surnames) == 1:
            return names[0]
        if len(names) == 2 and len(self.surnames) == 2:
            return f"{names[0]} & {names[1]}"
        return f"{names[0]} et al."

    def reference(self) -> str:
        """The full reference as plain text (a link's title)."""
        parts = [f"{_names(self.authors)} ({self.year}). {self.title}. {self.venue}"]
        if self.details:
            parts.append(self.details)
        return ", ".join(parts) + ". " + " ".join(f"{i}." for i in self.identifiers)


def _latex_text(value: str) -> str:
    from pybtex.backends.plaintext import Backend   # by class: render_as("text") looks it up by entry point each call
    from pybtex.richtext import Text

    return " ".join(Text.from_latex(value).render(Backend()).split())


def _names(authors: tuple[str, ...]) -> str:
    if authors[-1] == "others":
        return ", ".join(authors[:-1]) + " et al."
    if len(authors) == 1:
        return authors[0]
    return ", ".join(authors[:-1]) + " and " + authors[-1]


def _venue(entry, text) -> str:
    fields = entry.fields
    if "journal" in fields:
        return text(fields["journal"])
    if "booktitle" in fields:
        return text(fields["booktitle"])
    if "institution" in fields:
        kind = text(fields.get("type", "Technical report"))
        number = f" {text(fields['number'])}" if "number" in fields else ""
        return f"{kind}{number}, {text(fields['institution'])}"
    return text(fields.get("publisher") or fields.get("howpublished", ""))


def _work(key: str, entry) -> Work:
    fields, text = entry.fields, _latex_text
    people = entry.persons.get("author", [])
    authors, surnames = [], []
    for person in people:
        surname = text(" ".join(person.prelast_names + person.last_names))
        first = text(" ".join(person.first_names + person.middle_names))
        authors.append(" ".join(p for p in (first, surname) if p) if surname != "others" else "others")
        surnames.append(text(" ".join(person.last_names)) if surname != "others" else "others")
    details = []
    if "volume" in fields and "journal" in fields:
        details.append(f"vol. {text(fields['volume'])}" + (f"({text(fields['number'])})" if "number" in fields else ""))
    if "pages" in fields:
        pages = text(fields["pages"]).replace("--", "–")
        details.append(f"{'pp.' if '–' in pages else 'article'} {pages}")
    identifiers = []
    if "doi" in fields:
        identifiers.append(f"doi:{fields['doi']}")
    if "eprint" in fields and fields.get("archiveprefix", "").lower() == "arxiv":
        identifiers.append(f"arXiv:{fields['eprint']}")
    if "isbn" in fields:
        identifiers.append(f"ISBN {fields['isbn']}")
    return Work(key=key, kind=entry.type, authors=tuple(authors), surnames=tuple(surnames),
                year=text(fields.get("year", "")), title=text(fields.get("title", "")).rstrip("."),
                venue=_venue(entry, text), details=", ".join(details), identifiers=tuple(identifiers),
                note=text(fields.get("note", "")))


@functools.lru_cache(maxsize=4)
def _load(path: str, stamp: tuple[int, int]) -> dict[str, Work]:
    from pybtex.database import parse_file
    from pybtex.exceptions import PybtexError

    try:
        bib = parse_file(path, bib_format="bibtex")
    except PybtexError as err:
        raise ValueError(f"{path}: {err}") from None
    out = {}
    for key, entry in bib.entries.items():
        missing = [f for f in ("author", "year", "title") if not (entry.persons if f == "author" else entry.fields).get(f)]
        if not re.fullmatch(KEY, key) or missing:
            what = f"lacks {', '.join(missing)}" if missing else "has a key no page can cite"
            raise ValueError(f"{path}: the entry {key!r} {what}; an entry has a key authorYEARword "
                             f"(lower case), an author, a year and a title")
        work = _work(key, entry)
        if not re.fullmatch(r"\d{4}", work.year):
            raise ValueError(f"{path}: the entry {key!r} has the year {work.year!r:.80}; a year is four digits "
                             f"(every citation of the work shows it)")
        if not [s for s in work.surnames if s != "others"] or not all(s.strip() for s in work.surnames):
            raise ValueError(f"{path}: the entry {key!r} names no author (author = {{{entry.fields.get('author', '')}}}"
                             f" or only 'others' or an empty name); give at least one author's name, "
                             f"'Surname, First'")
        out[key] = work
    return out


def works(path: Path = SOURCE) -> dict[str, Work]:
    """Every entry of the BibTeX file ``path`` by key (read again only when the file changed)."""
    st = Path(path).stat()
    return _load(str(path), (st.st_mtime_ns, st.st_size))


def _fenced(lines: list[str]) -> set[int]:
    """The indices of the lines of fenced code blocks: a fence closes at the first later line, at the
    same indent, of the same character at least as long (CommonMark's rule; pymdownx.superfences
    wants the same length, and shows a block closed longer as a paragraph, but its writer meant code).
    A fence never closed opens no block, as superfences reads it. Linear in the lines but for a
    logarithm: :func:`_closers` finds every opener's closer in one pass from the end."""
    close = _closers(lines)
    fenced, i = set(), 0
    while i < len(lines):
        if close[i] is None:
            i += 1
        else:
            fenced.update(range(i, close[i] + 1))
            i = close[i] + 1
    return fenced


def _closers(lines: list[str]) -> list[int | None]:
    """For each line that opens a fence, the index of the first later line that closes it (the same
    indent and character, a fence at least as long and nothing after it but blanks); None for any
    other line or a fence never closed. One pass from the last line up: per indent and character, a
    stack of the closing lines below, nearest on top, each longer than every one above it (a nearer
    one at least as long hides a farther one), so a binary search finds an opener's closer."""
    import bisect

    stacks: dict[tuple[str, str], tuple[list[int], list[int]]] = {}   # (-lengths, indices), nearest last
    close: list[int | None] = [None] * len(lines)
    for i in range(len(lines) - 1, -1, -1):
        m = _FENCE_OPEN.match(lines[i])
        if m is None:
            continue
        key, length = (m["ws"], m["fence"][0]), len(m["fence"])
        lengths, indices = stacks.setdefault(key, ([], []))
        if not (m["fence"][0] == "`" and "`" in m["info"]):
            at = bisect.bisect_right(lengths, -length)    # lengths hold -length, rising toward the top
            if at:
                close[i] = indices[at - 1]
        if not m["info"].strip(" \t"):                   # a closing line too, for the openers above it
            while lengths and -lengths[-1] <= length:
                lengths.pop()
                indices.pop()
            lengths.append(-length)
            indices.append(i)
    return close


def _mark(line: str) -> int | None:
    """The column of the one character of ``line`` that :func:`_indented_code` replaces by a word to
    find the line in Python-Markdown's code blocks, or None: its first ``@`` (no block of the site's
    extensions reads one), else its last letter or digit outside an HTML tag, unless the line is a
    block whose words or number make it one (``/// caption``, a list item's bare number)."""
    if "@" in line:
        return line.index("@")
    body = line.lstrip(" \t>")
    if body.startswith("///") or _BARE_ITEM.fullmatch(body):
        return None
    outside = _TAG.sub(lambda m: " " * len(m.group(0)), line)
    found = [m.start() for m in re.finditer(r"[^\W_]", outside)]
    return found[-1] if found else None


def _indented_code(lines: list[str], fenced: set[int]) -> set[int]:
    """The indices of ``lines`` that stand in indented code blocks, as Python-Markdown reads the page
    with the site's extensions (:func:`site_build.markers.indented_code`: its own block parser, in list
    items, admonitions, block quotes and after headings alike). Only a line indented four columns (or
    in a block quote) can be code, so only those are asked about, each by one character
    (:func:`_mark`); one with nothing to mark (no letter, digit or ``@``: it holds no citation) is
    code when the line above it is, and so is a blank line between two code lines."""
    from . import markers

    asked = {}
    for i, line in enumerate(lines):
        if i not in fenced and line.strip() and (line.expandtabs(4).startswith("    ") or
                                                 line.lstrip(" ").startswith(">")):
            column = _mark(line)
            asked[i] = column
    code = markers.indented_code(lines, {i: c for i, c in asked.items() if c is not None}, width=1)
    for i in sorted(asked):
        if asked[i] is None and i - 1 in code:
            code.add(i)
    for i in range(1, len(lines) - 1):
        if not lines[i].strip() and i - 1 in code and i not in code:
            after = next((j for j in range(i + 1, len(lines)) if lines[j].strip()), None)
            if after in code:
                code.update(range(i, after))
    return code


def _code_blocks(markdown: str) -> list[tuple[int, int]]:
    """The (start, end) character spans of ``markdown``'s fenced and indented code blocks, in order."""
    lines = markdown.split("\n")
    fenced = _fenced(lines)
    code = fenced | _indented_code(lines, fenced)
    spans, at = [], 0
    for i, line in enumerate(lines):
        if i in code:
            if spans and spans[-1][1] == at - 1:
                spans[-1] = (spans[-1][0], at + len(line))
            else:
                spans.append((at, at + len(line)))
        at += len(line) + 1
    return spans


def _not_prose(text: str, start: int, end: int, math: bool = True, tags: bool = True):
    """The (start, end) spans of ``text[start:end]`` that are not prose (:data:`_NOT_PROSE_START`), in
    order, in one pass: a closer searched for and not found is remembered, so an opener never closed
    (a lone ``<!--``, backtick run or ``\\(``) costs one search however often it repeats. A run of
    backticks closes at the next run of the same length, as CommonMark reads inline code; an opener
    never closed is text."""
    missing: dict[object, int] = {}           # closer → a position from which it was not found

    def find(closer, pattern: re.Pattern | str, at: int) -> re.Match | int | None:
        if closer in missing and missing[closer] <= at:
            return None
        found = pattern.search(text, at, end) if isinstance(pattern, re.Pattern) else text.find(pattern, at, end)
        if found is None or found == -1:
            missing[closer] = at
            return None
        return found

    at = start
    while (m := _NOT_PROSE_START.search(text, at, end)) is not None:
        stop = None
        if m["ticks"]:
            n = len(m["ticks"])
            close = find(("`", n), _tick_run(n), m.end() + 1)
            stop = close.end() if close is not None else None
        elif m["escape"] or not math and (m["math"] or m["dollars"] or m["dollar"] or m["env"]) \
                or not tags and m["html"]:
            at = m.end()                                  # an escaped backslash, dollar or backtick: text
            continue
        elif m["math"]:                                   # read as arithmatex reads it, escapes paired
            if missing.get(("math", m["math"]), end + 1) > m.end():
                close = _MATH_END[m["math"]].match(text, m.end(), end)
                if close is None:
                    missing[("math", m["math"])] = m.end()
                stop = close.end() if close is not None else None
        elif m["comment"]:
            close = find("-->", "-->", m.end())
            stop = close + 3 if close is not None else None
        elif m["dollars"]:                                # $$…$$: display math
            close = find("$$", "$$", m.end())
            stop = close + 2 if close is not None else None
        elif m["dollar"]:                                 # $…$: math when its end is not after a space
            close = _DOLLAR_CLOSE.match(text, m.end(), end)
            if close is not None and not text[close.end() - 2].isspace() and close.end() - 1 > m.end() \
                    and "\n\n" not in text[m.end():close.end()]:
                stop = close.end()
        elif m["env"]:                                    # \begin{env}…\end{env}: a display environment
            close = find(("env", m["env"]), "\\end{" + m["env"] + "}", m.end())
            stop = close + len(m["env"]) + 6 if close is not None else None
        elif m["tag"]:
            opened = find(">", ">", m.end())
            name = m["tag"].lower()
            close = find(name, _element_close(name), opened + 1) if opened is not None else None
            stop = close.end() if close is not None else None
        if stop is None and (m["tag"] or m["html"]):      # any tag, a raw element's own included
            tag = _HTML_TAG.match(text, m.start(), end)
            stop = tag.end() if tag else None
        if stop is None:
            at = m.end() if m["ticks"] or m["math"] or m["comment"] or m["dollars"] or m["env"] else m.start() + 1
            continue
        yield m.start(), stop
        at = stop


@functools.lru_cache(maxsize=16)
def _tick_run(n: int) -> re.Pattern:
    return re.compile(rf"(?<!`)`{{{n}}}(?!`)")


@functools.lru_cache(maxsize=16)
def _element_close(name: str) -> re.Pattern:
    return re.compile(rf"</{name}\s*>", re.I)


def prose_spans(markdown: str, math: bool = True, tags: bool = True) -> list[tuple[int, int]]:
    """The (start, end) spans of ``markdown`` that are prose: outside code (fenced and indented blocks,
    inline code, raw HTML ``<code>``, ``<pre>`` and the like), math, HTML comments and HTML tags
    (``math``/``tags`` False: math or tags count as prose, for naming the line a rendered key stands on)."""
    spans, at = [], 0
    for block_start, block_end in [*_code_blocks(markdown), (len(markdown), len(markdown))]:
        for not_start, not_end in _not_prose(markdown, at, block_start, math, tags):
            spans.append((at, not_start))
            at = not_end
        spans.append((at, block_start))
        at = block_end
    return spans


def cited_keys(markdown: str) -> list[str]:
    """Every key the prose of ``markdown`` cites, in order, repeats included."""
    keys = []
    for start, end in prose_spans(markdown):
        text = markdown[start:end]
        for m in BRACKETED.finditer(text):
            keys += [_ITEM.match(item)["key"] for item in m["items"].split(";")]
        keys += [m["key"] for m in NARRATIVE.finditer(BRACKETED.sub("", text))]
    return keys


def _blank(m: re.Match) -> str:
    return re.sub(r"[^\n]", " ", m.group(0))


def check(markdown: str, page_uri: str, known: dict[str, Work] | None = None, first_line: int = 1) -> None:
    """Raise ``ValueError`` naming the page ``page_uri`` and the line (``first_line``: the file's line of
    ``markdown``'s first) for the first citation in its prose whose key is not in the source, and for
    anything there that looks like a citation but is not one: an ``@`` or ``-@`` that begins a word
    outside the forms of the module's table (``[@near-miss]``, ``[see @key]``, ``[@a, @b]``, an unclosed
    ``[@key``, ``-@key`` outside brackets). Code, math, HTML comments and tags are not read."""
    known = works() if known is None else known

    def fail(at: int, why: str) -> None:
        line = first_line + markdown.count("\n", 0, at)
        raise ValueError(f"docs/{page_uri}:{line}: {why}")

    def unknown(at: int, key: str) -> None:
        if key not in known:
            fail(at, f"cites @{key}, which is not in {SOURCE.relative_to(DOCS.parent)}; "
                     f"add the entry there or correct the key")

    form = ("; a citation is [@authorYEARword], [@key, locator], [@a; @b], [-@key], @key or @key [locator] "
            "(README, Citations), or put the text in code")
    places = _AttributePlaces(markdown)

    def in_attribute(at: int, shown: str, joins: str) -> None:
        if where := places.of(at):
            fail(at, f"{shown!r} stands inside {where}, which Markdown makes an attribute or a link's target, "
                     f"not text: a citation there cannot become a link (the page would show its Markdown); "
                     f"cite in the text")
        if at > 0 and markdown[at - 1] in joins:       # its link's '[' (or '(') would join what ends there
            fail(at, f"{shown!r} follows {markdown[at - 1]!r} directly: Markdown would read the two as one "
                     f"{'image' if markdown[at - 1] == '!' else 'link'} (the page would show the citation's "
                     f"Markdown); put a space or a word between them")

    spans = prose_spans(markdown)
    no_link = _NoLinkElements(markdown, spans)
    for start, end in spans:
        text = markdown[start:end]
        if (odd := _COMPATIBILITY_AT.search(text)) is not None:
            fail(start + odd.start(), f"{odd.group(0)!r} is typed with {'a full-width' if odd[1] == chr(0xFF20) else 'a small'} "
                                      f"at sign, which reads as an @ but cites nothing; type '@'" + form)
        if "@" not in text:
            continue
        if (pair := _ESCAPED_BACKSLASH_AT.search(text)) is not None:
            fail(start + pair.start(), f"{text[pair.start():pair.end() + 30].split()[0]!r}: an escaped backslash ('\\\\') "
                                       f"before an @ leaves the @ unescaped, so it is neither a citation nor an @ shown "
                                       f"as typed; write '\\@' for an @, or a space before a citation" + form)
        for m in AT.finditer(text):
            if (element := no_link.around(start + m.start())) is not None:
                fail(start + m.start(), f"{text[m.start():m.start() + 40].split()[0]!r} stands inside raw HTML "
                                        f"<{element}>, where a citation cannot become a link (a link there is "
                                        f"dropped, nested in another or shown as text); cite outside the element")
        links = _Brackets(text)
        for m in BRACKETED.finditer(text):
            in_attribute(start + m.start(), m.group(0), "]")      # rendered "([...](...))"
            for item in m["items"].split(";"):
                if (parts := _ITEM.match(item)) is None:       # '[@key words]': no comma before a locator
                    fail(start + m.start(), f"{m.group(0)!r} is not a citation: after a key comes ', ' and "
                                            f"a locator, '; ' and another key, or ']'" + form)
                unknown(start + m.start(), parts["key"])
            if where := links.in_link(m.start(), m.end()):
                fail(start + m.start(), f"{m.group(0)!r} stands inside {where}, where a citation cannot become "
                                        "a link (the page would show its Markdown); cite outside the link")
        for m in NARRATIVE.finditer(text):
            in_attribute(start + m.start(), m.group(0), "]!")     # rendered "[...](...)"
            if where := links.in_link(m.start(), m.end()):
                fail(start + m.start(), f"{m.group(0)!r} stands inside {where}, where a citation cannot become "
                                        "a link (the page would show its Markdown); cite outside the link")
        text = BRACKETED.sub(_blank, text)
        brackets = _Brackets(text)
        for m in NARRATIVE.finditer(text):
            if (bracket := brackets.in_brackets(m.start(), m.end())) is not None:
                fail(start + m.start(), f"{bracket!r} is not a citation: a key inside brackets stands in "
                                        f"[@key] or [@a; @b] alone" + form)
            unknown(start + m.start(), m["key"])
        text = NARRATIVE.sub(_blank, text)
        for m in AT.finditer(text):
            shown = (_Brackets(text).in_brackets(m.start(), m.end())
                     or re.match(r"-?@[\w.:-]*", text[m.start():]).group(0))
            fail(start + m.start(), f"{shown!r} looks like a citation but is not one (no key authorYEARword "
                                    f"there, or it stands outside the syntax)" + form)


#: ``\\@key``: escaped backslashes (an even run) right before an ``@`` that begins a word
_ESCAPED_BACKSLASH_AT = re.compile(r"(?<!\\)(?:\\\\)+-?@(?=[\w-])")
#: a link reference definition's label, at a line's start (``[label]: url``), to tell a shortcut reference link
_DEFINED_LABEL = re.compile(r"^ {0,3}\[(?!\^)((?:[^\]\\\n]|\\.)+)\]:", re.M)


def _labels(markdown: str) -> set[str]:
    """The labels of the page's link reference definitions, as Markdown matches them (case and runs of
    white space ignored): ``@key [label]`` is then a citation followed by a shortcut reference link."""
    return {" ".join(m[1].split()).casefold() for m in _DEFINED_LABEL.finditer(markdown)}


#: an at sign a keyboard's input method may type for '@': U+FF20 FULLWIDTH, U+FE6B SMALL COMMERCIAL AT
_COMPATIBILITY_AT = re.compile(r"(?<![\w.@/\\-])-?([\uff20\ufe6b])(?=[\w-])")
#: a raw HTML element in whose text a citation cannot become a link: a link (nested links are not
#: HTML), a form control's text, a page's title and the raw text of ``<xmp>``
_NO_LINK_OPEN = re.compile(r"<(a|option|select|datalist|button|title|xmp|iframe|noscript|noembed|noframes|plaintext)"
                           r"(?=[\s/>])", re.I)


class _NoLinkElements:
    """The spans of ``markdown`` inside raw HTML elements of :data:`_NO_LINK_OPEN`, from the end of
    their start tag (one that stands in prose: right after a prose span of ``spans``) to their end
    tag; an element never closed is not counted (HTML closes an ``<option>`` on its own, say). Each
    end tag searched for and not found is remembered: linear in the page."""

    def __init__(self, markdown: str, spans: list[tuple[int, int]]):
        import bisect

        self._bisect = bisect.bisect_right
        ends = {end for _, end in spans}
        missing: dict[str, int] = {}
        self.starts, self.ends, self.names = [], [], []
        if "<" not in markdown:
            return
        for m in _NO_LINK_OPEN.finditer(markdown):
            name = m[1].lower()
            if m.start() not in ends or (name in missing and missing[name] <= m.end()) \
                    or (self.ends and m.start() < self.ends[-1]):
                continue
            tag = _HTML_TAG.match(markdown, m.start())  # its end tag is looked for after its attributes
            opened = tag.end() if tag else m.end()
            if name == "plaintext":                     # never ends: the rest of the page is its text
                self.starts.append(opened)
                self.ends.append(len(markdown))
                self.names.append(name)
                break
            close = _element_close(name).search(markdown, opened)
            if close is None:
                missing[name] = m.end()
                continue
            self.starts.append(opened)
            self.ends.append(close.start())
            self.names.append(name)

    def around(self, at: int) -> str | None:
        """The name of the element whose text holds position ``at``, or None."""
        i = self._bisect(self.starts, at) - 1
        return self.names[i] if i >= 0 and at < self.ends[i] else None


#: a link reference definition's start (its target and title follow the colon) and an abbreviation's
_REFERENCE_DEFINITION = re.compile(r" {0,3}\[(?!\^)(?:[^\]\\\n]|\\.)+\]:")  # [^1]: is a footnote: text
_ABBREVIATION = re.compile(r"\*\[(?:[^\]\\\n]|\\.)*\]:")
#: a line that can hold the title of the reference definition on the line above it
_TITLE_LINE = re.compile(r"[ \t]+[\"'(]")


class _AttributePlaces:
    """Where, line by line, Markdown reads text as an attribute or a link's target rather than as text:
    a link reference definition after its ``]:`` (target and title, the title maybe on the next line),
    an abbreviation's definition (``*[HTML]: …``, the ``<abbr>``'s title), and braces ``{ … }``, which
    attr_list reads as an attribute list. Each line is read once, when a citation on it asks."""

    def __init__(self, markdown: str):
        self.markdown = markdown
        self.lines: dict[int, tuple[str | None, int, list[tuple[int, int]]]] = {}
        self.newlines: list[int] | None = None          # found when a citation first asks

    def _line(self, line_start: int) -> tuple[str | None, int, list[tuple[int, int]]]:
        """(what the whole line after ``after`` is, or None; ``after``; the braces' spans) of the line
        that starts at ``line_start``."""
        if line_start in self.lines:
            return self.lines[line_start]
        text = self.markdown
        line_end = text.find("\n", line_start)
        line_end = len(text) if line_end < 0 else line_end
        kind, after = None, line_start
        if m := _REFERENCE_DEFINITION.match(text, line_start, line_end):
            kind, after = "a link reference definition", m.end()
        elif m := _ABBREVIATION.match(text, line_start, line_end):
            kind, after = "an abbreviation's definition", m.end()
        elif line_start > 0 and _TITLE_LINE.match(text, line_start, line_end):
            above = text.rfind("\n", 0, line_start - 1) + 1
            if _REFERENCE_DEFINITION.match(text, above, line_start - 1):
                kind = "the title of the link reference definition above it"
        braces, at = [], line_start
        while (opened := text.find("{", at, line_end)) >= 0:
            closed = text.find("}", opened + 1, line_end)
            if closed < 0:
                break
            braces.append((opened, closed))
            at = closed + 1
        self.lines[line_start] = (kind, after, braces)
        return self.lines[line_start]

    def of(self, at: int) -> str | None:
        """What place of those the character at ``at`` stands in, or None."""
        if self.newlines is None:
            self.newlines = [m.start() for m in re.finditer("\n", self.markdown)]
        k = bisect.bisect_left(self.newlines, at) - 1
        kind, after, braces = self._line(self.newlines[k] + 1 if k >= 0 else 0)
        if kind is not None and at >= after:
            return kind
        k = bisect.bisect_right(braces, (at, len(self.markdown))) - 1
        if k >= 0 and braces[k][0] < at < braces[k][1]:
            return "braces, which attr_list reads as an attribute list"
        return None


class _Brackets:
    """Where the brackets of a text open and close, line by line, found in one pass, so that the link
    part or bracket around each of many citations on a line is found without walking the line again
    (:meth:`in_link`, :meth:`in_brackets`)."""

    _TOKEN = re.compile(r"\]\(|[\[\]\n)]")

    def __init__(self, text: str):
        self.text = text
        self.at: list[int] = []           # each token's position, in order
        self.top: list[int] = []          # after it: the innermost bracket open on its line, or -1
        self.target: list[int] = []       # after it: the "](" of a link target open on its line, or -1
        stack, target = [], -1
        for m in self._TOKEN.finditer(text):
            i, token = m.start(), m.group(0)
            if token == "\n":
                stack, target = [], -1
            elif token == "[":
                stack.append(i)
            elif token == ")":
                target = -1
            elif stack:                                 # "]" or "](": closes the innermost bracket
                stack.pop()
            self.at.append(i)
            self.top.append(stack[-1] if stack else -1)
            self.target.append(target)
            if token == "](":                           # a target starts after its "(": from i + 2
                target = i
                self.at.append(i + 1)
                self.top.append(stack[-1] if stack else -1)
                self.target.append(target)
        self.brackets = [(m.start(), m.group(0)) for m in re.finditer(r"[\[\]\n]", text)]
        self.bracket_at = [i for i, _ in self.brackets]
        # from each bracket or newline on, the first "]" on its line that no "[" from there on closes
        # (what closes a bracket open before it): one pass from the end, "]"s waiting on a stack
        self.unclosed: list[int] = [-1] * len(self.brackets)
        waiting: list[int] = []
        for k in range(len(self.brackets) - 1, -1, -1):
            i, b = self.brackets[k]
            if b == "\n":
                waiting = []
            elif b == "]":
                waiting.append(i)
            elif waiting:
                waiting.pop()
            self.unclosed[k] = waiting[-1] if waiting else -1
        self.closers = [(i, b) for i, b in self.brackets if b != "["]     # "]" and newlines
        self.closer_at = [i for i, _ in self.closers]

    def _state(self, start: int) -> int:
        """The index of the last token before ``start``, or -1."""
        import bisect

        return bisect.bisect_left(self.at, start) - 1

    def in_link(self, start: int, end: int) -> str | None:
        """What link part ``text[start:end]`` stands in on its line, or None: the text of a link (an open
        ``[``, no image's ``![``, whose ``]`` is followed by ``(`` or ``[``), or a link's target or title
        (after ``](``, before its ``)``)."""
        k = self._state(start)
        if k < 0:
            return None
        if self.target[k] >= 0:
            return "a link's target or title"
        opened = self.top[k]
        if opened < 0 or (opened and self.text[opened - 1] == "!"):
            return None
        import bisect

        k = bisect.bisect_left(self.bracket_at, end)
        closed = self.unclosed[k] if k < len(self.brackets) else -1
        if closed < 0:
            return None
        return "a link's text" if self.text.startswith(("(", "["), closed + 1) else None

    def in_brackets(self, start: int, end: int) -> str | None:
        """The bracket around ``text[start:end]`` on its line (to its ``]`` or the end of the match), or
        None: the last ``[`` before it on its line, when no ``]`` follows that ``[`` before it."""
        import bisect

        k = bisect.bisect_left(self.bracket_at, start) - 1
        if k < 0 or self.brackets[k][1] != "[":
            return None
        opened = self.brackets[k][0]
        j = bisect.bisect_left(self.closer_at, end)
        closed = self.closers[j][0] if j < len(self.closers) and self.closers[j][1] == "]" else -1
        return self.text[opened:closed + 1 if closed >= 0 else end].strip()


#: a rendered citation's link Markdown (:func:`render`) that Markdown did not turn into a link
_UNLINKED = re.compile(rf"\]\((?:\.\./)*{re.escape(PAGE)}#(?P<key>{KEY})")
#: a key as a citation names it, narrative (``@key``) or in brackets (``[@key]``, ``[-@key]``)
_TYPED = re.compile(rf"(?<![\w.@/\\-])-?@(?P<key>{KEY})\b")
#: HTML elements whose text is code, which may show citation syntax as it is typed
_CODE_ELEMENT = re.compile(r"<(code|pre|kbd|samp|script|style|textarea)\b", re.I)


def check_rendered(html: str, page_uri: str, source: str, first_line: int = 1) -> None:
    """Raise ``ValueError`` naming the page (and the first line of ``source``, the page's Markdown,
    that names the key) when a citation did not become a link in the rendered ``html``: its link's
    Markdown kept as text or in an attribute (Markdown read it as part of a link's target, an
    attribute, an image ... around it), or a citation's syntax kept as typed outside code: in an
    HTML attribute's value (a tooltip), or in text :func:`check` read as HTML and Markdown showed as
    text. The page's checks before rendering name most such places; this one, on what the reader
    gets, misses none. Linear in the page."""
    def fail(key: str, why: str) -> None:
        # the line of the first use of the key where a citation can stand: not in code or a comment
        import bisect

        spans = prose_spans(source, math=False, tags=False)
        starts = [s for s, _ in spans]

        def in_text(at: int) -> bool:
            i = bisect.bisect_right(starts, at) - 1
            return i >= 0 and at < spans[i][1]

        found = [m.start() for m in re.finditer(rf"@{re.escape(key)}\b", source)]
        at = next((a for a in found if in_text(a)), found[0] if found else -1)
        line = f":{first_line + source.count(chr(10), 0, at)}" if at >= 0 else ""
        raise ValueError(f"docs/{page_uri}{line}: the citation of @{key} {why}; cite it in plain text, "
                         f"with a space before it and outside links, attributes and raw HTML")

    if "](" not in html and "@" not in html:
        return
    text, at = [], 0                                    # the text the reader sees, code left out
    while (m := _CODE_ELEMENT.search(html, at)) is not None:
        close = _close_of(html, m[1], m.end())
        text.append(html[at:m.start()])
        if close < 0:
            at = len(html)
            break
        at = close
    text.append(html[at:])
    shown = _html.unescape("".join(text).replace(AT_SIGN, "\\@"))   # text and attributes' values alike;
    # an escaped '@' (``\@key`` in the Markdown) is read as escaped, as check() read it
    if m := _UNLINKED.search(shown):
        fail(m["key"], "did not become a link: the page would show its Markdown")
    for m in _TYPED.finditer(shown):
        if m["key"] in works():
            fail(m["key"], "shows as typed, in the text or in an attribute's value (a tooltip): in raw HTML, "
                           "or in what the check before rendering read as HTML and Markdown showed as text")


def _close_of(html: str, name: str, start: int) -> int:
    """The end of the first ``</name>`` (any case) at or after ``start``, or -1."""
    m = _element_close(name.lower()).search(html, start)
    return m.end() if m else -1


def _code_span(text: str) -> str:
    """``text`` as a Markdown code span, shown as written whatever backticks it holds: fenced by one
    backtick more than its longest run, padded with a space where it starts or ends with one."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _escape(text: str) -> str:
    """``text`` as Markdown that shows it as written: Markdown's characters escaped, ``<`` as a character
    reference (Python-Markdown has no escape for ``<``: ``\\<`` would show its backslash),
    and ``$`` as one, so that dollars in two fields never make arithmatex math of what is between."""
    text = text.replace("<", "&lt;").replace("$", "&#36;")
    return _MD_SPECIAL.sub(r"\\\1", text)


def _link(text: str, work: Work, target: str) -> str:
    title = work.reference().replace('"', "'")
    return f'[{text}]({target}#{work.key} "{title}")'


def render(markdown: str, page_uri: str, known: dict[str, Work] | None = None, first_line: int = 1) -> str:
    """``markdown`` of the page ``page_uri`` (its path under ``docs/``) with each citation a link to its
    entry on the Bibliography page; a key not in the source, or text that looks like a citation and is
    not one, raises ``ValueError`` naming the page and the line (:func:`check`)."""
    known = works() if known is None else known
    check(markdown, page_uri, known, first_line)
    target = posixpath.relpath(PAGE, posixpath.dirname(page_uri) or ".")

    def find(key: str) -> Work:
        if key not in known:
            raise ValueError(f"docs/{page_uri}: cites @{key}, which is not in {SOURCE.relative_to(DOCS.parent)}; "
                             f"add the entry there or correct the key")
        return known[key]

    def bracketed(m: re.Match) -> str:
        cites = []
        for item in m["items"].split(";"):
            parts = _ITEM.match(item)
            work = find(parts["key"])
            text = work.year if parts["year_only"] else f"{_escape(work.who)}, {work.year}"
            if parts["locator"]:
                text += f", {parts['locator']}"
            cites.append(_link(text, work, target))
        return "(" + "; ".join(cites) + ")"

    labels = _labels(markdown) if "]:" in markdown else set()

    def narrative(m: re.Match) -> str:
        work = find(m["key"])
        locator = m["locator"]
        if locator and " ".join(locator.split()).casefold() in labels:   # a shortcut reference link: kept
            return _link(f"{_escape(work.who)} ({work.year})", work, target) + m.group(0)[m.end("key") - m.start():]
        inner = work.year + (f", {locator}" if locator else "")
        return _link(f"{_escape(work.who)} ({inner})", work, target)

    out, at = [], 0
    for start, end in prose_spans(markdown):
        out.append(markdown[at:start])
        out.append(_AT_ESCAPE.sub(_at_escaped, NARRATIVE.sub(narrative, BRACKETED.sub(bracketed, markdown[start:end]))))
        at = end
    return "".join(out)


#: a backslash escape in prose: ``\\`` (a backslash) or ``\@`` (an ``@`` that cites nothing)
_AT_ESCAPE = re.compile(r"\\([\\@])")
#: what ``\@`` becomes: an ``@`` the page shows as itself (Python-Markdown, unlike CommonMark, would
#: keep the backslash of ``\@``); :func:`check_rendered` reads it as an escaped ``@``, not a citation
AT_SIGN = "&#64;"


def _at_escaped(m: re.Match) -> str:
    return AT_SIGN if m[1] == "@" else m.group(0)


def _page_title(file) -> str:
    page = getattr(file, "page", None)
    title = getattr(page, "title", None) if page is not None else None
    return title or file.src_uri.removesuffix(".md")


def bibliography(files, known: dict[str, Work] | None = None) -> str:
    """The Bibliography page's entries as Markdown: each work, sorted by first author and year,
    anchored by its key, with links to the pages of ``files`` (MkDocs' files) that cite it."""
    known = works() if known is None else known
    cited_on: dict[str, list] = {key: [] for key in known}
    for file in files.documentation_pages():
        if file.src_uri == PAGE or file.abs_src_path is None:
            continue
        text = Path(file.abs_src_path).read_text(encoding="utf-8-sig", errors="replace")   # MkDocs names a bad page
        for key in dict.fromkeys(cited_keys(text)):
            if key in cited_on:
                cited_on[key].append(file)
    entries = []
    for work in sorted(known.values(), key=lambda w: ([s.lower() for s in w.surnames], w.year, w.key)):
        parts = [f"{_escape(_names(work.authors))} ({work.year}). *{_escape(work.title)}.*",
                 f"{_escape(work.venue)}{', ' + _escape(work.details) if work.details else ''}."]
        if work.note:
            parts.append(f"{_escape(work.note)}.")
        parts += [f"{_code_span(i)}." for i in work.identifiers]
        where = cited_on[work.key]
        if where:
            pages = ", ".join(f"[{_escape(_page_title(f))}]({posixpath.relpath(f.src_uri, posixpath.dirname(PAGE) or '.')})"
                              for f in where)
            parts.append(f"Cited in {pages}.")
        entries.append(f'<li id="{work.key}" markdown="span">{" ".join(parts)}</li>')
    # a list item per work (md_in_html renders the Markdown inside): the printable book keeps a list
    # item's anchor apart from another page's by prefixing it, as it does for headings
    return '<ul class="references" markdown="1">\n' + "\n".join(entries) + "\n</ul>\n"
