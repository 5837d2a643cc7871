"""Keep notebook pages offline, and check that the built site asks no other host for anything.

mkdocs-jupyter's template adds MathJax and Mermaid loaders that fetch from a
CDN. The drills need neither (their math lives on the recall pages, rendered to
MathML at build time), so the loaders are removed, from the notebook pages and
from the printable book that copies them (:func:`strip_print_page_loaders`); the
site tests fail on any remaining reference to another host (:func:`check_file`).

The check has two layers.

* :func:`remote_references` reads each page as a browser's parser does, closely
  enough to name the exact URL a page would fetch: tags and attributes, comments,
  raw text, SVG and MathML, style sheets, ``srcdoc`` pages and ``data:`` documents.
* :func:`refusals` is the fail-closed layer. A close reading is still a model, and
  each difference between the model and a browser is a place a fetch can hide:
  text the model takes for a comment may be a tag to a browser. So the check does
  not try to settle such places; it refuses them, with what and where, whatever
  they hold. The site's own pages (Markdown, the Material theme, the math pass,
  the notebooks) never need any of them. Refused:

  - an HTML tag that ends SVG or MathML content (a breakout tag: ``<p>``, ``<div>``,
    ``<img>``, a ``<font>`` with ``color``, ``face`` or ``size``…, and the end tags
    ``</p>`` and ``</br>``) anywhere inside ``<svg>`` or ``<math>``, integration
    points included;
  - CDATA outside SVG and MathML (HTML ends it at the first '>', XML at ``]]>``);
  - a tag inside an SVG ``<script>`` or ``<style>`` (its text is its own text only, up to its own end
    tag; the check reads the text of its children too, and stops at the first end tag of its name);
  - ``<plaintext>``, ``<xmp>``, ``<noembed>``, ``<noframes>``, ``<noscript>`` and
    ``<listing>``, whose text browsers read by settings or rules the model does
    not share;
  - a ``<select>`` holding anything but options, option groups and rules (what
    browsers keep there has changed), and a tag a browser moves out of a table
    (anything but a table's own parts, scripts, styles and templates directly in
    a table, a row group, a row or a column group: foster parenting);
  - an ``<?xml-stylesheet?>`` of any type but ``text/css`` (an XSLT transform: a browser shows what it
    writes), and a ``data:`` style sheet of any MIME type but ``text/css`` (a page in quirks mode applies
    it, the check reads it as CSS all the same);
  - a ``data:`` URL that a frame, an object or an embed loads as a page of its own,
    and a ``javascript:`` or ``vbscript:`` URL anywhere a URL is followed;
  - a ``data:`` document (HTML, CSS, any XML type) that a browser might decode
    otherwise than as UTF-8: a ``charset`` parameter, an ``@charset``, an XML
    declaration or a ``<meta>`` naming any encoding but UTF-8 or ASCII (one that
    Python knows and browsers do not, such as UTF-7, too), a UTF-16 byte order
    mark, bytes that are no UTF-8 or an ESC byte (a browser guesses the encoding
    of such data), and base64 that browsers and Python decode differently; a
    page whose own ``<meta>`` names another encoding, a ``charset`` attribute
    of any element (a ``<link>``'s decodes the sheet it loads) or an
    ``<?xml-stylesheet?>``'s ``charset`` naming one, and a built file that a
    browser might decode otherwise on the same grounds (:func:`check_file`);
  - a URL of another host written in text the tokenizer reads as no markup:
    comments, bogus comments, processing instructions, the text of raw text
    elements and of scripts and styles (SVG's too), and event handlers'
    attributes (``onerror``…), where a value may start (after a blank or a
    control character, '=', a quote, '(', ',' or ';') and before a host with a
    letter or a digit in it; the text is read with its character references
    resolved (again, as deep as ``srcdoc`` pages nest), its tabs and newlines
    dropped, percent-decoded, and any ``data:`` document written there in base64
    read as the document it is. Not refused there: the names of XML
    namespaces (no browser fetches them), the local server's addresses, a
    doctype's identifiers (a doctype ends at its '>' for both readings), and an
    XML document's comments (XML ends a comment at its first ``-->``, where the
    model ends it too, or sooner). A style sheet has no such text to refuse: CSS
    ends its comments and strings as the model does.

  Attribute values of attributes that fetch nothing are not refused. The layer
  only adds reports: :func:`check` is every URL :func:`remote_references` finds,
  then every refusal.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import codecs
import html
import re
import urllib.parse

from .glossary import _BREAKOUT, _FONT_BREAKOUT, OpenElements, elements
from .tags import RAW_TEXT

#: a tag's attributes as HTML's tokenizer reads them, read one step at a time from where the last one
#: ended: blanks and '/' between attributes (none needed after a quoted value: ``alt="a"src=…`` is two),
#: a name (an '=' at its start is part of it), then an '=' and its value, in either quotes or none (a quote
#: opens a string only right after '=' and blanks; one never closed runs to the end of what is read)
_BETWEEN = re.compile(r"[\t\n\f\r /]*")
_NAME = re.compile(r"[^\t\n\f\r />][^\t\n\f\r />=]*")
_VALUE = re.compile(r"""[\t\n\f\r ]*=[\t\n\f\r ]*("[^"]*"?|'[^']*'?|[^\t\n\f\r >]*)""")
#: a URL of another host, as a browser's URL parser reads it (its leading C0 controls and blanks dropped,
#: every tab and newline in it removed): a scheme or none, then two slashes (backslashes read as
#: slashes), or a special scheme with no slashes at all (from a page of another scheme, ``https:host``
#: is that host; from one of the same scheme it is a path, which the check reads as remote all the same)
_OTHER_HOST = re.compile(r"(?:[a-z][a-z0-9+.-]*:)?[/\\]{2}|(?:https?|ftp|wss?):", re.I | re.A)
#: what a browser drops from a URL before it parses it: C0 controls and blanks at either end, and
#: every tab and newline
_LEADING = re.compile(r"^[\x00-\x20]+")
_TAB_OR_NEWLINE = re.compile(r"[\t\n\r]")
_LOADS = re.compile(r"MathJax|mermaid", re.I | re.A)
#: HTML, URLs, MIME types and CSS compare names in ASCII case only: Python's ``str.lower`` and ``re.I``
#: also fold other letters onto ASCII ones (U+212A KELVIN SIGN lowers to 'k', U+017F LONG S matches 's'),
#: so every name here is lowered with this table and every pattern that ignores case is ``re.A`` too
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
#: ASCII whitespace as HTML, URLs and the Encoding Standard read it
_ASCII_BLANKS = "\t\n\f\r "


def _ascii_lower(text: str) -> str:
    """``text`` with its ASCII capitals, and no other letter, lowered."""
    return text.translate(_ASCII_LOWER)


def strip_loaders(output: str, src_uri: str) -> str:
    """The page ``output`` of ``src_uri`` without remote scripts and loaders, when it is a notebook.

    A script element goes when its opening tag loads from another host (a ``src`` of ``//…`` or
    ``scheme://…``, in any quotes or none: a browser then runs what it fetches and ignores the body,
    blank or not), or when its body names MathJax or Mermaid. The page is read as a browser reads it
    (:func:`~site_build.glossary.elements`): a ``<script>`` written in a comment, in a textarea's or another
    raw text element's text is no element; an element runs from its start tag (to the '>' that ends it as
    HTML reads it, quotes and all) to the end tag that ends it as HTML ends a script (``</script`` in any
    case and a blank, '/' or '>', its text read as HTML reads a script's), on to that end tag's '>'. One
    pass, linear in the page; a script never closed keeps the rest of the page as it is."""
    if not src_uri.endswith(".ipynb"):
        return output
    return _without_loaders(output)


def strip_print_page_loaders(path) -> bool:
    """Strip the loaders (:func:`strip_loaders`) from the printable book at ``path``, if there is one, and
    say whether it changed: print-site copies each notebook page's content, MathJax's and Mermaid's
    loaders with it, from before :func:`strip_loaders` reads the page, so the book keeps a module script
    that imports Mermaid from a CDN (the fail-closed layer refuses its URL, :func:`refusals`)."""
    from pathlib import Path

    path = Path(path)
    if not path.is_file():
        return False
    text = path.read_text(encoding="utf-8")
    stripped = _without_loaders(text)
    if stripped != text:
        path.write_text(stripped, encoding="utf-8")
    return stripped != text


def _without_loaders(output: str) -> str:
    """The page ``output`` without its remote scripts and loaders (:func:`strip_loaders`)."""
    kept, at, script = [], 0, None
    for start, end, closing, name, self_closing, foreign in elements(output):
        if script is None:
            if name == "script" and not closing:
                script = (start, end, foreign)
                if foreign and self_closing:           # an SVG script closed by '/>': no text
                    script = None
                    if _loads_from_another_host(output[start:end]):
                        kept.append(output[at:start])
                        at = end
            continue
        opened, tag_end, in_foreign = script
        if not (closing and name == "script"):
            if in_foreign:                             # an SVG script's text holds tags: on to its end tag
                continue
            break                                      # its end tag is never read: no element ends here
        drop = _loads_from_another_host(output[opened:tag_end]) or _LOADS.search(output, tag_end, start) is not None
        kept.append(output[at:opened if drop else end])
        at, script = end, None
    kept.append(output[at:])
    return "".join(kept)


