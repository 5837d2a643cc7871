"""Scans of HTML and Markdown text that start from many places and still read the text once.

A pattern such as ``<img(?:"[^"]*"|'[^']*'|[^"'>])*>`` tried from every ``<img`` of a text reads the
rest of the text again from each one that is never closed: quadratic time in hostile input. These
keep what each place's reading found, so the next reading from a later place stops where an
earlier one passed.
"""

from __future__ import annotations

import bisect
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
