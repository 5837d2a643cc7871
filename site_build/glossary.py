"""The Glossary page and the tooltips on each term's first use, from one file (``docs/glossary.yml``).

The Glossary page holds ``<!-- glossary -->``, which becomes every term, sorted, as a definition
list (each term anchored ``#term-<slug>``). On Chapters 7–9 and the weeks (:data:`TOOLTIP_PAGES`),
the first use of each term in the page's prose becomes ``<abbr title="definition">…</abbr>``,
which the theme shows as a tooltip; later uses stay plain. A use counts only in running text:
nothing is marked inside code, math, headings, links (citations included), figures, summaries,
labels or another tooltip, so the marking runs on the page's HTML once its math is MathML.
"""

from __future__ import annotations

import functools
import html
import re
from dataclasses import dataclass
from pathlib import Path

from .paths import DOCS, drafted, excluded

SOURCE = DOCS / "glossary.yml"
PAGE = "glossary.md"
MARKER = "<!-- glossary -->"
#: the pages whose first uses of each term get a tooltip
TOOLTIP_PAGES = ("chapter-7.md", "chapter-8.md", "chapter-9.md", "week-22.md", "week-23.md")
#: elements whose text is not running prose (a tooltip there would break code, math or a link)
#: elements whose text is text, not tags, up to their own end tag (HTML's raw text elements)
#: (``<noscript>`` is raw text where scripts run, as the theme needs them); none is inside ``<svg>`` or ``<math>``
RAW_TEXT = frozenset({"script", "style", "textarea", "title", "xmp", "iframe", "noembed", "noframes", "noscript"})
#: what a reader is never shown as the page's text is skipped too: ``<noscript>``, a ``<template>``, the
#: fallback content of media and embedded objects, and ``<plaintext>`` (the rest of the page as text)
SKIP = frozenset({"a", "abbr", "code", "pre", "kbd", "samp", "math", "svg", "script", "style", "textarea", "xmp",
                  "iframe", "noembed", "noframes", "noscript", "template", "video", "audio", "object", "canvas",
                  "plaintext",
                  "button", "label", "summary", "figure", "figcaption", "h1", "h2", "h3", "h4", "h5", "h6",
                  "dt", "select", "option", "title", "nav"})
_VOID = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
                   "track", "wbr"})
#: where a comment or a tag may start in a page's HTML (:func:`tokens`)
_TOKEN_START = re.compile(r"<(?:!--|/?[A-Za-z]|!|\?)")
#: a tag's opening: ``/`` for a closing tag, and its name
_TAG_NAME = re.compile(r"<(/?)([A-Za-z][\w:-]*)")
#: a character reference: named (``&times;``, or a legacy one without its ``;``), decimal or hexadecimal
_REFERENCE = re.compile(r"&(?:#[0-9]+|#[xX][0-9A-Fa-f]+|[A-Za-z][A-Za-z0-9]*);?")


@dataclass(frozen=True)
class Term:
    """One entry of the glossary."""

    term: str
    definition: str
    forms: tuple[str, ...]
    expansion: str = ""
    see: str = ""

    @property
    def anchor(self) -> str:
        """``term-`` and the term's ASCII letters and digits, runs of anything else one ``-``; a term with
        none (``注意力``, ``α``) keeps its own letters and digits instead, so that it still has an
        anchor of its own (every such term was ``#term-``)."""
        slug = re.sub(r"[^a-z0-9]+", "-", self.term.lower()).strip("-")
        return "term-" + (slug or re.sub(r"[\W_]+", "-", self.term.casefold()).strip("-"))


#: what ends a line, for Python-Markdown or a reader: a term holding one would split into two
_LINE_BREAK = re.compile("[\n\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]")


#: a page of the site as ``see`` names it: a path under docs/ of plain segments, ending ``.md``
_PAGE_PATH = re.compile(r"(?:[A-Za-z0-9_][A-Za-z0-9_.-]*/)*[A-Za-z0-9_][A-Za-z0-9_.-]*\.md")