def _loads_from_another_host(tag: str) -> bool:
    """Whether the script tag ``tag``'s first ``src`` (in either quotes or none, spaces around its
    '=' or not, character references resolved) names another host."""
    src = attributes_of(tag).get("src")
    return src is not None and _names_another_host(src)


def _attribute_spans(text: str, at: int, stop: int) -> list[tuple[str, str, int, int]]:
    """The attributes of the tag whose attributes (its name and its '>' aside) are ``text[at:stop]``, as
    HTML's tokenizer reads them: each name and its value as written (a quoted one with its quotes), in
    order, to the first '>' outside a quoted value, with where each starts and ends in ``text``. Each step
    reads on from where the last ended: linear."""
    found = []
    while True:
        at = _BETWEEN.match(text, at, stop).end()
        if at >= stop or text[at] == ">":
            return found
        name = _NAME.match(text, at, stop)
        value = _VALUE.match(text, name.end(), stop)
        found.append((name[0], value[1] if value else "", at, value.end() if value else name.end()))
        at = value.end() if value else name.end()


def attribute_spans(tag: str) -> list[tuple[str, str, int, int]]:
    """The attributes of the start tag ``tag`` (from its '<' to its '>', as :func:`~site_build.tags.tokens`
    yields it) as a browser's tokenizer reads them, in order, duplicates too (a browser keeps the first):
    each name in ASCII lower case, its value unquoted and its character references resolved, and where
    the attribute starts and ends in ``tag``. Linear."""
    name_end = _TAG_NAME.match(tag, 1, max(1, len(tag) - 1)).end()
    return [(_ascii_lower(name), html.unescape(_unquoted(raw)), start, end)
            for name, raw, start, end in _attribute_spans(tag, name_end, max(name_end, len(tag) - 1))]


def _unquoted(raw: str) -> str:
    """An attribute's value as written (``raw``) without its quotes (one never closed has only its first)."""
    if raw[:1] not in ("'", '"'):
        return raw
    return raw[1:-1] if len(raw) > 1 and raw[-1] == raw[0] else raw[1:]


def attributes_of(tag: str) -> dict[str, str]:
    """The attributes of the start tag ``tag`` (:func:`attribute_spans`) by name, the first of each name."""
    found: dict[str, str] = {}
    for name, value, _, _ in attribute_spans(tag):
        found.setdefault(name, value)
    return found


def srcset_urls(value: str) -> list[str]:
    """The URLs of the candidates of the ``srcset`` (or ``imagesrcset``) ``value``, as HTML's parser of a
    srcset reads them: after blanks and commas, a URL runs to the next blank (commas at its end are no
    part of it), its descriptors to the next comma outside parentheses. Each step reads on from where the
    last ended: linear."""
    urls, at, n = [], 0, len(value)
    while True:
        at = _SRCSET_GAP.match(value, at).end()
        if at >= n:
            return urls
        url_end = _SRCSET_URL.match(value, at).end()
        url, at = value[at:url_end], url_end
        if url.endswith(","):
            url = url.rstrip(",")
        else:
            at = _SRCSET_DESCRIPTORS.match(value, at).end() + 1
        urls.append(url)


_SRCSET_GAP = re.compile(r"[\t\n\f\r ,]*")
_SRCSET_URL = re.compile(r"[^\t\n\f\r ]*")
_SRCSET_DESCRIPTORS = re.compile(r"(?:[^,(]|\([^)]*\)?)*")


#: the attributes whose value is one URL a browser fetches, follows or posts to (``xlink:href`` and
#: ``xlink:src`` end as ``href`` and ``src`` do, and so does an ``href`` or ``src`` under any other prefix:
#: in XML the prefix is whatever the document binds to XLink's namespace, :func:`_holds_a_url`)
_URL_ATTRIBUTES = frozenset({"src", "href", "data", "poster", "action", "formaction", "background",
                             "manifest", "codebase", "archive", "icon", "code",
                             "xlink:href", "xlink:src"})
#: a text that is no HTML page, when whoever reads it does not say which it is (:func:`remote_references`):
#: first (a byte order mark, blanks and comments aside; each comment is read one way only, to its first
#: ``-->``, so a text that is none is read once) a processing instruction (``<?xml …?>``,
#: ``<?xml-stylesheet …?>``, any other: HTML has none), a doctype of any name but ``html``, an ``<svg>``
#: root or a root of a prefixed name (``<s:svg>``)
_XML_START = re.compile(r"\ufeff?(?:[\t\n\f\r ]|<!--(?:[^-]|-(?!->))*-->)*"
                        r"<(?:\?|!doctype[\t\n\f\r ]+(?!html(?![^\t\n\f\r >]))[^\t\n\f\r >]"
                        r"|svg(?=[\t\n\f\r />])|[a-z][^\t\n\f\r />:]*:[^\t\n\f\r />:])", re.I | re.A)
#: a declaration of an XML document's own DTD (its internal subset): an entity may hide a URL (expanded in
#: attribute values and text, ``href="&u;"``), an attribute list too (it gives elements attributes by
#: default), and any declaration's quoted text may hold a '>' that the tokenizer, which reads HTML's bogus
#: comments, would take for its end; read wherever it stands in the document, and reported unread
#: (:func:`remote_references`)
_DTD_DECLARATION = re.compile(r"<!(?:ENTITY|ATTLIST|ELEMENT|NOTATION)(?![A-Za-z])", re.I | re.A)
_CDATA = "<![CDATA["
_DOCTYPE = re.compile(r"<!doctype", re.I | re.A)
#: a tag's name, read up to its known end (``<a<a<a…`` never closed is no tag, and its name is not read)
_TAG_NAME = re.compile(r"[^\t\n\f\r />]*")
#: SVG's presentation attributes whose value is CSS that may fetch (``fill="url(//host/p.svg#g)"``)
_CSS_ATTRIBUTES = frozenset({"fill", "stroke", "filter", "mask", "clip-path", "marker", "marker-start",
                             "marker-mid", "marker-end", "cursor"})
#: a meta refresh's target: ``content="5; url=…"``, up to where its URL starts (:func:`_refresh_url`)
_REFRESH = re.compile(r"^[\t\n\f\r ]*[0-9.]*[\t\n\f\r ]*[;,]?[\t\n\f\r ]*(?:url[\t\n\f\r ]*=[\t\n\f\r ]*)?",
                      re.I | re.A)


def _refresh_url(content: str) -> str:
    """A meta refresh's URL as HTML's refresh steps read ``content``: one that starts with a quote ends at
    the same quote (or the end), any other runs to the end, quotes and all."""
    rest = content[_REFRESH.match(content).end():]
    if rest[:1] in ("'", '"'):
        return rest[1:].partition(rest[0])[0]
    return rest
#: the hosts a built page may still name: the local server the tests serve the site from
_LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost"})
#: the authority of a URL of ``http:``/``https:`` or none, as a browser's URL parser reads it: after the
#: scheme and its slashes (backslashes read as slashes; from ``http:`` any number, none too), up to the
#: first '/', '\\', '?' or '#'
_AUTHORITY = re.compile(r"(?:https?:[/\\]*|[/\\]{2})([^/\\?#]*)", re.I | re.A)


def _names_another_host(url: str) -> bool:
    """Whether ``url`` (character references resolved) names a host other than the local server: the
    host is what follows the authority's last '@' (``http://localhost:1@evil.example/`` is evil.example's,
    ``localhost:1`` its user and password), up to its port."""
    url = _TAB_OR_NEWLINE.sub("", _LEADING.sub("", url))
    if _OTHER_HOST.match(url) is None:
        return False
    authority = _AUTHORITY.match(url)
    return authority is None or _ascii_lower(authority[1].rpartition("@")[2].partition(":")[0]) not in _LOCAL_HOSTS


