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
#: what a reader is never shown as the page's text is skipped too: ``<noscript>``, a ``<template>``, the
#: fallback content of media and embedded objects, and ``<plaintext>`` (the rest of the page as text)
SKIP = frozenset({"a", "abbr", "code", "pre", "kbd", "samp", "math", "svg", "script", "style", "textarea", "xmp",
                  "iframe", "noembed", "noframes", "noscript", "template", "video", "audio", "object", "canvas",
                  "plaintext",
                  "button", "label", "summary", "figure", "figcaption", "h1", "h2", "h3", "h4", "h5", "h6",
                  "dt", "select", "option", "title", "nav"})
_VOID = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
                   "track", "wbr"})
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


def mark_first_uses(content: str, entries: tuple[Term, ...] | None = None) -> tuple[str, int]:
    """``content`` (a page's HTML) with the first use of each term in running text wrapped in an
    ``<abbr>`` whose title is its definition, and how many were marked."""
    from .tags import tokens

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

    for start, end, closing, name, self_closing in tokens(content, lambda: open_.opened_foreign,
                                                          lambda: open_.foreign):
        text = content[at:start]
        out.append(mark(text) if text and not open_.skipping else text)
        out.append(content[start:end])
        at = end
        if name:
            open_.tag(closing, name, self_closing, content[start:end])
    tail = content[at:]
    out.append(mark(tail) if tail and not open_.skipping else tail)
    return "".join(out), len(used)


#: a start tag that ends an open element a browser closes for it (HTML's optional end tags among the
#: elements of :data:`SKIP`): ``<option>`` an open ``<option>``, ``<optgroup>`` an option or an optgroup,
#: ``<dt>`` and ``<dd>`` an open ``<dt>`` or ``<dd>`` of their list
_ENDS = {"option": ("option",), "optgroup": ("option", "optgroup"), "dt": ("dt", "dd"), "dd": ("dt", "dd")}
#: where the search for an element that such a start tag ends stops: its list or a block around it
_ENDS_STOP = frozenset({"dl", "select", "datalist", "div", "body", "html", "main", "article", "section", "table"})


#: the elements that HTML's rules open as foreign content (``<svg>`` an SVG element, ``<math>`` a MathML
#: one): in them no element is raw text, ``/>`` closes one, and ``<![CDATA[`` opens CDATA
_FOREIGN = frozenset({"svg", "math"})
#: the namespaces of the open elements
_HTML, _SVG, _MATHML = 0, 1, 2
#: SVG's HTML integration points (HTML's rules read a start tag in them); in MathML the names are no such
#: point (``<math><title>`` is a plain MathML element)
_SVG_POINTS = frozenset({"foreignobject", "desc", "title"})
#: the encodings (in ASCII case only) that make MathML's ``annotation-xml`` an HTML integration point
_HTML_ENCODINGS = frozenset({"text/html", "application/xhtml+xml"})
#: MathML's text integration points: HTML's rules read a start tag in them, but ``mglyph``'s and
#: ``malignmark``'s (:data:`_MATHML_GLYPHS`), which stay MathML elements
_MATHML_TEXT = frozenset({"mi", "mo", "mn", "ms", "mtext"})
_MATHML_GLYPHS = frozenset({"mglyph", "malignmark"})
#: the SVG and MathML elements that HTML counts as special, where its scopes stop too: an HTML end tag
#: closes no element open outside the last of them
_SPECIAL_FOREIGN = {_SVG: _SVG_POINTS, _MATHML: _MATHML_TEXT | {"annotation-xml"}}
#: HTML's special elements: the end tag of an element of no rule of its own (HTML's "any other end tag",
#: ``</span>``, ``</label>``) closes nothing when one of these is open inside it (``<span><div></span>``)
_SPECIAL = frozenset({
    "address", "applet", "area", "article", "aside", "base", "basefont", "bgsound", "blockquote", "body", "br",
    "button", "caption", "center", "col", "colgroup", "dd", "details", "dir", "div", "dl", "dt", "embed",
    "fieldset", "figcaption", "figure", "footer", "form", "frame", "frameset", "h1", "h2", "h3", "h4", "h5",
    "h6", "head", "header", "hgroup", "hr", "html", "iframe", "img", "input", "keygen", "li", "link", "listing",
    "main", "marquee", "menu", "meta", "nav", "noembed", "noframes", "noscript", "object", "ol", "p", "param",
    "plaintext", "pre", "script", "search", "section", "select", "source", "style", "summary", "table", "tbody",
    "td", "template", "textarea", "tfoot", "th", "thead", "title", "tr", "track", "ul", "wbr", "xmp"})