#: a control character that is not white space: a page cannot show it (Python-Markdown drops U+0002 and
#: U+0003, its own placeholders' marks, from the Glossary page; HTML reads U+0000 as an error), so the
#: page and the tooltip would differ
_CONTROL = re.compile("[\x00-\x08\x0e-\x1b\x7f-\x84\x86-\x9f]")
#: a bidirectional formatting character (marks, embeddings, overrides, isolates): left open in a term
#: or a definition it reorders the text after it, outside the element that holds it
_BIDI = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _is_page(see: str) -> bool:
    """Whether ``see`` names a page of the site: a relative path under docs/ (no ``..``, no address of
    another host, nothing Markdown would read in a link's target) to a Markdown file that exists and
    that MkDocs builds (not under ``templates/``, nor anything else it excludes: :func:`paths.excluded`,
    nor a draft, which ``mkdocs build`` leaves out: :func:`paths.drafted`)."""
    return (_PAGE_PATH.fullmatch(see) is not None and ".." not in see.split("/")
            and (DOCS / see).is_file() and not excluded(see) and not drafted(see))


def _term(entry: dict, index: int) -> Term:
    if not isinstance(entry, dict):
        raise ValueError(f"{SOURCE.name}: entry {index} must be a mapping with term and definition")
    unknown = set(entry) - {"term", "definition", "forms", "expansion", "see"}
    missing = {"term", "definition"} - set(entry)
    if unknown or missing:                              # a key YAML reads as no text (1, null, yes) too
        raise ValueError(f"{SOURCE.name}: entry {index} ({entry.get('term', '?')}): "
                         f"{'unknown keys ' + str(sorted(unknown, key=repr)) if unknown else ''}"
                         f"{'missing ' + str(sorted(missing)) if missing else ''}")
    for key in ("term", "definition"):
        if not isinstance(entry[key], str) or not entry[key].strip():
            raise ValueError(f"{SOURCE.name}: entry {index} ({entry.get('term', '?')}): {key} must be non-empty "
                             f"text, got {entry[key]!r} (quote it if YAML reads it as something else)")
    for key in ("expansion", "see"):
        if key in entry and not isinstance(entry[key], str):
            raise ValueError(f"{SOURCE.name}: {entry['term']}: {key} must be text, got {entry[key]!r}")
    if "see" in entry and entry["see"] and not _is_page(entry["see"]):
        raise ValueError(f"{SOURCE.name}: {entry['term']}: see must name a page of the site (a docs/ path ending "
                         f".md, such as chapter-7.md, of a page MkDocs builds: none under templates/, "
                         f"exclude_docs or draft_docs), got {entry['see']!r}")
    for key in ("term", "expansion"):                   # each is one line of the page's definition list
        if key in entry and _LINE_BREAK.search(entry[key]):
            raise ValueError(f"{SOURCE.name}: entry {index} ({entry['term']!r}): {key} must be one line, got "
                             f"{entry[key]!r}; the page lists it as one definition term")
    forms = entry.get("forms", [entry["term"]])
    if not isinstance(forms, list) or not forms or not all(isinstance(f, str) and f.strip() for f in forms):
        raise ValueError(f"{SOURCE.name}: {entry['term']}: forms must be a non-empty list of non-empty strings, "
                         f"got {forms!r}")
    for key, value in [(k, entry[k]) for k in ("term", "definition", "expansion", "see") if k in entry] + \
            [("forms", f) for f in forms]:
        if m := _CONTROL.search(value):                 # a YAML escape ("\0", "\x02") writes one
            raise ValueError(f"{SOURCE.name}: entry {index} ({entry['term']!r}): {key} holds the control character "
                             f"U+{ord(m[0]):04X}, which a page cannot show (Markdown drops some, HTML refuses "
                             f"others); remove it")
        if m := _BIDI.search(value):                    # no control character, but one left open reorders the text
            raise ValueError(f"{SOURCE.name}: entry {index} ({entry['term']!r}): {key} holds the bidirectional "
                             f"formatting character U+{ord(m[0]):04X}, which would reorder the page's text after "
                             f"it (and the tooltip's); remove it")
    return Term(term=entry["term"], definition=" ".join(entry["definition"].split()),
                forms=tuple(forms), expansion=entry.get("expansion", ""), see=entry.get("see", ""))


def _loader():
    """YAML's safe loader, refusing a key given twice in one mapping (YAML keeps the last one silently:
    an entry's second ``definition`` replaced its first unseen), naming the file and the line."""
    import yaml

    class Loader(yaml.SafeLoader):
        def construct_mapping(self, node, deep=False):
            if isinstance(node, yaml.MappingNode):
                seen: dict = {}
                for key_node, _ in node.value:
                    if key_node.tag == "tag:yaml.org,2002:merge":   # '<<': keys it brings may be overridden
                        continue
                    key = self.construct_object(key_node, deep=True)
                    try:
                        first = seen.get(key)
                    except TypeError:                  # an unhashable key: the constructor names it
                        continue
                    line = key_node.start_mark.line + 1
                    if first is not None:
                        raise ValueError(f"{SOURCE.name}:{line}: the key {key!r} is given twice in one mapping "
                                         f"(first on line {first}); YAML would keep only the last: remove one")
                    seen[key] = line
            return super().construct_mapping(node, deep=deep)

    return Loader