def remote_references(text: str, css: bool = False, _depth: int = 0, xml: bool | None = None,
                      _encoding: str = "utf-8", _refused: list[str] | None = None) -> list[str]:
    """The URLs of other hosts that the HTML ``text`` (a style sheet when ``css``) makes a browser request
    or go to, in order:
    an attribute that holds a URL (``src``, ``href``, ``xlink:href``, ``data``, ``poster``, ``action``,
    ``formaction``…), every candidate of a ``srcset`` or ``imagesrcset``, every URL of a ``ping`` or an
    ``attributionsrc``, a meta refresh's target, and CSS ``url()``, ``@import`` and ``image-set()`` in a style sheet, a ``style`` element or a ``style``
    attribute (CSS shown as text, in a code block, is no request), the URLs an SVG ``<set>`` or
    ``<animate…>`` gives an ``href`` (``from``, ``to``, ``by``, ``values``), and the ``href`` of an
    ``<?xml-stylesheet?>``; character references resolved first,
    as a browser reads them. A frame's ``srcdoc`` is a page of its own, and so is a ``data:`` URL of HTML,
    of any XML MIME type (SVG, XHTML, MathML…) or of CSS (:func:`_data_url_references`): what they request
    counts too (one nested past :data:`_NESTING` levels is
    itself reported, unread). A URL names another host
    when, its tabs and newlines dropped, it starts with ``//`` or a scheme and ``//`` (backslashes read as
    slashes) or with ``http:``, ``https:``, ``ftp:``, ``ws:`` or ``wss:``, the local server (127.0.0.1,
    localhost) aside.

    The page is read as a browser reads it (:func:`~site_build.glossary.elements`), in one pass: nothing in
    a comment (bogus ones too: ``<!…>``, ``<?…>``), in CDATA or in the text of a raw text element (a
    script, a textarea, a title…) is a tag, so a quote written there hides no later tag; a ``style``
    element's CSS runs from the '>' that ends its start tag as HTML reads it (quotes and all) to its end
    tag (``</style`` and a blank, '/' or '>'; one never closed to the end), or, as an SVG element (in
    ``<svg>``, or in an XML document), is its text and CDATA up to ``</style``. An XML document (``xml``: its
    reader knows, as a browser does, by what it is: a file by its suffix, ``.svg`` or ``.xml``; a ``data:``
    URL by its MIME type, any XML one; when ``xml`` is None, a text that starts as no HTML page does,
    :data:`_XML_START`) is foreign content throughout: no element is raw text, and each element is read by
    its local name, whatever prefix it has (``<s:style>``, ``<h:meta>``: a prefix may be bound to SVG's or
    XHTML's namespace). A declaration of a
    document's own DTD (``<!ENTITY``, ``<!ATTLIST``: an entity expanded in an attribute, a default
    attribute; ``<!ELEMENT``, ``<!NOTATION``) may hide a URL: an XML document that holds one is reported
    (the first, unread; in an HTML page it means nothing, and a script's text may well hold one), and so
    is one whose doctype holds a '>' in a quoted literal (XML reads on past it, HTML's reading stops).
    ``_encoding`` is the codec the text was read in: a ``data:`` style sheet it links with no encoding of
    its own falls back to it (CSS Syntax's environment encoding). ``_refused``: where to add what the
    fail-closed layer refuses in the text and in every document it holds (:func:`refusals`); None: not
    looked for."""
    if css:
        return remote_references_in_css(text, _encoding=_encoding, _refused=_refused)
    found: list[str] = []
    here = 0                        # where the tag being read starts, to say where a nested refusal stands
    lines = _Lines(text)

    def add(url: str, sheet: bool = False) -> None:
        if _names_another_host(url):
            found.append(url.strip())
        else:
            found.extend(_data_url_references(url, _depth + 1, _encoding, _nested(_refused, lines, here), sheet))

    def css_of(css_text: str) -> list[str]:
        return remote_references_in_css(css_text, _refused=_nested(_refused, lines, here))

    if xml is None:
        xml = _XML_START.match(text) is not None
    if _refused is not None:
        _refuse_markup(text, xml, _refused, _depth)
    if xml and (m := _DTD_DECLARATION.search(text)) is not None:   # what it may hold is not read: reported
        found.append(text[m.start():m.start() + 80])
    html_css = None                 # where the text of the HTML style element being read starts
    svg_css: list[str] | None = None  # the text read so far of the SVG style element being read
    css_at = 0                      # where its text goes on
    for start, end, closing, name, self_closing, foreign in elements(text, xml):
        if xml:                     # an element of SVG or XHTML under any prefix (``<s:style>``) is read as one
            name = _local_name(name)
        if html_css is not None:    # a raw text element: its text runs to the next token, its end tag
            found += css_of(text[html_css:start])
            html_css = None
        if svg_css is not None:     # its text and its CDATA sections, up to its end tag
            svg_css.append(html.unescape(text[css_at:start]))
            if text.startswith(_CDATA, start) and text.endswith("]]>", start, end):
                svg_css.append(text[start + len(_CDATA):end - 3])
            css_at = end
            if closing and name == "style":
                found += css_of("".join(svg_css))
                svg_css = None
        if xml and not name and _DOCTYPE.match(text, start) and _cut_in_a_literal(text[start:end]):
            found.append(text[start:start + 80])     # it ends further on, where XML reads it: reported unread
        if not name or closing:
            continue
        here = start
        attributes = attributes_of(text[start:end])
        # a style sheet a link loads: a page in quirks mode applies it whatever its MIME type
        sheet = name == "link" and "stylesheet" in _ascii_lower(attributes.get("rel", "")).split()
        for key, value in attributes.items():
            if _holds_a_url(key):
                add(value, sheet and key == "href")
            elif key in ("srcset", "imagesrcset"):
                for url in srcset_urls(value):
                    add(url)
            elif key in ("ping", "attributionsrc"):      # space-separated URLs, each fetched
                for url in value.split():
                    add(url)
            elif key == "style" or key in _CSS_ATTRIBUTES:
                found += css_of(value)
            elif key == "srcdoc":
                found += (remote_references(value, _depth=_depth + 1, xml=False,
                                            _refused=_nested(_refused, lines, here, "the srcdoc page"))
                          if _depth < _NESTING else [value[:80]])
        if name == "meta" and _ascii_lower(attributes.get("http-equiv", "").strip(_ASCII_BLANKS)) == "refresh":
            add(_refresh_url(attributes.get("content", "")))
        if name == "set" or name.startswith("animate"):
            target = _ascii_lower(attributes.get("attributename", "").strip(_ASCII_BLANKS))
            for value in [attributes.get(key, "") for key in ("from", "to", "by")] + (
                    attributes.get("values", "").split(";")):
                if _holds_a_url(target):
                    add(value.strip())
                elif target == "style" or target in _CSS_ATTRIBUTES:
                    found += css_of(value)
        if name == "style" and not foreign:
            html_css = end
        elif name == "style" and not self_closing:
            svg_css, css_at = [], end
    if html_css is not None:        # never closed: a browser reads the rest as its CSS
        found += css_of(text[html_css:])
    if svg_css is not None:
        found += css_of("".join(svg_css) + html.unescape(text[css_at:]))
    at = 0
    while (m := _STYLESHEET_PI.search(text, at)) is not None:
        close = text.find("?>", m.end())
        content = text[m.end():] if close < 0 else text[m.end():close]
        here = m.start()
        types = _pseudo_attribute(content, "type")
        for kind in types:          # a browser applies a sheet of type text/css (or none), and runs an XSLT one
            if kind not in ("", "text/css") and _refused is not None:
                _refused.append(f"refused: an <?xml-stylesheet?> of type {kind!r} at {lines(here)}: a browser "
                                "shows what an XSLT transform writes, which the check does not read")
        for label in _pseudo_attribute(content, "charset"):
            if _label(label) not in _UTF8_LABELS and _refused is not None:
                _refused.append(f"refused: an <?xml-stylesheet?> naming the encoding {label!r} at {lines(here)}: "
                                "a browser decodes the sheet in it, the check as UTF-8")
        for href in _pseudo_attribute(content, "href"):
            add(href, all(kind in ("", "text/css") for kind in types))
        if close < 0:
            break
        at = close + 2
    return found


def _pseudo_attribute(content: str, name: str) -> list[str]:
    """The values of every pseudo-attribute ``name`` of the processing instruction whose content (past its
    target) is ``content``, read broadly (wherever ``name=`` follows a blank, a quoted value's text too),
    their quotes off and their character references resolved."""
    return [html.unescape(v[1:-1] if v[:1] in "\"'" else v)
            for v in re.findall(rf"""(?<!\S){name}\s*=\s*("[^"]*"|'[^']*'|[^\s"'?]+)""", content, re.I | re.A)]


#: an XML document's style-sheet processing instruction (an SVG page's ``<?xml-stylesheet href=…?>``),
#: which a browser fetches; read wherever it stands (in an HTML page it is a comment, reported all the same)
_STYLESHEET_PI = re.compile(r"<\?xml-stylesheet(?=[\t\n\r ?]|\Z)", re.I | re.A)


