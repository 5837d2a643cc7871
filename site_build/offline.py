"""Keep notebook pages offline.

mkdocs-jupyter's template adds MathJax and Mermaid loaders that fetch from a
CDN. The drills need neither (their math lives on the recall pages, rendered to
MathML at build time), so the loaders are removed; the site tests fail on any
remaining reference to another host, which :func:`remote_references` finds.
"""

from __future__ import annotations

import base64
import binascii
import html
import re
import urllib.parse

from .glossary import elements

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
_OTHER_HOST = re.compile(r"(?:[a-z][a-z0-9+.-]*:)?[/\\]{2}|(?:https?|ftp|wss?):", re.I)
#: what a browser drops from a URL before it parses it: C0 controls and blanks at either end, and
#: every tab and newline
_LEADING = re.compile(r"^[\x00-\x20]+")
_TAB_OR_NEWLINE = re.compile(r"[\t\n\r]")
_LOADS = re.compile(r"MathJax|mermaid", re.I)


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
    for name, value in _attributes(tag[len("<script"):].removesuffix(">")):
        if name.lower() == "src":
            return _names_another_host(html.unescape(value.strip("\"'")))
    return False


def _attributes(text: str) -> list[tuple[str, str]]:
    """The attributes of the tag whose attributes (its name and its '>' aside) are ``text``, as HTML's
    tokenizer reads them: each name and its value as written (a quoted one with its quotes), in order,
    to the first '>' outside a quoted value. Each step reads on from where the last ended: linear."""
    found, at, n = [], 0, len(text)
    while True:
        at = _BETWEEN.match(text, at).end()
        if at >= n or text[at] == ">":
            return found
        name = _NAME.match(text, at)
        value = _VALUE.match(text, name.end())
        found.append((name[0], value[1] if value else ""))
        at = value.end() if value else name.end()


#: the attributes whose value is one URL a browser fetches, follows or posts to (``xlink:href`` and
#: ``xlink:src`` end as ``href`` and ``src`` do, and so does an ``href`` or ``src`` under any other prefix:
#: in XML the prefix is whatever the document binds to XLink's namespace, :func:`_holds_a_url`)
_URL_ATTRIBUTES = frozenset({"src", "href", "data", "poster", "action", "formaction", "background",
                             "manifest", "codebase", "archive", "icon",
                             "xlink:href", "xlink:src"})
#: an XML document (an SVG file, as the site's are written): an XML declaration, or an SVG doctype or
#: root element, first (a byte order mark, blanks and comments aside; each comment is read one way only,
#: to its first ``-->``, so a text that is none is read once)
_XML_START = re.compile(r"\ufeff?(?:[\t\n\f\r ]|<!--(?:[^-]|-(?!->))*-->)*"
                        r"<(?:\?xml(?=[\s?])|!doctype[\t\n\f\r ]+svg(?![\w:-])|svg(?=[\s/>]))", re.I)
#: a declaration of an XML document's own DTD (its internal subset): an entity may hide a URL (expanded in
#: attribute values and text, ``href="&u;"``), an attribute list too (it gives elements attributes by
#: default), and any declaration's quoted text may hold a '>' that the tokenizer, which reads HTML's bogus
#: comments, would take for its end; read wherever it stands in the document, and reported unread
#: (:func:`remote_references`)
_DTD_DECLARATION = re.compile(r"<!(?:ENTITY|ATTLIST|ELEMENT|NOTATION)(?![A-Za-z])", re.I)
_CDATA = "<![CDATA["
_DOCTYPE = re.compile(r"<!doctype", re.I)
#: a tag's name, read up to its known end (``<a<a<a…`` never closed is no tag, and its name is not read)
_TAG_NAME = re.compile(r"[^\t\n\f\r />]*")
#: SVG's presentation attributes whose value is CSS that may fetch (``fill="url(//host/p.svg#g)"``)
_CSS_ATTRIBUTES = frozenset({"fill", "stroke", "filter", "mask", "clip-path", "marker", "marker-start",
                             "marker-mid", "marker-end", "cursor"})
#: a meta refresh's target: ``content="5; url=…"``
_REFRESH = re.compile(r"^\s*[\d.]*\s*[;,]?\s*(?:url\s*=\s*)?['\"]?([^'\"]*)", re.I)
#: the hosts a built page may still name: the local server the tests serve the site from
_LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost"})
#: the authority of a URL of ``http:``/``https:`` or none, as a browser's URL parser reads it: after the
#: scheme and its slashes (backslashes read as slashes; from ``http:`` any number, none too), up to the
#: first '/', '\\', '?' or '#'
_AUTHORITY = re.compile(r"(?:https?:[/\\]*|[/\\]{2})([^/\\?#]*)", re.I)