@functools.lru_cache(maxsize=4)
def _load(text: str) -> tuple[Term, ...]:
    import yaml

    try:
        data = yaml.load(text, Loader=_loader()) or []
    except yaml.YAMLError as err:                   # its own message names "<unicode string>", not the file
        mark = getattr(err, "problem_mark", None) or getattr(err, "context_mark", None)
        where = f"{SOURCE.name}:{mark.line + 1}" if mark is not None else SOURCE.name
        problem = getattr(err, "problem", None) or str(err)
        raise ValueError(f"{where}: not valid YAML ({problem})") from None
    if not isinstance(data, list):
        raise ValueError(f"{SOURCE.name}: must be a list of terms")
    terms = tuple(_term(entry, i) for i, entry in enumerate(data))
    anchors: dict[str, str] = {}
    for t in terms:
        if t.anchor in anchors:
            raise ValueError(f"{SOURCE.name}: {anchors[t.anchor]!r} and {t.term!r} share the anchor #{t.anchor} "
                             f"(the same term twice?); merge them or rename one")
        anchors[t.anchor] = t.term
    seen: dict[str, str] = {}
    for t in terms:
        for form in t.forms:
            read = _spaced(form)                        # a page's text matches a form's words, however spaced
            if read in seen and seen[read] != t.term:
                raise ValueError(f"{SOURCE.name}: the form {form!r} belongs to both {seen[read]!r} and {t.term!r}"
                                 + (f" (as {read!r}: a page's words match a form however they are spaced)"
                                    if read != form else ""))
            seen[read] = t.term
    return terms


def terms(path: Path = SOURCE) -> tuple[Term, ...]:
    """The glossary's terms, in the file's order (parsed again only when the file's text changed: kept by
    the text itself, so an edit that keeps the file's size and modification time is seen too)."""
    data = Path(path).read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ValueError(f"{SOURCE.name}: not UTF-8 (at byte {err.start}: {data[err.start:err.start + 8]!r}); "
                         f"save it as UTF-8") from None
    return _load(text)


def see_pages(path: Path = SOURCE) -> list[Path]:
    """The files under docs/ that the entries' ``see`` name: the Glossary page links each one after
    checking that it is a file (:func:`glossary`), so whether each exists is an input of that page
    (:func:`site_build.dirty_pages.page_checks`). Empty when the file cannot be read as terms (the
    Glossary page then fails to build, whatever the pages)."""
    try:
        entries = terms(path)
    except (OSError, ValueError, RecursionError):
        return []
    return [DOCS / t.see for t in entries if t.see]


def glossary(page_uri: str = PAGE, entries: tuple[Term, ...] | None = None) -> str:
    """The Glossary page's entries as a Markdown definition list, sorted case-insensitively."""
    import posixpath

    entries = terms() if entries is None else entries
    out = []
    for t in sorted(entries, key=lambda t: t.term.lower()):
        name = f"{t.term} ({t.expansion})" if t.expansion else t.term
        text = _as_written(t.definition)
        if t.see:
            if not _is_page(t.see):                     # checked as the file was read: the page may be gone since
                raise ValueError(f"{SOURCE.name}: {t.term}: see names {t.see!r}, which is no page of the site now "
                                 f"(docs/{t.see} is gone); name a page that exists")
            link = posixpath.relpath(t.see, posixpath.dirname(page_uri) or ".")
            text += f" See [{_as_written(_page_name(t.see))}]({link})."   # '_a_.md': no emphasis
        out.append(f"{_as_written(name)} {{ #{t.anchor} }}\n:   {text}")
    return "\n\n".join(out) + "\n"


#: what Markdown (and arithmatex's ``$``) would read in a glossary's text: escaped, so that a term,
#: its expansion and its definition show as written, as the tooltips show them
_MARKUP = re.compile(r"([\\`*_\[\]{}$#!@])")
#: what starts a block at a line's start (a list item's marker): escaped too, so a term stays its own text
_BLOCK_START = re.compile(r"^(\s*)([-+]|\d+(?=[.)]))")