def remote_references_in_css(css: str, _depth: int = 0, _encoding: str = "utf-8",
                             _refused: list[str] | None = None) -> list[str]:
    """The URLs of other hosts that the CSS ``css`` fetches, read token by token as CSS reads it (a
    comment is no request, a string is no comment): a ``url()``, quoted or not; the string of an
    ``@import``, after blanks, comments or nothing; every string of an ``image-set()`` (or
    ``-webkit-image-set()``). Any other string that names another host is refused (into ``_refused``):
    a custom property's string becomes a URL wherever ``var()`` puts it (``--u:"//host/x.png"`` in
    ``image-set(var(--u))``). Escapes are resolved as CSS resolves them, in a URL (``\\2f`` is a '/') and
    in a function's or an at-rule's own name alike (``u\\rl(`` and ``\\75rl(`` are ``url(``, ``@imp\\ort``
    is ``@import``): a name is compared once its escapes are read. One pass, each token read from where
    the last ended. ``_encoding``: the codec the sheet was read in, which a ``data:`` sheet it imports with
    no encoding of its own falls back to. ``_refused``: where to add what the fail-closed layer refuses in
    the ``data:`` documents the sheet loads (:func:`refusals`); None: not looked for."""
    css = _CSS_NEWLINES.sub("\n", css).replace("\0", "\ufffd")     # CSS's preprocessing of its input
    found: list[str] = []
    expect = False          # after ``url(`` or ``@import``: the next string is a URL
    importing = False       # after ``@import`` (and its ``url(``): that URL is a style sheet
    depth = 0               # inside an ``image-set(``: every string is a URL
    at, n = 0, len(css)
    while at < n:
        m = _CSS_TOKEN.match(css, at)
        at = m.end()
        token, string, unquoted = m[0], m["string"], None
        if m["name"] is not None:
            name = _ascii_lower(_css_unescape(m["name"]))
            if m["at"]:
                token = "@" + name
            elif m["paren"]:
                token = name + "("
                if name == "url" and (value := _CSS_URL_VALUE.match(css, at)) is not None:
                    unquoted, at = value[1], value.end()
                    if depth:           # its ')' is still to come, and closes it as a function's does
                        depth += 1
        if string is not None or unquoted is not None:
            url = _css_unescape(unquoted if string is None else
                                string[1:-1] if len(string) > 1 and string[-1] == string[0] else string[1:])
            if (string is None or expect or depth) and _names_another_host(url):
                found.append(url.strip())
            elif string is not None and _refused is not None and _names_another_host(url):
                # a string no URL's place: text (content: "…"), or a custom property's, which becomes a
                # URL wherever var() puts it (--u:"//host/x.png" in image-set(var(--u)))
                _refused.append(f"refused: the CSS string {url.strip()[:60]!r} names another host: a custom "
                                "property's string becomes a URL where var() puts it")
            elif string is None or expect or depth:
                found.extend(_data_url_references(url, _depth + 1, _encoding, _refused, importing))
            expect = importing = False
        elif token.startswith("/*") or token.isspace():
            continue
        else:
            low = _ascii_lower(token)
            expect = low in ("url(", "@import")
            importing = low == "@import" or importing and low == "url("
            if low.endswith("image-set("):
                depth += 1
            elif depth and low.endswith("("):
                depth += 1
            elif depth and token == ")":
                depth -= 1
    return found


#: how deep a ``srcdoc`` or a ``data:`` URL may nest in another before the check reports it unread
_NESTING = 16
#: what a URL's parser drops from its end: C0 controls and blanks
_C0_OR_SPACE = "".join(map(chr, range(0x21)))
#: HTTP's blanks, which a MIME type's parser strips, and the characters of its tokens (a type, a subtype, a
#: parameter's name) and of a parameter's value
_HTTP_BLANKS = "\t\n\r "
_HTTP_TOKEN = re.compile(r"[-!#$%&'*+.^_`|~0-9A-Za-z]+")
_QUOTED_STRING_TOKEN = re.compile(r"[\t\x20-\x7e\x80-\xff]*")
#: a MIME type's parameter's name, and an unquoted or quoted value's characters, up to their end
_PARAMETER_NAME = re.compile(r"[^;=]*")
_QUOTED_RUN = re.compile(r'[^"\\]*')


#: the byte order marks a browser reads before anything else (UTF-32's are no encoding a browser knows:
#: ``FF FE 00 00`` is UTF-16LE's mark and a NUL, ``00 00 FE FF`` no mark at all)
_BOMS = ((b"\xef\xbb\xbf", "utf-8"), (b"\xfe\xff", "utf-16-be"), (b"\xff\xfe", "utf-16-le"))
#: the ``charset`` labels (the Encoding Standard's, matched in any case) of the encodings a browser reads
#: ASCII's characters differently from UTF-8 in: UTF-16 (two bytes each) and the multi-byte encodings whose
#: second byte may be an ASCII byte, or whose escapes switch ASCII off and on. Every other label a browser
#: knows names an encoding that reads every ASCII byte as ASCII, as UTF-8 does; one a browser does not know
#: is ignored (a page in ``charset=utf-7``, ``cp037`` or ``unicode_escape`` is read in the default): for
#: both, UTF-8 reads what HTML and CSS make of the page. (The fail-closed layer refuses every label but
#: UTF-8's and ASCII's all the same, :func:`_not_utf8`.)
_CHARSETS = {
    **dict.fromkeys(("unicodefffe", "utf-16be"), "utf-16-be"),
    **dict.fromkeys(("csunicode", "iso-10646-ucs-2", "ucs-2", "unicode", "unicodefeff", "utf-16",
                     "utf-16le"), "utf-16-le"),
    **dict.fromkeys(("csshiftjis", "ms932", "ms_kanji", "shift-jis", "shift_jis", "sjis", "windows-31j",
                     "x-sjis"), "cp932"),
    **dict.fromkeys(("chinese", "csgb2312", "csiso58gb231280", "gb2312", "gb_2312", "gb_2312-80", "gbk",
                     "iso-ir-58", "x-gbk", "gb18030"), "gb18030"),
    **dict.fromkeys(("big5", "big5-hkscs", "cn-big5", "csbig5", "x-x-big5"), "big5hkscs"),
    **dict.fromkeys(("cseuckr", "csksc56011987", "euc-kr", "iso-ir-149", "korean", "ks_c_5601-1987",
                     "ks_c_5601-1989", "ksc5601", "ksc_5601", "windows-949"), "cp949"),
    **dict.fromkeys(("cseucpkdfmtjapanese", "euc-jp", "x-euc-jp"), "euc_jp"),
    **dict.fromkeys(("csiso2022jp", "iso-2022-jp"), "iso2022_jp"),
}


def _mime_type(text: str) -> tuple[str, dict[str, str]] | None:
    """The essence (``type/subtype``, in ASCII lower case) and the parameters (their names in ASCII lower
    case, the first of each name) of the MIME type ``text``, read as the MIME Sniffing standard's parser
    reads it; None where it fails (a type or subtype empty or not an HTTP token: a browser then reads the
    data as ``text/plain``). Each step reads on from where the last ended: linear."""
    text = text.strip(_HTTP_BLANKS)
    kind, slash, rest = text.partition("/")
    subtype = rest.partition(";")[0].rstrip(_HTTP_BLANKS)
    if not slash or not _HTTP_TOKEN.fullmatch(kind) or not _HTTP_TOKEN.fullmatch(subtype):
        return None
    parameters: dict[str, str] = {}
    n = len(text)
    at = text.find(";", len(kind) + 1)                 # at each parameter's ';'
    while 0 <= at < n:
        at += 1
        while at < n and text[at] in _HTTP_BLANKS:
            at += 1
        name_end = _PARAMETER_NAME.match(text, at).end()
        name, at = _ascii_lower(text[at:name_end]), name_end
        if at >= n:
            break
        if text[at] == ";":
            continue
        at += 1                                        # past the '='
        if at >= n:
            break
        if text[at] == '"':                            # a quoted string, its escapes read; what follows it ignored
            value, at = _quoted_string(text, at)
            end = text.find(";", at)
            at = n if end < 0 else end
        else:
            end = text.find(";", at)
            end = n if end < 0 else end
            value, at = text[at:end].rstrip(_HTTP_BLANKS), end
            if not value:
                continue
        if name and _HTTP_TOKEN.fullmatch(name) and _QUOTED_STRING_TOKEN.fullmatch(value):
            parameters.setdefault(name, value)
    return _ascii_lower(f"{kind}/{subtype}"), parameters


def _quoted_string(text: str, at: int) -> tuple[str, int]:
    """The value of the HTTP quoted string that starts at ``text[at]`` (a '"'), its backslash escapes
    read (one never closed runs to the end), with where it ends."""
    value, at, n = [], at + 1, len(text)
    while True:
        run_end = _QUOTED_RUN.match(text, at).end()
        value.append(text[at:run_end])
        at = run_end
        if at >= n:
            break
        quote_or_backslash, at = text[at], at + 1
        if quote_or_backslash == '"':
            break
        if at >= n:                                    # a backslash last: itself
            value.append("\\")
            break
        value.append(text[at])
        at += 1
    return "".join(value), at


