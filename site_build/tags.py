"""Scans of HTML and Markdown text that start from many places and still read the text once.

A pattern such as ``<img(?:"[^"]*"|'[^']*'|[^"'>])*>`` tried from every ``<img`` of a text reads the
rest of the text again from each one that is never closed: quadratic time in hostile input. These
keep what each place's reading found, so the next reading from a later place stops where an
earlier one passed.
"""

from __future__ import annotations

import bisect
import html
import re


class Positions:
    """Where each of some characters stands in a text, for the next one at or after a place in
    logarithmic time: a scan that starts at many places reads the text once."""

    def __init__(self, text: str, chars: str):
        self.at = {c: [] for c in chars}
        for m in re.finditer(f"[{re.escape(chars)}]", text):
            self.at[m.group(0)].append(m.start())

    def next(self, char: str, start: int) -> int | None:
        at = self.at[char]
        k = bisect.bisect_left(at, start)
        return at[k] if k < len(at) else None


class Tags:
    """The end of an HTML tag as a browser reads it, from any place in its name onward: a browser's
    tokenizer (its tag name, attribute name and value states), so a quote opens a value only where the
    tokenizer reads an attribute's value to begin (``a="x>"``; not in a name, ``<a"b=">``, nor after an
    ``=`` that starts an attribute's name, ``<a /="x>``). Each place and state a reading passes is kept
    with its answer, so reading tags from many places (many unclosed ``<img``) reads each character in
    each state once.

    Only an ``=`` leads to a quoted value (the tokenizer's "before attribute value" state follows
    none but an attribute name's ``=``), and outside a quoted value every state ends the tag at ``>``:
    from a place outside a quoted value with no ``=`` before the next ``>``, that ``>`` ends the tag,
    found at once (:meth:`_plain_end`) without reading the characters between (a run of ``<img `` that
    none closes, where reading each character was most of the time, is answered so from each place)."""

    def __init__(self, text: str):
        self.text = text
        self.known: dict[int, int | None] = {}     # place * 16 + state's number → the answer
        self._stretches: dict[str, tuple[int, int]] = {}   # '=' and '>': the last search's start and find

    def _next(self, char: str, i: int) -> int:
        """The place of the next ``char`` at or after ``i`` (the text's length: none). Each character
        keeps the stretch its last search read (no ``char`` from where it started to what it found),
        so searches from increasing places (as callers make them), or from decreasing ones, read the text
        once between them."""
        lo, at = self._stretches.get(char, (1, 0))
        if lo <= i <= at:
            return at
        if i < lo <= at and (found := self.text.find(char, i, lo)) < 0:
            lo = i                                  # none before the stretch either: it grows back to i
        else:
            found = self.text.find(char, i)
            lo, at = i, len(self.text) if found < 0 else found
        self._stretches[char] = (lo, at)
        return at

    def _plain_end(self, i: int) -> int | None | bool:
        """From place ``i`` outside a quoted value: the tag's end when no ``=`` stands before the next
        ``>`` (None: no ``>`` either, so the tag never ends), else False (the characters must be read)."""
        close = self._next(">", i)
        if self._next("=", i) < close:
            return False
        return None if close == len(self.text) else close + 1

    def end(self, start: int) -> int | None:
        """The index just past the '>' that ends the tag whose name goes on at ``start``, or None
        (none does: a quote opened and never closed, or no '>')."""
        plain = self._plain_end(start) if start >= 0 else False
        if plain is not False:
            return plain
        text, n, walked = self.text, len(self.text), []
        i, state, answer = start, "name", None
        while i < n:
            key = i << 4 | _STATES[state]              # an int, not a tuple: no work for the collector
            if key in self.known:
                answer = self.known[key]
                break
            walked.append(key)
            c = text[i]
            if state in ("name", "unquoted", "attribute") and c not in _SPECIAL_CHARS:
                m = _SPECIAL.search(text, i)               # a run that keeps the state: read at once
                if m is None:
                    break
                i = m.start()
                continue
            if state in ("dq", "sq"):                  # a quoted value: to its closing quote
                close = text.find('"' if state == "dq" else "'", i)
                if close < 0:
                    break
                i, state = close + 1, "after_quoted"
                continue
            if c == ">":                              # ends the tag in every state but a quoted value's
                answer = i + 1
                break
            blank = c in _BLANKS
            if state in ("name", "unquoted"):
                if blank:
                    state = "before_attribute"
                elif c == "/" and state == "name":
                    state = "solidus"
                i += 1
            elif state == "before_attribute":
                if c == "/":
                    state = "after_name"
                    continue
                if not blank:
                    state = "attribute"                # '=' here starts the name
                i += 1
            elif state == "attribute":
                if blank or c == "/":
                    state = "after_name"
                    continue
                if c == "=":
                    state = "before_value"
                i += 1
            elif state == "after_name":
                if c == "/":
                    state = "solidus"
                elif c == "=":
                    state = "before_value"
                elif not blank:
                    state = "attribute"
                i += 1
            elif state == "before_value":
                if c == '"':
                    state = "dq"
                elif c == "'":
                    state = "sq"
                elif not blank:
                    state = "unquoted"
                    continue
                i += 1
            elif state == "after_quoted":
                state = "solidus" if c == "/" else "before_attribute"
                if blank or c == "/":
                    i += 1
            else:                                      # "solidus": a '/' not before '>'
                state = "before_attribute"
        for key in walked:
            self.known[key] = answer
        return answer