#: where HTML's scope of an element stops (with :data:`_SPECIAL_FOREIGN`)
_SCOPE = frozenset({"applet", "caption", "html", "table", "td", "th", "marquee", "object", "template"})
_HEADINGS = ("h1", "h2", "h3", "h4", "h5", "h6")
#: the end tags that close their element when it is in scope (a special element inside it or not): the
#: blocks', ``</p>`` (in button scope), ``</li>`` (in list item scope), the headings' (any heading),
#: the formatting elements' (HTML's adoption agency, as closely as skipping needs)
_SCOPED_ENDS = frozenset({
    "address", "article", "aside", "blockquote", "button", "center", "details", "dialog", "dir", "div", "dl",
    "fieldset", "figcaption", "figure", "footer", "header", "hgroup", "listing", "main", "menu", "nav", "ol",
    "pre", "search", "section", "summary", "ul", "form", "p", "li", "dd", "dt", *_HEADINGS, "a", "b", "big",
    "code", "em", "font", "i", "nobr", "s", "small", "strike", "strong", "tt", "u", "applet", "marquee", "object"})
#: the elements that also end the scope of ``p``'s and ``li``'s end tags
_SCOPE_ALSO = {"p": ("button",), "li": ("ol", "ul")}
#: the HTML start tags that, inside foreign content, end it (and every foreign element open, down to an
#: integration point) as a browser parses them: ``<svg><p>text`` puts the text in HTML's ``<p>``, outside
#: the SVG; so does a ``<font>`` with any of :data:`_FONT_BREAKOUT`, and so do the end tags ``</p>`` and
#: ``</br>`` (:data:`_END_BREAKOUT`)
_BREAKOUT = frozenset({"b", "big", "blockquote", "body", "br", "center", "code", "dd", "div", "dl", "dt", "em",
                       "embed", "h1", "h2", "h3", "h4", "h5", "h6", "head", "hr", "i", "img", "li", "listing",
                       "menu", "meta", "nobr", "ol", "p", "pre", "ruby", "s", "small", "span", "strong", "strike",
                       "sub", "sup", "table", "tt", "u", "ul", "var"})
_FONT_BREAKOUT = frozenset({"color", "face", "size"})
_END_BREAKOUT = frozenset({"p", "br"})
#: what each open element is to HTML's tree construction: neither, an HTML integration point, a MathML
#: text integration point
_POINT_NONE, _POINT_HTML, _POINT_TEXT = 0, 1, 2
#: HTML's formatting elements among :data:`SKIP`: one closed by another's end tag is reopened by a browser
#: where text next goes (``<p><code>x</p><p>y``: ``y`` is code too), until its own end tag or a marker's end
_FORMATTING = frozenset({"a", "code"})
#: the elements that bound that reopening (HTML's markers in the list of active formatting elements)
_MARKERS = frozenset({"td", "th", "caption", "template", "object", "applet", "marquee"})


def _attributes(source: str) -> dict[str, str]:
    """The attributes of the start tag ``source``, as :func:`site_build.tags.attributes` reads them."""
    from .tags import attributes

    return attributes(source)


def _encoding(source: str) -> str:
    """The ``encoding`` attribute of the start tag ``source``, in ASCII lower case (HTML compares it so)."""
    from .tags import ascii_lower

    return ascii_lower(_attributes(source).get("encoding", ""))