def _data_encoding(parameters: dict[str, str], data: bytes) -> tuple[str, int]:
    """The encoding a browser reads the ``data:`` URL's ``data`` in (``parameters``, its media type's):
    the one its byte order mark names, else its ``charset`` parameter's (its label's ASCII blanks aside,
    in ASCII case), else UTF-8 (see :data:`_CHARSETS`); with where the text starts, past the mark."""
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            return encoding, len(bom)
    if "charset" in parameters:
        return _CHARSETS.get(_ascii_lower(parameters["charset"].strip(_ASCII_BLANKS)), "utf-8"), 0
    return "utf-8", 0


def _is_xml_mime_type(essence: str) -> bool:
    """Whether the MIME type of essence ``essence`` is an XML MIME type, which a browser renders as an XML
    document: any ``…/…+xml`` (``image/svg+xml``, ``application/xhtml+xml``, ``application/mathml+xml``…),
    ``text/xml``, ``application/xml`` and ``text/xsl`` (which browsers render as XML too)."""
    return essence.endswith("+xml") or essence in ("text/xml", "application/xml", "text/xsl")


def _data_url_references(url: str, depth: int, environment: str = "utf-8",
                         _refused: list[str] | None = None, sheet: bool = False) -> list[str]:
    """The URLs of other hosts that the ``data:`` URL ``url`` requests when a browser loads it as a page
    (an HTML page, or an XML document: any XML MIME type, :func:`_is_xml_mime_type`) or a style sheet (none
    when it is no ``data:`` URL or holds anything else), read as the Fetch standard's ``data:`` URL
    processor reads it: the URL as its parser reads it (blanks and C0 controls at either end and every tab
    and newline dropped, the fragment after the first '#' left out), its media type up to the first ','
    (``;base64`` at its end, in ASCII case only, makes the data base64), the data percent-decoded and read
    in the encoding a browser reads it in (:func:`_data_encoding`): a UTF-16 page fetches as a UTF-8 one
    does. With neither a byte order mark nor a ``charset`` parameter, a style sheet's encoding is the one
    its ``@charset "…";`` rule names, else ``environment`` (the codec of the document that links or imports
    it), and an XML document's the one its XML declaration names (:func:`_declared_label`), read in
    Python's codec of that name (:func:`_codec_for`); a label Python knows no text codec for is reported
    (the URL, unread). One reading of each document: linear. ``sheet``: the URL is a style sheet a link, an
    ``@import`` or an ``<?xml-stylesheet?>`` loads, which a page in quirks mode (no doctype) applies whatever
    its MIME type: read as CSS whatever it is (and refused when it is not ``text/css``)."""
    url = _TAB_OR_NEWLINE.sub("", _LEADING.sub("", url)).rstrip(_C0_OR_SPACE)
    comma = url.find(",")
    if _ascii_lower(url[:5]) != "data:" or comma < 0:
        return []
    media_type, data_text = url[5:comma].strip(_ASCII_BLANKS), url[comma + 1:].partition("#")[0]
    base64_data = _ascii_lower(media_type[-6:]) == "base64" and media_type[:-6].rstrip(" ").endswith(";")
    if base64_data:
        media_type = media_type[:-6].rstrip(" ")[:-1]
    parsed = _mime_type("text/plain" + media_type if media_type.startswith(";") else media_type)
    if parsed is None and not sheet:                   # read as text/plain: no page
        return []
    essence, parameters = ("text/plain", {}) if parsed is None else parsed
    if sheet and essence != "text/css":                # a page in quirks mode applies it as CSS all the same
        if _refused is not None:
            _refused.append(f"refused: the data: style sheet {url[:60]!r} is of the MIME type {essence!r}, "
                            "which a page in quirks mode applies as CSS, and a page in standards mode not at all")
        essence = "text/css"
    if essence not in ("text/html", "text/css") and not _is_xml_mime_type(essence):
        return []
    if depth > _NESTING:
        return [url[:80]]
    data = urllib.parse.unquote_to_bytes(data_text)
    if base64_data:
        if _refused is not None and not _BASE64_TEXT.fullmatch(data):
            _refused.append(f"refused: the data: document {url[:60]!r} holds characters base64 has no place "
                            "for (Python's decoder skips them, a browser's fails)")
        try:
            data = base64.b64decode(re.sub(rb"[\s]", b"", data) + b"==", validate=False)
        except (binascii.Error, ValueError):
            if _refused is not None:
                _refused.append(f"refused: the data: document {url[:60]!r} is base64 that does not decode")
            return []
    if _refused is not None and (why := _not_utf8(essence, parameters, data)) is not None:
        _refused.append(f"refused: the data: document {url[:60]!r} {why}; the check reads every data: "
                        "document as UTF-8, and a browser's decoder of another encoding may read its "
                        "markup differently")
    encoding, start = _data_encoding(parameters, data)
    if start == 0 and "charset" not in parameters and essence != "text/html":
        label = _declared_label(data, essence == "text/css")
        if label is not None:
            encoding = _codec_for(label)
            if encoding is None:                       # no codec Python knows: reported unread
                return [url[:80]]
        elif essence == "text/css":
            encoding = environment
    try:
        text = data[start:].decode(encoding, "replace")
    except (LookupError, UnicodeError, TypeError, ValueError):         # a codec that cannot read it
        return [url[:80]]
    # what this document links falls back to its encoding (UTF-16's aside: read as UTF-8, as before)
    inner = "utf-8" if encoding.startswith("utf-16") else encoding
    if essence == "text/css":
        return remote_references_in_css(text, depth, inner, _refused)
    return remote_references(text, _depth=depth, xml=essence != "text/html", _encoding=inner,
                             _refused=None if _refused is None else _Within(_refused,
                                                                            f"the data: document {url[:60]!r}"))


#: a style sheet's ``@charset`` rule, as CSS Syntax reads it: these exact bytes at the very start, its
#: label up to the first ``";`` in the first 1024 bytes
_CHARSET_RULE = b'@charset "'
#: an XML declaration's ``encoding``, at the start of the document
_XML_DECLARATION = re.compile(rb"""<\?xml[\t\n\r ]+version[\t\n\r ]*=[\t\n\r ]*(?:"[^"]*"|'[^']*')"""
                              rb"""[\t\n\r ]+encoding[\t\n\r ]*=[\t\n\r ]*(?:"([^"]*)"|'([^']*)')""")


def _declared_label(data: bytes, css: bool) -> str | None:
    """The encoding label the ``data`` (no byte order mark) declares itself in: a style sheet's (``css``)
    ``@charset "…";`` rule, an XML document's XML declaration; None when it declares none."""
    head = data[:1024]
    if css:
        if not head.startswith(_CHARSET_RULE):
            return None
        end = head.find(b'";', len(_CHARSET_RULE))
        return None if end < 0 else head[len(_CHARSET_RULE):end].decode("latin-1")
    m = _XML_DECLARATION.match(head)
    if m is None:
        return None
    return (m[1] if m[1] is not None else m[2]).decode("latin-1")


def _codec_for(label: str) -> str | None:
    """The codec to read a document in whose own declaration names ``label``: the browser's for a label
    of :data:`_CHARSETS` (UTF-16 read as UTF-8, as CSS Syntax says, and as a declaration readable in ASCII
    shows), else Python's text codec of that name; None when Python knows no text codec of that name."""
    label = _ascii_lower(label.strip(_ASCII_BLANKS))
    if label in _CHARSETS:
        codec = _CHARSETS[label]
        return "utf-8" if codec.startswith("utf-16") else codec
    try:
        info = codecs.lookup(label)
    except (LookupError, ValueError):
        return None
    if not getattr(info, "_is_text_encoding", True):   # base64, zlib, rot13…: no text encoding
        return None
    return "utf-8" if info.name in ("utf-8", "ascii") else info.name


def _cut_in_a_literal(doctype: str) -> bool:
    """Whether the doctype ``doctype``, read to its first '>' as HTML reads it, ends inside a quoted
    literal (``<!DOCTYPE svg PUBLIC "a>…``), where XML reads on to the literal's closing quote."""
    quote = ""
    for c in doctype:
        if quote:
            quote = "" if c == quote else quote
        elif c in "\"'":
            quote = c
    return bool(quote)


def _holds_a_url(attribute: str) -> bool:
    """Whether the attribute ``attribute`` (its name in lower case) holds one URL a browser fetches,
    follows or posts to (:data:`_URL_ATTRIBUTES`): an ``href`` or a ``src`` under any prefix counts, since
    an XML document may bind any prefix to XLink's namespace (``l:href``)."""
    return attribute in _URL_ATTRIBUTES or attribute.rpartition(":")[2] in ("href", "src")