_BLANKS = " \t\n\r\f"
_STATES = {name: k for k, name in enumerate(("name", "solidus", "before_attribute", "attribute", "after_name",
                                              "before_value", "dq", "sq", "unquoted", "after_quoted"))}
#: what changes the state of a tag's name, an attribute's name or its unquoted value
_SPECIAL_CHARS = _BLANKS + "/=>"
_SPECIAL = re.compile(f"[{re.escape(_SPECIAL_CHARS)}]")


#: HTML's raw text and escapable raw text elements: their text holds no tags, up to their own end tag
#: (``<noscript>`` is raw text where scripts run, as for every reader of the site); none is inside ``<svg>``
#: or ``<math>``, and ``<plaintext>`` (not listed) makes the rest of the page its text
RAW_TEXT = frozenset({"script", "style", "textarea", "title", "xmp", "iframe", "noembed", "noframes", "noscript"})
#: where a comment, a declaration, a processing instruction or a tag may start (HTML's tag open state):
#: ``<!--``, a start or end tag's name, ``<!`` and ``<?`` (a doctype, CDATA or a bogus comment), and ``</``
#: before anything but a letter (a bogus comment, or ``</>``, which is dropped)
_TOKEN_START = re.compile(r"<(?:!--|/?[A-Za-z]|!|\?|/)")
#: a tag's name, from its first letter to a blank, '/' or '>' (read only up to the tag's known end)
_TAG_NAME = re.compile(r"[^\t\n\f\r />]*")
#: what ends a comment: ``-->`` or ``--!>``; right after ``<!--``, ``>`` or ``->`` ends an empty one
_COMMENT_END, _EMPTY_COMMENT = re.compile(r"--!?>"), re.compile(r"-?>")
#: what ends a raw text element ``name``: ``</name`` (any case) and a blank, '/' or '>'
_RAW_ENDS: dict[str, re.Pattern] = {}
#: a script's text as HTML reads it (its script data states): in plain script text ``<!--`` starts an
#: escaped stretch; in an escaped one ``<script`` starts a doubly escaped one, where ``</script`` only goes
#: back to the escaped one; ``-->`` ends either. Only ``</script`` in plain or escaped text ends the element.
#: Every tag name is matched in ASCII case only (``re.A`` with ``re.I``), as HTML compares them: Python's
#: ``re.I`` alone takes U+017F (long s) for ``s`` and U+212A (Kelvin sign) for ``k``
_SCRIPT_PLAIN = re.compile(r"</script(?=[\t\n\f\r />])|<!--", re.I | re.A)
_SCRIPT_ESCAPED = re.compile(r"</script(?=[\t\n\f\r />])|<script(?=[\t\n\f\r />])|-->", re.I | re.A)
_SCRIPT_DOUBLE = re.compile(r"</script(?=[\t\n\f\r />])|-->", re.I | re.A)
_DASHES_THEN_GT = re.compile(r"-*>")
#: HTML's lowering of a tag's or an attribute's name: ASCII letters only (``str.lower`` would make U+212A,
#: the Kelvin sign, a ``k``: ``<striKe>`` is no ``strike`` to a browser)
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
#: from a place between a tag's attributes: the blanks and '/' before the next attribute (a '/' not
#: before the tag's '>' is read as a blank), its name (any first character but a blank, '/' or '>', an
#: '=' too; then none of those nor '='), and its value after an '=' (blanks around it): quoted, or unquoted
#: to a blank or the '>' (a '/' in it is the value's, ``x=y/>``)
_ATTRIBUTE = re.compile(r"""[\t\n\f\r /]*([^\t\n\f\r />][^\t\n\f\r />=]*)"""
                        r"""(?:[\t\n\f\r ]*=[\t\n\f\r ]*("[^"]*"|'[^']*'|[^\t\n\f\r >]*))?""")