def _names_another_host(url: str) -> bool:
    """Whether ``url`` (character references resolved) names a host other than the local server: the
    host is what follows the authority's last '@' (``http://localhost:1@evil.example/`` is evil.example's,
    ``localhost:1`` its user and password), up to its port."""
    url = _TAB_OR_NEWLINE.sub("", _LEADING.sub("", url))
    if _OTHER_HOST.match(url) is None:
        return False
    authority = _AUTHORITY.match(url)
    return authority is None or authority[1].rpartition("@")[2].partition(":")[0].lower() not in _LOCAL_HOSTS


def remote_references(text: str, css: bool = False, _depth: int = 0, xml: bool | None = None) -> list[str]:
    """The URLs of other hosts that the HTML ``text`` (a style sheet when ``css``) makes a browser request
    or go to, in order:
    an attribute that holds a URL (``src``, ``href``, ``xlink:href``, ``data``, ``poster``, ``action``,
    ``formaction``…), every candidate of a ``srcset`` or ``imagesrcset``, every URL of a ``ping`` or an
    ``attributionsrc``, a meta refresh's target, and CSS ``url()``, ``@import`` and ``image-set()`` in a style sheet, a ``style`` element or a ``style``
    attribute (CSS shown as text, in a code block, is no request), the URLs an SVG ``<set>`` or
    ``<animate…>`` gives an ``href`` (``from``, ``to``, ``by``, ``values``), and the ``href`` of an
    ``<?xml-stylesheet?>``; character references resolved first,
    as a browser reads them. A frame's ``srcdoc`` is a page of its own, and so is a ``data:`` URL of HTML,
    SVG, XML or CSS: what they request counts too (one nested past :data:`_NESTING` levels is
    itself reported, unread). A URL names another host
    when, its tabs and newlines dropped, it starts with ``//`` or a scheme and ``//`` (backslashes read as
    slashes) or with ``http:``, ``https:``, ``ftp:``, ``ws:`` or ``wss:``, the local server (127.0.0.1,
    localhost) aside.

    The page is read as a browser reads it (:func:`~site_build.glossary.elements`), in one pass: nothing in
    a comment (bogus ones too: ``<!…>``, ``<?…>``), in CDATA or in the text of a raw text element (a
    script, a textarea, a title…) is a tag, so a quote written there hides no later tag; a ``style``
    element's CSS runs from the '>' that ends its start tag as HTML reads it (quotes and all) to its end
    tag (``</style`` and a blank, '/' or '>'; one never closed to the end), or, as an SVG element (in
    ``<svg>``, or in an XML document), is its text and CDATA up to ``</style``. An XML document (``xml``; by
    default one whose text starts with an XML declaration or an SVG doctype or root element, and a
    ``data:`` URL of SVG or XML) is foreign content throughout: no element is raw text. A declaration of a
    document's own DTD (``<!ENTITY``, ``<!ATTLIST``: an entity expanded in an attribute, a default
    attribute; ``<!ELEMENT``, ``<!NOTATION``) may hide a URL: an XML document that holds one is reported
    (the first, unread; in an HTML page it means nothing, and a script's text may well hold one), and so
    is one whose doctype holds a '>' in a quoted literal (XML reads on past it, HTML's reading stops)."""
    if css:
        return remote_references_in_css(text)
    found: list[str] = []

    def add(url: str) -> None:
        if _names_another_host(url):
            found.append(url.strip())
        else:
            found.extend(_data_url_references(url, _depth + 1))

    if xml is None:
        xml = _XML_START.match(text) is not None
    if xml and (m := _DTD_DECLARATION.search(text)) is not None:   # what it may hold is not read: reported
        found.append(text[m.start():m.start() + 80])
    html_css = None                 # where the text of the HTML style element being read starts
    svg_css: list[str] | None = None  # the text read so far of the SVG style element being read
    css_at = 0                      # where its text goes on
    for start, end, closing, name, self_closing, foreign in elements(text, xml):
        if html_css is not None:    # a raw text element: its text runs to the next token, its end tag
            found += remote_references_in_css(text[html_css:start])
            html_css = None
        if svg_css is not None:     # its text and its CDATA sections, up to its end tag
            svg_css.append(html.unescape(text[css_at:start]))
            if text.startswith(_CDATA, start) and text.endswith("]]>", start, end):
                svg_css.append(text[start + len(_CDATA):end - 3])
            css_at = end
            if closing and name == "style":
                found += remote_references_in_css("".join(svg_css))
                svg_css = None
        if xml and not name and _DOCTYPE.match(text, start) and _cut_in_a_literal(text[start:end]):
            found.append(text[start:start + 80])     # it ends further on, where XML reads it: reported unread
        if not name or closing:
            continue
        attributes = {}
        name_end = _TAG_NAME.match(text, start + 1, end - 1).end()
        for key, raw in _attributes(text[name_end:end - 1]):
            attributes.setdefault(key.lower(), html.unescape(raw.strip("\"'") if raw[:1] in "\"'"
                                                             and raw[-1:] == raw[:1] else raw))
        for key, value in attributes.items():
            if _holds_a_url(key):
                add(value)
            elif key in ("srcset", "imagesrcset"):
                for candidate in value.split(","):
                    add(candidate.strip().split(" ")[0] if candidate.strip() else "")
            elif key in ("ping", "attributionsrc"):      # space-separated URLs, each fetched
                for url in value.split():
                    add(url)
            elif key == "style" or key in _CSS_ATTRIBUTES:
                found += remote_references_in_css(value)
            elif key == "srcdoc":
                found += (remote_references(value, _depth=_depth + 1, xml=False) if _depth < _NESTING
                          else [value[:80]])
        if name == "meta" and attributes.get("http-equiv", "").strip().lower() == "refresh":
            m = _REFRESH.match(attributes.get("content", ""))
            if m:
                add(m[1])
        if name == "set" or name.startswith("animate"):
            target = attributes.get("attributename", "").strip().lower()
            for value in [attributes.get(key, "") for key in ("from", "to", "by")] + (
                    attributes.get("values", "").split(";")):
                if _holds_a_url(target):
                    add(value.strip())
                elif target == "style" or target in _CSS_ATTRIBUTES:
                    found += remote_references_in_css(value)
        if name == "style" and not foreign:
            html_css = end
        elif name == "style" and not self_closing:
            svg_css, css_at = [], end
    if html_css is not None:        # never closed: a browser reads the rest as its CSS
        found += remote_references_in_css(text[html_css:])
    if svg_css is not None:
        found += remote_references_in_css("".join(svg_css) + html.unescape(text[css_at:]))
    at = 0
    while (m := _STYLESHEET_PI.search(text, at)) is not None:
        close = text.find("?>", m.end())
        content = text[m.end():] if close < 0 else text[m.end():close]
        for href in _PSEUDO_HREF.finditer(content):
            add(html.unescape(href[1][1:-1] if href[1][:1] in "\"'" else href[1]))
        if close < 0:
            break
        at = close + 2
    return found