#: the newlines CSS reads as one (its input is preprocessed: CR LF, CR and FF become LF)
_CSS_NEWLINES = re.compile(r"\r\n?|\f")
#: the code points of an identifier as CSS reads them: a letter, digit, '_', '-' or any non-ASCII code
#: point, or an escape (a backslash and 1 to 6 hex digits and one blank, or a backslash and any other
#: character but a newline); each alternative's first character tells which one it is, so no backtracking
_CSS_NAME = r"""(?:[-\w]|[^\x00-\x7f]|\\[0-9a-f]{1,6}[ \t\n]?|\\[^\n0-9a-f])+"""
#: CSS as its tokenizer splits it, enough to find what fetches: a comment (closed or running to the
#: end), a string (quotes kept; a string cut by a newline ends there), an at-keyword or an identifier
#: (its escapes as written, with the '(' that makes it a function), blanks, or one other character
_CSS_TOKEN = re.compile(r"""/\*.*?(?:\*/|\Z)"""
                        r"""|(?P<string>"(?:[^"\\\n]|\\.)*(?:"|(?=\n)|\Z)|'(?:[^'\\\n]|\\.)*(?:'|(?=\n)|\Z))"""
                        rf"""|(?P<at>@)?(?P<name>{_CSS_NAME})(?P<paren>\()?|\s+|.""", re.I | re.S | re.A)
#: an unquoted ``url(…)``'s value, after its ``url(`` and blanks: a hex escape takes the one blank after
#: it with it (``\\74 .x`` is ``t.x``, CSS Syntax's "consume an escaped code point"), as an identifier's does
_CSS_URL_VALUE = re.compile(r"""\s*((?:[^)"'\s\\]|\\[0-9a-f]{1,6}[ \t\n]?|\\[^0-9a-f])+)""", re.I | re.S | re.A)
_CSS_ESCAPE = re.compile(r"\\(?:([0-9a-f]{1,6})[ \t\n\r\f]?|(\n)|(.))", re.I | re.S | re.A)


def _css_unescape(value: str) -> str:
    """``value`` with its CSS escapes resolved: a hex escape, an escaped newline (dropped), any other
    escaped character (itself)."""
    def one(m: re.Match) -> str:
        if m[1]:
            code = int(m[1], 16)
            return chr(code) if 0 < code <= 0x10FFFF and not 0xD800 <= code <= 0xDFFF else "\ufffd"
        return "" if m[2] else m[3]
    return _CSS_ESCAPE.sub(one, value)


# The fail-closed layer. What follows does not try to read any page better: it refuses, by name and
# place, the markup where the reading above and a browser's might part, so that a fetch hidden by such a
# difference is reported all the same (the module's docstring says which and why).

#: the HTML elements a browser reads in ways the tokenizer here follows only in part, or not at all
#: (``<plaintext>`` swallows the rest of the page; ``<xmp>``, ``<noembed>``, ``<noframes>`` and ``<noscript>``
#: are raw text or markup by browser setting; ``<listing>`` drops a newline and breaks out of foreign content)
_REFUSED_ELEMENTS = frozenset({"plaintext", "xmp", "noembed", "noframes", "noscript", "listing"})
#: where a browser moves every other start tag out of the table, before it (HTML's foster parenting)
_TABLE_CONTEXTS = frozenset({"table", "tbody", "thead", "tfoot", "tr", "colgroup"})
#: the start tags a table, a row group or a row holds in place
_IN_TABLE = frozenset({"caption", "colgroup", "col", "tbody", "thead", "tfoot", "tr", "td", "th",
                       "script", "template", "style"})
#: what a ``<select>`` may hold here: what every browser's parser keeps there alike (browsers that parse a
#: customizable select keep much more, older ones drop it)
_IN_SELECT = frozenset({"option", "optgroup", "hr"})
#: the elements that load a URL as a document of its own, and the attributes that name it (an embed's
#: legacy ``code`` too: chromium loads it)
_FRAMES = {"iframe": ("src",), "frame": ("src",), "object": ("data",), "embed": ("src", "code"),
           "portal": ("src",), "fencedframe": ("src",)}
#: the text that is no markup to the tokenizer: HTML's raw text and escapable raw text elements, and
#: ``<plaintext>``, in HTML; a script's or a style's text in SVG (or an XML document) too
_INERT_HTML = RAW_TEXT | {"plaintext"}
_INERT_FOREIGN = frozenset({"script", "style"})
#: the labels of UTF-8 (the Encoding Standard's) and of ASCII, in ASCII lower case
_UTF8_LABELS = frozenset({"unicode-1-1-utf-8", "unicode11utf8", "unicode20utf8", "utf-8", "utf8",
                          "x-unicode20utf8", "us-ascii", "ascii"})
#: what base64 data may hold that every decoder reads alike: its alphabet, padding and blanks
_BASE64_TEXT = re.compile(rb"[A-Za-z0-9+/=\t\n\f\r ]*")
#: what names another host in text that the tokenizer reads as no markup: where a value may start (the
#: text's start, a blank or a C0 control, which a URL's parser drops, '=', a quote, '(', ',' or ';'), a
#: scheme (or none) and two slashes or backslashes, or a special scheme, and any more slashes, right
#: before what may start an authority (not a blank, a quote, '<', '>', '(', ')', '#', '?'…); the host
#: that follows must hold a letter, a digit or a non-ASCII character (:func:`_remote_looking`), so that
#: ``*/\n.x`` (a CSS comment's end), ``'\\['`` (a TeX delimiter in a script) and ``//@ sourceMappingURL``
#: are none
_REMOTE_LOOKING = re.compile(r"(?:(?<=[\x00-\x20=\"'`(,;])|^)(?:(?:[a-z][a-z0-9+.-]*:)?[/\\]{2}"
                             r"|(?:https?|ftp|wss?):)[/\\]*(?=[^\s/\\\"'<>()`{}|^#?])", re.I | re.A)
#: a host worth the name: a letter, a digit or a non-ASCII character in it
_HOST_CHARACTER = re.compile(r"[A-Za-z0-9]|[^\x00-\x7f]")
#: the names of XML namespaces, which a document writes as URLs and no browser fetches
_NAMESPACES = frozenset({"http://www.w3.org/2000/svg", "http://www.w3.org/1999/xlink",
                         "http://www.w3.org/1999/xhtml", "http://www.w3.org/1998/Math/MathML",
                         "http://www.w3.org/XML/1998/namespace", "http://www.w3.org/2000/xmlns/"})
#: where such a URL ends, for the report; where a ``data:`` URL there ends (a quoted one may hold blanks)
_URL_END = re.compile(r"[\s\"'<>()`]")
#: where such a URL's authority ends: where the URL does, or at a '/', '\\', '?' or '#'
_AUTHORITY_STOP = re.compile(r"[\s\"'<>()`/\\?#]")
_LONGEST_NAMESPACE = max(map(len, _NAMESPACES))
_DATA_URL_END = re.compile(r"[\"'<>()`]")
#: a URL that runs script where it is followed (and so may fetch anything): read as inert text
_SCRIPT_URL = re.compile(r"[\x00-\x20]*(?:j[\t\n\r]*a[\t\n\r]*v[\t\n\r]*a[\t\n\r]*|v[\t\n\r]*b[\t\n\r]*)"
                         r"s[\t\n\r]*c[\t\n\r]*r[\t\n\r]*i[\t\n\r]*p[\t\n\r]*t[\t\n\r]*:", re.I | re.A)
#: a ``data:`` URL of a document (HTML, CSS, any XML MIME type) in base64, whose URLs no reading of the
#: text shows: read as the document it is, when it stands in text the tokenizer reads as no markup
_DATA_DOCUMENT = re.compile(r"data:[\t\n\f\r ]*(?:text/html|text/css|text/xml|text/xsl|application/xml"
                            r"|[a-z0-9!#$&^_.+-]+/[a-z0-9!#$&^_.+-]*\+xml)", re.I | re.A)
#: the encoding labels a document may give itself, read broadly (any case, anywhere in it): a ``charset``
#: in a ``<meta>`` or a content type, a sheet's ``@charset``, an XML declaration's ``encoding``
_HTML_CHARSET = re.compile(rb"""charset[\t\n\f\r ]*=[\t\n\f\r ]*["']?([^"'\t\n\f\r ;>/]*)""", re.I)
_CSS_CHARSET = re.compile(rb"""@charset[\t\n\f\r ]*["']([^"']*)""", re.I)
#: (read in one pass, each piece once: an ``encoding`` counts after a ``<?xml`` with no '>' between them)
_XML_ENCODING = re.compile(rb"""(<\?xml)|(>)|encoding[\t\n\r ]*=[\t\n\r ]*["']?([^"'?\t\n\r >]*)""", re.I)
#: how many refusals one document reports before it says only that there are more
_MOST_REFUSALS = 20


class _Lines:
    """Where a place of ``text`` stands, as a person finds it: line and column, both from 1. The lines'
    starts are found once, when first asked (a page with many refusals is still read once)."""

    def __init__(self, text: str):
        self.text, self.starts = text, None

    def __call__(self, at: int) -> str:
        if self.starts is None:
            self.starts = [0] + [m.end() for m in re.finditer("\n", self.text)]
        line = bisect.bisect_right(self.starts, at)
        return f"line {line}, column {at - self.starts[line - 1] + 1}"


