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
HTML tags (their attributes) are left as they are; which text is which, Python-Markdown says
(:func:`places`: the page read with the site's extensions). A key that is not in the source, and anything
else in prose that looks like a citation (an ``@`` beginning a word: ``[@near-miss]``, ``[see @key]``,
``[@a, @b]``), fails the build, naming the page and the line. The Bibliography page holds ``<!-- bibliography -->``, which becomes every
entry, sorted by first author and year, with the pages that cite it.
"""

from __future__ import annotations

import bisect
import dataclasses
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
#: characters a reader does not see between an ``@`` and the word after it: Unicode's default ignorable
#: code points (zero-width spaces and joiners, the soft hyphen, variation selectors, a BOM ...) and
#: combining marks (which sit on the ``@``); ``@``, such characters and a key reads as a citation
INVISIBLE = ("\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e\u2060-\u206f"
             "\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufff8\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
             "\U000e0000-\U000e0fff\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f")
#: what looks like the start of a citation: an ``@`` (or ``-@``) that begins a word, invisible characters
#: (:data:`INVISIBLE`) between them or not
AT = re.compile(rf"(?<![\w.@/\\-])-?@(?=[{INVISIBLE}]*[\w-])")
_MD_SPECIAL = re.compile(r"([\\`*_\[\]>#|])")


@dataclass(frozen=True)
class Work:
    """One entry of the source, as the pages show it."""

    key: str
    kind: str                 # the BibTeX entry type
    authors: tuple[str, ...]  # full names, "others" last when the list is cut
    surnames: tuple[str, ...]  # as a citation names them, particles kept ("van Dijk"), "others" last when cut
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
        where = ", ".join(p for p in (self.venue, self.details) if p)
        return " ".join(p for p in (f"{_names(self.authors)} ({self.year}).", _ended(self.title),
                                    _ended(where), *(f"{i}." for i in self.identifiers)) if p)


def _ended(text: str) -> str:
    """``text`` as a sentence of a reference: a full stop after it unless it ends in one, a '?' or a '!'
    ("What is attention?" stays as it is); "" for no text (no stray full stop where a field is empty)."""
    return text if not text or text.endswith((".", "?", "!")) else text + "."


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
        surnames.append(surname)          # with its particle: "van Dijk" (2020), as the reference names him
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
def _load(path: str, data: bytes) -> dict[str, Work]:
    """The works of the BibTeX file ``path`` whose bytes are ``data`` (kept by the bytes themselves, as
    read once: an edit that keeps the file's size and modification time is read too)."""
    from pybtex.exceptions import PybtexError
    from pybtex.plugin import find_plugin

    parser = find_plugin("pybtex.database.input", "bibtex")()
    parser.filename = path                          # as pybtex's parse_file names the file in its errors
    try:
        try:
            bib = parser.parse_bytes(data)
        except UnicodeDecodeError as err:           # as pybtex's parse_file reports it
            raise PybtexError(str(err), filename=path) from None
    except PybtexError as err:
        raise ValueError(f"{path}: {err}") from None
    out = {}
    for key, entry in bib.entries.items():
        missing = [f for f in ("author", "year", "title") if not (entry.persons if f == "author" else entry.fields).get(f)]
        if not re.fullmatch(KEY, key) or missing:
            what = f"lacks {', '.join(missing)}" if missing else "has a key no page can cite"
            raise ValueError(f"{path}: the entry {key!r} {what}; an entry has a key authorYEARword "
                             f"(lower case), an author, a year and a title")
        read = [*(v for f, v in entry.fields.items() if f.lower() not in _AS_WRITTEN),
                *(part for people in entry.persons.values() for person in people
                  for part in (*person.first_names, *person.middle_names, *person.prelast_names,
                               *person.last_names, *person.lineage_names))]
        if any(_COMMENT.search(value) for value in read):
            raise ValueError(f"{path}: the entry {key!r} holds an unescaped '%', which LaTeX reads as the start of "
                             f"a comment (the rest of its text would not show); write \\% for a percent sign")
        work = _work(key, entry)
        symbols = (t[0] for value in read for t in _CONTROL_SYMBOL.finditer(value) if not t[0][1:].isalpha()
                   and t[0][1:] not in _READ_SYMBOLS)
        if symbol := next(symbols, None):
            raise ValueError(f"{path}: the entry {key!r} holds the LaTeX command {symbol!r}, which the site cannot "
                             f"show (the page would show it as typed); write its text plainly (accents such as "
                             f"{{\\'e}} and escapes such as \\& are read)")
        if not re.fullmatch(r"\d{4}", work.year):
            raise ValueError(f"{path}: the entry {key!r} has the year {work.year!r:.80}; a year is four digits "
                             f"(every citation of the work shows it)")
        if not work.title.strip():
            raise ValueError(f"{path}: the entry {key!r} has a title that reads as nothing (title = "
                             f"{{{entry.fields['title']}}}: braces, spaces or a full stop alone); give the work's "
                             f"title")
        if stray := [str(person) for person in entry.persons.get("author", [])
                     if any(part == "and" for part in (*person.first_names, *person.middle_names,
                                                             *person.prelast_names, *person.last_names))]:
            raise ValueError(f"{path}: the entry {key!r} reads 'and' as part of a name ({stray[0]!r} in its "
                             f"authors as read: {' and '.join(map(str, entry.persons['author']))}): the list begins or ends with 'and', or has "
                             f"two in a row; join the names with one 'and' between each two")
        if "others" in work.surnames[:-1]:
            raise ValueError(f"{path}: the entry {key!r} has 'others' before the last name (its authors as read: "
                             f"{' and '.join(map(str, entry.persons['author']))}); 'others' stands last, for the names left out")
        if not [s for s in work.surnames if s != "others"] or not all(s.strip() for s in work.surnames):
            raise ValueError(f"{path}: the entry {key!r} names no author (author = {{{entry.fields.get('author', '')}}}"
                             f" or only 'others' or an empty name); give at least one author's name, "
                             f"'Surname, First'")
        if "crossref" in entry.fields:
            raise ValueError(f"{path}: the entry {key!r} has a crossref ({entry.fields['crossref']!r:.80}), which the "
                             f"site does not follow: the fields it would bring (a book's title, editors, year) "
                             f"would be left out silently; write them in the entry itself")
        if "pages" in entry.fields:
            ends = _latex_text(entry.fields["pages"]).replace("--", "–").split("–")
            if len(ends) > 2 or not all(end.strip(" -") for end in ends):
                raise ValueError(f"{path}: the entry {key!r} has the pages {entry.fields['pages']!r:.80}, no page "
                                 f"nor range of pages; write one page (pages = {{7}}) or a first and a last "
                                 f"(pages = {{7--19}})")
        shown = " ".join([*work.authors, work.title, work.venue, work.details, work.note])
        if command := _UNREAD_COMMAND.search(shown):
            raise ValueError(f"{path}: the entry {key!r} holds the LaTeX command {command[0]!r}, which the site "
                             f"cannot show (the page would show it as typed); write its text plainly (accents such "
                             f"as {{\\'e}} and escapes such as \\& are read)")
        out[key] = work
    return _years_told_apart(out, path)


def _years_told_apart(known: dict[str, Work], path: str = str(SOURCE)) -> dict[str, Work]:
    """``known`` with a letter after the year of works a citation would name alike (the same authors as a
    citation shows them, the same year): "Smith (2020a)" and "Smith (2020b)", lettered in the
    Bibliography's order (surnames, then title, then key), so that each citation points at one work."""
    alike: dict[tuple[str, str], list[Work]] = {}
    for work in known.values():
        alike.setdefault((work.who, work.year), []).append(work)
    out = dict(known)
    for group in alike.values():
        if len(group) < 2:
            continue
        group.sort(key=lambda w: ([_sort_form(s) for s in w.surnames], _sort_form(w.title), w.key))
        if len(group) > 26:
            keys = ", ".join(repr(w.key) for w in group)
            raise ValueError(f"{path}: {len(group)} entries would be cited as {group[0].who} ({group[0].year}), more "
                             f"than the year's letters a to z tell apart ({keys}); check the entries' authors and "
                             f"years, or merge the works that are one")
        for letter, work in zip("abcdefghijklmnopqrstuvwxyz", group):
            out[work.key] = dataclasses.replace(work, year=work.year + letter)
    return out


#: an unescaped ``%`` (after an even run of backslashes), where LaTeX's comment starts: the reader drops the
#: rest of the text, as LaTeX would
_COMMENT = re.compile(r"(?<!\\)(?:\\\\)*%")
#: the fields shown as written, not read as LaTeX (identifiers)
_AS_WRITTEN = frozenset({"doi", "eprint", "archiveprefix", "isbn", "url", "crossref"})
#: a LaTeX command left in an entry's text once its accents and escapes are read (``\\emph``, ``\\url``,
#: ``\\$``, which the LaTeX reader does not know)
_UNREAD_COMMAND = re.compile(r"\\(?:[A-Za-z]+|[$])")
#: a LaTeX control word or control symbol as written in an entry (a backslash and a letter run, or it and
#: any one character: ``\\\\`` is a line break, not an escaped backslash)
_CONTROL_SYMBOL = re.compile(r"\\(?:[A-Za-z]+|.)", re.S)
#: the control symbols the LaTeX reader reads (escapes, accents, a space, a soft hyphen); any other
#: (``\\,``, ``\\/``, ``\\@``, the line break ``\\\\`` ...) it leaves as typed. Control words are
#: :data:`_UNREAD_COMMAND`'s to find, once read: the reader knows many (``\\textbackslash``)
_READ_SYMBOLS = frozenset("&_#%{}'\"`^~=.- \t\n") | {""}


def works(path: Path = SOURCE) -> dict[str, Work]:
    """Every entry of the BibTeX file ``path`` by key (parsed again only when the file's bytes changed,
    whatever its size and modification time say)."""
    return _load(str(path), Path(path).read_bytes())


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
    """The (start, end) spans of ``markdown`` that a scan takes for prose, to name the line an error
    is on (what a citation check reads as prose is :func:`places`'): outside code (fenced and indented blocks,
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


def _blank(m: re.Match) -> str:
    return re.sub(r"[^\n]", " ", m.group(0))


def _blanked(text: str, spans: list[tuple[int, int]], newlines: bool = False) -> str:
    """``text`` with each of ``spans`` (in order, apart) made blanks, its line breaks kept (``newlines``:
    made blanks too), in one pass: rebuilding the text for each span took time in their count times
    the page's length."""
    out, at = [], 0
    for start, end in spans:
        out += [text[at:start], " " * (end - start) if newlines else re.sub(r"[^\n]", " ", text[start:end])]
        at = end
    out.append(text[at:])
    return "".join(out)


def _escaped(text: str, at: int) -> bool:
    """Whether ``text[at]`` follows an odd run of backslashes (Markdown's escape of it)."""
    run = at
    while run > 0 and text[run - 1] == "\\":
        run -= 1
    return (at - run) % 2 == 1


# -- where Markdown puts a place of the page ---------------------------------------------------------------
#
# Whether an ``@`` stands in prose is Python-Markdown's to say, not a scan's: the page is read once by
# the site's own Markdown extensions with a mark (private-use characters, which Markdown passes through
# as text) at each place asked about, and each mark is looked for in what Markdown made. A mark in a
# text Markdown made is prose; one in code, math, a comment or a raw tag's attributes is not, and one
# in a link's text, an attribute Markdown made (an alt text from attr_list, a link's title, an abbreviation),
# raw HTML Markdown does not read, or nowhere (a link reference definition) is a place no citation can
# stand. The scan's errors still name the line: each mark belongs to a place of the page as written.

#: what a place is: prose, or not prose and no place for a citation either (left as it is), or a place
#: where a citation cannot become a link (an error there)
PROSE = "prose"
_LEFT = frozenset({"code", "math", "comment", "tag"})
#: raw HTML elements whose text is code, and those in whose text a citation cannot become a link
_CODE_ELEMENTS = ("code", "pre", "kbd", "samp", "script", "style", "textarea", "xmp")
_NO_LINK_ELEMENTS = ("a", "option", "select", "datalist", "button", "title", "iframe", "noscript", "noembed",
                     "noframes", "plaintext", "svg", "math", "template")
#: Markdown's own math (pymdownx.arithmatex, generic): an element of that class holds a formula's text
_MATH_TAG = re.compile(r"""\bclass\s*=\s*(["']?)[^"'>]*\barithmatex\b""", re.I)
#: a mark's digits: three private-use characters (3,840 values each)
_DIGIT0, _BASE = 0xE100, 3840


@functools.lru_cache(maxsize=2)
def _extensions(config: bytes) -> tuple[tuple, str]:
    """The pages' extensions and their settings (:func:`site_build.markers.page_extensions`), kept by
    the bytes ``config`` of mkdocs.yml as :func:`_reader` read them: an edit that keeps the file's size
    and modification time is read too."""
    from .markers import page_extensions

    names, configs = page_extensions(config)        # the bytes it is kept by, not the file read again
    return tuple(names), repr(configs)


def _reader():
    """A Markdown that reads a page as the site's do: ``mkdocs.yml``'s extensions (read again when the
    file changes, as ``mkdocs serve`` reloads it), less the includes, copying none of the page's text:
    toc's ``[TOC]`` would copy each heading's text into a link of the table of contents, where a
    heading's citation would seem to stand inside a link (the table shows its text alone)."""
    import ast

    import markdown as markdown_module

    from .paths import ROOT

    names, configs = _extensions((ROOT / "mkdocs.yml").read_bytes())
    configs = ast.literal_eval(configs)
    if "toc" in names:
        configs["toc"] = {**configs.get("toc", {}), "marker": ""}
    return markdown_module.Markdown(extensions=list(names), extension_configs=configs)


#: the private-use areas, where a mark's first character is chosen
_PRIVATE_USE = ((0xE000, 0xF8FF), (0xF0000, 0xFFFFD), (0x100000, 0x10FFFD))


class _Unmarkable(ValueError):
    """The page holds every private-use character: none is left to begin a mark with."""


def _sentinel(text: str) -> str:
    """A private-use character ``text`` does not hold, to begin each mark with (any of the 137,468: a
    page that holds the first few is read as any other)."""
    for first, last in _PRIVATE_USE:
        for code in range(first, first + 256):
            if chr(code) not in text:
                return chr(code)
    held = set(text)
    for first, last in _PRIVATE_USE:
        for code in range(first, last + 1):
            if chr(code) not in held:
                return chr(code)
    raise _Unmarkable("the page holds every private-use character (137,468 of them), and the citation check "
                      "begins each of its marks with one the page does not hold; remove some")


def places(markdown: str, gaps) -> dict[int, str]:
    """Where Python-Markdown, with the site's extensions, puts each of ``gaps`` (positions between two
    characters of ``markdown``: gap ``i`` is just before ``markdown[i]``): :data:`PROSE`; ``"code"``,
    ``"math"``, ``"comment"`` or ``"tag"`` (a raw HTML tag's attributes) for what is no prose; or, for
    places where a citation cannot become a link, ``"link"`` (a link's text), ``"raw <name>"`` (the text
    of a raw HTML element such as ``<button>``), ``"raw"`` (raw HTML that Markdown does not read: an HTML
    block, or an element without the ``markdown`` attribute inside one with it),
    ``"attribute <what>"`` (one Markdown made: a link's target or title, an abbreviation's definition;
    an image's alt text that attr_list's braces set; the alt text an image's brackets hold is prose, where
    Markdown shows a link as its text) or ``"nowhere"`` (what the
    page does not show: a link reference definition). Linear in the page."""
    from .glossary import OpenElements
    from .tags import tokens

    order = sorted(set(gaps))
    if not order:
        return {}
    mark = _sentinel(markdown)
    pieces, last = [], 0
    for i, gap in enumerate(order):
        pieces += [markdown[last:gap], mark, chr(_DIGIT0 + i // _BASE ** 2 % _BASE),
                   chr(_DIGIT0 + i // _BASE % _BASE), chr(_DIGIT0 + i % _BASE)]
        last = gap
    pieces.append(markdown[last:])
    md, unread, alts = _reader(), [], []
    md.treeprocessors.register(_unread_texts(md, mark, unread), "citations-unread", 25)   # before the inline stage
    md.treeprocessors.register(_image_alts(mark, alts), "citations-alts", 9)   # after it, before attr_list's (8)
    html = md.convert("".join(pieces))
    marks = re.compile(re.escape(mark) + f"([{chr(_DIGIT0)}-{chr(_DIGIT0 + _BASE - 1)}]{{3}})")

    def ids(text: str):
        for m in marks.finditer(text):
            a, b, c = (ord(ch) - _DIGIT0 for ch in m[1])
            yield (a * _BASE + b) * _BASE + c

    raw = {i for block in [*md.htmlStash.rawHtmlBlocks, *unread] if isinstance(block, str) and mark in block
           for i in ids(block)}
    bracketed = {i for alt in alts for i in ids(alt)}     # the marks of the alt texts images' brackets hold
    found: dict[int, set[str]] = {}

    def put(text: str, where) -> None:
        if mark in text:
            for i in ids(text):
                found.setdefault(i, set()).add(where(i))

    # a code element's text is read whole, its tags left out: highlighting may cut a mark across two of
    # its spans (a fixed-format lexer cuts each line by its columns)
    open_, at, math, code = OpenElements(), 0, False, []
    for start, end, closing, name, self_closing in tokens(html, lambda: open_.opened_foreign, lambda: open_.foreign):
        if open_.inside(_CODE_ELEMENTS):
            code.append(html[at:start])
        else:
            put(html[at:start], lambda i: _text_place(open_, math, i in raw))
        tag = html[start:end]
        if mark in tag:
            in_tag = _attribute_places(name, tag, ids, bracketed) if name else {}
            put(tag, lambda i: ("tag" if i in raw else in_tag.get(i, "attribute an attribute")) if name else "comment")
        at, math = end, False
        if name:
            open_.tag(closing, name, self_closing, tag)
            math = not closing and bool(_MATH_TAG.search(tag))   # a formula's text, up to the next tag
        if code and not open_.inside(_CODE_ELEMENTS):
            put("".join(code), lambda i: "code")
            code = []
    if open_.inside(_CODE_ELEMENTS):
        code.append(html[at:])
        at = len(html)
    put("".join(code), lambda i: "code")
    put(html[at:], lambda i: _text_place(open_, False, i in raw))
    rank = {"link": 0, "nowhere": 0, "raw": 1, PROSE: 2}
    out = {}
    for i, gap in enumerate(order):
        seen = found.get(i, {"nowhere"})
        out[gap] = min(seen, key=lambda w: rank.get(w, 0 if w.startswith(("raw ", "attribute ")) else 3))
    return out


def _unread_texts(md, mark: str, found: list):
    """A tree processor that, run before the inline stage, puts in ``found`` each text holding ``mark``
    that Markdown will not read: its atomic strings then, which are code and math, and raw HTML that
    md_in_html keeps as written (an element without the ``markdown`` attribute inside one with it)."""
    from markdown.treeprocessors import Treeprocessor
    from markdown.util import AtomicString

    class Unread(Treeprocessor):
        def run(self, root):
            for element in root.iter():
                found.extend(t for t in (element.text, element.tail) if isinstance(t, AtomicString) and mark in t)

    return Unread(md)


def _image_alts(mark: str, found: list):
    """A tree processor that, run after the inline stage and before attr_list's, puts in ``found`` the alt
    text of each image holding ``mark``, as the image's brackets gave it (attr_list's braces may then
    set another: ``![x](a.png){: alt='...' }``)."""
    from markdown.treeprocessors import Treeprocessor

    class Alts(Treeprocessor):
        def run(self, root):
            found.extend(alt for element in root.iter("img") if mark in (alt := element.get("alt") or ""))

    return Alts()


#: an attribute's value in a tag Python-Markdown wrote (double-quoted, its quotes escaped)
_ATTRIBUTE = re.compile(r'([\w:-]+)="([^"]*)"')
#: where a mark stands in an image's alt text that attr_list's braces set
_BRACED_ALT = "attribute an image's alt text given in attribute-list braces"


def _attribute_places(name: str, tag: str, ids, bracketed: set[int] = frozenset()) -> dict[int, str]:
    """Where each mark stands in a tag Markdown made, by its number, the tag read once: an image's alt
    text is text where the image's brackets hold it (``bracketed``: those marks; Markdown makes a link
    there its text: a citation shows as "(Vaswani et al., 2017)") and an attribute where attr_list's
    braces set it, anything else an attribute."""
    out: dict[int, str] = {}
    for m in _ATTRIBUTE.finditer(tag):
        if name == "img" and m[1] == "alt":
            for i in ids(m[2]):
                out.setdefault(i, PROSE if i in bracketed else _BRACED_ALT)
            continue
        where = "attribute " + {("a", "href"): "a link's target or title", ("a", "title"): "a link's target or title",
                                ("img", "src"): "an image's source or title", ("img", "title"): "an image's source or title",
                                ("abbr", "title"): "an abbreviation's definition"}.get(
                                    (name, m[1]), "an attribute (attr_list braces)")
        for i in ids(m[2]):
            out.setdefault(i, where)
    return out


def _text_place(open_, math: bool, raw: bool) -> str:
    if math:
        return "math"
    if open_.inside(_CODE_ELEMENTS):
        return "code"
    if (name := open_.inside(_NO_LINK_ELEMENTS)) is not None:
        return "link" if name == "a" else f"raw <{name}>"
    return "raw" if raw else PROSE


#: ``\@``: an ``@`` escaped (after an even run of backslashes), which cites nothing and shows as itself
#: what a reader takes for a citation's name: ``@`` (or ``-@``) and the word after it
_AT_WORD = re.compile(rf"-?@[{INVISIBLE}\w.:-]*")
_AT_ESCAPED = re.compile(r"(?<!\\)(?:\\\\)*\\@")
_FORM = ("; a citation is [@authorYEARword], [@key, locator], [@a; @b], [-@key], @key or @key [locator] "
         "(README, Citations), or put the text in code")
#: why a citation cannot stand in each place :func:`places` names that is neither prose nor left as it is
_NO_PLACE = {
    "link": "inside a link's text, where a citation cannot become a link (the page would show its Markdown, "
            "or a link inside a link); cite outside the link",
    "raw": "in raw HTML, which Markdown does not read (the page would show the citation's Markdown); cite "
           "outside the HTML, or give its element the markdown attribute",
    "attribute": "inside {}, which Markdown makes an attribute, not text: a citation there cannot become a "
                 "link (the page would show its Markdown); cite in the text",
    "nowhere": "where Markdown shows no text (a link reference definition, an abbreviation's definition): a "
               "citation there cannot become a link; cite in the text",
}


@dataclass(frozen=True)
class _Cited:
    """A citation of the page: where it stands, and its match (:data:`BRACKETED` or :data:`NARRATIVE`)."""

    start: int
    end: int
    match: re.Match
    locator: str | None = None           # a narrative citation's locator, when its brackets are prose


def _read(markdown: str, known: dict[str, Work] | None) -> tuple[list[_Cited], list[int], list[tuple[int, str]]]:
    """The citations of ``markdown``'s prose, in order; the positions of its escaped ``@``s (``\\@``) in
    prose; and (position, why) for each thing there that is wrong: a key not in ``known`` (None: keys
    are not looked up), text that looks like a citation and is not one, a citation where none can
    become a link. What is prose is Python-Markdown's to say (:func:`places`)."""
    errors: list[tuple[int, str]] = []
    ats = list(AT.finditer(markdown))
    compat = list(_COMPATIBILITY_AT.finditer(markdown))
    pairs = list(_ESCAPED_BACKSLASH_AT.finditer(markdown))
    doubled = list(_DOUBLED_AT.finditer(markdown))
    escapes = [m.end() - 1 for m in _AT_ESCAPED.finditer(markdown)]
    if not ats and not compat and not pairs and not doubled and not escapes:
        return [], [], []
    brackets = list(BRACKETED.finditer(markdown))
    narratives = [*NARRATIVE.finditer(markdown), *NARRATIVE.finditer(BRACKETED.sub(_blank, markdown))]
    gaps = {m.end() for m in ats} | {m.end(1) for m in compat} | {m.end() for m in pairs} | {a + 1 for a in escapes}
    gaps |= {m.end() for m in doubled}
    gaps |= {m.end() - 1 for m in brackets}
    gaps |= {g for m in narratives if m["locator"] is not None for g in (m.start("locator") - 1, m.end("locator"))}
    try:
        where = places(markdown, gaps)
    except _Unmarkable as err:
        return [], [], [(0, str(err))]

    def prose(gap: int) -> bool:
        return where.get(gap) == PROSE

    def unknown(at: int, key: str) -> None:
        if known is not None and key not in known:
            errors.append((at, f"cites @{key}, which is not in {SOURCE.relative_to(DOCS.parent)}; "
                               f"add the entry there or correct the key"))

    def locator_html(at: int, citation: str, locator: str | None) -> None:
        if locator and (tag := _html_in(locator)) is not None:
            errors.append((at, f"{citation!r}: its locator holds HTML ({tag!r}), which would stand inside the "
                               f"citation's link (a link inside a link, a tag the link does not close, a "
                               f"paragraph ended inside it); a locator is text (emphasis and code are read: show a "
                               f"tag as code, `<b>`), or put the HTML outside the citation"))

    def word(at: int) -> str:
        return markdown[at:at + 40].split()[0] if markdown[at:at + 40].split() else markdown[at:at + 1]

    for m in compat:
        if prose(m.end(1)):
            errors.append((m.start(), f"{m.group(0)!r} is typed with {'a full-width' if m[1] == chr(0xFF20) else 'a small'} "
                                      f"at sign, which reads as an @ but cites nothing; type '@'" + _FORM))
    for m in pairs:
        if prose(m.end()):
            errors.append((m.start(), f"{word(m.start())!r}: an escaped backslash ('\\\\') before an @ leaves the @ "
                                      f"unescaped, so it is neither a citation nor an @ shown as typed; write '\\@' "
                                      f"for an @, or a space before a citation" + _FORM))
    for m in doubled:
        if prose(m.end()):
            typed = m[0] + _AT_WORD.match(markdown, m.end() - 1).group(0)[1:]
            errors.append((m.start(), f"{typed!r} has {m[0].count('@')} at signs before the key: it cites "
                                      f"nothing and would show as typed; write one '@' to cite, or '\\@' for an @ "
                                      f"shown as typed" + _FORM))
    for m in ats:
        if (place := where.get(m.end(), "nowhere")) != PROSE and place not in _LEFT:
            why = _NO_PLACE.get(place) or (_NO_PLACE["attribute"].format(place.removeprefix("attribute "))
                                           if place.startswith("attribute ") else f"inside raw HTML {place.removeprefix('raw ')}, where a citation cannot "
                                           f"become a link (a link there is dropped, nested in another or shown "
                                           f"as text); cite outside the element")
            errors.append((m.start(), f"{_AT_WORD.match(markdown, m.start()).group(0)!r} stands {why}"))

    cited: list[_Cited] = []
    for m in brackets:
        ats_in = [m.start() + i + 1 for i, c in enumerate(m.group(0)) if c == "@"]
        if not all(prose(a) for a in ats_in) or not prose(m.end() - 1):
            continue                              # code or math starts or ends inside it: not a citation
        if m.start() > 0 and markdown[m.start() - 1] == "!" and not _escaped(markdown, m.start() - 1):
            errors.append((m.start(), f"'!{m.group(0)}' is an image's alt text to Markdown, not a citation: the "
                                      f"citation's link after the '!' would stand where the image's brackets "
                                      f"were (the page would show no image and the citation's Markdown); cite "
                                      f"beside the image, or write [\\@key] to show the key as the alt text"))
        if m.start() > 0 and markdown[m.start() - 1] == "]":
            errors.append((m.start(), f"{m.group(0)!r} follows ']' directly: Markdown would read the two as one "
                                      f"link (the page would show the citation's Markdown); put a space or a word "
                                      f"between them"))
        if _escaped(markdown, m.end() - 1):
            errors.append((m.start(), f"{m.group(0)!r} ends in an escaped ']': Markdown reads no bracket there, and "
                                      f"the citation's link would not close (the page would show its Markdown); "
                                      f"drop the backslash before ']'"))
        if _escaped(markdown, m.start()):
            errors.append((m.start(), f"'\\{m.group(0)}' follows a backslash, which escapes its '[' (the page would "
                                      f"show it as typed) and before the citation's '(' would open arithmatex's "
                                      f"math \\( (the citation's Markdown would become a formula); drop the "
                                      f"backslash to cite, or write [\\@key] to show the text"))
        for item in m["items"].split(";"):
            if (parts := _ITEM.match(item)) is None:       # '[@key words]': no comma before a locator
                errors.append((m.start(), f"{m.group(0)!r} is not a citation: after a key comes ', ' and a "
                                          f"locator, '; ' and another key, or ']'" + _FORM))
                break
            unknown(m.start(), parts["key"])
            locator_html(m.start(), m.group(0), parts["locator"])
        cited.append(_Cited(m.start(), m.end(), m))
    text = _blanked(markdown, [(c.start, c.end) for c in cited])     # the bracketed citations blanked, in one pass
    brackets_of = _Brackets(text)
    narrated = []
    for m in NARRATIVE.finditer(text):
        if not prose(m.start() + 1):
            continue
        locator = m["locator"]
        if locator is not None and not (prose(m.start("locator") - 1) and prose(m.end("locator"))):
            locator = None                            # its bracket is not prose: the key alone cites
        end = m.end() if locator is not None else m.end("key")
        if m.start() > 0 and markdown[m.start() - 1] in "]!":
            joined = "image" if markdown[m.start() - 1] == "!" else "link"
            errors.append((m.start(), f"{markdown[m.start():end]!r} follows {markdown[m.start() - 1]!r} directly: "
                                      f"Markdown would read the two as one {joined} (the page would show the "
                                      f"citation's Markdown); put a space or a word between them"))
        if (bracket := brackets_of.in_brackets(m.start(), end)) is not None:
            errors.append((m.start(), f"{bracket!r} is not a citation: a key inside brackets stands in [@key] or "
                                      f"[@a; @b] alone" + _FORM))
        unknown(m.start(), m["key"])
        locator_html(m.start(), markdown[m.start():end], locator)
        cited.append(_Cited(m.start(), end, m, locator))
        narrated.append((m.start(), end))
    done = _blanked(text, narrated, newlines=True)
    brackets_done = None                          # the brackets of what is left, found once
    for m in AT.finditer(done):
        if prose(m.end()):
            brackets_done = brackets_done or _Brackets(done)
            shown = brackets_done.in_brackets(m.start(), m.end()) or _AT_WORD.match(done, m.start()).group(0)
            hidden = re.search(f"[{INVISIBLE}]", done[m.start():m.end() + 8])
            why = (f"an invisible character, U+{ord(hidden[0]):04X}, stands after its '@'" if hidden else
                   "no key authorYEARword there, or it stands outside the syntax")
            errors.append((m.start(), f"{shown!r} looks like a citation but is not one ({why})" + _FORM))
    cited.sort(key=lambda c: c.start)
    return cited, [a for a in escapes if prose(a + 1)], sorted(errors, key=lambda e: e[0])


#: what begins HTML in a locator's text: a tag, an end tag, a comment, a declaration or an autolink
_LOCATOR_HTML = re.compile(r"<[A-Za-z/!?][^<>\s]*>?")


def _html_in(locator: str) -> str | None:
    """The first HTML (a tag or an autolink: :data:`_LOCATOR_HTML`) in a locator's text outside its code
    spans and comments, or None (Python-Markdown has no escape for ``<``: ``\\<b>`` is a tag too)."""
    text = _blanked(locator, list(_not_prose(locator, 0, len(locator), math=False, tags=False)))
    m = _LOCATOR_HTML.search(text)
    return m.group(0) if m else None


def check(markdown: str, page_uri: str, known: dict[str, Work] | None = None, first_line: int = 1) -> None:
    """Raise ``ValueError`` naming the page ``page_uri`` and the line (``first_line``: the file's line of
    ``markdown``'s first) for the first citation in its prose whose key is not in the source, for
    anything there that looks like a citation but is not one (an ``@`` or ``-@`` that begins a word
    outside the forms of the module's table: ``[@near-miss]``, ``[see @key]``, ``[@a, @b]``, an unclosed
    ``[@key``, ``-@key`` outside brackets), and for a citation where none can become a link (a link's
    text, an attribute, raw HTML Markdown does not read). Code, math, HTML comments and tags are not
    read: what is what, Python-Markdown says, reading the page with the site's extensions."""
    known = works() if known is None else known
    _raise_first(_read(markdown, known)[2], markdown, page_uri, first_line)


def _raise_first(errors: list[tuple[int, str]], markdown: str, page_uri: str, first_line: int) -> None:
    if errors:
        at, why = errors[0]
        raise ValueError(f"docs/{page_uri}:{first_line + markdown.count(chr(10), 0, at)}: {why}")


#: ``\\@key``: escaped backslashes (an even run) right before an ``@`` that begins a word
_ESCAPED_BACKSLASH_AT = re.compile(rf"(?<!\\)(?:\\\\)+-?@(?=[{INVISIBLE}]*[\w-])")
#: a link reference definition's label, at a line's start (``[label]: url``), to tell a shortcut reference link
_DEFINED_LABEL = re.compile(r"^ {0,3}\[(?!\^)((?:[^\]\\\n]|\\.)+)\]:", re.M)


def _labels(markdown: str) -> set[str]:
    """The labels of the page's link reference definitions, as Markdown matches them (case and runs of
    white space ignored): ``@key [label]`` is then a citation followed by a shortcut reference link."""
    return {" ".join(m[1].split()).casefold() for m in _DEFINED_LABEL.finditer(markdown)}


#: an at sign a keyboard's input method may type for '@': U+FF20 FULLWIDTH, U+FE6B SMALL COMMERCIAL AT
_COMPATIBILITY_AT = re.compile(rf"(?<![\w.@/\\-])-?([\uff20\ufe6b])(?=[{INVISIBLE}]*[\w-])")
#: two or more ``@`` that begin a word before what reads as a key (``@@vaswani2017attention``): a typo that
#: cites nothing (:data:`AT` takes no ``@`` after another) and would show as typed
_DOUBLED_AT = re.compile(rf"(?<![\w.@/\\-])-?@@+(?=[{INVISIBLE}]*{KEY}\b)")


class _Brackets:
    """Where the brackets of a text stand, found in one pass, so that the bracket around each of many
    citations on a line is found without walking the line again (:meth:`in_brackets`)."""

    def __init__(self, text: str):
        self.text = text
        self.brackets = [(m.start(), m.group(0)) for m in re.finditer(r"[\[\]\n]", text)]
        self.bracket_at = [i for i, _ in self.brackets]
        self.closers = [(i, b) for i, b in self.brackets if b != "["]     # "]" and newlines
        self.closer_at = [i for i, _ in self.closers]

    def in_brackets(self, start: int, end: int) -> str | None:
        """The bracket around ``text[start:end]`` on its line (to its ``]`` or the end of the match), or
        None: the last ``[`` before it on its line, when no ``]`` follows that ``[`` before it."""
        k = bisect.bisect_left(self.bracket_at, start) - 1
        if k < 0 or self.brackets[k][1] != "[":
            return None
        opened = self.brackets[k][0]
        j = bisect.bisect_left(self.closer_at, end)
        closed = self.closers[j][0] if j < len(self.closers) and self.closers[j][1] == "]" else -1
        return _excerpt(self.text, opened, closed + 1 if closed >= 0 else end)


#: the most characters of a bracket an error quotes: each of many marks in one long bracket quoted it
#: whole, so the errors grew with the square of the bracket's length
EXCERPT = 80


def _excerpt(text: str, start: int, end: int) -> str:
    """``text[start:end]`` stripped, cut after its first :data:`EXCERPT` characters with an ellipsis
    (copying no more than those)."""
    shown = text[start:min(end, start + EXCERPT)].strip()
    return shown + "\u2026" if end - start > EXCERPT else shown


#: a rendered citation's link Markdown (:func:`render`) that Markdown did not turn into a link
_UNLINKED = re.compile(rf"\]\((?:\.\./)*{re.escape(PAGE)}#(?P<key>{KEY})")
#: a key as a citation names it, narrative (``@key``) or in brackets (``[@key]``, ``[-@key]``)
_TYPED = re.compile(rf"(?<![\w.@/\\-])-?@(?P<key>{KEY})\b")
#: HTML elements whose text is code, which may show citation syntax as it is typed, and formulas (MathML,
#: what the page's math is by then: a citation in math is the math's, ``\\text{@key}`` shows as typed)
#: (the name whole: a custom element such as ``<code-x>`` is no code, and has no ``</code>`` ending it)
#: (``<xmp>`` is none: its text, raw as it is, shows what was typed)
_HIDDEN_ELEMENTS = ("code", "pre", "kbd", "samp", "script", "style", "textarea", "math")


def check_rendered(html: str, page_uri: str, source: str, first_line: int = 1) -> None:
    """Raise ``ValueError`` naming the page (and the first line of ``source``, the page's Markdown,
    that names the key) when a citation did not become a link in the rendered ``html``: its link's
    Markdown kept as text or in an attribute (Markdown read it as part of a link's target, an
    attribute, an image ... around it), or a citation's syntax kept as typed outside code: in an
    HTML attribute's value (a tooltip), or in text :func:`check` read as HTML and Markdown showed as
    text. The page's checks before rendering name most such places; this one, on what the reader
    gets, misses none. Linear in the page."""
    def fail(key: str, why: str, cited: bool) -> None:
        # the line of the first use of the key where a citation can stand (not in code or a comment),
        # among those the check before rendering took for citations (``cited``: their link's Markdown
        # shows) or among the others (the key shows as typed), when there are such uses
        spans = prose_spans(source, math=False, tags=False)
        starts = [s for s, _ in spans]
        read = _read(source, None)[0]
        read_at = [c.start for c in read]

        def in_text(at: int) -> bool:
            i = bisect.bisect_right(starts, at) - 1
            return i >= 0 and at < spans[i][1]

        def was_cited(at: int) -> bool:
            i = bisect.bisect_right(read_at, at) - 1
            return i >= 0 and at < read[i].end

        found = [m.start() for m in re.finditer(rf"@{re.escape(key)}(?![a-z0-9])", source)]   # '_@key_' too
        found = [a for a in found if was_cited(a) == cited] or found
        at = next((a for a in found if in_text(a)), found[0] if found else -1)
        line = f":{first_line + source.count(chr(10), 0, at)}" if at >= 0 else ""
        raise ValueError(f"docs/{page_uri}{line}: the citation of @{key} {why}; cite it in plain text, "
                         f"with a space before it and outside links, attributes and raw HTML")

    from .glossary import OpenElements, elements

    if "](" not in html and "@" not in html:
        return
    # the text the reader sees, code and math left out, and the start tags (their attributes' values
    # show as tooltips), read as a browser reads the page: a comment shows nothing, a tag written in one
    # or in an attribute's value is none, an end tag with attributes ends its element, and an element ends
    # where the open elements say it does (:class:`~site_build.glossary.OpenElements`, as ``elements``
    # follows them)
    text, at, open_ = [], 0, OpenElements()
    for start, end, closing, name, self_closing, foreign in elements(html):
        if not open_.inside(_HIDDEN_ELEMENTS):
            text.append(html[at:start])
            if name and not closing:
                text.append(html[start:end])
            elif not name and foreign and html.startswith("<![CDATA[", start) and html.endswith("]]>", start, end):
                text.append(html[start + len("<![CDATA["):end - len("]]>")])   # foreign content's CDATA: text
        at = end
        if name:
            open_.tag(closing, name, self_closing, html[start:end])   # its attributes: <font color> breaks out of math
    if not open_.inside(_HIDDEN_ELEMENTS):
        text.append(html[at:])
    shown = _html.unescape("".join(text).replace(AT_SIGN, "\\@"))   # text and attributes' values alike;
    # an escaped '@' (``\@key`` in the Markdown) is read as escaped, as check() read it
    if m := _UNLINKED.search(shown):
        fail(m["key"], "did not become a link: the page would show its Markdown", True)
    known = works()                                 # read once, not once a key
    for m in _TYPED.finditer(shown):
        if m["key"] in known:
            fail(m["key"], "shows as typed, in the text or in an attribute's value (a tooltip): in raw HTML, "
                           "or in what the check before rendering read as HTML and Markdown showed as text", False)


#: an ``&`` that begins a character reference (``&amp;``, ``&#64;``), which HTML would read as one
_REFERENCE_AMP = re.compile(r"&(?=#?[0-9A-Za-z]+;)")


def _escape(text: str) -> str:
    """``text`` as Markdown that shows it as written: Markdown's characters escaped, ``<`` and an ``&`` that
    begins a character reference as references themselves (Python-Markdown has no escape for ``<``:
    ``\\<`` would show its backslash; ``&amp;`` in the text would show as ``&``), and ``$`` as one, so
    that dollars in two fields never make arithmatex math of what is between."""
    text = _REFERENCE_AMP.sub("&amp;", text).replace("<", "&lt;").replace("$", "&#36;")
    return _MD_SPECIAL.sub(r"\\\1", text)


#: what a link title's text holds as a character reference: what Markdown reads before the link (code
#: spans, escapes, math, a table's ``|``, which splits the row of a citation in a table cell), what ends
#: the title (``"``), what begins a reference (``&``) or a tag (``<``), and ``@`` (a key in a title is
#: text, not a citation the rendered page's check would find)
_TITLE_REFERENCES = {c: f"&#{ord(c)};" for c in '&"<`\\$@|'}


def _link(text: str, work: Work, target: str) -> str:
    """A citation's link Markdown: ``text`` linking to the work's entry, titled with its full reference,
    which shows as written (:data:`_TITLE_REFERENCES`)."""
    title = "".join(_TITLE_REFERENCES.get(c, c) for c in work.reference().strip())
    return f'[{text}]({target}#{work.key} "{title}")'


def render(markdown: str, page_uri: str, known: dict[str, Work] | None = None, first_line: int = 1) -> str:
    """``markdown`` of the page ``page_uri`` (its path under ``docs/``) with each citation a link to its
    entry on the Bibliography page, and each ``\\@`` in prose an ``@`` shown as itself; a key not in the
    source, or text that looks like a citation and is not one, raises ``ValueError`` naming the page
    and the line (:func:`check`)."""
    known = works() if known is None else known
    cited, escapes, errors = _read(markdown, known)
    _raise_first(errors, markdown, page_uri, first_line)
    target = posixpath.relpath(PAGE, posixpath.dirname(page_uri) or ".")
    labels = _labels(markdown) if "]:" in markdown else set()

    def bracketed(m: re.Match) -> str:
        cites = []
        for item in m["items"].split(";"):
            parts = _ITEM.match(item)
            work = known[parts["key"]]
            text = work.year if parts["year_only"] else f"{_escape(work.who)}, {work.year}"
            if parts["locator"]:
                text += f", {parts['locator']}"
            cites.append(_link(text, work, target))
        return "(" + "; ".join(cites) + ")"

    def narrative(c: _Cited) -> str:
        work, locator = known[c.match["key"]], c.locator
        if locator and " ".join(locator.split()).casefold() in labels:   # a shortcut reference link: kept
            return _link(f"{_escape(work.who)} ({work.year})", work, target) + markdown[c.match.end("key"):c.end]
        inner = work.year + (f", {locator}" if locator else "")
        return _link(f"{_escape(work.who)} ({inner})", work, target)

    edits = [(c.start, c.end, bracketed(c.match) if c.match.re is BRACKETED else narrative(c)) for c in cited]
    edits += [(a - 1, a + 1, AT_SIGN) for a in escapes]
    out, at = [], 0
    for start, end, new in sorted(edits):
        out += [markdown[at:start], new]
        at = end
    out.append(markdown[at:])
    return "".join(out)


def cited_keys(markdown: str) -> list[str]:
    """Every key the prose of ``markdown`` cites, in order, repeats included."""
    keys = []
    for c in _read(markdown, None)[0]:
        if c.match.re is BRACKETED:
            keys += [parts["key"] for item in c.match["items"].split(";") if (parts := _ITEM.match(item))]
        else:
            keys.append(c.match["key"])
    return keys


#: what ``\@`` becomes: an ``@`` the page shows as itself (Python-Markdown, unlike CommonMark, would
#: keep the backslash of ``\@``); :func:`check_rendered` reads it as an escaped ``@``, not a citation
AT_SIGN = "&#64;"


def cites(page_uri: str) -> bool:
    """Whether the page ``page_uri`` (its path under ``docs/``) is Markdown, where citations are read: a
    drill notebook is not (MkDocs hands on its JSON as the page's text, where a code cell's
    ``@functools.cache`` or ``[@key]`` in a comment would read as prose; its cells are code and text
    that are shown as written)."""
    from mkdocs.utils import is_markdown_file

    return is_markdown_file(page_uri)


def _page_title(file) -> str:
    """The title of the page ``file`` as text: its own once MkDocs has read it, else the one it will have
    (:func:`_source_title`; MkDocs reads the pages in their files' order, and the Bibliography's turn
    may come first). MkDocs' title is HTML, as the theme shows it: a heading's ``&`` is ``&amp;`` there."""
    page = getattr(file, "page", None)
    meta = getattr(page, "meta", None) if page is not None else None
    if isinstance(meta, dict) and "title" in meta:           # the front matter's, as YAML read it
        return _front_title(file, meta["title"])
    title = getattr(page, "title", None) if page is not None else None
    return _html.unescape(str(title or _source_title(file)))


def _front_title(file, title) -> str:
    """The front matter's ``title`` of the page ``file``, which must be text and not blank: the
    Bibliography lists the page by it (an empty one made an empty link, a null one "None", ``yes`` "True",
    a list its Python form); else ``ValueError`` naming the page and the title's line."""
    if isinstance(title, str) and title.strip():
        return title
    try:
        text = Path(file.abs_src_path).read_text(encoding="utf-8-sig", errors="replace")
    except (TypeError, OSError):
        text = ""
    m = re.search(r"^title[ \t]*:", text, re.M)
    line = f":{text.count(chr(10), 0, m.start()) + 1}" if m else ""
    what = "blank" if isinstance(title, str) else f"read by YAML as {type(title).__name__} {title!r}"
    raise ValueError(f"docs/{file.src_uri}{line}: the front matter's title is {what}; the page cites a work, and "
                     f"the Bibliography lists it by its title: give the title as text (quote it if YAML reads it "
                     f"as something else), or drop the line to take the first heading's")


def _source_title(file) -> str:
    """The title MkDocs gives the page ``file`` (not in the nav, or not named there) when it reads it, from
    its source, as :class:`mkdocs.structure.pages.Page` finds it: the front matter's ``title``; else the
    text of the first heading when the page begins with one of level 1, as this build renders it (its
    citations links, its formulas' LaTeX without ``\\( \\)``); else "Home" for the home page; else the
    file's name, its ``-`` and ``_`` made spaces (capitalized when all lower case)."""
    from mkdocs.utils import meta
    from mkdocs.utils.rendering import get_heading_text
    from markdown.treeprocessors import Treeprocessor

    from . import mathml

    text = Path(file.abs_src_path).read_text(encoding="utf-8-sig", errors="replace")
    body, data = meta.get_data(text)
    if "title" in data:
        return _front_title(file, data["title"])
    try:
        body = render(body, file.src_uri)          # as the page's Markdown stage leaves it
    except ValueError:                             # the page's own turn names what is wrong
        pass
    md, first = _reader(), []

    class FirstHeading(Treeprocessor):             # MkDocs' own, at its priority: close to the end
        def run(self, root):
            for element in root:
                if element.tag == "h1":
                    first.append((get_heading_text(element, md), element.get("id")))
                break

    md.treeprocessors.register(FirstHeading(md), "citations-first-heading", 1)
    html = md.convert(body)
    if first and first[0][0]:
        title, anchor = first[0]
        if "\\(" in title:                          # as the plugin's content stage makes it
            title = mathml.plain_title(title, mathml.heading_formulas(html).get(anchor, []))
        return title
    stem = posixpath.splitext(posixpath.basename(file.src_uri))[0]
    stem = "index" if stem == "README" else stem
    if stem == "index" and "/" not in file.src_uri:
        return "Home"
    name = stem.replace("-", " ").replace("_", " ")
    return name.capitalize() if name.lower() == name else name


#: letters that Unicode's decomposition leaves whole, as a sort reads them
_SORT_LETTERS = str.maketrans({"ø": "o", "ł": "l", "đ": "d", "ð": "d", "þ": "th", "æ": "ae", "œ": "oe", "ı": "i"})


def _sort_form(name: str) -> str:
    """``name`` as the Bibliography's order reads it: its accents dropped and its case folded, so that
    "Ávila" sorts among the A's, not after "Zhang" (an accented letter's code point is above Z's)."""
    import unicodedata

    folded = unicodedata.normalize("NFKD", name.casefold())
    return "".join(c for c in folded if not unicodedata.combining(c)).translate(_SORT_LETTERS)


def _page_link(src_uri: str) -> str:
    """The link's target from the Bibliography page to the page ``src_uri``, percent-encoded: a file's
    name is no URL (``a)b.md`` ended the link's Markdown at its ``)``, ``a#b.md`` and ``a?b.md`` were read
    as a fragment or a query, ``a%20b.md`` as ``a b.md``); MkDocs decodes the target to find the file."""
    from urllib.parse import quote

    return quote(posixpath.relpath(src_uri, posixpath.dirname(PAGE) or "."), safe="/")


def bibliography(files, known: dict[str, Work] | None = None) -> str:
    """The Bibliography page's entries as Markdown: each work, sorted by first author and year,
    anchored by its key, with links to the pages of ``files`` (MkDocs' files) that cite it. Its text shows
    as written: Markdown's characters escaped, an ``@`` as :data:`AT_SIGN` (the page's citations are read
    after the entries are in it: ``@someone`` in a title is no near miss of a citation)."""
    known = works() if known is None else known
    cited_on: dict[str, list] = {key: [] for key in known}
    for file in files.documentation_pages():
        if file.src_uri == PAGE or file.abs_src_path is None or not cites(file.src_uri):
            continue
        text = Path(file.abs_src_path).read_text(encoding="utf-8-sig", errors="replace")   # MkDocs names a bad page
        for key in dict.fromkeys(cited_keys(text)):
            if key in cited_on:
                cited_on[key].append(file)

    def shown(text: str) -> str:                   # an '@' as itself: no citation, nor a near miss of one
        return _escape(text).replace("@", AT_SIGN)

    entries = []
    for work in sorted(known.values(), key=lambda w: ([_sort_form(s) for s in w.surnames], w.year, w.key)):
        where = ", ".join(p for p in (work.venue, work.details) if p)
        parts = [f"{shown(_names(work.authors))} ({work.year}). *{shown(_ended(work.title))}*"]
        if where:
            parts.append(shown(_ended(where)))
        if work.note:
            parts.append(shown(_ended(work.note)))
        # an identifier as code, its text escaped: a code span's text is read as HTML first inside the
        # list's raw HTML, where an identifier's "</li>" would end the entry's item
        parts += [f"<code>{shown(i)}</code>." for i in work.identifiers]
        where = cited_on[work.key]
        if where:
            pages = ", ".join(f"[{shown(_page_title(f))}]({_page_link(f.src_uri)})" for f in where)
            parts.append(f"Cited in {pages}.")
        entries.append(f'<li id="{work.key}" markdown="span">{" ".join(parts)}</li>')
    # a list item per work (md_in_html renders the Markdown inside): the printable book keeps a list
    # item's anchor apart from another page's by prefixing it, as it does for headings
    return '<ul class="references" markdown="1">\n' + "\n".join(entries) + "\n</ul>\n"