#: an XML document's style-sheet processing instruction (an SVG page's ``<?xml-stylesheet href=…?>``),
#: which a browser fetches; read wherever it stands (in an HTML page it is a comment, reported all the same)
_STYLESHEET_PI = re.compile(r"<\?xml-stylesheet(?=[\s?]|\Z)", re.I)
#: its ``href`` pseudo-attribute's value, quoted (or not, read up to a blank)
_PSEUDO_HREF = re.compile(r"""(?<!\S)href\s*=\s*("[^"]*"|'[^']*'|[^\s"'?]+)""", re.I)


def remote_references_in_css(css: str, _depth: int = 0) -> list[str]:
    """The URLs of other hosts that the CSS ``css`` fetches, read token by token as CSS reads it (a
    comment is no request, a string is no comment): a ``url()``, quoted or not; the string of an
    ``@import``, after blanks, comments or nothing; every string of an ``image-set()`` (or
    ``-webkit-image-set()``). Escapes are resolved as CSS resolves them, in a URL (``\\2f`` is a '/') and
    in a function's or an at-rule's own name alike (``u\\rl(`` and ``\\75rl(`` are ``url(``, ``@imp\\ort``
    is ``@import``): a name is compared once its escapes are read. One pass, each token read from where
    the last ended."""
    css = _CSS_NEWLINES.sub("\n", css).replace("\0", "\ufffd")     # CSS's preprocessing of its input
    found: list[str] = []
    expect = False          # after ``url(`` or ``@import``: the next string is a URL
    depth = 0               # inside an ``image-set(``: every string is a URL
    at, n = 0, len(css)
    while at < n:
        m = _CSS_TOKEN.match(css, at)
        at = m.end()
        token, string, unquoted = m[0], m["string"], None
        if m["name"] is not None:
            name = _css_unescape(m["name"]).lower()
            if m["at"]:
                token = "@" + name
            elif m["paren"]:
                token = name + "("
                if name == "url" and (value := _CSS_URL_VALUE.match(css, at)) is not None:
                    unquoted, at = value[1], value.end()
        if string is not None or unquoted is not None:
            url = _css_unescape(unquoted if string is None else
                                string[1:-1] if len(string) > 1 and string[-1] == string[0] else string[1:])
            if (string is None or expect or depth) and _names_another_host(url):
                found.append(url.strip())
            elif string is None or expect or depth:
                found.extend(_data_url_references(url, _depth + 1))
            expect = False
        elif token.startswith("/*") or token.isspace():
            continue
        else:
            low = token.lower()
            expect = low in ("url(", "@import")
            if low.endswith("image-set("):
                depth += 1
            elif depth and low.endswith("("):
                depth += 1
            elif depth and token == ")":
                depth -= 1
    return found