class _Within:
    """The refusals of a document held in another (a ``data:`` URL, a ``srcdoc``), added to the outer
    document's with where it stands there: ``what`` and, when ``lines`` (the outer text's) is given, the
    place ``at`` in it (worked out only when there is something to report)."""

    def __init__(self, outer, what: str, lines: _Lines | None = None, at: int = 0):
        self.outer, self.what, self.lines, self.at = outer, what, lines, at

    def append(self, message: str) -> None:
        where = self.what if self.lines is None else f"{self.what} at {self.lines(self.at)}"
        self.outer.append(f"{message} [in {where}]")


def _nested(refused, lines: _Lines, at: int, what: str = "the tag"):
    """Where a document nested in the tag at ``at`` of the text of ``lines`` adds its refusals (None: not
    looked for)."""
    return None if refused is None else _Within(refused, what, lines, at)


def _label(raw: bytes | str) -> str:
    """An encoding label as a browser compares it: its ASCII blanks aside, in ASCII lower case."""
    if isinstance(raw, bytes):
        raw = raw.decode("latin-1")
    return _ascii_lower(raw.strip(_ASCII_BLANKS))


def _not_utf8(essence: str, parameters: dict[str, str], data: bytes) -> str | None:
    """Why a browser might read the ``data:`` document ``data`` (of MIME type ``essence``, its parameters
    ``parameters``) in an encoding other than UTF-8 (or ASCII), or None when it cannot: a byte order mark
    other than UTF-8's, a ``charset`` parameter, an ``@charset``, an XML declaration's ``encoding`` or a
    ``<meta>`` charset that names another encoding (or one a browser does not know: ``utf-7``), bytes that
    are no UTF-8 (a browser may then guess an encoding), or an ESC byte (ISO-2022-JP's escapes, which a
    browser's guess may take for that encoding)."""
    if data.startswith((b"\xfe\xff", b"\xff\xfe")):
        return "starts with a UTF-16 byte order mark"
    if "charset" in parameters and _label(parameters["charset"]) not in _UTF8_LABELS:
        return f"names the charset {parameters['charset']!r}"
    for label in _declared_labels(essence, data):
        if _label(label) not in _UTF8_LABELS:
            return f"declares the encoding {label.decode('latin-1')!r}"
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return "holds bytes that are no UTF-8"
    if b"\x1b" in data:
        return "holds an ESC byte (an ISO-2022 escape)"
    return None


def _declared_labels(essence: str, data: bytes):
    """Every encoding label the document ``data`` of MIME type ``essence`` gives itself, read broadly (any
    case, anywhere): a style sheet's ``@charset``, an HTML page's ``charset=``, an XML document's
    ``encoding`` in an ``<?xml`` declaration (one pass: from each ``<?xml`` the declaration runs to its
    first '>', read once however many ``<?xml`` start in it)."""
    if essence == "text/css" or essence == "text/html":
        for m in (_CSS_CHARSET if essence == "text/css" else _HTML_CHARSET).finditer(data):
            yield m[1]
        return
    declaration = False
    for m in _XML_ENCODING.finditer(data):
        if m[1] is not None or m[2] is not None:
            declaration = m[1] is not None
        elif declaration:
            yield m[3]


def _remote_looking(region: str, depth: int = 0) -> str | None:
    """The first URL of another host written anywhere in ``region``, text the tokenizer reads as no
    markup, as it would fetch if a browser read the text as markup, the names of XML namespaces aside
    (:data:`_NAMESPACES`); else the first ``data:`` URL of a document in base64
    (:func:`_base64_document_in`) that, read as the document it is, loads from another host or holds
    what this layer refuses (read once, as nested ``depth`` deep: one nested too deep is reported, as
    :func:`remote_references` reports it); None when there is none. The text is read with its character references
    resolved, again and again as a ``srcdoc`` written there would be, up to :data:`_NESTING` times (a text
    still escaped past that is itself reported); each time as it is, with its tabs and newlines dropped
    (as a URL's parser drops them), and percent-decoded (as a ``data:`` document written there would be)."""
    region = html.unescape(region)
    for level in range(_NESTING):
        readings = [region, _TAB_OR_NEWLINE.sub("", region)]
        if "%" in region:
            readings.append(urllib.parse.unquote(readings[1]))
        for reading in readings:
            if (url := _remote_url_in(reading)) is not None:
                return url
        # a base64 document is read at the first level only: once each, so that nesting costs no more
        # than the nested text's length (one escaped deeper is no base64 a browser decodes: refused there)
        if level == 0 and (url := _base64_document_in(readings[1], depth)) is not None:
            return url
        unescaped = html.unescape(region)
        if unescaped == region:
            return None
        region = unescaped
    return region[:80]


class _Next:
    """Where ``pattern`` next matches in ``text`` at or after a place, for places asked in an order that
    never goes back: a search is made again only once the place passes the last match found, so that all
    the searches together read the text once (``len(text)`` when there is none)."""

    def __init__(self, pattern: re.Pattern, text: str):
        self.pattern, self.text, self.found = pattern, text, -1

    def __call__(self, at: int) -> int:
        if self.found < at:
            m = self.pattern.search(self.text, at)
            self.found = len(self.text) if m is None else m.start()
        return self.found


def _remote_url_in(reading: str) -> str | None:
    """The first URL of another host that looks written in ``reading`` (:data:`_REMOTE_LOOKING`), read to its
    end (:data:`_URL_END`), the names of XML namespaces aside; None when there is none. Its host is read as
    a browser reads a special URL's: past all its slashes, after the authority's last '@', up to a ':'; it
    must hold a letter, a digit or a non-ASCII character (:data:`_HOST_CHARACTER`) and be no local server's.
    Every search reads on from where the last one ended (:class:`_Next`; each authority's last '@' is
    looked for once), so the whole is linear, however many places look like a URL's start."""
    stop, colon, host_character, url_end = (_Next(p, reading) for p in (
        _AUTHORITY_STOP, re.compile(":"), _HOST_CHARACTER, _URL_END))
    authority_end, last_at = -1, -1
    for m in _REMOTE_LOOKING.finditer(reading):
        at = m.end()                                   # the authority starts past every slash
        if authority_end < at:                         # a new authority: its last '@', looked for once
            authority_end = stop(at)
            last_at = reading.rfind("@", at, authority_end)
        host = last_at + 1 if last_at >= at else at
        host_end = min(colon(host), authority_end)
        if host_character(host) >= host_end:
            continue
        if host_end - host <= 9 and _ascii_lower(reading[host:host_end]) in _LOCAL_HOSTS:
            continue
        end = url_end(m.start())
        if end - m.start() <= _LONGEST_NAMESPACE and reading[m.start():end] in _NAMESPACES:
            continue
        return reading[m.start():end]
    return None


def _base64_document_in(reading: str, depth: int) -> str | None:
    """The first ``data:`` URL in base64 of a document (HTML, CSS, any XML MIME type:
    :data:`_DATA_DOCUMENT`) written in ``reading`` that, read as the document it is (as nested ``depth``
    deep), loads from another host or holds what the fail-closed layer refuses; None when there is none. A
    URL is base64 when its media type, up to the first ',', ends with ``;base64`` (blanks aside), as a
    browser's ``data:`` URL processor reads it; it runs to :data:`_DATA_URL_END`. Two such URLs whose media
    types end at the same ',' (one written inside the other's media type) are reported, the second unread:
    each would read the same data again. Linear: each search reads on from where the last ended."""
    comma, url_end = _Next(re.compile(","), reading), _Next(_DATA_URL_END, reading)
    checked, semicolon, read = -1, -1, -1      # the last ',' looked at, where its ``;base64`` starts, the last read
    for m in _DATA_DOCUMENT.finditer(reading):
        at = m.end()
        end_of_type = comma(at)
        if end_of_type >= len(reading):
            continue                                   # no ',': no data
        if end_of_type != checked:                     # its media type's end, looked at once
            checked, j = end_of_type, end_of_type
            while j > at and reading[j - 1] in _ASCII_BLANKS:
                j -= 1
            semicolon = -1
            if _ascii_lower(reading[max(at, j - 6):j]) == "base64":
                j -= 6
                while j > at and reading[j - 1] == " ":
                    j -= 1
                if j > at and reading[j - 1] == ";":
                    semicolon = j - 1
        if semicolon < at:
            continue
        url = reading[m.start():url_end(at)]
        if end_of_type == read:
            return url
        read, inner = end_of_type, []
        if _data_url_references(url, depth + 1, "utf-8", inner) or inner:
            return url
    return None


def _local_name(name: str) -> str:
    """A tag's name without its prefix (``svg:set`` is a ``set`` in an XML document that binds ``svg``)."""
    return name.rpartition(":")[2]