class OpenElements:
    """The elements open at a point of a page's HTML, as a browser nests them closely enough to say
    whether that point is inside an element of :data:`SKIP` and whether it is in foreign content: an end
    tag closes its element and every element opened inside it and left unclosed (``<p><a>x</p>``: the
    ``</p>`` ends the link), unless an element where HTML's scopes stop is open inside it (for an end tag
    of a rule of its own, :data:`_SCOPED_ENDS`) or a special one (for any other, :data:`_SPECIAL`:
    ``<span><div></span>`` closes nothing); an end tag with no open element of its name is ignored, and an ``<option>`` or
    a ``<dt>`` whose end tag is left out ends where HTML ends it (:data:`_ENDS`). A link or code so ended is
    reopened by a browser (:data:`_FORMATTING`): it is still skipped until its own end tag (or a new
    ``<a>``, for a link) or the end of the cell, caption, template or object it is in.

    Each element's namespace is followed as HTML's tree construction dispatches each tag: a start tag is
    read by HTML's rules where the current node is an HTML element, an HTML integration point (SVG's
    ``foreignObject``, ``desc``, ``title``; MathML's ``annotation-xml`` of an HTML encoding), or a MathML text
    integration point (``mi``, ``mo``, ``mn``, ``ms``, ``mtext``; not for ``mglyph``, ``malignmark``), and
    ``<svg>`` in MathML's ``annotation-xml``; elsewhere in SVG or MathML by the rules for foreign content,
    where a start tag opens an element of the current node's namespace, but a breakout tag
    (:data:`_BREAKOUT`) first closes the foreign elements down to an integration point or an HTML element;
    an end tag there closes the foreign element of its name open above the last HTML element, or else
    is read by HTML's rules, which close no element outside an SVG or MathML special element. Each tag
    costs O(1), amortised (a start tag of ``<font>`` or ``<annotation-xml>`` in foreign content reads its
    attributes, linear in the tag)."""

    def __init__(self):
        self.stack: list[str] = []
        self.ns: list[int] = []                         # each open element's namespace
        self.point: list[int] = []                      # whether each one is an integration point, and which
        self.html_places: dict[str, list[int]] = {}     # the places in the stack of HTML elements, by name
        self.foreign_places: dict[str, list[int]] = {}  # and of SVG and MathML ones
        self.html_at: list[int] = []                    # the places of the HTML elements
        self.bounds: list[int] = []                     # the places of the elements where scopes stop
        self.specials: list[int] = []                   # and of the special ones (:data:`_SPECIAL`)
        self.count: dict[str, int] = {}
        self.skipping = 0                               # how many open or reopened elements are in SKIP
        self.reopened: dict[str, int] = {}              # formatting elements a browser reopens, by name
        self.outer: list[dict[str, int]] = []           # those of the scopes outside each open marker
        self.opened_foreign = False                     # whether the last start tag opened an SVG or MathML element

    @property
    def foreign(self) -> bool:
        """Whether the current node (the element open last) is an SVG or MathML element: there
        ``<![CDATA[`` opens CDATA, even in an HTML integration point (``<svg><foreignObject>``)."""
        return bool(self.ns) and self.ns[-1] != _HTML

    def tag(self, closing: str, name: str, self_closing: str, source: str = "") -> bool:
        """Take the tag ``name`` (a :func:`~site_build.tags.tokens` item's fields, and the tag's text
        ``source``, whose attributes are read for ``<font>`` and ``<annotation-xml>``): an end tag closes, a
        start tag opens (a void HTML element, or a foreign one ended by '/>', opens nothing; HTML ignores
        '/>'). Whether the tag is an end tag or a start tag that opened its element."""
        if closing:
            self.close(name)
            return True
        return self.open(name, self_closing, source)

    def inside(self, names) -> str | None:
        """The first of ``names`` that is open here (reopened ones included), or None."""
        return next((n for n in names if self.count.get(n) or self.reopened.get(n)), None)

    def _pop(self, implied: bool = True) -> str:
        place = len(self.stack) - 1
        name, html_ = self.stack.pop(), self.ns.pop() == _HTML
        self.point.pop()
        (self.html_places if html_ else self.foreign_places)[name].pop()
        if html_:
            self.html_at.pop()
        if self.bounds and self.bounds[-1] == place:
            self.bounds.pop()
        if self.specials and self.specials[-1] == place:
            self.specials.pop()
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

    def _pop_to(self, place: int) -> None:
        """Close the element at ``place`` and every one opened inside it."""
        while len(self.stack) > place + 1:
            self._pop()
        self._pop(implied=False)

    def _pop_to_point(self) -> None:
        """Close the foreign elements open down to an integration point or an HTML element (a breakout)."""
        while self.ns and self.ns[-1] != _HTML and self.point[-1] == _POINT_NONE:
            self._pop(implied=False)

    def close(self, name: str) -> None:
        if self.foreign:                                # the rules for an end tag in foreign content
            if name in _END_BREAKOUT:
                self._pop_to_point()
            elif (places := self.foreign_places.get(name)) and places[-1] > (self.html_at[-1] if self.html_at
                                                                             else -1):
                self._pop_to(places[-1])
                return
        # HTML's rules: its element, if in scope (no element where scopes stop is open inside it) for an
        # end tag of a rule of its own, else if no special element is open inside it
        if name in _HEADINGS:
            place = max((self.html_places[h][-1] for h in _HEADINGS if self.html_places.get(h)), default=-1)
        else:
            place = self.html_places[name][-1] if self.html_places.get(name) else -1
        if place >= 0:
            if name in _SCOPED_ENDS:
                stop = max([self.bounds[-1] if self.bounds else -1] + [
                    self.html_places[n][-1] for n in _SCOPE_ALSO.get(name, ()) if self.html_places.get(n)])
            else:
                stop = self.specials[-1] if self.specials else -1
            if place >= stop:
                self._pop_to(place)
        elif self.reopened.get(name):                   # a reopened element's own end tag ends it
            self.reopened[name] -= 1
            self.skipping -= 1

    def _read_as_html(self, name: str) -> bool:
        """Whether HTML's rules read a start tag ``name`` here (its tree construction's dispatcher)."""
        if not self.ns or self.ns[-1] == _HTML or self.point[-1] == _POINT_HTML:
            return True
        if self.point[-1] == _POINT_TEXT:
            return name not in _MATHML_GLYPHS
        return name == "svg" and self.ns[-1] == _MATHML and self.stack[-1] == "annotation-xml"

    def open(self, name: str, self_closing: str = "", source: str = "") -> bool:
        if self._read_as_html(name):
            ns = _SVG if name == "svg" else _MATHML if name == "math" else _HTML
        elif name in _BREAKOUT or name == "font" and not _FONT_BREAKOUT.isdisjoint(_attributes(source)):
            self._pop_to_point()                        # HTML's element ends the SVG or MathML it stands in
            ns = _HTML
        else:
            ns = self.ns[-1]
        self.opened_foreign = ns != _HTML
        if ns == _HTML and name == "image":             # HTML's rules make an <image> an <img>
            name = "img"
        if ns == _HTML and (ends := _ENDS.get(name)) is not None:
            for i in range(len(self.stack) - 1, max(-1, len(self.stack) - 9), -1):   # a few levels, as lists nest
                if self.ns[i] != _HTML or self.stack[i] in _ENDS_STOP:
                    break
                if self.stack[i] in ends:
                    self._pop_to(i)
                    break
        if ns == _HTML and name == "a" and self.reopened.get("a"):   # a new link ends a reopened one
            self.reopened["a"] -= 1
            self.skipping -= 1
        if name in _VOID if ns == _HTML else self_closing:
            return False
        if ns == _HTML and name in _MARKERS:
            self.outer.append(self.reopened)
            self.skipping -= sum(self.reopened.values())
            self.reopened = {}
        place = len(self.stack)
        if ns == _SVG and name in _SVG_POINTS or ns == _MATHML and name == "annotation-xml" and (
                _encoding(source) in _HTML_ENCODINGS):
            point = _POINT_HTML
        else:
            point = _POINT_TEXT if ns == _MATHML and name in _MATHML_TEXT else _POINT_NONE
        self.stack.append(name)
        self.ns.append(ns)
        self.point.append(point)
        (self.html_places if ns == _HTML else self.foreign_places).setdefault(name, []).append(place)
        if ns == _HTML:
            self.html_at.append(place)
            if name in _SCOPE:
                self.bounds.append(place)
            if name in _SPECIAL:
                self.specials.append(place)
        elif name in _SPECIAL_FOREIGN[ns]:
            self.bounds.append(place)
            self.specials.append(place)
        self.count[name] = self.count.get(name, 0) + 1
        self.skipping += name in SKIP
        return True


