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
    each state once."""

    def __init__(self, text: str):
        self.text = text
        self.known: dict[int, int | None] = {}     # place * 16 + state's number → the answer

    def end(self, start: int) -> int | None:
        """The index just past the '>' that ends the tag whose name goes on at ``start``, or None
        (none does: a quote opened and never closed, or no '>')."""
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
