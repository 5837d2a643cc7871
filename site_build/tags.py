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
    """The end of an HTML tag as a browser reads it: at the first '>' outside a quoted attribute value
    (one may hold '>'; a quote opens one only right after an attribute's ``=``), from any place in a
    text; each step of a reading is kept, so reading tags from many places (many unclosed ``<img``)
    reads each quote and '>' once."""

    def __init__(self, text: str):
        self.text, self.marks = text, Positions(text, "\"'>")
        self.special = sorted(i for at in self.marks.at.values() for i in at)
        self.known: dict[int, int | None] = {}
        self.begins: dict[int, bool] = {}          # what :meth:`_begins_value` found for each '='

    def end(self, start: int) -> int | None:
        """The index just past the '>' that ends the tag whose text starts at ``start``, or None
        (none does: a quote opened and never closed, or no '>')."""
        i, walked, end = bisect.bisect_left(self.special, start), [], None
        while i < len(self.special):
            if i in self.known:
                end = self.known[i]
                break
            walked.append(i)
            at = self.special[i]
            if self.text[at] == ">":
                end = at + 1
                break
            if not self._opens_value(at):               # a quote inside a name or an unquoted value: text
                i += 1
                continue
            close = self.marks.next(self.text[at], at + 1)     # the quote that closes the value
            if close is None:
                break
            i = bisect.bisect_right(self.special, close)
        for k in walked:
            self.known[k] = end
        return end

    def _opens_value(self, at: int) -> bool:
        """Whether the quote at ``at`` opens a quoted attribute value: HTML reads one so only right after
        the ``=`` of an attribute (blanks between); elsewhere (``class=it's``) it is part of the text."""
        text, j = self.text, at - 1
        while j >= 0 and text[j] in _BLANKS:
            j -= 1
        return j >= 0 and text[j] == "=" and self._begins_value(j)

    def _begins_value(self, j: int) -> bool:
        """Whether the ``=`` at ``j`` is an attribute's, after which its value begins. It must follow an
        attribute's name: not a quoted value's end (``a='x'='y``), not the tag's name (``<img ='y``), not
        an unquoted value's text (``a=b='y``). A name after blanks that follow another attribute's ``=``
        is that attribute's unquoted value (``a= b='y``: a's value is ``b='y'``), so a chain of them
        alternates; the chain is read back to its first link and each answer kept, so many queries read
        each link once."""
        text, chain, answer = self.text, [], False
        while True:
            if j in self.begins:                       # known: the link before it is the opposite
                if not chain:
                    return self.begins[j]
                answer = not self.begins[j]
                break
            chain.append(j)
            k = j - 1
            while k >= 0 and text[k] in _BLANKS:
                k -= 1
            if k < 0 or text[k] in "=\"'/<":
                answer = False
                break
            while k >= 0 and text[k] not in _BLANKS + "/\"'=<":
                k -= 1
            if k < 0 or text[k] in "=<":             # the text's start; an unquoted value's text or the tag's name
                answer = k < 0
                break
            while k >= 0 and text[k] in _BLANKS:
                k -= 1
            if k < 0 or text[k] != "=":               # the name follows the tag's name or another attribute
                answer = True
                break
            j = k                                      # it is an attribute only if that '=' is not one
        for link in reversed(chain):
            self.begins[link] = answer
            answer = not answer
        return self.begins[chain[0]]


_BLANKS = " \t\n\r\f"