def elements(content: str, xml: bool = False, open_elements: OpenElements | None = None):
    """(start, end, "/" or "", lower-case name, "/" or "", foreign) of each comment and tag of ``content``
    (:func:`~site_build.tags.tokens`), read as a browser reads them: ``foreign`` says whether the token
    stands in foreign content (for a start tag: whether its element is an SVG or MathML one), where no
    element is raw text and ``<![CDATA[`` runs to ``]]>``; the open elements are followed as
    :class:`OpenElements` follows them (``<svg><p>`` is back in HTML). An XML document (``xml``: an SVG
    file, a ``data:image/svg+xml`` page) is foreign content throughout, and its processing instructions
    run to ``?>``. Linear time, as ``tokens`` is. ``open_elements``: the :class:`OpenElements` to follow the
    page with (a fresh one when None), for a caller that looks at the open elements after each token."""
    from .tags import tokens

    if xml:
        for token in tokens(content, lambda: True, lambda: True, xml=True):
            yield *token, True
        return
    open_ = OpenElements() if open_elements is None else open_elements
    for start, end, closing, name, self_closing in tokens(content, lambda: open_.opened_foreign,
                                                          lambda: open_.foreign):
        here = open_.foreign
        if name:
            open_.tag(closing, name, self_closing, content[start:end])
            if not closing:
                here = open_.opened_foreign
        yield start, end, closing, name, self_closing, here