def _as_written(text: str) -> str:
    """``text`` as Markdown that shows it as written: HTML's characters as entities, Markdown's escaped
    (an ``@`` too, which the citation stage would read as a citation's, and a list item's marker at
    the start, which would make the line a list)."""
    text = _MARKUP.sub(r"\\\1", html.escape(text.lstrip(), quote=False))
    if m := _BLOCK_START.match(text):                  # '- x' -> '\\- x', '1. x' -> '1\\. x'
        at = m.end() if m[2][0].isdigit() else m.end(1)   # before the '.' or ')' of a number, else the marker
        text = text[:at] + "\\" + text[at:]
    if text and not (text[0].isalnum() or text[0] in "\\&"):
        # any other mark that may open a block (': ' a definition, '??? ' details, '/// ' a caption,
        # '=== ' a tab, '~~~' a fence, '|' a table): a character reference, which no block reads
        text = f"&#{ord(text[0])};" + text[1:]
    return text


def _page_name(uri: str) -> str:
    stem = uri.removesuffix(".md").rsplit("/", 1)[-1]
    if stem.startswith("chapter-"):
        return f"Chapter {stem.removeprefix('chapter-')}"
    if stem.startswith("week-"):
        return f"Week {stem.removeprefix('week-')}"
    return stem.replace("-", " ").capitalize()


def _spaced(text: str) -> str:
    """``text`` with each run of white space one space: a form's words as a reader sees them, however
    the page's source broke its lines between them."""
    return " ".join(text.split())


def _pattern(entries: tuple[Term, ...]) -> tuple[re.Pattern | None, dict[str, Term]]:
    """The pattern of every form as the page's HTML spells it (``&``, ``<`` and ``>`` as the
    references ``&amp;``, ``&lt;``, ``&gt;``; any white space, a line break too, between its words),
    and the term of each spelling (its words one space apart, :func:`_spaced`); None for no form."""
    by_form: dict[str, Term] = {}
    # each form as written first, then the capitalized ones: a form as a term lists it is that term's,
    # never another's capitalized at a sentence's start ("Mamba" of one, "mamba" of the next)
    for capitalized in (False, True):
        for t in entries:
            for form in t.forms:
                if capitalized and not form[0].islower():
                    continue
                spelling = form[0].upper() + form[1:] if capitalized else form
                by_form.setdefault(_spaced(html.escape(spelling, quote=False)), t)
    if not by_form:                                    # an empty alternation would match everywhere
        return None, by_form
    alternation = "|".join(r"\s+".join(map(re.escape, f.split(" "))) for f in sorted(by_form, key=len, reverse=True))
    return re.compile(rf"(?<![\w-])(?:{alternation})(?![\w-])"), by_form


def tokens(content: str, foreign=lambda: False):
    """(start, end, "/" or "", lower-case name, "/" or "") of each comment (no name) and tag of the HTML
    ``content``, in order: a comment runs from ``<!--`` to the next ``-->``, a declaration, a CDATA section
    or a processing instruction (``<!…``, ``<?…``: HTML's bogus comments) to the next '>', a tag from ``<name`` to the
    first '>' outside its quoted attribute values (the second "/": it ends ``/>``). Linear time: once a
    comment is never closed no later one is, and each tag's end is read once from each place
    (:class:`site_build.tags.Tags`), where a pattern tried at every ``<`` would read the rest of the
    text again from each one that is never closed. ``foreign()``, asked right after a start tag is
    yielded, says whether that element is inside ``<svg>`` or ``<math>`` (foreign content), where no element
    is raw text; ``<plaintext>`` outside them makes the rest of the content its text."""
    from .tags import Tags

    tags, pos = Tags(content), 0
    raw_missing: dict[str, int] = {}                  # a raw text element's end tag not found from here
    # what ends a comment ('<!--'), and what ends a declaration, CDATA or a processing instruction
    # ('<!', '<?': HTML reads each as a comment to its '>'); once one is not found, none is after it
    closers = {"<!--": "-->", "<!": ">", "<?": ">"}
    found = {"-->": True, ">": True}
    while (m := _TOKEN_START.search(content, pos)) is not None:
        start = m.start()
        if (closer := closers.get(m.group(0))) is not None:
            if closer == "-->" and (empty := re.compile(r"-?>").match(content, m.end())):
                yield start, empty.end(), "", "", ""   # '<!-->', '<!--->': an empty comment, as HTML ends it
                pos = empty.end()
                continue
            end = content.find(closer, m.end()) if found[closer] else -1
            if end == -1:
                found[closer], pos = False, start + 1
                continue
            yield start, end + len(closer), "", "", ""
            pos = end + len(closer)
            continue
        head = _TAG_NAME.match(content, start)
        end = tags.end(head.end())
        if end is None:
            pos = start + 1
            continue
        name = head[2].lower()
        yield start, end, head[1], name, "/" if content[end - 2] == "/" and end - 2 >= head.end() else ""
        pos = end
        if head[1] or (name not in RAW_TEXT and name != "plaintext") or foreign():
            continue
        if name == "plaintext":                        # no end tag ends it: the rest is its text
            pos = len(content)
            continue
        # its text holds no tags: on to its own end tag
        if raw_missing.get(name, len(content) + 1) <= pos:
            pos = len(content)
            continue
        close = re.compile(rf"</{name}(?=[\s/>])", re.I).search(content, pos)
        if close is None:
            raw_missing[name] = pos
            pos = len(content)                     # never closed: the rest is its text, as a browser reads it
        else:
            pos = close.start()