def ascii_lower(name: str) -> str:
    """``name`` with its ASCII capitals lowered, and nothing else: HTML's lowering of tag and attribute names."""
    return name.translate(_ASCII_LOWER)


def _attribute_matches(text: str, at: int, end: int):
    """Each attribute (:data:`_ATTRIBUTE`) of the tag whose attributes run from ``at`` to its '>' at ``end``,
    in order; each match reads on from where the last one ended."""
    while (m := _ATTRIBUTE.match(text, at, end)) is not None:
        yield m
        at = m.end()


def _self_closing(text: str, name_end: int, end: int) -> bool:
    """Whether the tag whose name ends at ``name_end`` and whose '>' is at ``end - 1`` is self-closing as
    HTML's tokenizer reads it: a '/' right before its '>' that is read between attributes (its self-closing
    start tag state), not the last character of an unquoted value (``<a x=y/>``: the value is ``y/``)."""
    if end - 2 < name_end or text[end - 2] != "/":
        return False
    last = None
    for last in _attribute_matches(text, name_end, end - 1):
        pass
    return last is None or last.end() <= end - 2


def attributes(tag: str) -> dict[str, str]:
    """The attributes of the start tag ``tag`` (from its ``<`` to its ``>``) as HTML's tokenizer gives them:
    each name in ASCII lower case, its value with its quotes taken off and its character references
    resolved; of two of one name, the first (a browser drops the second). Linear in the tag."""
    found: dict[str, str] = {}
    name_end = _TAG_NAME.match(tag, 1, max(1, len(tag) - 1)).end()
    for m in _attribute_matches(tag, name_end, len(tag) - 1 if tag.endswith(">") else len(tag)):
        value = m[2] or ""
        if value[:1] in ("'", '"'):
            value = value[1:-1]
        found.setdefault(ascii_lower(m[1]), html.unescape(value))
    return found


def _script_end(text: str, at: int) -> int | None:
    """Where the end tag that ends the script whose text starts at ``at`` starts, or None (the rest of
    ``text`` is the script's). One pass: each search goes on from where the last one stopped."""
    state = _SCRIPT_PLAIN
    while (m := state.search(text, at)) is not None:
        found, at = m.group(0), m.end()
        if found == "-->":                            # an escaped stretch ends: plain script text again
            state = _SCRIPT_PLAIN
        elif state is _SCRIPT_PLAIN and found == "<!--":
            dashes = _DASHES_THEN_GT.match(text, at)   # '<!-->', '<!--->': escaped, and at once plain again
            if dashes is not None:
                at = dashes.end()
            else:
                state = _SCRIPT_ESCAPED
        elif found[1] != "/":                         # '<script' in an escaped stretch
            state, at = _SCRIPT_DOUBLE, at + 1
        elif state is _SCRIPT_DOUBLE:                 # '</script' in a doubly escaped one: back to escaped
            state, at = _SCRIPT_ESCAPED, at + 1
        else:
            return m.start()
    return None