#: how deep a ``srcdoc`` or a ``data:`` URL may nest in another before the check reports it unread
_NESTING = 16
#: a ``data:`` URL: its media type, whether it is base64, its data
_DATA_URL = re.compile(r"data:([^,]*?)(\s*;\s*base64\s*)?,(.*)", re.I | re.S)
_DATA_HTML = frozenset({"text/html", "image/svg+xml", "application/xhtml+xml", "text/xml", "application/xml"})


#: the byte order marks a browser reads before anything else (UTF-32's are no encoding a browser knows:
#: ``FF FE 00 00`` is UTF-16LE's mark and a NUL, ``00 00 FE FF`` no mark at all)
_BOMS = ((b"\xef\xbb\xbf", "utf-8"), (b"\xfe\xff", "utf-16-be"), (b"\xff\xfe", "utf-16-le"))
#: the ``charset`` labels (the Encoding Standard's, matched in any case) of the encodings a browser reads
#: ASCII's characters differently from UTF-8 in: UTF-16 (two bytes each) and the multi-byte encodings whose
#: second byte may be an ASCII byte, or whose escapes switch ASCII off and on. Every other label a browser
#: knows names an encoding that reads every ASCII byte as ASCII, as UTF-8 does; one a browser does not know
#: is ignored (a page in ``charset=utf-7``, ``cp037`` or ``unicode_escape`` is read in the default): for
#: both, UTF-8 reads what HTML and CSS make of the page.
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


def _data_encoding(media_type: str, data: bytes) -> tuple[str, int]:
    """The encoding a browser reads the ``data:`` URL's ``data`` in (its media type and parameters
    ``media_type``): the one its byte order mark names, else its ``charset`` parameter's (quoted or not,
    in any case), else UTF-8 (see :data:`_CHARSETS`); with where the text starts, past the mark."""
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            return encoding, len(bom)
    for parameter in media_type.split(";")[1:]:
        name, _, value = parameter.partition("=")
        if name.strip().lower() == "charset":
            return _CHARSETS.get(value.strip().strip('"').strip().lower(), "utf-8"), 0
    return "utf-8", 0


def _data_url_references(url: str, depth: int) -> list[str]:
    """The URLs of other hosts that the ``data:`` URL ``url`` requests when a browser loads it as a page,
    an SVG or a style sheet (none when it is no ``data:`` URL or holds anything else), its data read in
    the encoding a browser reads it in (:func:`_data_encoding`): a UTF-16 page fetches as a UTF-8 one does."""
    m = _DATA_URL.match(_TAB_OR_NEWLINE.sub("", _LEADING.sub("", url)))
    if m is None:
        return []
    kind = m[1].split(";")[0].strip().lower()
    if kind not in _DATA_HTML and kind != "text/css":
        return []
    if depth > _NESTING:
        return [url[:80]]
    data = urllib.parse.unquote_to_bytes(m[3])
    if m[2]:
        try:
            data = base64.b64decode(re.sub(rb"[\s]", b"", data) + b"==", validate=False)
        except (binascii.Error, ValueError):
            return []
    encoding, start = _data_encoding(m[1], data)
    text = data[start:].decode(encoding, "replace")
    if kind == "text/css":
        return remote_references_in_css(text, depth)
    return remote_references(text, _depth=depth, xml=kind != "text/html")


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
                        rf"""|(?P<at>@)?(?P<name>{_CSS_NAME})(?P<paren>\()?|\s+|.""", re.I | re.S)
#: an unquoted ``url(…)``'s value, after its ``url(`` and blanks
_CSS_URL_VALUE = re.compile(r"""\s*((?:[^)"'\s\\]|\\.)+)""", re.S)
_CSS_ESCAPE = re.compile(r"\\(?:([0-9a-f]{1,6})[ \t\n\r\f]?|(\n)|(.))", re.I | re.S)


def _css_unescape(value: str) -> str:
    """``value`` with its CSS escapes resolved: a hex escape, an escaped newline (dropped), any other
    escaped character (itself)."""
    def one(m: re.Match) -> str:
        if m[1]:
            code = int(m[1], 16)
            return chr(code) if 0 < code <= 0x10FFFF and not 0xD800 <= code <= 0xDFFF else "\ufffd"
        return "" if m[2] else m[3]
    return _CSS_ESCAPE.sub(one, value)