def mark_first_uses(content: str, entries: tuple[Term, ...] | None = None) -> tuple[str, int]:
    """``content`` (a page's HTML) with the first use of each term in running text wrapped in an
    ``<abbr>`` whose title is its definition, and how many were marked."""
    entries = terms() if entries is None else entries
    pattern, by_form = _pattern(entries)
    if pattern is None:
        return content, 0
    used: set[str] = set()
    out, at = [], 0
    open_ = OpenElements()

    def mark(text: str) -> str:
        # positions strictly inside a character reference: a match may neither start nor end there
        # (``times`` in ``&times;`` would split the reference), though it may hold a whole one (``Q&amp;A``)
        inside = {i for r in _REFERENCE.finditer(text) for i in range(r.start() + 1, r.end())}
        pieces, last, pos = [], 0, 0
        while (m := pattern.search(text, pos)) is not None:
            if m.start() in inside or m.end() in inside:
                pos = m.start() + 1
                continue
            pos = m.end()
            term = by_form[_spaced(m.group(0))]
            if term.term in used:
                continue
            used.add(term.term)
            title = html.escape(term.definition, quote=True)
            pieces += [text[last:m.start()], f'<abbr class="glossary" title="{title}">{m.group(0)}</abbr>']
            last = m.end()
        return "".join(pieces) + text[last:]

    for start, end, closing, name, self_closing in tokens(content, lambda: open_.opened_foreign):
        text = content[at:start]
        out.append(mark(text) if text and not open_.skipping else text)
        out.append(content[start:end])
        at = end
        if name:
            open_.tag(closing, name, self_closing)
    tail = content[at:]
    out.append(mark(tail) if tail and not open_.skipping else tail)
    return "".join(out), len(used)


#: a start tag that ends an open element a browser closes for it (HTML's optional end tags among the
#: elements of :data:`SKIP`): ``<option>`` an open ``<option>``, ``<optgroup>`` an option or an optgroup,
#: ``<dt>`` and ``<dd>`` an open ``<dt>`` or ``<dd>`` of their list
_ENDS = {"option": ("option",), "optgroup": ("option", "optgroup"), "dt": ("dt", "dd"), "dd": ("dt", "dd")}
#: where the search for an element that such a start tag ends stops: its list or a block around it
_ENDS_STOP = frozenset({"dl", "select", "datalist", "div", "body", "html", "main", "article", "section", "table"})


#: the elements whose content is foreign (SVG, MathML): there no element is raw text, and ``/>`` closes one
_FOREIGN = frozenset({"svg", "math"})
#: the elements inside foreign content whose content is HTML again (HTML's integration points)
_INTEGRATION = frozenset({"foreignobject", "desc", "title", "mi", "mo", "mn", "ms", "mtext"})
#: the HTML start tags that, inside foreign content, end it (and every foreign element open) as a
#: browser parses them: ``<svg><p>text`` puts the text in HTML's ``<p>``, outside the SVG
_BREAKOUT = frozenset({"b", "big", "blockquote", "body", "br", "center", "code", "dd", "div", "dl", "dt", "em",
                       "embed", "h1", "h2", "h3", "h4", "h5", "h6", "head", "hr", "i", "img", "li", "listing",
                       "menu", "meta", "nobr", "ol", "p", "pre", "ruby", "s", "small", "span", "strong", "strike",
                       "sub", "sup", "table", "tt", "u", "ul", "var"})