def tokens(content: str, foreign=lambda: False, cdata=lambda: False, xml: bool = False):
    """(start, end, "/" or "", name, "/" or "") of each comment (no name) and tag of the HTML
    ``content``, in order, as HTML's tokenizer reads them: a comment runs from ``<!--`` to the next ``-->``
    or ``--!>`` (``<!-->`` and ``<!--->`` are empty ones); a doctype, a declaration, a processing
    instruction and ``</`` before anything but a letter (``<!…``, ``<?…``, ``</ …``: HTML's bogus comments)
    to the next '>'; ``<![CDATA[`` to ``]]>`` where ``cdata()`` (asked there) says the current node is an
    SVG or MathML element (an integration point such as ``foreignObject`` too), elsewhere a bogus comment; ``</>`` is a token of no name
    (a browser drops it); a tag runs from ``<name`` to the first '>' outside its quoted attribute values
    (its name lowered in ASCII only, :func:`ascii_lower`; the second "/": it ends ``/>`` with a '/' read
    between attributes, not the last character of an unquoted value, :func:`_self_closing`). ``foreign()``, asked right after a start tag is yielded, says whether
    that element is in foreign content, where no element is raw text; elsewhere the text of a raw text
    element (:data:`RAW_TEXT`) holds no tags up to its own end tag (``</name`` and a blank, '/' or '>', in
    any ASCII case; a script's as HTML reads its text, :func:`_script_end`), one never closed to the end, and
    ``<plaintext>`` makes the rest of the content its text. In an XML document (``xml``) a processing
    instruction runs to ``?>``, not to the first '>'.

    Linear time: once a comment, a bogus comment or CDATA is never closed no later one is (it is read as
    text, as is a tag that never ends), and each tag's end is read once from each place (:class:`Tags`),
    where a pattern tried at every ``<`` would read the rest of the text again from each one never closed.
    """
    tags, pos, n = Tags(content), 0, len(content)
    closes = {"--": True, ">": True, "]]>": True, "?>": True}   # whether each may still be found after here
    while (m := _TOKEN_START.search(content, pos)) is not None:
        start, opening = m.start(), m.group(0)
        if opening == "<!--":
            close = _EMPTY_COMMENT.match(content, m.end()) or (
                _COMMENT_END.search(content, m.end()) if closes["--"] else None)
            if close is None:
                closes["--"], pos = False, start + 1
                continue
            yield start, close.end(), "", "", ""
            pos = close.end()
            continue
        if opening == "</" and content.startswith(">", m.end()):
            yield start, m.end() + 1, "", "", ""
            pos = m.end() + 1
            continue
        if opening in ("<!", "<?", "</"):
            if opening == "<?" and xml:
                closer = "?>"
            elif opening == "<!" and content.startswith("[CDATA[", m.end()) and cdata():
                closer = "]]>"
            else:
                closer = ">"
            end = content.find(closer, m.end()) if closes[closer] else -1
            if end < 0:
                closes[closer], pos = False, start + 1
                continue
            yield start, end + len(closer), "", "", ""
            pos = end + len(closer)
            continue
        closing = "/" if opening[1] == "/" else ""
        name_from = start + 1 + len(closing)
        end = tags.end(name_from + 1)
        if end is None:                                # never closed: no tag here; one may start after it
            pos = start + 1
            continue
        name_end = _TAG_NAME.match(content, name_from, end - 1).end()
        name = ascii_lower(content[name_from:name_end])
        yield start, end, closing, name, "/" if _self_closing(content, name_end, end) else ""
        pos = end
        if closing or (name not in RAW_TEXT and name != "plaintext") or foreign():
            continue
        if name == "plaintext":                        # no end tag ends it: the rest is its text
            pos = n
            continue
        if name == "script":
            close = _script_end(content, pos)
        else:
            if name not in _RAW_ENDS:
                _RAW_ENDS[name] = re.compile(rf"</{name}(?=[\t\n\f\r />])", re.I | re.A)
            close = _RAW_ENDS[name].search(content, pos)
            close = None if close is None else close.start()
        pos = n if close is None else close           # never closed: the rest is its text, as a browser reads it