def _refuse_markup(text: str, xml: bool, out, depth: int = 0) -> None:
    """Add to ``out`` what the fail-closed layer refuses in the page ``text`` (an XML document when
    ``xml``; nested ``depth`` deep in others), each with what it is, where, and why, in order (at most
    :data:`_MOST_REFUSALS`)."""
    count, lines = 0, _Lines(text)

    def refuse(at: int, what: str, why: str) -> None:
        nonlocal count
        count += 1
        if count <= _MOST_REFUSALS:
            out.append(f"refused: {what} at {lines(at)}: {why}")
        elif count == _MOST_REFUSALS + 1:
            out.append(f"refused: more than {_MOST_REFUSALS} constructs in this document; the rest unlisted")

    def inert(at: int, region: str, what: str) -> None:
        url = _remote_looking(region, depth)
        if url is not None:
            refuse(at, f"{url[:80]!r} in {what}",
                   "the check reads this text as no markup; a browser that read it as markup would load "
                   "from another host")

    open_ = OpenElements()
    foreign_open = False            # whether an SVG or MathML element is open (before this token)
    top: str | None = None          # the current node, when it is an HTML element
    select_open = False             # whether an HTML select is open
    inert_at: tuple[str, int] | None = None   # the element whose text is no markup, and where the text starts
    for start, end, closing, name, self_closing, foreign in elements(text, xml, open_):
        token = text[start:end]
        if xml:                     # an element of SVG or XHTML under any prefix (``<s:script>``) is read as one
            name = _local_name(name)
        if inert_at is not None and closing and name == inert_at[0]:
            inert(inert_at[1], text[inert_at[1]:start], f"the text of <{name}>")
            inert_at = None
        elif inert_at is not None and name and (foreign or xml):
            refuse(start, f"<{'/' if closing else ''}{name}> inside an SVG <{inert_at[0]}>",
                   "an SVG script's or style's text is its own text only, up to its own end tag, where the "
                   "check reads every text to the first end tag of its name")
        if not name:
            if token.startswith(_CDATA) and not foreign and not xml:
                refuse(start, "CDATA outside SVG and MathML", "HTML reads it as a bogus comment that ends at "
                       "the first '>', where a reader of XML reads on to ']]>'")
            # a doctype ends at its '>' for HTML and the check alike; in an XML document a comment ends at its
            # first '-->' (or the document at an error) and the check's reading ends there or sooner
            if not _DOCTYPE.match(token) and not (xml and token.startswith("<!--")):
                inert(start, token, "a comment, a processing instruction or a declaration")
        elif closing:
            if foreign_open and name in ("p", "br") and not xml:
                refuse(start, f"</{name}> inside SVG or MathML", "HTML's parser ends the foreign content there")
        else:
            attributes = attributes_of(token)
            for key, value in attributes.items():
                if _holds_a_url(key) and _SCRIPT_URL.match(value):
                    refuse(start, f"a script URL in the {key} attribute of <{name}>",
                           "it runs script, which may load from anywhere")
                elif key.startswith("on"):
                    inert(start, value, f"the {key} attribute of <{name}>")
            if _local_name(name) == "set" or _local_name(name).startswith("animate"):   # what it gives an href
                if _holds_a_url(_ascii_lower(attributes.get("attributename", "").strip(_ASCII_BLANKS))) and any(
                        _SCRIPT_URL.match(v) for v in [attributes.get(k, "") for k in ("from", "to", "by")]
                        + attributes.get("values", "").split(";")):
                    refuse(start, f"a script URL that <{name}> gives an attribute", "it runs script, which may "
                           "load from anywhere")
            local = _local_name(name)
            if local in _FRAMES and any(_ascii_lower(_TAB_OR_NEWLINE.sub("", _LEADING.sub(
                    "", attributes.get(key, "")))[:5]) == "data:" for key in _FRAMES[local]):
                refuse(start, f"a data: URL loaded as a document by <{name}>",
                       "a page of its own, in an encoding, MIME type and reading the check may not share")
            if not xml:
                if foreign_open and (name in _BREAKOUT or name == "font" and not _FONT_BREAKOUT.isdisjoint(attributes)):
                    refuse(start, f"<{name}> inside SVG or MathML",
                           "HTML's parser ends the foreign content there (a breakout tag)")
                if name in _REFUSED_ELEMENTS:
                    refuse(start, f"<{name}>", "an element whose text browsers read otherwise than the check")
                if top in _TABLE_CONTEXTS and name not in _IN_TABLE:
                    refuse(start, f"<{name}> directly in <{top}>",
                           "a browser moves it out of the table (foster parenting), which the check does not follow")
                if select_open and name not in _IN_SELECT:
                    refuse(start, f"<{name}> inside <select>",
                           "browsers' parsers keep or drop it there by version")
            # a charset attribute: a <meta>'s names the page's encoding, a <link>'s or a <script>'s the one
            # a browser decodes what it loads in when that names none of its own (a data: sheet in UTF-16LE)
            label = attributes.get("charset")
            if label is None and name == "meta" and not xml and _ascii_lower(
                    attributes.get("http-equiv", "").strip(_ASCII_BLANKS)) == "content-type":
                m = _HTML_CHARSET.search(attributes.get("content", "").encode("utf-8", "replace"))
                label = None if m is None else m[1].decode("utf-8", "replace")
            if label is not None and _label(label) not in _UTF8_LABELS:
                refuse(start, f"<{name}> naming the encoding {label!r}",
                       "the check reads every page, and everything it loads, as UTF-8")
            if inert_at is None and (name in _INERT_HTML and not foreign and not xml
                                     or name in _INERT_FOREIGN and (foreign or xml) and not self_closing):
                inert_at = (name, end)
        if not xml:
            foreign_open = len(open_.stack) > len(open_.html_at)
            html_top = bool(open_.html_at) and open_.html_at[-1] == len(open_.stack) - 1
            top = open_.stack[-1] if html_top else None
            select_open = bool(open_.html_places.get("select"))
    if inert_at is not None:                        # never closed: the rest is its text
        inert(inert_at[1], text[inert_at[1]:], f"the text of <{inert_at[0]}>")


def refusals(text: str, css: bool = False, xml: bool | None = None) -> list[str]:
    """What the fail-closed layer refuses in the page ``text`` (a style sheet when ``css``; an XML document
    as :func:`remote_references` tells one) and in every document it holds (``srcdoc`` pages, ``data:``
    documents), each a line that says what, where and why, in order (see the module's docstring)."""
    refused: list[str] = []
    remote_references(text, css=css, xml=xml, _refused=refused)
    return refused


def check(text: str, css: bool = False, xml: bool | None = None) -> list[str]:
    """Everything the offline check reports for ``text``: the URLs of other hosts it fetches
    (:func:`remote_references`), then what it refuses (:func:`refusals`)."""
    refused: list[str] = []
    found = remote_references(text, css=css, xml=xml, _refused=refused)
    return found + refused


#: the suffixes of the built files a server sends as an XML type, which a browser renders as XML (SVG,
#: XHTML, XSLT, feeds…): :func:`check_file` reads them as XML documents
XML_SUFFIXES = frozenset({".svg", ".xml", ".xhtml", ".xht", ".xsl", ".xslt", ".rss", ".atom", ".rdf", ".mml"})
#: the suffixes of the built files :func:`check_file` reads: pages, style sheets and XML documents
CHECKED_SUFFIXES = frozenset({".html", ".htm", ".css"}) | XML_SUFFIXES
#: the largest built file :func:`check_file` reads
_MOST_FILE_BYTES = 1 << 30


def check_file(path) -> list[str]:
    """:func:`check` of the built file ``path`` (a style sheet for ``.css``, an XML document for a suffix of
    :data:`XML_SUFFIXES`: ``.svg``, ``.xml``, ``.xhtml``…), read as UTF-8; a file a browser might decode
    otherwise is refused (:func:`_not_utf8`: another byte order mark, a declaration of another encoding,
    bytes that are no UTF-8, an ESC byte), and so is one that is no regular file (a FIFO named like a page
    would block the read forever: it is never opened for reading, the library's reader refuses it)."""
    from pathlib import Path

    from netcl_lite.files import read_regular

    path = Path(path)
    try:
        data = read_regular(path, _MOST_FILE_BYTES, "a built file the offline check reads")
    except ValueError as e:
        return [f"refused: {path.name}: {e}"]
    suffix = path.suffix.lower()
    xml = suffix in XML_SUFFIXES
    essence = "text/css" if suffix == ".css" else "image/svg+xml" if xml else "text/html"
    why = _not_utf8(essence, {}, data)
    head = [] if why is None else [f"refused: {path.name} {why}; the check reads every built file as UTF-8, "
                                   "and a browser might read this one in another encoding"]
    text = data.decode("utf-8", "replace")
    if text.startswith("\ufeff"):
        text = text[1:]
    return head + check(text, css=suffix == ".css", xml=xml)