#: HTML's formatting elements among :data:`SKIP`: one closed by another's end tag is reopened by a browser
#: where text next goes (``<p><code>x</p><p>y``: ``y`` is code too), until its own end tag or a marker's end
_FORMATTING = frozenset({"a", "code"})
#: the elements that bound that reopening (HTML's markers in the list of active formatting elements)
_MARKERS = frozenset({"td", "th", "caption", "template", "object", "applet", "marquee"})


class OpenElements:
    """The elements open at a point of a page's HTML, as a browser nests them closely enough to say
    whether that point is inside an element of :data:`SKIP`: an end tag closes its element and every
    element opened inside it and left unclosed (``<p><a>x</p>``: the ``</p>`` ends the link), an end
    tag with no open element of its name is ignored, and an ``<option>`` or a ``<dt>`` whose end tag is
    left out ends where HTML ends it (:data:`_ENDS`). A link or code so ended is reopened by a browser
    (:data:`_FORMATTING`): it is still skipped until its own end tag (or a new ``<a>``, for a link) or the
    end of the cell, caption, template or object it is in. Each tag costs O(1), amortised."""

    def __init__(self):
        self.stack: list[str] = []
        self.html: list[bool] = []                     # whether each open element is an HTML element
        self.inner_foreign: list[bool] = []            # whether each one's content is foreign (SVG, MathML)
        self.count: dict[str, int] = {}
        self.skipping = 0                               # how many open or reopened elements are in SKIP
        self.reopened: dict[str, int] = {}              # formatting elements a browser reopens, by name
        self.outer: list[dict[str, int]] = []           # those of the scopes outside each open marker
        self.opened_foreign = False                     # whether the last start tag was in foreign content

    @property
    def foreign(self) -> bool:
        """Whether what comes next is inside ``<svg>`` or ``<math>`` (and not back in HTML)."""
        return bool(self.inner_foreign) and self.inner_foreign[-1]

    def tag(self, closing: str, name: str, self_closing: str) -> None:
        """Take the tag ``name`` (a :func:`tokens` item's fields): an end tag closes, a start tag opens (a
        void element, or one ended by '/>' in foreign content, opens nothing; HTML ignores '/>')."""
        if closing:
            self.close(name)
        else:
            self.open(name, push=name not in _VOID and not (self_closing and (self.foreign or name in _FOREIGN)))

    def inside(self, names) -> str | None:
        """The first of ``names`` that is open here (reopened ones included), or None."""
        return next((n for n in names if self.count.get(n) or self.reopened.get(n)), None)

    def _pop(self, implied: bool = True) -> str:
        name, html_ = self.stack.pop(), self.html.pop()
        self.inner_foreign.pop()
        self.count[name] -= 1
        if implied and html_ and name in _FORMATTING:  # still skipped: a browser reopens it
            self.reopened[name] = self.reopened.get(name, 0) + 1
        else:
            self.skipping -= name in SKIP
        if html_ and name in _MARKERS:                  # what was reopened inside it ends with it
            self.skipping -= sum(self.reopened.values())
            self.reopened = self.outer.pop()
            self.skipping += sum(self.reopened.values())
        return name

    def close(self, name: str) -> None:
        if self.count.get(name):
            while self.stack[-1] != name:
                self._pop()
            self._pop(implied=False)
        elif self.reopened.get(name):                   # a reopened element's own end tag ends it
            self.reopened[name] -= 1
            self.skipping -= 1

    def open(self, name: str, push: bool = True) -> None:
        if self.foreign and name in _BREAKOUT:          # HTML's element ends the SVG or MathML it stands in
            while self.foreign:
                self._pop(implied=False)
        foreign = self.opened_foreign = self.foreign
        if not foreign and (ends := _ENDS.get(name)) is not None:
            for i in range(len(self.stack) - 1, max(-1, len(self.stack) - 9), -1):   # a few levels, as lists nest
                if self.stack[i] in ends:
                    del_to = i
                    while len(self.stack) > del_to:
                        self._pop()
                    break
                if self.stack[i] in _ENDS_STOP:
                    break
        if not foreign and name == "a" and self.reopened.get("a"):   # a new link ends a reopened one
            self.reopened["a"] -= 1
            self.skipping -= 1
        if not push:
            return
        if not foreign and name in _MARKERS:
            self.outer.append(self.reopened)
            self.skipping -= sum(self.reopened.values())
            self.reopened = {}
        self.stack.append(name)
        self.html.append(not foreign)
        self.inner_foreign.append(name in _FOREIGN or (foreign and name not in _INTEGRATION))
        self.count[name] = self.count.get(name, 0) + 1
        self.skipping += name in SKIP
